// CTest's entry for the web tests (tests/web/CMakeLists.txt): checks that what they need is
// installed (and that the scripted model, the ctest fixture scripted_model, is there), else exits 77
// (CTest's SKIP_RETURN_CODE) saying why, then runs them with Node's own test runner, `node --test`.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const chromium = process.env.GRAFT_CHROMIUM || '/usr/bin/chromium';
const scripted = process.env.GRAFT_SCRIPTED_MODEL || resolve(here, '..', '..', 'build', 'test-models', 'scripted.gguf');

const missing = [];
if (!existsSync(join(here, 'node_modules', 'puppeteer-core', 'package.json')))
  missing.push(`${join(here, 'node_modules')} (npm ci in tests/web)`);
if (!existsSync(chromium)) missing.push(`${chromium} (the Debian package chromium)`);
if (!existsSync(scripted)) missing.push(`${scripted} (the ctest fixture scripted_model writes it)`);
if (missing.length) {
  console.log(`SKIP: the web tests need ${missing.join(' and ')}: run tools/test.sh, which installs them`);
  process.exit(77);
}

const files = process.argv.slice(2);
const run = spawnSync(process.execPath, ['--test', '--test-reporter=spec', ...(files.length ? files : ['chat_page.test.mjs'])],
                      { cwd: here, stdio: 'inherit' });
process.exit(run.status ?? 1);
