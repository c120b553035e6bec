#!/usr/bin/env node
// Compares `graft run --json` output with llamacpp_greedy.mjs output (with --top2).
//
//   node compare_ids.mjs GRAFT.json LLAMA.json
//
// Prints one line: "match N/N" or "MISMATCH at k: ..." with llama.cpp's top-2 and logit gap at the
// first differing position, and exits 1 on a mismatch. Both sides stop at an end-of-generation
// token without listing it (graft: stop_reason "end of generation"; llama: "eog"); a stop at the
// same position on both sides is agreement, a stop on one side only is a mismatch there.
import fs from "node:fs";
import process from "node:process";

function readJson(path) {
  const text = fs.readFileSync(path, "utf8");
  // graft prints the JSON object on stdout; be tolerant of anything before the first '{'.
  const start = text.indexOf("{");
  if (start < 0) throw new Error(`${path}: no JSON object`);
  return JSON.parse(text.slice(start));
}

const [gPath, lPath] = process.argv.slice(2);
if (!gPath || !lPath) {
  process.stderr.write("usage: node compare_ids.mjs GRAFT.json LLAMA.json\n");
  process.exit(2);
}
const g = readJson(gPath);
const l = readJson(lPath);
const gIds = g.generated_ids;
const lIds = l.generated_ids;
const gEog = g.stop_reason === "end of generation";
const lEog = l.stop_reason === "eog";
// Positions compared: every generated token, plus the stop token position when either side
// stopped at end of generation.
const total = Math.max(gIds.length + (gEog ? 1 : 0), lIds.length + (lEog ? 1 : 0));
const at = (ids, eog, i) => (i < ids.length ? String(ids[i]) : eog && i === ids.length ? "EOG" : "(none)");
let k = 0;
while (k < total && at(gIds, gEog, k) === at(lIds, lEog, k)) k++;
if (k === total) {
  process.stdout.write(`match ${k}/${total}${lEog ? " (both stopped at end of generation)" : ""}\n`);
  process.exit(0);
}
let detail = "";
const t2 = l.top2?.[k];
if (t2) {
  detail = `; llama.cpp top-2 there: ${t2.ids[0]}, ${t2.ids[1]}, logit gap ${t2.logit_gap.toExponential(3)}`;
  if (String(t2.ids[1]) === at(gIds, gEog, k)) detail += " (graft chose llama.cpp's runner-up)";
}
process.stdout.write(`MISMATCH ${k}/${total}: first at position ${k}: graft ${at(gIds, gEog, k)}, llama.cpp ${at(lIds, lEog, k)}${detail}\n`);
process.exit(1);
