#!/usr/bin/env node
// Decides whether a greedy mismatch is a near-tie, from both engines' log-probabilities along the
// agreed path (probe/graft_logits --full and llamacpp_logits.mjs --full with the same prompt and
// --continue-ids = the tokens both generated before the mismatch).
//
//   node tie_check.mjs GRAFT_LOGITS.json LLAMA_LOGITS.json TOL
//
// With k = the last row (the first differing position), a = llama.cpp's token (its argmax) and
// b = graft's token (graft's argmax):
//   graft gap  = lnp_graft(b) - lnp_graft(a)      how far graft prefers b
//   llama gap  = lnp_llama(a) - lnp_llama(b)      how far llama.cpp prefers a
//   drift(row) = max over the vocabulary of |lnp_graft - lnp_llama|
// It is a near-tie when both gaps and the drift at row k are <= TOL: the two engines' distributions
// agree to within TOL nats there and the two candidates are within TOL of each other in both. The
// drift of the earlier rows is printed too (a discrete jump from ~1e-6 to ~1e-2 between two
// positions is the mark of an activation-quantization rounding flip, not of a continuous error;
// the first position whose drift exceeds 1e-4 is printed).
// Prints one line; exit 0 for a near-tie, 1 otherwise.
import fs from "node:fs";
import process from "node:process";

const read = (p) => {
  const t = fs.readFileSync(p, "utf8");
  return JSON.parse(t.slice(t.indexOf("{"))).rows;
};
const [gPath, lPath, tolText] = process.argv.slice(2);
const tol = Number(tolText);
if (!gPath || !lPath || !(tol >= 0)) {
  process.stderr.write("usage: node tie_check.mjs GRAFT_LOGITS.json LLAMA_LOGITS.json TOL\n");
  process.exit(2);
}
const g = read(gPath);
const l = read(lPath);
if (g.length !== l.length || g.length === 0) {
  process.stdout.write(`cannot compare: graft has ${g.length} rows, llama.cpp ${l.length}\n`);
  process.exit(1);
}
const drift = (r) => {
  const x = g[r].log_softmax;
  const y = l[r].log_softmax;
  let m = 0;
  for (let i = 0; i < x.length; i++) m = Math.max(m, Math.abs(x[i] - y[i]));
  return m;
};
const argmax = (v) => {
  let best = 0;
  for (let i = 1; i < v.length; i++) if (v[i] > v[best]) best = i;
  return best;
};
const k = g.length - 1;
const gl = g[k].log_softmax;
const ll = l[k].log_softmax;
const b = argmax(gl);
const a = argmax(ll);
const gGap = gl[b] - gl[a];
const lGap = ll[a] - ll[b];
const dk = drift(k);
let before = 0;
let jump = -1;
for (let r = 0; r <= k; r++) {
  const d = drift(r);
  if (r < k) before = Math.max(before, d);
  if (jump < 0 && d > 1e-4) jump = r;
}
const near = a !== b && gGap <= tol && lGap <= tol && dk <= tol;
const fmt = (x) => x.toExponential(2);
process.stdout.write(
  `${near ? "near-tie" : a === b ? "NO MISMATCH ON REPLAY" : "NOT A NEAR-TIE"}: ` +
    `graft ${b} over ${a} by ${fmt(gGap)}, llama.cpp ${a} over ${b} by ${fmt(lGap)}; ` +
    `max |dlogp| ${fmt(dk)} here, ${k > 0 ? fmt(before) : "-"} before` +
    (jump >= 0 ? `, first above 1e-4 at position ${jump}${jump > 0 ? ` (${fmt(drift(jump - 1))} at ${jump - 1})` : ""}` : "") +
    ` (tol ${tol})\n`,
);
process.exit(near ? 0 : 1);
