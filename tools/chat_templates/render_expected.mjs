// Renders every stored chat template x conversation with the reference implementation
// (@huggingface/jinja, pinned in package.json) into tests/data/chat_templates/expected/.
// Run: cd tools/chat_templates && npm install && node render_expected.mjs
// A case the reference rejects is stored as <template>__<case>.error.txt holding its message.
import { Template } from "@huggingface/jinja";

// strftime_now() must be deterministic: local time is UTC and "now" is the instant the C++ test
// injects (templates_test.cpp, kFixedNow).
process.env.TZ = "UTC";
const FIXED_NOW = Date.UTC(2024, 6, 26, 12, 0, 0);
const RealDate = Date;
globalThis.Date = class extends RealDate {
  constructor(...args) {
    super(...(args.length ? args : [FIXED_NOW]));
  }
  static now() {
    return FIXED_NOW;
  }
};
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const dataDir = path.resolve(here, "../../tests/data/chat_templates");
const outDir = path.join(dataDir, "expected");
const spec = JSON.parse(fs.readFileSync(path.join(dataDir, "conversations.json"), "utf8"));

fs.rmSync(outDir, { recursive: true, force: true });
fs.mkdirSync(outDir);
const templates = fs.readdirSync(dataDir).filter((f) => f.endsWith(".jinja")).sort();
let written = 0;
for (const file of templates) {
  const name = file.slice(0, -".jinja".length);
  const tokens = spec.tokens[name];
  if (!tokens) throw new Error(`conversations.json has no tokens for ${name}`);
  const template = new Template(fs.readFileSync(path.join(dataDir, file), "utf8"));
  for (const [caseName, c] of Object.entries(spec.cases)) {
    if (c.only && !c.only.includes(name)) continue;
    if (c.except && c.except.includes(name)) continue;
    const context = { ...tokens };
    for (const [k, v] of Object.entries(c)) if (!["only", "except", "_comment"].includes(k)) context[k] = v;
    const base = path.join(outDir, `${name}__${caseName}`);
    try {
      fs.writeFileSync(`${base}.txt`, template.render(structuredClone(context)));
    } catch (e) {
      fs.writeFileSync(`${base}.error.txt`, String(e.message));
    }
    written++;
  }
}
console.log(`wrote ${written} files to ${path.relative(process.cwd(), outDir)}`);
