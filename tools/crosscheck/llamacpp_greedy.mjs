#!/usr/bin/env node
// Greedy decoding with llama.cpp (node-llama-cpp's prebuilt CPU build), for token-for-token
// comparison with `graft run --prompt-ids IDS --temp 0 -n N --json`.
//
//   node llamacpp_greedy.mjs --model F --prompt-ids "1 2 3" -n 32 [--top2] [--threads T]
//        [--flash-attention] [--kv-type f16|f32] [--batch B]
//
// Prints one JSON object: {"prompt_ids": [...], "generated_ids": [...], "stop_reason": "length" | "eog"}
// (with --top2 also "top2": per generated position {"ids": [a, b], "logit_gap": l_a - l_b}).
//
// The ids are evaluated as given: no BOS is added (node-llama-cpp's controlledEvaluate feeds the
// tokens to llama_decode verbatim). Sampling is llama.cpp's greedy sampler alone (temperature 0:
// node-llama-cpp then builds a chain of just llama_sampler_init_greedy; no repeat penalty, no
// token bias, no top-k/top-p/min-p), i.e. the argmax of the logits, lowest id on ties.
//
// End of generation: like graft's generator, decoding stops when the chosen token is an
// end-of-generation token (llama_vocab_is_eog: <|endoftext|>, <|im_end|> in the synthetic
// vocabularies); that token is not included in generated_ids and stop_reason is "eog".
// Otherwise exactly N tokens are generated (stop_reason "length").
import process from "node:process";
import { createContext, loadLlama, loadModel, parseArgs, parseIds, setUsage, topN, usage } from "./lib.mjs";

setUsage(
  "usage: node llamacpp_greedy.mjs --model F --prompt-ids \"1 2 3\" -n N [--top2] [--threads T] " +
    "[--flash-attention] [--kv-type f16|f32] [--batch B]",
);
const args = parseArgs(
  process.argv.slice(2),
  {
    model: "string",
    "prompt-ids": "string",
    "n-predict": "int",
    top2: "bool",
    threads: "int",
    "flash-attention": "bool",
    "kv-type": "string",
    batch: "int",
    verbose: "bool",
  },
  { n: "n-predict", m: "model", t: "threads", b: "batch" },
);
if (!args.model) usage("--model is required");
if (args["prompt-ids"] == null) usage("--prompt-ids is required");
const nPredict = args["n-predict"] ?? 32;
if (nPredict < 0) usage("-n must be >= 0");
const threads = args.threads ?? 1;

const llama = await loadLlama({ threads, verbose: args.verbose });
const model = await loadModel(llama, args.model);
const prompt = parseIds(args["prompt-ids"]); // llama.cpp itself rejects ids outside the vocabulary
const context = await createContext(model, {
  contextSize: prompt.length + nPredict + 1,
  batchSize: args.batch ?? 256,
  threads,
  flashAttention: args["flash-attention"] ?? false,
  kvType: args["kv-type"],
});
const seq = context.getSequence();

const want = { token: true, probabilities: !!args.top2, options: { temperature: 0 } };
const generated = [];
const top2 = [];
let stopReason = "length";
let input = prompt.map((t, i) => (i === prompt.length - 1 ? [t, { generateNext: want }] : t));
for (let step = 0; step < nPredict; step++) {
  const res = await seq.controlledEvaluate(input);
  const out = res[input.length - 1];
  const token = out?.next?.token;
  if (token == null) throw new Error(`llama.cpp produced no token at step ${step}`);
  if (args.top2) {
    const [[a, pa], [b, pb]] = topN(out.next.probabilities, 2);
    // p = softmax(logits), so ln(pa / pb) = logit_a - logit_b.
    top2.push({ ids: [a, b], logit_gap: Math.log(pa / pb) });
  }
  if (model.isEogToken(token)) {
    stopReason = "eog";
    break;
  }
  generated.push(token);
  input = [[token, { generateNext: want }]];
}

const result = { prompt_ids: prompt, generated_ids: generated, stop_reason: stopReason };
if (args.top2) result.top2 = top2;
process.stdout.write(JSON.stringify(result) + "\n");
await context.dispose();
await model.dispose();
await llama.dispose();
