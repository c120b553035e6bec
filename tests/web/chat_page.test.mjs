// End to end: `graft serve` on the zoo model, its chat page at / in headless Chromium.
// Run by run.mjs (CTest: web_chat_page, tests/web/CMakeLists.txt), or by hand from tests/web:
//   GRAFT_EXE=../../build/bin/graft node --test chat_page.test.mjs
// Environment: GRAFT_EXE (the graft binary), GRAFT_MODEL (a .gguf), GRAFT_TEST_ARTIFACTS (where the
// screenshot goes), GRAFT_CHROMIUM (default /usr/bin/chromium).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import puppeteer from 'puppeteer-core';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..');
const exe = process.env.GRAFT_EXE || join(repo, 'build', 'bin', 'graft');
const model = process.env.GRAFT_MODEL || join(repo, 'models', 'zoo-qwen3-4x256.gguf');
const artifacts = process.env.GRAFT_TEST_ARTIFACTS || join(repo, 'build', 'test-artifacts');
const chromium = process.env.GRAFT_CHROMIUM || '/usr/bin/chromium';
const API_KEY = 'web-test-key';

// ---- graft serve --------------------------------------------------------------------------------

// Starts `graft serve --port 0` and resolves once it prints "listening on http://HOST:PORT".
function startServer(args) {
  return new Promise((resolveStart, rejectStart) => {
    const proc = spawn(exe, ['serve', '-m', model, '--port', '0', '-t', '1', ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const server = { proc, origin: null, output: '' };
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      rejectStart(new Error(`graft serve did not say where it listens within 60 s:\n${server.output}`));
    }, 60_000);
    const onData = (chunk) => {
      server.output += chunk;  // read on to the end, so the server never blocks on a full pipe
      const m = !server.origin && server.output.match(/listening on (http:\/\/[^\s]+)/);
      if (m) {
        server.origin = m[1];
        clearTimeout(timer);
        resolveStart(server);
      }
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    proc.on('error', (e) => {
      clearTimeout(timer);
      rejectStart(new Error(`cannot start ${exe}: ${e.message}`));
    });
    proc.on('exit', (code, signal) => {
      server.exited = true;
      clearTimeout(timer);
      if (!server.origin) rejectStart(new Error(`graft serve exited (${code ?? signal}) before listening:\n${server.output}`));
    });
  });
}

async function stopServer(server) {
  if (!server || server.exited) return;
  const exited = new Promise((r) => server.proc.once('exit', r));
  server.proc.kill('SIGTERM');
  const timer = setTimeout(() => server.proc.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

// ---- the test -----------------------------------------------------------------------------------

let server;
let browser;
process.on('exit', () => server && !server.exited && server.proc.kill('SIGKILL'));  // even on a crash

before(async () => {
  server = await startServer(['--api-key', API_KEY, '-c', '4096']);  // room for an answer long enough to stop
  browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  });
});

after(async () => {
  if (browser) await browser.close();
  await stopServer(server);
});

// Types into a field under Settings (opened if folded), replacing what it held; Tab fires 'change'.
async function setSetting(page, selector, value) {
  await page.$eval('#settings', (d) => { d.open = true; });
  await page.$eval(selector, (e) => { e.value = ''; });
  await page.type(selector, value);
  await page.keyboard.press('Tab');
}

const text = (page, selector) => page.$eval(selector, (e) => e.textContent);
const visible = (page, selector) => page.$eval(selector, (e) => !e.hidden && e.offsetParent !== null);

// A canned SSE answer with thinking apart (delta.reasoning_content) and speculative decoding's
// tokens_per_round, which the zoo model under the test's flags does not produce.
function cannedStream() {
  const chunk = (delta, finish, extra = {}) =>
    `data: ${JSON.stringify({ object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
  return [
    chunk({ role: 'assistant', content: '' }, null),
    chunk({ reasoning_content: 'The user asks for a fact. ' }, null),
    chunk({ reasoning_content: 'Keep it short.' }, null),
    chunk({ content: 'Graft serves ' }, null),
    chunk({ content: 'this page from its own binary.' }, null),
    chunk({}, 'stop', { graft: { stop_reason: 'end_of_sequence', decode_tokens_per_second: 123.4, prefill_tokens_per_second: 456.7, tokens_per_round: 2.5 } }),
    `data: ${JSON.stringify({ object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 30, completion_tokens: 9, total_tokens: 39, prompt_tokens_details: { cached_tokens: 12 } } })}\n\n`,
    'data: [DONE]\n\n',
  ].join('');
}

test('the chat page streams an answer with its figures, from this origin only', { timeout: 110_000 }, async () => {
  const page = await browser.newPage();
  try {
    await chat(page);
  } catch (e) {
    mkdirSync(artifacts, { recursive: true });
    await page.screenshot({ path: join(artifacts, 'chat_page_failure.png') }).catch(() => {});
    throw new Error(`${e.message}\n(the page as it was: ${join(artifacts, 'chat_page_failure.png')}; graft serve said:\n${server.output})`, { cause: e });
  } finally {
    await page.close();
  }
});

async function chat(page) {
  await page.setViewport({ width: 1100, height: 820 });
  const origin = new URL(server.origin).origin;

  // Every request the page makes: to this server only (data: URLs are no request at all).
  const requests = [];
  const foreign = [];
  const chatBodies = [];
  let cannedNext = false;
  await page.setRequestInterception(true);
  page.on('request', (req) => {
    const url = new URL(req.url());
    requests.push(`${req.method()} ${req.url()}`);
    if (url.protocol === 'data:') return req.continue();
    if (url.origin !== origin) {
      foreign.push(req.url());
      return req.abort();
    }
    if (req.method() === 'POST' && url.pathname === '/v1/chat/completions') {
      chatBodies.push({ body: JSON.parse(req.postData()), auth: req.headers().authorization });
      if (cannedNext) {
        cannedNext = false;
        return req.respond({ status: 200, contentType: 'text/event-stream', body: cannedStream() });
      }
    }
    return req.continue();
  });
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));

  // The page itself needs no key; its GET /props does, and says so.
  const res = await page.goto(`${origin}/`, { waitUntil: 'load' });
  assert.equal(res.status(), 200);
  assert.match(res.headers()['content-type'], /^text\/html; charset=utf-8/);
  await page.waitForFunction(() => !document.getElementById('error').hidden, { timeout: 10_000 });
  assert.match(await text(page, '#error'), /401/);

  // With the key typed in Settings, the header fills from GET /props.
  await setSetting(page, '#api-key', API_KEY);  // 'change': saved, /props fetched again
  await page.waitForFunction(() => document.getElementById('props').dataset.loaded === 'true', { timeout: 10_000 });
  assert.equal(await text(page, '[data-testid=prop-model]'), 'zoo-qwen3-4x256');
  assert.equal(await text(page, '[data-testid=prop-profile]'), 'built-in defaults');
  assert.equal(await text(page, '[data-testid=prop-context]'), '4096 tokens per request');
  assert.equal(await visible(page, '#error'), false);
  assert.equal(await page.evaluate(() => localStorage.getItem('graft.chat.api-key')), API_KEY);

  // A request the server refuses: its error message in the page, the question back in the box.
  await setSetting(page, '#max-tokens', '-1');
  await page.type('#input', 'hello');
  await page.click('#send');
  await page.waitForFunction(() => !document.getElementById('error').hidden, { timeout: 20_000 });
  assert.match(await text(page, '#error'), /^400: .*max_tokens/);
  assert.equal(await page.$eval('#input', (e) => e.value), 'hello');
  assert.equal((await page.$$('[data-testid=msg-user]')).length, 0);

  // A real answer, streamed from the zoo model: greedy (temperature 0), so that every run gets the
  // same answers (the one to be stopped below must not end on its own first).
  await setSetting(page, '#temperature', '0');
  await setSetting(page, '#max-tokens', '48');
  await page.$eval('#input', (e) => { e.value = ''; });
  await page.type('#input', 'Tell me about graft.');
  await page.keyboard.press('Enter');
  await page.waitForFunction(
    () => {
      const answer = document.querySelector('[data-testid=msg-assistant] [data-testid=answer]');
      const decode = document.querySelector('[data-testid=msg-assistant] [data-testid=stat-decode]');
      return answer && answer.textContent.length > 0 && decode && Number(decode.dataset.value) > 0;
    },
    { timeout: 60_000 },
  );
  await page.waitForFunction(() => document.getElementById('composer').dataset.busy === 'false', { timeout: 10_000 });
  assert.equal(await visible(page, '#error'), false);
  const live = await page.$eval('[data-testid=stat-live]', (e) => Number(e.dataset.value));
  assert.ok(live > 0, `live tok/s ${live}`);
  assert.match(await text(page, '[data-testid=stat-stop]'), /^stop: (max_tokens|end_of_sequence|stop_string|context_full)$/);
  const completion = await page.$eval('[data-testid=stat-usage]', (e) => Number(e.dataset.value));
  assert.ok(completion > 0 && completion <= 48, `completion tokens ${completion}`);
  const first = chatBodies.at(-1);
  assert.equal(first.auth, `Bearer ${API_KEY}`);
  assert.equal(first.body.stream, true);
  assert.deepEqual(first.body.stream_options, { include_usage: true });
  assert.deepEqual(first.body.chat_template_kwargs, { enable_thinking: true });
  assert.equal(first.body.max_tokens, 48);
  assert.equal(first.body.temperature, 0);
  assert.deepEqual(first.body.messages, [{ role: 'user', content: 'Tell me about graft.' }]);

  // A second turn (answered by the canned stream): the whole conversation goes, the thinking shows
  // folded above the answer, and graft's figures include tokens_per_round.
  await setSetting(page, '#thinking-budget', '64');
  cannedNext = true;
  await page.type('#input', 'Where does this page come from?');
  await page.click('#send');
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=stat-tokens-per-round]').length === 1, {
    timeout: 20_000,
  });
  const second = chatBodies.at(-1).body;
  assert.equal(second.messages.length, 3);
  assert.deepEqual(second.messages.map((m) => m.role), ['user', 'assistant', 'user']);
  assert.ok(second.messages[1].content.length > 0);
  assert.equal(second.thinking_budget_tokens, 64);
  const last = '[data-testid=msg-assistant]:last-of-type';
  assert.equal(await text(page, `${last} [data-testid=answer]`), 'Graft serves this page from its own binary.');
  assert.equal(await text(page, `${last} [data-testid=thinking-text]`), 'The user asks for a fact. Keep it short.');
  assert.equal(await page.$eval(`${last} [data-testid=thinking]`, (e) => e.open), false);  // folded
  assert.equal(await text(page, `${last} [data-testid=stat-tokens-per-round]`), '2.50 tokens/round');
  assert.equal(await text(page, `${last} [data-testid=stat-decode]`), 'decode 123.4 tok/s');
  assert.equal(await text(page, `${last} [data-testid=stat-usage]`), 'prompt 30 (12 cached) · completion 9 tokens');
  await page.click(`${last} [data-testid=thinking] summary`);
  assert.equal(await page.$eval(`${last} [data-testid=thinking]`, (e) => e.open), true);

  // Thinking inline in the answer (<think>...</think>, tags split across chunks) is split out too.
  const split = await page.evaluate(() => {
    const run = (pieces) => {
      const s = new ThinkSplitter();
      const out = ['', ''];
      for (const p of [...pieces.map((x) => s.push(x)), s.flush()]) { out[0] += p[0]; out[1] += p[1]; }
      return out;
    };
    return [run(['<th', 'ink>', 'Hmm, ', 'fine.</th', 'ink>\n\n', 'The answer.']), run(['\n', 'No <think> here.']),
            run(['<think>', 'cut off'])];
  });
  assert.deepEqual(split, [['Hmm, fine.', 'The answer.'], ['', '\nNo <think> here.'], ['cut off', '']]);

  await page.$eval('#settings', (d) => { d.open = false; });  // folded for the picture
  mkdirSync(artifacts, { recursive: true });
  const shot = join(artifacts, 'chat_page.png');
  await page.screenshot({ path: shot });
  console.log(`screenshot: ${shot}`);

  // Stop: a long answer aborted after its first words; the partial answer stays in the
  // conversation, and the server (which cancels the job when the stream goes) answers the next one.
  await setSetting(page, '#max-tokens', '4000');
  await page.type('#input', 'Go on at length.');
  await page.click('#send');
  await page.waitForFunction(
    () => document.querySelector('[data-testid=msg-assistant]:last-of-type [data-testid=answer]').textContent.length > 20,
    { timeout: 20_000 },
  );
  assert.equal(await visible(page, '#stop'), true, 'the answer to be stopped ended on its own');
  await page.click('#stop');
  await page.waitForFunction(() => document.getElementById('composer').dataset.busy === 'false', { timeout: 10_000 });
  assert.equal(await text(page, `${last} [data-testid=stat-stopped]`), 'stopped');
  assert.equal(await page.$$eval(`${last} [data-testid=stat-decode]`, (e) => e.length), 0);
  assert.equal(await visible(page, '#error'), false);
  await setSetting(page, '#max-tokens', '8');
  await page.type('#input', 'And briefly?');
  await page.click('#send');
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=stat-decode]').length === 3, { timeout: 30_000 });
  const afterStop = chatBodies.at(-1).body.messages;
  assert.equal(afterStop.length, 7);
  assert.ok(afterStop[5].content.length > 20, 'the stopped answer is part of the conversation');

  assert.deepEqual(foreign, [], `requests to other origins: ${foreign.join(', ')}`);
  assert.ok(requests.some((r) => r.startsWith('GET ') && r.endsWith('/chat.js')), requests.join('\n'));
  assert.deepEqual(pageErrors, []);
}
