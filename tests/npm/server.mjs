// Starts `graft serve` as a child process for the npm-client tests and stops it again.
//
// Environment (set by tests/npm/CMakeLists.txt): GRAFT_EXE, GRAFT_ZOO_MODEL, GRAFT_SCRIPTED_MODEL
// (the scripted_model fixture's GGUF; its scripted.json lies beside it).
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

export const GRAFT_EXE = process.env.GRAFT_EXE;
export const ZOO_MODEL = process.env.GRAFT_ZOO_MODEL;
export const SCRIPTED_MODEL = process.env.GRAFT_SCRIPTED_MODEL;

// Every server still running when the process exits is killed (a test that threw before its
// after() hook, an unhandled rejection): no graft serve outlives the test file.
const running = new Set();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

// null when the scripted model is there; otherwise why its tests are skipped.
export function scriptedModelMissing() {
  if (!SCRIPTED_MODEL) return 'GRAFT_SCRIPTED_MODEL is not set (ctest sets it; the scripted_model fixture writes the file)';
  if (!existsSync(SCRIPTED_MODEL))
    return `the scripted model ${SCRIPTED_MODEL} is missing (the ctest fixture scripted_model writes it)`;
  return null;
}

// scripted.json beside the scripted model: {"tokens": {"<tool_call>": id, ...}, "texts": {...}}.
export function scriptedInfo() {
  const file = path.join(path.dirname(SCRIPTED_MODEL), path.basename(SCRIPTED_MODEL, '.gguf') + '.json');
  return JSON.parse(readFileSync(file, 'utf8'));
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Starts `graft serve --port 0 -t 1 -m MODEL [--api-key KEY] [args...]` and resolves once it
// prints the bound port and /health answers 200. Returns {url, baseURL, port, stop(), log()}:
// url is http://127.0.0.1:PORT, baseURL the OpenAI client's (url + /v1). stop() is idempotent and
// always resolves; call it from after() (the exit handler above is the last resort).
export async function startServer({ model, apiKey, args = [], startTimeoutMs = 60000 } = {}) {
  if (!GRAFT_EXE || !existsSync(GRAFT_EXE)) throw new Error(`GRAFT_EXE (${GRAFT_EXE}) is not a file`);
  if (!model || !existsSync(model)) throw new Error(`model ${model} is not a file`);
  const argv = ['serve', '--port', '0', '-t', '1', '-m', model, ...(apiKey ? ['--api-key', apiKey] : []), ...args];
  const child = spawn(GRAFT_EXE, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  let output = '';
  let exited = null;
  const exitPromise = new Promise((resolve) => {
    // close, not exit: it comes after stdout and stderr are read to their end.
    child.on('close', (code, signal) => {
      exited = { code, signal };
      running.delete(child);
      resolve(exited);
    });
  });
  const portPromise = new Promise((resolve) => {
    const onData = (d) => {
      output += d.toString();
      // serve_command.cpp: "graft serve: listening on http://HOST:PORT (model ..."
      const m = /listening on http:\/\/[^\s]+:(\d+)/.exec(output);
      if (m) resolve(Number(m[1]));
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
  });
  const stop = async () => {
    if (exited) return exited;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10000);
    const r = await exitPromise;
    clearTimeout(timer);
    return r;
  };
  const log = () => output;
  try {
    let timer;
    const deadline = new Promise((r) => (timer = setTimeout(() => r('timeout'), startTimeoutMs)));
    const port = await Promise.race([portPromise, exitPromise.then(() => 'exited'), deadline]);
    clearTimeout(timer);
    if (typeof port !== 'number')
      throw new Error(`graft serve did not print its port (${port}); ${argv.join(' ')}; output:\n${output}`);
    const url = `http://127.0.0.1:${port}`;
    for (const until = Date.now() + startTimeoutMs; ; ) {
      try {
        const r = await fetch(`${url}/health`);
        if (r.status === 200) break;
      } catch {
        // not accepting yet
      }
      if (exited || Date.now() > until) throw new Error(`graft serve's /health never answered 200; output:\n${output}`);
      await sleep(50);
    }
    return { url, baseURL: `${url}/v1`, port, stop, log };
  } catch (e) {
    await stop();
    throw e;
  }
}

// GET /metrics parsed into {name or name{labels}: number}.
export async function metrics(url, headers = {}) {
  const r = await fetch(`${url}/metrics`, { headers });
  if (r.status !== 200) throw new Error(`/metrics answered ${r.status}`);
  const out = {};
  for (const line of (await r.text()).split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out[line.slice(0, i)] = Number(line.slice(i + 1));
  }
  return out;
}

// Polls /metrics until nothing is running or queued (a cancelled stream stops at its next token).
export async function waitIdle(url, headers = {}, timeoutMs = 10000) {
  let m;
  for (const until = Date.now() + timeoutMs; Date.now() < until; await sleep(50)) {
    m = await metrics(url, headers);
    if (m.graft_requests_running === 0 && m.graft_queue_depth === 0) return m;
  }
  return m;
}
