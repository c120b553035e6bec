#!/usr/bin/env node
// Rewrites a GGUF model without its MTP (nextn) blocks: the last `<arch>.nextn_predict_layers`
// blocks' tensors (blk.N.*) are dropped, `<arch>.block_count` is lowered by that count and the
// nextn key removed; every other key and tensor is copied byte for byte. llama.cpp's qwen3 loader
// has no nextn support and refuses a file with tensors it does not use, so compare.sh hands it
// this copy; graft runs the original (its forward pass reads only the main layers, which are the
// same bytes in both files).
//
//   node gguf_strip_nextn.mjs IN.gguf OUT.gguf     (prints the number of blocks removed; 0: plain copy)
import fs from "node:fs";
import process from "node:process";

const [inPath, outPath] = process.argv.slice(2);
if (!inPath || !outPath) {
  process.stderr.write("usage: node gguf_strip_nextn.mjs IN.gguf OUT.gguf\n");
  process.exit(2);
}
const buf = fs.readFileSync(inPath);
let off = 0;
const u32 = () => { const v = buf.readUInt32LE(off); off += 4; return v; };
const u64 = () => { const v = buf.readBigUInt64LE(off); off += 8; return Number(v); };
const str = () => { const n = u64(); const s = buf.toString("utf8", off, off + n); off += n; return s; };
const scalarSize = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
function readValue(type, key) {
  if (type === 8) return str();
  if (type === 9) {
    const et = u32();
    const n = u64();
    for (let i = 0; i < n; i++) readValue(et, key);
    return undefined;
  }
  const size = scalarSize[type];
  if (size == null) throw new Error(`${inPath}: unknown GGUF value type ${type} (key ${key})`);
  let v;
  if (type === 4 || type === 5) v = buf.readUInt32LE(off);
  else if (type === 10 || type === 11) v = Number(buf.readBigUInt64LE(off));
  off += size;
  return v;
}

if (buf.toString("latin1", 0, 4) !== "GGUF") throw new Error(`${inPath}: not a GGUF file`);
off = 4;
const version = u32();
if (version !== 3) throw new Error(`${inPath}: GGUF version ${version} not handled`);
const nTensors = u64();
const nKv = u64();
const kvs = [];
let alignment = 32;
let arch = null;
for (let i = 0; i < nKv; i++) {
  const start = off;
  const key = str();
  const type = u32();
  const v = readValue(type, key);
  kvs.push({ key, type, v, bytes: buf.subarray(start, off) });
  if (key === "general.alignment") alignment = v;
  if (key === "general.architecture") arch = v;
}
const tensors = [];
for (let i = 0; i < nTensors; i++) {
  const name = str();
  const nDims = u32();
  const ne = [];
  for (let d = 0; d < nDims; d++) ne.push(u64());
  const type = u32();
  const offset = u64();
  tensors.push({ name, ne, type, offset });
}
const pad = (n) => (n + alignment - 1) - ((n + alignment - 1) % alignment);
const dataStart = pad(off);
const offsets = [...new Set(tensors.map((t) => t.offset))].sort((a, b) => a - b);
const endOf = (t) => { const i = offsets.indexOf(t.offset); return i + 1 < offsets.length ? offsets[i + 1] : buf.length - dataStart; };

const kv = (k) => kvs.find((e) => e.key === `${arch}.${k}`);
const nextn = kv("nextn_predict_layers")?.v ?? 0;
const blocks = kv("block_count")?.v;
if (blocks == null) throw new Error(`${inPath}: no ${arch}.block_count`);
if (nextn >= blocks) throw new Error(`${inPath}: nextn_predict_layers ${nextn} >= block_count ${blocks}`);
const main = blocks - nextn;
const isNextn = (name) => { const m = /^blk\.(\d+)\./.exec(name); return m != null && Number(m[1]) >= main; };

const keyBytes = (key) => { const k = Buffer.from(key, "utf8"); const b = Buffer.alloc(8 + k.length); b.writeBigUInt64LE(BigInt(k.length)); k.copy(b, 8); return b; };
const kvParts = [];
let nKvOut = 0;
for (const e of kvs) {
  if (e.key === `${arch}.nextn_predict_layers`) continue;
  if (e.key === `${arch}.block_count`) {
    const t = Buffer.alloc(4 + scalarSize[e.type]);
    t.writeUInt32LE(e.type);
    if (e.type === 4 || e.type === 5) t.writeUInt32LE(main, 4); else t.writeBigUInt64LE(BigInt(main), 4);
    kvParts.push(keyBytes(e.key), t);
  } else {
    kvParts.push(e.bytes);
  }
  nKvOut++;
}
const kept = tensors.filter((t) => !isNextn(t.name));
const infos = [];
const data = [];
let dataOff = 0;
for (const t of kept) {
  // a tensor's bytes run to the next tensor's offset (alignment padding included, then trimmed by pad())
  const bytes = buf.subarray(dataStart + t.offset, dataStart + endOf(t));
  const info = Buffer.alloc(4 + 8 * t.ne.length + 4 + 8);
  let o = 0;
  info.writeUInt32LE(t.ne.length, o); o += 4;
  for (const d of t.ne) { info.writeBigUInt64LE(BigInt(d), o); o += 8; }
  info.writeUInt32LE(t.type, o); o += 4;
  info.writeBigUInt64LE(BigInt(dataOff), o);
  infos.push(keyBytes(t.name), info);
  data.push(bytes);
  dataOff += bytes.length;
}
const header = Buffer.alloc(24);
header.write("GGUF", 0, "latin1");
header.writeUInt32LE(3, 4);
header.writeBigUInt64LE(BigInt(kept.length), 8);
header.writeBigUInt64LE(BigInt(nKvOut), 16);
const head = Buffer.concat([header, ...kvParts, ...infos]);
fs.writeFileSync(outPath, Buffer.concat([head, Buffer.alloc(pad(head.length) - head.length), ...data]));
process.stdout.write(`${nextn}\n`);
process.stderr.write(`wrote ${outPath}: ${kept.length} of ${tensors.length} tensors, block_count ${main}\n`);
