#!/usr/bin/env node
// Greedy decode speed of llama.cpp (node-llama-cpp's prebuilt CPU build, pinned 3.21.1) on one
// prompt file, plainly and with node-llama-cpp's n-gram token predictor, measured like
// `graft run -f FILE -n N --temp 0 --json` measures graft (bench/spec/llamacpp_side_by_side.sh
// runs both).
//
//   node llamacpp_spec_bench.mjs --model F (--file PROMPT.txt | --prompt-ids "1 2 3") [-n 256]
//        [--threads 2] [--ctx 512] [--batch 256] [--kv-type f16|f32] [--flash-attention]
//        [--modes "plain ngram"] [--reps 1] [--lookup prompt|context]
//        [--pattern-min A] [--pattern-max B] [--predict-min C] [--predict-max D]
//
// What speculation node-llama-cpp offers (README.md here): "token predictors", written in
// JavaScript over llama.cpp's batch API. Each round, LlamaContextSequence.evaluate() appends the
// predictor's tokens to the batch after the pending token, decodes the batch once, samples every
// position and keeps the predictions up to the first one the target would not have chosen
// (`validated`); the rest are `refuted` and removed from the KV cache. llama.cpp's own
// common/speculative.cpp (`--spec-type ngram-*`) is not reachable from node-llama-cpp's addon.
//
// --lookup prompt (default): InputLookupTokenPredictor, node-llama-cpp's n-gram ("prompt lookup")
//   predictor, as LlamaCompletion uses it: it looks for the longest suffix of the sequence in the
//   INPUT tokens only (the prompt, given to it with updateInputTokens) and proposes what followed
//   there. Defaults are node-llama-cpp's: pattern length 1..unbounded (--pattern-max 0), 1..3
//   predicted tokens.
// --lookup context: a predictor defined in this file (ContextLookupTokenPredictor) that searches
//   the whole sequence, prompt and generated tokens, like graft's ngram drafter: the longest suffix
//   of length --pattern-min..--pattern-max (default 2..8, graft's min_match/max_match) that occurred
//   earlier, latest occurrence first, proposing what followed it, up to --predict-max tokens
//   (default 16, graft's max_draft), copying on past the end of the sequence (a period repeats).
//   One chain, no tree (graft's drafter proposes up to 3 branches).
//
// --model: what llama.cpp reads. For the zoo model that is a copy without its MTP (nextn) block
// (gguf_strip_nextn.mjs): llama.cpp's qwen3 loader refuses tensors it does not use.
//
// The prompt: --file is read like `graft run -f`: one trailing newline (and then one carriage
// return) dropped, tokenized with llama_tokenize(add_special=false, parse_special=false), BOS
// prepended when the vocabulary asks for it (the zoo vocabulary does not). --prompt-ids is used
// verbatim.
//
// Timing: the first token comes from the prompt pass; the decode phase runs from that token to
// the last one, so decode_tokens_per_second = (generated - 1) / decode_seconds, like graft's
// stats.decode_tokens_per_second. Every mode runs on a fresh sequence of one context (same
// settings for both), each rep runs the modes in the order given. Decoding stops after N tokens or
// at an end-of-generation token (not included, stop_reason "eog"), like graft.
//
// Prints one JSON object: the prompt ids, per mode the generated ids (first rep), decode tok/s
// (median over reps, and every rep), and for the predictor mode node-llama-cpp's
// sequence.tokenPredictions counters plus per-round figures derived from them (see "rounds" in
// README.md); same_ids says whether every run of every mode generated the same ids.
import fs from "node:fs";
import process from "node:process";
import { performance } from "node:perf_hooks";
import { createContext, loadLlama, loadModel, nodeLlamaCpp, parseArgs, parseIds, setUsage, usage } from "./lib.mjs";

const { InputLookupTokenPredictor, TokenPredictor } = nodeLlamaCpp;

setUsage(
  "usage: node llamacpp_spec_bench.mjs --model F (--file PROMPT.txt | --prompt-ids IDS) [-n N] [--threads T] " +
    "[--ctx C] [--batch B] [--kv-type f16|f32] [--flash-attention] [--modes \"plain ngram\"] [--reps R] " +
    "[--lookup prompt|context] [--pattern-min A] [--pattern-max B] [--predict-min C] [--predict-max D]",
);
const args = parseArgs(
  process.argv.slice(2),
  {
    model: "string",
    file: "string",
    "prompt-ids": "string",
    "n-predict": "int",
    threads: "int",
    ctx: "int",
    batch: "int",
    "kv-type": "string",
    "flash-attention": "bool",
    modes: "string",
    reps: "int",
    lookup: "string",
    "pattern-min": "int",
    "pattern-max": "int",
    "predict-min": "int",
    "predict-max": "int",
    verbose: "bool",
  },
  { n: "n-predict", m: "model", t: "threads", b: "batch", f: "file", c: "ctx" },
);
if (!args.model) usage("--model is required");
if ((args.file == null) === (args["prompt-ids"] == null)) usage("give exactly one of --file and --prompt-ids");
const nPredict = args["n-predict"] ?? 256;
const threads = args.threads ?? 2;
const ctxSize = args.ctx ?? 512;
const batch = args.batch ?? 256;
const reps = args.reps ?? 1;
const modes = (args.modes ?? "plain ngram").split(/[\s,]+/).filter((s) => s);
const lookup = args.lookup ?? "prompt";
if (nPredict < 1 || threads < 1 || ctxSize < 2 || batch < 1 || reps < 1) {
  usage("need -n >= 1, --threads >= 1, --ctx >= 2, --batch >= 1, --reps >= 1");
}
for (const m of modes) if (m !== "plain" && m !== "ngram") usage(`--modes: unknown mode '${m}' (plain, ngram)`);
if (modes.length === 0) usage("--modes is empty");
if (lookup !== "prompt" && lookup !== "context") usage("--lookup must be prompt or context");

// Predictor settings: node-llama-cpp's defaults for its InputLookupTokenPredictor, graft's ngram
// defaults for the context lookup.
const defaults = lookup === "prompt"
  ? { patternMin: 1, patternMax: 0, predictMin: 1, predictMax: 3 }
  : { patternMin: 2, patternMax: 8, predictMin: 1, predictMax: 16 };
const knobs = {
  patternMin: args["pattern-min"] ?? defaults.patternMin,
  patternMax: args["pattern-max"] ?? defaults.patternMax,
  predictMin: args["predict-min"] ?? defaults.predictMin,
  predictMax: args["predict-max"] ?? defaults.predictMax,
};
if (knobs.patternMin < 1 || knobs.patternMax < 0 || knobs.predictMin < 1 || knobs.predictMax < knobs.predictMin) {
  usage("need --pattern-min >= 1, --pattern-max >= 0, --predict-min >= 1, --predict-max >= --predict-min");
}
if (lookup === "context" && knobs.patternMax < knobs.patternMin) usage("--lookup context: need --pattern-max >= --pattern-min");

// Prompt-lookup over the whole sequence (prompt + generated), see the header. Runs in the
// evaluation loop (synchronously, before each batch), as InputLookupTokenPredictor does.
class ContextLookupTokenPredictor extends TokenPredictor {
  constructor({ patternMin, patternMax, predictMin, predictMax }) {
    super();
    Object.assign(this, { patternMin, patternMax, predictMin, predictMax });
    this.tokens = [];
  }
  reset({ stateTokens }) {
    this.tokens = stateTokens.slice();
  }
  pushTokens(tokens) {
    for (const t of tokens) this.tokens.push(t);
  }
  predictTokens() {
    const t = this.tokens;
    const n = t.length;
    for (let len = Math.min(this.patternMax, n - 1); len >= this.patternMin; len--) {
      // Latest earlier end j (< n - 1) of the len-token suffix t[n - len .. n - 1].
      for (let j = n - 2; j >= len - 1; j--) {
        let k = 0;
        while (k < len && t[j - k] === t[n - 1 - k]) k++;
        if (k < len) continue;
        const out = [];
        for (let src = j + 1; out.length < this.predictMax; src++) out.push(src < n ? t[src] : out[src - n]);
        return out.length >= this.predictMin ? out : [];
      }
    }
    return [];
  }
  dispose() {
    this.tokens = [];
  }
}

function makePredictor(promptIds) {
  if (lookup === "context") return new ContextLookupTokenPredictor(knobs);
  const p = new InputLookupTokenPredictor({
    patternLength: { min: knobs.patternMin, max: knobs.patternMax },
    predictionLength: { min: knobs.predictMin, max: knobs.predictMax },
  });
  // What LlamaCompletion does before generating: the tokens the predictor may copy from.
  p.updateInputTokens(promptIds);
  return p;
}

const llama = await loadLlama({ threads, verbose: args.verbose });
const model = await loadModel(llama, args.model);

let prompt;
let promptText = null;
if (args.file != null) {
  promptText = fs.readFileSync(args.file, "utf8");
  // As graft's read_prompt_file: editors end files with a newline nobody meant as part of the prompt.
  if (promptText.endsWith("\n")) promptText = promptText.slice(0, -1);
  if (promptText.endsWith("\r")) promptText = promptText.slice(0, -1);
  prompt = Array.from(model.tokenize(promptText, false));
  if (model.tokens.shouldPrependBosToken && model.tokens.bos != null) prompt.unshift(model.tokens.bos);
} else {
  prompt = parseIds(args["prompt-ids"]);
}
if (prompt.length === 0) usage("the prompt is empty");
if (prompt.length + nPredict > ctxSize) {
  usage(`prompt (${prompt.length} tokens) + -n ${nPredict} does not fit --ctx ${ctxSize}`);
}

const context = await createContext(model, {
  contextSize: ctxSize,
  batchSize: batch,
  threads,
  flashAttention: args["flash-attention"] ?? false,
  kvType: args["kv-type"],
});

// One greedy generation on a fresh sequence. Returns ids, timings and (with a predictor) the
// counters of sequence.tokenPredictions split into the prompt pass and the decode phase.
async function generate(mode) {
  const predictor = mode === "ngram" ? makePredictor(prompt) : undefined;
  const seq = context.getSequence(predictor ? { tokenPredictor: predictor } : {});
  const stats = () => ({ ...seq.tokenPredictions });
  const ids = [];
  let stopReason = "length";
  let rounds = 0; // decode-phase target passes: next() calls not served from a validated prediction
  let roundsWithPrediction = 0; // ... whose batch held at least one predicted token
  let maxValidated = 0; // most predictions validated in one round
  const t0 = performance.now();
  const it = seq.evaluate(prompt, { temperature: 0 });
  let r = await it.next();
  const tFirst = performance.now();
  const afterPrompt = stats();
  if (r.done) stopReason = "eog";
  else ids.push(r.value);
  let tLast = tFirst;
  while (!r.done && ids.length < nPredict) {
    const before = stats();
    r = await it.next();
    if (r.done) {
      stopReason = "eog";
      break;
    }
    tLast = performance.now();
    ids.push(r.value);
    const after = stats();
    if (after.used === before.used) {
      rounds++;
      if (after.validated + after.refuted > before.validated + before.refuted) roundsWithPrediction++;
      maxValidated = Math.max(maxValidated, after.validated - before.validated);
    }
  }
  await it.return();
  const end = stats();
  await seq.dispose(); // disposes the predictor too
  const decodeSeconds = (tLast - tFirst) / 1000;
  const out = {
    generated_ids: ids,
    generated_tokens: ids.length,
    stop_reason: stopReason,
    first_token_seconds: (tFirst - t0) / 1000,
    decode_seconds: decodeSeconds,
    decode_tokens_per_second: ids.length > 1 && decodeSeconds > 0 ? (ids.length - 1) / decodeSeconds : null,
  };
  if (predictor) {
    const drafted = end.validated + end.refuted - afterPrompt.validated - afterPrompt.refuted;
    const accepted = end.used - afterPrompt.used;
    out.token_predictions = end; // node-llama-cpp's counters for the whole run
    out.prompt_pass_predictions = afterPrompt; // of which in the prompt's batch
    out.decode = {
      rounds,
      rounds_with_prediction: roundsWithPrediction,
      drafted, // predicted tokens decoded in decode-phase batches (validated + refuted)
      validated: end.validated - afterPrompt.validated,
      refuted: end.refuted - afterPrompt.refuted,
      accepted, // predicted tokens emitted (used) in the decode phase
      max_validated_in_a_round: maxValidated,
      acceptance: drafted > 0 ? (end.validated - afterPrompt.validated) / drafted : null,
      tokens_per_round: rounds > 0 ? (ids.length - 1) / rounds : null,
    };
  }
  return out;
}

const median = (v) => {
  const s = v.filter((x) => x != null).sort((a, b) => a - b);
  if (s.length === 0) return null;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const runs = Object.fromEntries(modes.map((m) => [m, []]));
for (let rep = 0; rep < reps; rep++) for (const m of modes) runs[m].push(await generate(m));

function firstDifference(a, b) {
  let k = 0;
  while (k < a.length && k < b.length && a[k] === b[k]) k++;
  return k === a.length && k === b.length ? null : k;
}
const reference = runs[modes[0]][0].generated_ids;
let sameIds = true;
let difference = null;
for (const m of modes) {
  for (let rep = 0; rep < reps; rep++) {
    const k = firstDifference(reference, runs[m][rep].generated_ids);
    if (k != null && sameIds) {
      sameIds = false;
      difference = { mode: m, rep, index: k, reference_mode: modes[0] };
    }
  }
}

const result = {
  engine: `llama.cpp (node-llama-cpp ${nodeLlamaCpp.getModuleVersion ? await nodeLlamaCpp.getModuleVersion() : ""} prebuilt CPU)`.replace("  ", " "),
  node_modules: process.env.CROSSCHECK_NODE_MODULES ?? "tools/crosscheck/node_modules",
  model: args.model,
  prompt_file: args.file ?? null,
  threads,
  ctx: ctxSize,
  batch,
  kv_type: args["kv-type"] ?? "f16",
  n_predict: nPredict,
  reps,
  prompt_tokens: prompt.length,
  prompt_ids: prompt,
  predictor: modes.includes("ngram")
    ? {
        name: lookup === "prompt" ? "InputLookupTokenPredictor (node-llama-cpp)" : "ContextLookupTokenPredictor (llamacpp_spec_bench.mjs)",
        lookup,
        pattern_min: knobs.patternMin,
        pattern_max: knobs.patternMax,
        predict_min: knobs.predictMin,
        predict_max: knobs.predictMax,
      }
    : null,
  same_ids: sameIds,
  first_difference: difference,
};
for (const m of modes) {
  const first = runs[m][0];
  result[m] = {
    ...first,
    decode_tokens_per_second: median(runs[m].map((x) => x.decode_tokens_per_second)),
    decode_tokens_per_second_reps: runs[m].map((x) => x.decode_tokens_per_second),
  };
  if (reps > 1 && m === "ngram") result[m].decode_reps = runs[m].map((x) => x.decode);
}
process.stdout.write(JSON.stringify(result) + "\n");
await context.dispose();
await model.dispose();
await llama.dispose();
