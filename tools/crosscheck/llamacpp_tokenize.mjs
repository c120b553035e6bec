#!/usr/bin/env node
// llama.cpp's tokenizer on a file, printed like `graft tokenize --ids`: [id, id, ...].
//
//   node llamacpp_tokenize.mjs --model F --file TEXT [--no-bos]
//
// model.tokenize(text) is llama_tokenize with add_special=false, parse_special=false; BOS is
// prepended when the vocabulary adds one (llama_vocab_get_add_bos), unless --no-bos. That is what
// `graft tokenize --model F --prompt-file TEXT --ids` (add_special, no parse_special) prints.
import fs from "node:fs";
import process from "node:process";
import { loadLlama, parseArgs, setUsage, usage } from "./lib.mjs";

setUsage("usage: node llamacpp_tokenize.mjs --model F --file TEXT [--no-bos]");
const args = parseArgs(process.argv.slice(2), { model: "string", file: "string", "no-bos": "bool" }, { m: "model", f: "file" });
if (!args.model || !args.file) usage("--model and --file are required");
const text = fs.readFileSync(args.file, "utf8");
const llama = await loadLlama({ threads: 1 });
const model = await llama.loadModel({ modelPath: args.model, gpuLayers: 0, vocabOnly: true });
const ids = Array.from(model.tokenize(text, false));
if (!args["no-bos"] && model.tokens.shouldPrependBosToken && model.tokens.bos != null) ids.unshift(model.tokens.bos);
process.stdout.write(`[${ids.join(", ")}]\n`);
await model.dispose();
await llama.dispose();
