// Shared helpers for the llama.cpp side of the cross-check: argument parsing and loading llama.cpp
// through node-llama-cpp's prebuilt CPU binary only (never a download, never a source build).
import path from "node:path";
import process from "node:process";
import { pathToFileURL } from "node:url";

// Set before node-llama-cpp is imported: its config module reads these once at import time.
process.env.NODE_LLAMA_CPP_SKIP_DOWNLOAD = "true";
process.env.NODE_LLAMA_CPP_GPU = "false";

// CROSSCHECK_NODE_MODULES=DIR loads node-llama-cpp from DIR/node-llama-cpp instead of this folder's
// node_modules: compare.sh points it at a copy whose prebuilt package offers ggml only one CPU
// variant (see compare.sh --llama-cpu). The binaries are the same registry package's.
const nlcDir = process.env.CROSSCHECK_NODE_MODULES;
// nodeLlamaCpp: the whole module, for scripts that need more than the helpers below (e.g. the
// token predictors in llamacpp_spec_bench.mjs), loaded from the same place.
export const nodeLlamaCpp = await import(
  nlcDir ? pathToFileURL(path.join(nlcDir, "node-llama-cpp", "dist", "index.js")).href : "node-llama-cpp"
);
const { getLlama, LlamaLogLevel } = nodeLlamaCpp;

// Minimal "--key value" / "-n value" / "--flag" parser. `spec` maps option names (without dashes)
// to "string" | "int" | "bool"; `aliases` maps short names to long ones.
export function parseArgs(argv, spec, aliases = {}) {
  const out = {};
  for (let i = 0; i < argv.length; i++) {
    let a = argv[i];
    if (!a.startsWith("-")) usage(`unexpected argument '${a}'`);
    let name = a.replace(/^--?/, "");
    let inline;
    const eq = name.indexOf("=");
    if (eq >= 0) {
      inline = name.slice(eq + 1);
      name = name.slice(0, eq);
    }
    name = aliases[name] ?? name;
    const kind = spec[name];
    if (kind == null) usage(`unknown option '${a}'`);
    if (kind === "bool") {
      out[name] = true;
      continue;
    }
    const v = inline ?? argv[++i];
    if (v == null) usage(`option '${a}' needs a value`);
    if (kind === "int") {
      if (!/^-?\d+$/.test(v)) usage(`option '${a}': '${v}' is not an integer`);
      out[name] = Number.parseInt(v, 10);
    } else {
      out[name] = v;
    }
  }
  return out;
}

let usageText = "";
export function setUsage(text) {
  usageText = text;
}
export function usage(msg) {
  process.stderr.write(`${msg}\n${usageText}\n`);
  process.exit(2);
}

export function parseIds(text, nVocab) {
  const ids = text
    .trim()
    .split(/[\s,]+/)
    .filter((s) => s.length > 0)
    .map((s) => {
      if (!/^\d+$/.test(s)) usage(`--prompt-ids: '${s}' is not a token id`);
      const id = Number.parseInt(s, 10);
      if (nVocab != null && id >= nVocab) usage(`--prompt-ids: ${id} is out of range (n_vocab ${nVocab})`);
      return id;
    });
  if (ids.length === 0) usage("--prompt-ids: no ids");
  return ids;
}

// The prebuilt CPU llama.cpp that @node-llama-cpp/linux-x64 ships. build "never" + skipDownload:
// if no prebuilt binary loads, this throws instead of cloning or compiling llama.cpp.
export async function loadLlama({ threads = 1, verbose = false } = {}) {
  return getLlama({
    gpu: false,
    build: "never",
    skipDownload: true,
    usePrebuiltBinaries: true,
    progressLogs: false,
    maxThreads: threads,
    logLevel: verbose ? LlamaLogLevel.info : LlamaLogLevel.error,
  });
}

// Model on the CPU, every tensor read from the file as stored (no repacking into other layouts
// would change results, but mmap keeps loading cheap).
export async function loadModel(llama, modelPath) {
  return llama.loadModel({ modelPath, gpuLayers: 0 });
}

// A context with an explicit size, batch and thread count. flashAttention false: llama.cpp's
// classic attention path (KQ mul_mat, soft_max, KQV mul_mat); KV cache f16 (llama.cpp's default,
// and graft's). Both can be changed for investigation.
export async function createContext(model, { contextSize, batchSize, threads = 1, flashAttention = false, kvType }) {
  const opts = {
    contextSize,
    batchSize,
    threads: { ideal: threads, min: threads },
    flashAttention,
    sequences: 1,
    ignoreMemorySafetyChecks: true,
  };
  if (kvType) {
    // "q8_0" for both, or "q8_0/q4_0": K then V (llama.cpp's -ctk / -ctv).
    const [k, v = k] = kvType.split("/");
    opts.experimentalKvCacheKeyType = k.toUpperCase();
    opts.experimentalKvCacheValueType = v.toUpperCase();
  }
  return model.createContext(opts);
}

// Sorted [token, probability] pairs: node-llama-cpp returns the map sorted best first.
export function topN(probabilities, n) {
  const out = [];
  for (const [token, p] of probabilities) {
    out.push([token, p]);
    if (out.length >= n) break;
  }
  return out;
}
