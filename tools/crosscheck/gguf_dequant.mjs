#!/usr/bin/env node
// Rewrites a GGUF file with every Q8_0 / Q4_0 / F16 tensor dequantized to F32 (same values,
// exactly: q * fp16 scale), metadata copied unchanged. Used to separate "which weights" from
// "which kernel arithmetic" when graft and llama.cpp disagree on a quantized model:
// both engines on the dequantized file run plain f32 matmuls over the very weights the
// quantized file encodes.
//
//   node gguf_dequant.mjs IN.gguf OUT.gguf
import fs from "node:fs";
import process from "node:process";

const [inPath, outPath] = process.argv.slice(2);
if (!inPath || !outPath) {
  process.stderr.write("usage: node gguf_dequant.mjs IN.gguf OUT.gguf\n");
  process.exit(2);
}
const buf = fs.readFileSync(inPath);
let off = 0;
const u32 = () => { const v = buf.readUInt32LE(off); off += 4; return v; };
const u64 = () => { const v = buf.readBigUInt64LE(off); off += 8; return Number(v); };
const str = () => { const n = u64(); const s = buf.toString("utf8", off, off + n); off += n; return s; };
const scalarSize = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
let alignment = 32;
function skipValue(type, key) {
  if (type === 8) return str();
  if (type === 9) {
    const et = u32();
    const n = u64();
    for (let i = 0; i < n; i++) skipValue(et);
    return undefined;
  }
  const size = scalarSize[type];
  if (size == null) throw new Error(`unknown GGUF value type ${type} (key ${key})`);
  const v = type === 4 ? buf.readUInt32LE(off) : undefined;
  off += size;
  return v;
}

if (buf.toString("latin1", 0, 4) !== "GGUF") throw new Error(`${inPath}: not a GGUF file`);
off = 4;
const version = u32();
if (version !== 3 && version !== 2) throw new Error(`${inPath}: GGUF version ${version} not handled`);
const nTensors = u64();
const nKv = u64();
for (let i = 0; i < nKv; i++) {
  const key = str();
  const type = u32();
  const v = skipValue(type, key);
  if (key === "general.alignment" && v != null) alignment = v;
}
const kvEnd = off;
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

function half(h) {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}
function dequant(t) {
  const n = t.ne.reduce((a, b) => a * b, 1);
  const src = dataStart + t.offset;
  const out = new Float32Array(n);
  if (t.type === 0) return { out: new Float32Array(buf.buffer.slice(buf.byteOffset + src, buf.byteOffset + src + 4 * n)), changed: false };
  if (t.type === 1) {
    for (let i = 0; i < n; i++) out[i] = half(buf.readUInt16LE(src + 2 * i));
  } else if (t.type === 8) { // Q8_0: fp16 d, 32 x int8
    for (let b = 0; b < n / 32; b++) {
      const p = src + b * 34;
      const d = half(buf.readUInt16LE(p));
      for (let j = 0; j < 32; j++) out[b * 32 + j] = Math.fround(buf.readInt8(p + 2 + j) * d);
    }
  } else if (t.type === 2) { // Q4_0: fp16 d, 16 bytes; low nibbles = first 16, high = last 16, minus 8
    for (let b = 0; b < n / 32; b++) {
      const p = src + b * 18;
      const d = half(buf.readUInt16LE(p));
      for (let j = 0; j < 16; j++) {
        const q = buf[p + 2 + j];
        out[b * 32 + j] = Math.fround(((q & 0x0f) - 8) * d);
        out[b * 32 + j + 16] = Math.fround(((q >> 4) - 8) * d);
      }
    }
  } else {
    throw new Error(`tensor ${t.name}: type ${t.type} not handled`);
  }
  return { out, changed: true };
}

// New tensor infos (all F32) and data.
const parts = [];
const infos = [];
let dataOff = 0;
for (const t of tensors) {
  const { out } = dequant(t);
  const bytes = Buffer.from(out.buffer, out.byteOffset, out.byteLength);
  const nameBuf = Buffer.from(t.name, "utf8");
  const info = Buffer.alloc(8 + nameBuf.length + 4 + 8 * t.ne.length + 4 + 8);
  let o = 0;
  info.writeBigUInt64LE(BigInt(nameBuf.length), o); o += 8;
  nameBuf.copy(info, o); o += nameBuf.length;
  info.writeUInt32LE(t.ne.length, o); o += 4;
  for (const d of t.ne) { info.writeBigUInt64LE(BigInt(d), o); o += 8; }
  info.writeUInt32LE(0, o); o += 4;
  info.writeBigUInt64LE(BigInt(dataOff), o);
  infos.push(info);
  parts.push(bytes);
  const padded = pad(dataOff + bytes.length);
  if (padded > dataOff + bytes.length) parts.push(Buffer.alloc(padded - dataOff - bytes.length));
  dataOff = padded;
}
const head = Buffer.concat([buf.subarray(0, kvEnd), ...infos]);
const headPad = Buffer.alloc(pad(head.length) - head.length);
fs.writeFileSync(outPath, Buffer.concat([head, headPad, ...parts]));
process.stderr.write(`wrote ${outPath}: ${tensors.length} tensors as f32\n`);
