#!/usr/bin/env node
// Checks that node-llama-cpp loads its prebuilt CPU llama.cpp binary (no download, no build).
import { loadLlama } from "./lib.mjs";

const llama = await loadLlama({ threads: 1 });
console.log(
  `llama.cpp prebuilt binary OK: release ${llama.llamaCppRelease.release}, gpu ${llama.gpu}, ` +
    `build type ${llama.buildType}, cpu math cores ${llama.cpuMathCores}`,
);
await llama.dispose();
