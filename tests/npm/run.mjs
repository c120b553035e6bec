// ctest's entry point: node run.mjs FILE.test.mjs runs one test file with Node's test runner.
// Exit 77 (ctest's SKIP_RETURN_CODE) when the npm clients are not installed, or for a
// *_scripted test file when the scripted model is missing; the reason is printed.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const file = process.argv[2];
if (!file) {
  console.error('usage: node run.mjs FILE.test.mjs');
  process.exit(2);
}
if (!existsSync(path.join(here, 'node_modules', 'openai')) || !existsSync(path.join(here, 'node_modules', '@anthropic-ai', 'sdk'))) {
  console.log(`SKIP: ${here}/node_modules is missing: run tools/test.sh, which installs them (or tools/test_setup.sh; npm ci in tests/npm)`);
  process.exit(77);
}
if (/_scripted\.test\.mjs$/.test(file)) {
  const m = process.env.GRAFT_SCRIPTED_MODEL;
  if (!m || !existsSync(m)) {
    console.log(`SKIP: the scripted model ${m ?? '(GRAFT_SCRIPTED_MODEL unset)'} is missing: the ctest fixture scripted_model writes it`);
    process.exit(77);
  }
}
const r = spawnSync(process.execPath, ['--test', '--test-reporter=spec', path.resolve(here, file)], { stdio: 'inherit', cwd: here });
if (r.error) throw r.error;
process.exit(r.status ?? 1);
