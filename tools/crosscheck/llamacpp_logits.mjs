#!/usr/bin/env node
// llama.cpp's next-token distribution along a fixed token path: the counterpart of
// probe/graft_logits for investigating greedy mismatches.
//
//   node llamacpp_logits.mjs --model F --prompt-ids "1 2 3" [--continue-ids "4 5"] [--top K] [--full] [--all]
//        [--threads T] [--batch B] [--flash-attention] [--kv-type f16|f32]
//
// Evaluates the prompt in one controlledEvaluate call (next-token output for the last token only),
// then each --continue-ids token alone, exactly as llamacpp_greedy.mjs does (--all: an output for
// every prompt token, one row each, as llamacpp_perplexity.mjs evaluates). Row j is the
// distribution at generated position j. node-llama-cpp gives probabilities (softmax of the raw
// logits, see llamacpp_perplexity.mjs), not logits, so "top" lists [id, logit - max logit] and
// --full prints log_softmax = ln p for every id (the same quantity graft_logits --full prints).
import process from "node:process";
import { createContext, loadLlama, loadModel, parseArgs, parseIds, setUsage, usage } from "./lib.mjs";

setUsage(
  "usage: node llamacpp_logits.mjs --model F --prompt-ids IDS [--continue-ids IDS] [--top K] [--full] " +
    "[--threads T] [--batch B] [--flash-attention] [--kv-type f16|f32]",
);
const args = parseArgs(
  process.argv.slice(2),
  {
    model: "string",
    "prompt-ids": "string",
    "continue-ids": "string",
    top: "int",
    full: "bool",
    all: "bool",
    threads: "int",
    batch: "int",
    "flash-attention": "bool",
    "kv-type": "string",
  },
  { m: "model", t: "threads", b: "batch" },
);
if (!args.model || args["prompt-ids"] == null) usage("--model and --prompt-ids are required");
const threads = args.threads ?? 1;
const top = Math.max(1, args.top ?? 2);
const llama = await loadLlama({ threads });
const model = await loadModel(llama, args.model);
const prompt = parseIds(args["prompt-ids"]);
const cont = args["continue-ids"] ? parseIds(args["continue-ids"]) : [];
const context = await createContext(model, {
  contextSize: prompt.length + cont.length + 1,
  batchSize: args.batch ?? 256,
  threads,
  flashAttention: args["flash-attention"] ?? false,
  kvType: args["kv-type"],
});
const seq = context.getSequence();
const want = { generateNext: { probabilities: true, options: { temperature: 0 } } };
const rows = [];
function row(probs) {
  const entries = [...probs.entries()];
  const lmax = Math.log(entries[0][1]);
  const r = { top: entries.slice(0, top).map(([id, p]) => [id, Math.log(p) - lmax]) };
  if (args.full) {
    // The candidates are the whole vocabulary (no sampler here removes any): one entry per id.
    const ls = new Array(entries.length).fill(-Infinity);
    for (const [id, p] of entries) ls[id] = Math.log(p);
    r.log_softmax = ls;
  }
  rows.push(r);
}
let input = prompt.map((t, i) => (args.all || i === prompt.length - 1 ? [t, want] : t));
for (let j = 0; j <= cont.length; j++) {
  const res = await seq.controlledEvaluate(input);
  if (j === 0 && args.all) for (let i = 0; i < input.length - 1; i++) row(res[i].next.probabilities);
  row(res[input.length - 1].next.probabilities);
  if (j < cont.length) input = [[cont[j], want]];
}
process.stdout.write(JSON.stringify({ rows }) + "\n");
await context.dispose();
await model.dispose();
await llama.dispose();
