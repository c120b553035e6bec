#!/usr/bin/env node
// Perplexity with llama.cpp (node-llama-cpp's prebuilt CPU build), the method of llama.cpp's
// `llama-perplexity` tool (and of `graft perplexity`):
//
//   node llamacpp_perplexity.mjs --model F --file TEXT --ctx N [--chunks K] [--threads T]
//        [--batch B] [--flash-attention] [--kv-type f16|f32|q8_0|q4_0|K/V]
//
// 1. Tokenize the whole text with llama.cpp's tokenizer (model.tokenize(text): llama_tokenize with
//    add_special=false, parse_special=false), then put BOS first when the vocabulary adds one
//    (tokenizer.ggml.add_bos_token, llama_vocab_get_add_bos) — the same ids as llama.cpp's
//    common_tokenize(ctx, text, add_special=true) for these vocabularies (no EOS is added).
// 2. Cut non-overlapping N-token chunks (the tail that does not fill a chunk is dropped); with a
//    BOS-adding vocabulary the first token of every chunk is replaced by BOS.
// 3. Evaluate each chunk from an empty KV cache (clearHistory) and score the second half:
//    nll_i = -ln p(token[i+1] | logits at i) for i in [N/2, N-2].
// 4. PPL = exp(mean nll), uncertainty = PPL * sqrt((mean(nll^2) - mean(nll)^2) / (count - 1)).
//
// Where the probabilities come from: controlledEvaluate with generateNext.probabilities on the
// scored positions. For each such position node-llama-cpp's addon (AddonContext.cpp,
// AddonContextSampleTokenWorker) takes the raw logits row of that batch position
// (llama_get_logits_ith), runs the sampler chain — here temperature 0, which is the greedy sampler
// only and leaves the logits untouched — and returns softmax over the FULL vocabulary computed in
// float (max subtracted, expf, float sum, divide). We take ln of the target token's probability in
// double. Against llama.cpp's own perplexity tool (double sum of exp) this differs only by float
// rounding (~1e-7 relative), far below the comparison's tolerance.
import fs from "node:fs";
import process from "node:process";
import { createContext, loadLlama, loadModel, parseArgs, setUsage, usage } from "./lib.mjs";

setUsage(
  "usage: node llamacpp_perplexity.mjs --model F --file TEXT --ctx N [--chunks K] [--threads T] [--batch B] " +
    "[--flash-attention] [--kv-type f16|f32|q8_0|q4_0|K/V (e.g. q8_0/q4_0: llama.cpp's -ctk/-ctv; a quantized V needs --flash-attention)]",
);
const args = parseArgs(
  process.argv.slice(2),
  {
    model: "string",
    file: "string",
    ctx: "int",
    chunks: "int",
    threads: "int",
    batch: "int",
    "flash-attention": "bool",
    "kv-type": "string",
    verbose: "bool",
  },
  { m: "model", f: "file", c: "ctx", t: "threads", b: "batch" },
);
if (!args.model) usage("--model is required");
if (!args.file) usage("--file is required");
const nCtx = args.ctx ?? 512;
if (nCtx < 4) usage("--ctx must be >= 4");
const maxChunks = args.chunks ?? -1;
const threads = args.threads ?? 1;

const text = fs.readFileSync(args.file, "utf8");
const llama = await loadLlama({ threads, verbose: args.verbose });
const model = await loadModel(llama, args.model);
const addBos = model.tokens.shouldPrependBosToken && model.tokens.bos != null;
const tokens = Array.from(model.tokenize(text, false));
if (addBos) tokens.unshift(model.tokens.bos);

let nChunks = Math.floor(tokens.length / nCtx);
if (maxChunks >= 0) nChunks = Math.min(nChunks, maxChunks);
if (nChunks < 1) {
  process.stderr.write(`${args.file} has ${tokens.length} tokens, fewer than one chunk of --ctx ${nCtx}\n`);
  process.exit(1);
}
process.stderr.write(
  `${tokens.length} tokens, ${nChunks} chunks of ${nCtx}, scoring positions ${Math.floor(nCtx / 2)}..${nCtx - 2} of each\n`,
);

const context = await createContext(model, {
  contextSize: nCtx,
  batchSize: Math.min(args.batch ?? 512, nCtx),
  threads,
  flashAttention: args["flash-attention"] ?? false,
  kvType: args["kv-type"],
});
const seq = context.getSequence();
const first = Math.floor(nCtx / 2);
const want = { generateNext: { probabilities: true, options: { temperature: 0 } } };

let nll = 0;
let nll2 = 0;
let count = 0;
for (let c = 0; c < nChunks; c++) {
  const chunk = tokens.slice(c * nCtx, (c + 1) * nCtx);
  if (addBos) chunk[0] = model.tokens.bos;
  await seq.clearHistory();
  const input = chunk.map((t, i) => (i >= first && i <= nCtx - 2 ? [t, want] : t));
  const res = await seq.controlledEvaluate(input);
  for (let i = first; i <= nCtx - 2; i++) {
    const target = tokens[c * nCtx + i + 1];
    const p = res[i]?.next?.probabilities?.get(target);
    if (p == null) throw new Error(`chunk ${c + 1}, position ${i}: no probability for token ${target}`);
    if (!(p > 0)) throw new Error(`chunk ${c + 1}, position ${i}: probability ${p} for token ${target} (underflow)`);
    const lp = Math.log(p);
    nll -= lp;
    nll2 += lp * lp;
    count++;
  }
  process.stdout.write(`[${c + 1}]${Math.exp(nll / count).toFixed(4)},`);
}
const mean = nll / count;
const ppl = Math.exp(mean);
const variance = nll2 / count - mean * mean;
let line = `\nFinal estimate: PPL = ${ppl.toFixed(4)}`;
if (variance > 0 && count > 1) line += ` +/- ${(ppl * Math.sqrt(variance / (count - 1))).toFixed(5)}`;
process.stdout.write(line + "\n");
await context.dispose();
await model.dispose();
await llama.dispose();
