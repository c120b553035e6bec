#!/usr/bin/env node
// Prefill and decode speed of llama.cpp (node-llama-cpp's prebuilt CPU build) measured the way
// `graft bench` measures graft, for side-by-side runs (bench/llamacpp_side_by_side.sh):
// a prompt of --prompt-tokens random ordinary ids evaluated in batches of --batch, then
// --gen-tokens - 1 greedy decode steps (end of text ignored), --reps times on a cleared sequence.
//
//   node llamacpp_bench.mjs --model F [--prompt-tokens 256] [--gen-tokens 64] [--reps 3]
//        [--threads 2] [--batch 256] [--kv-type f16|f32] [--flash-attention]
//
// Prints one JSON object with the same key names as `graft bench --json` (prefill_mean,
// decode_mean, ...). Each decode step goes through node-llama-cpp's controlledEvaluate, so
// llama.cpp's decode time here includes one JavaScript/N-API round trip per token.
import { readFileSync } from "node:fs";
import process from "node:process";
import { performance } from "node:perf_hooks";
import { createContext, loadLlama, loadModel, parseArgs, setUsage, usage } from "./lib.mjs";

setUsage(
  "usage: node llamacpp_bench.mjs --model F [--prompt-tokens N] [--gen-tokens N] [--reps N] " +
    "[--threads T] [--batch B] [--kv-type f16|f32] [--flash-attention]",
);
const args = parseArgs(
  process.argv.slice(2),
  {
    model: "string",
    "prompt-tokens": "int",
    "gen-tokens": "int",
    reps: "int",
    threads: "int",
    batch: "int",
    "kv-type": "string",
    "flash-attention": "bool",
    verbose: "bool",
  },
  { m: "model", t: "threads", b: "batch" },
);
if (!args.model) usage("--model is required");
const P = args["prompt-tokens"] ?? 256;
const G = args["gen-tokens"] ?? 64;
const reps = args.reps ?? 3;
const threads = args.threads ?? 2;
const batch = args.batch ?? 256;
if (P < 1 || G < 2 || reps < 1 || threads < 1 || batch < 1) {
  usage("need --prompt-tokens >= 1, --gen-tokens >= 2, --reps >= 1, --threads >= 1, --batch >= 1");
}

const llama = await loadLlama({ threads, verbose: args.verbose });
const model = await loadModel(llama, args.model);
const context = await createContext(model, {
  contextSize: P + G + 1,
  batchSize: Math.min(batch, P),
  threads,
  flashAttention: args["flash-attention"] ?? false,
  kvType: args["kv-type"],
});
const seq = context.getSequence();

// Ordinary ids from a fixed linear congruential sequence (not graft's mt19937 prompt: the ids do
// not change the work of a step, only its values).
const nVocab = model.fileInfo.metadata?.tokenizer?.ggml?.tokens?.length;
if (!nVocab) throw new Error("cannot read the vocabulary size");
let state = 1234;
const prompt = Array.from({ length: P }, () => {
  state = (Math.imul(state, 1103515245) + 12345) >>> 0;
  return state % nVocab;
});

const want = { token: true, options: { temperature: 0 } };
const prefill = [];
const decode = [];
for (let r = 0; r < reps; r++) {
  await seq.clearHistory();
  let t0 = performance.now();
  let res = null;
  for (let pos = 0; pos < P; pos += batch) {
    const chunk = prompt.slice(pos, Math.min(P, pos + batch));
    const last = pos + chunk.length === P;
    const input = chunk.map((t, i) => (last && i === chunk.length - 1 ? [t, { generateNext: want }] : t));
    res = await seq.controlledEvaluate(input);
  }
  const tPrefill = (performance.now() - t0) / 1000;
  let next = res[res.length - 1]?.next?.token;
  if (next == null) throw new Error("llama.cpp produced no token after the prompt");
  t0 = performance.now();
  for (let i = 0; i + 1 < G; i++) {
    const out = await seq.controlledEvaluate([[next, { generateNext: want }]]);
    next = out[0]?.next?.token;
    if (next == null) throw new Error(`llama.cpp produced no token at decode step ${i}`);
  }
  const tDecode = (performance.now() - t0) / 1000;
  prefill.push(P / tPrefill);
  decode.push((G - 1) / tDecode);
}

const mean = (v) => v.reduce((a, b) => a + b, 0) / v.length;
// The ggml CPU variant that ran: the libggml-cpu-NAME.so this process mapped (ggml loads the best
// one for the CPU unless llama_cpu.sh left it a single one).
const variants = [
  ...new Set(
    readFileSync("/proc/self/maps", "utf8")
      .split("\n")
      .map((l) => /libggml-cpu-([A-Za-z0-9_]+)\.so/.exec(l)?.[1])
      .filter(Boolean),
  ),
];
const result = {
  engine: "llama.cpp (node-llama-cpp prebuilt CPU)",
  cpu_variant: variants.join(",") || "unknown",
  model: args.model,
  threads,
  prompt_tokens: P,
  gen_tokens: G,
  reps,
  kv_type: args["kv-type"] ?? "f16",
  prefill_tokens_per_second: prefill,
  decode_tokens_per_second: decode,
  prefill_mean: mean(prefill),
  decode_mean: mean(decode),
  prefill_over_decode: mean(prefill) / mean(decode),
};
process.stdout.write(JSON.stringify(result, null, 2) + "\n");
await context.dispose();
await model.dispose();
await llama.dispose();
