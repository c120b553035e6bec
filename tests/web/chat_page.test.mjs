// End to end: `graft serve`'s chat page at / in headless Chromium, against three servers: the zoo
// model (API key, errors, a streamed answer, Stop), the scripted model (real thinking apart from
// the answer, a thinking budget, thinking off) and the zoo model with `--draft ngram` (tokens per
// round). Run by run.mjs (CTest: web_chat_page, tests/web/CMakeLists.txt), or by hand from tests/web:
//   GRAFT_EXE=../../build/bin/graft node --test chat_page.test.mjs
// Environment: GRAFT_EXE (the graft binary), GRAFT_MODEL (the zoo .gguf), GRAFT_SCRIPTED_MODEL (the
// ctest fixture scripted_model's .gguf, scripted.json beside it), GRAFT_TEST_ARTIFACTS (where the
// screenshot goes), GRAFT_CHROMIUM (default /usr/bin/chromium).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import puppeteer from 'puppeteer-core';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..');
const exe = process.env.GRAFT_EXE || join(repo, 'build', 'bin', 'graft');
const model = process.env.GRAFT_MODEL || join(repo, 'models', 'zoo-qwen3-4x256.gguf');
const scriptedModel = process.env.GRAFT_SCRIPTED_MODEL || join(repo, 'build', 'test-models', 'scripted.gguf');
const artifacts = process.env.GRAFT_TEST_ARTIFACTS || join(repo, 'build', 'test-artifacts');
const chromium = process.env.GRAFT_CHROMIUM || '/usr/bin/chromium';
const API_KEY = 'web-test-key';

// ---- graft serve --------------------------------------------------------------------------------

// Starts `graft serve -m MODEL --port 0` and resolves once it prints "listening on http://HOST:PORT".
function startServer(model, args = []) {
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

// ---- the scripted model's script (tests/fixtures/scripted_model/scripted_model.hpp) -------------

// Greedy, it thinks four tokens, ends its sequence inside the thinking (graft forces </think>),
// then answers; the server returns the thinking without the whitespace that frames it.
const REASONING = 'Let me think. The user asks about weather. I should answer. Done.';
const REASONING_BUDGET_2 = 'Let me think. The user asks about weather.';  // thinking_budget_tokens: 2
const ANSWER = 'It is sunny in Paris.';

// ---- the test -----------------------------------------------------------------------------------

const servers = {};  // zoo (with an API key), scripted, ngram (the zoo with --draft ngram)
let browser;
process.on('exit', () => {  // even on a crash
  for (const s of Object.values(servers)) if (!s.exited) s.proc.kill('SIGKILL');
});

before(async () => {
  // The fixture and this file agree on the script.
  const sidecar = JSON.parse(readFileSync(scriptedModel.replace(/\.gguf$/, '.json'), 'utf8'));
  assert.equal(sidecar.texts?.reasoning?.trim(), REASONING, 'scripted.json texts.reasoning');
  assert.equal(sidecar.texts?.answer, ANSWER, 'scripted.json texts.answer');
  const started = await Promise.allSettled([
    startServer(model, ['--api-key', API_KEY, '-c', '4096']),  // room for an answer long enough to stop
    startServer(scriptedModel),
    startServer(model, ['--draft', 'ngram']),
  ]);
  ['zoo', 'scripted', 'ngram'].forEach((name, i) => {
    if (started[i].status === 'fulfilled') servers[name] = started[i].value;
  });
  const failed = started.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
  browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  });
});

after(async () => {
  if (browser) await browser.close();
  await Promise.all(Object.values(servers).map(stopServer));
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
const LAST = '[data-testid=msg-assistant]:last-of-type';

// Sends `message` (Enter) and waits until the page holds `n` answers and is no longer busy.
async function sendAndWait(page, message, n, timeout = 30_000) {
  await page.type('#input', message);
  await page.keyboard.press('Enter');
  await page.waitForFunction(
    (n) => document.querySelectorAll('[data-testid=msg-assistant]').length === n &&
      document.getElementById('composer').dataset.busy === 'false',
    { timeout },
    n,
  );
}

// Runs `body(page, seen)` on a fresh page at `server`'s chat page. `seen` records every request
// the page makes (none may go to another origin), the bodies of its chat requests and its
// uncaught errors (none allowed). On failure the page as it was goes to the artifacts.
async function onPage(server, name, body) {
  const page = await browser.newPage();
  const origin = new URL(server.origin).origin;
  const seen = { requests: [], foreign: [], chatBodies: [], pageErrors: [], origin };
  page.on('request', (req) => {
    const url = new URL(req.url());
    seen.requests.push(`${req.method()} ${req.url()}`);
    if (url.protocol === 'data:') return;  // no request at all
    if (url.origin !== origin) seen.foreign.push(req.url());
    else if (req.method() === 'POST' && url.pathname === '/v1/chat/completions')
      seen.chatBodies.push({ body: JSON.parse(req.postData()), auth: req.headers().authorization });
  });
  page.on('pageerror', (e) => seen.pageErrors.push(e.message));
  try {
    await page.setViewport({ width: 1100, height: 820 });
    await body(page, seen);
    assert.deepEqual(seen.foreign, [], `requests to other origins: ${seen.foreign.join(', ')}`);
    assert.ok(seen.requests.some((r) => r.startsWith('GET ') && r.endsWith('/chat.js')), seen.requests.join('\n'));
    assert.deepEqual(seen.pageErrors, []);
  } catch (e) {
    mkdirSync(artifacts, { recursive: true });
    const shot = join(artifacts, `chat_page_failure_${name}.png`);
    await page.screenshot({ path: shot }).catch(() => {});
    throw new Error(`${e.message}\n(the page as it was: ${shot}; graft serve said:\n${server.output})`, { cause: e });
  } finally {
    await page.close();
  }
}

// Opens the chat page and waits for its header (GET /props).
async function openChat(page, seen) {
  const res = await page.goto(`${seen.origin}/`, { waitUntil: 'load' });
  assert.equal(res.status(), 200);
  await page.waitForFunction(() => document.getElementById('props').dataset.loaded === 'true', { timeout: 10_000 });
}

test('zoo model: the API key, errors, a streamed answer with its figures, Stop', { timeout: 60_000 }, async () => {
  await onPage(servers.zoo, 'zoo', async (page, seen) => {
    const { chatBodies } = seen;

    // The page itself needs no key; its GET /props does, and says so.
    const res = await page.goto(`${seen.origin}/`, { waitUntil: 'load' });
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
    assert.equal(await text(page, '[data-testid=prop-drafters]'), 'off');
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
    await sendAndWait(page, 'Tell me about graft.', 1);
    assert.equal(await visible(page, '#error'), false);
    assert.ok((await text(page, `${LAST} [data-testid=answer]`)).length > 0);
    assert.ok(Number(await page.$eval(`${LAST} [data-testid=stat-decode]`, (e) => e.dataset.value)) > 0);
    const live = await page.$eval('[data-testid=stat-live]', (e) => Number(e.dataset.value));
    assert.ok(live > 0, `live tok/s ${live}`);
    // The live speed is the server's (its token count over its clock), near its final decode figure:
    // counting chunks over their arrival times showed 25000 tok/s beside a real 233.
    const decode = Number(await page.$eval(`${LAST} [data-testid=stat-decode]`, (e) => e.dataset.value));
    assert.ok(live <= 1.5 * decode, `live ${live} tok/s against the server's decode ${decode} tok/s`);
    assert.match(await text(page, '[data-testid=stat-stop]'), /^stop: (max_tokens|end_of_sequence|stop_string|context_full)$/);
    const completion = await page.$eval('[data-testid=stat-usage]', (e) => Number(e.dataset.value));
    assert.ok(completion > 0 && completion <= 48, `completion tokens ${completion}`);
    assert.equal(await page.$$eval('[data-testid=stat-tokens-per-round]', (e) => e.length), 0);  // no drafters
    const first = chatBodies.at(-1);
    assert.equal(first.auth, `Bearer ${API_KEY}`);
    assert.equal(first.body.stream, true);
    assert.deepEqual(first.body.stream_options, { include_usage: true });
    assert.deepEqual(first.body.chat_template_kwargs, { enable_thinking: true });
    assert.equal(first.body.max_tokens, 48);
    assert.equal(first.body.temperature, 0);
    assert.deepEqual(first.body.messages, [{ role: 'user', content: 'Tell me about graft.' }]);

    // Stop: a long answer aborted after its first words; the partial answer stays in the
    // conversation, and the server (which cancels the job when the stream goes) answers the next one.
    await setSetting(page, '#max-tokens', '4000');
    await page.type('#input', 'Go on at length.');
    await page.click('#send');
    await page.waitForFunction(
      (last) => document.querySelector(`${last} [data-testid=answer]`).textContent.length > 20,
      { timeout: 20_000 },
      LAST,
    );
    assert.equal(await visible(page, '#stop'), true, 'the answer to be stopped ended on its own');
    await page.click('#stop');
    await page.waitForFunction(() => document.getElementById('composer').dataset.busy === 'false', { timeout: 10_000 });
    assert.equal(await text(page, `${LAST} [data-testid=stat-stopped]`), 'stopped');
    assert.equal(await page.$$eval(`${LAST} [data-testid=stat-decode]`, (e) => e.length), 0);
    assert.equal(await visible(page, '#error'), false);
    await setSetting(page, '#max-tokens', '8');
    await sendAndWait(page, 'And briefly?', 3);
    assert.equal(await page.$$eval('[data-testid=stat-decode]', (e) => e.length), 2);
    const afterStop = chatBodies.at(-1).body.messages;
    assert.deepEqual(afterStop.map((m) => m.role), ['user', 'assistant', 'user', 'assistant', 'user']);
    assert.ok(afterStop[3].content.length > 20, 'the stopped answer is part of the conversation');
  });
});

test('scripted model: its thinking apart and folded, a thinking budget, thinking off', { timeout: 60_000 }, async () => {
  await onPage(servers.scripted, 'scripted', async (page, seen) => {
    const { chatBodies } = seen;
    await openChat(page, seen);
    assert.equal(await text(page, '[data-testid=prop-model]'), 'scripted');
    await setSetting(page, '#temperature', '0');
    await setSetting(page, '#max-tokens', '64');

    // Thinking on, no budget: the whole reasoning in a folded Thinking block, then the answer the
    // model gives after graft forced the end of its thinking.
    await sendAndWait(page, 'What is the weather in Paris?', 1);
    assert.equal(await visible(page, '#error'), false);
    assert.equal(await visible(page, `${LAST} [data-testid=thinking]`), true);
    assert.equal(await page.$eval(`${LAST} [data-testid=thinking]`, (e) => e.open), false);  // folded
    assert.equal(await text(page, `${LAST} [data-testid=thinking] summary`), 'Thinking');
    assert.equal(await text(page, `${LAST} [data-testid=thinking-text]`), REASONING);
    assert.equal(await text(page, `${LAST} [data-testid=answer]`), ANSWER);
    assert.equal(await text(page, `${LAST} [data-testid=stat-stop]`), 'stop: end_of_sequence');
    assert.ok(Number(await page.$eval(`${LAST} [data-testid=stat-decode]`, (e) => e.dataset.value)) > 0);
    assert.match(await text(page, `${LAST} [data-testid=stat-usage]`), /^prompt \d+ · completion \d+ tokens$/);
    let body = chatBodies.at(-1).body;
    assert.deepEqual(body.chat_template_kwargs, { enable_thinking: true });
    assert.equal('thinking_budget_tokens' in body, false);
    await page.click(`${LAST} [data-testid=thinking] summary`);
    assert.equal(await page.$eval(`${LAST} [data-testid=thinking]`, (e) => e.open), true);
    assert.equal(await visible(page, `${LAST} [data-testid=thinking-text]`), true);

    // The picture: reasoning (open), answer and figures.
    await page.$eval('#settings', (d) => { d.open = false; });
    mkdirSync(artifacts, { recursive: true });
    const shot = join(artifacts, 'chat_page.png');
    await page.screenshot({ path: shot });
    console.log(`screenshot: ${shot}`);

    // A thinking budget of 2 tokens: the reasoning stops after two, the answer follows. The whole
    // conversation goes, the earlier answer without its thinking.
    await setSetting(page, '#thinking-budget', '2');
    await sendAndWait(page, 'And tomorrow?', 2);
    assert.equal(await text(page, `${LAST} [data-testid=thinking-text]`), REASONING_BUDGET_2);
    assert.equal(await page.$eval(`${LAST} [data-testid=thinking]`, (e) => e.open), false);
    assert.equal(await text(page, `${LAST} [data-testid=answer]`), ANSWER);
    body = chatBodies.at(-1).body;
    assert.equal(body.thinking_budget_tokens, 2);
    assert.deepEqual(body.messages, [
      { role: 'user', content: 'What is the weather in Paris?' },
      { role: 'assistant', content: ANSWER },
      { role: 'user', content: 'And tomorrow?' },
    ]);

    // Thinking off: no Thinking block, just the answer (and no budget sent).
    await page.$eval('#settings', (d) => { d.open = true; });
    await page.click('#thinking');
    assert.equal(await page.$eval('#thinking-budget', (e) => e.disabled), true);
    await sendAndWait(page, 'Thanks.', 3);
    assert.equal(await visible(page, `${LAST} [data-testid=thinking]`), false);
    assert.equal(await text(page, `${LAST} [data-testid=thinking-text]`), '');
    assert.equal(await text(page, `${LAST} [data-testid=answer]`), ANSWER);
    body = chatBodies.at(-1).body;
    assert.deepEqual(body.chat_template_kwargs, { enable_thinking: false });
    assert.equal('thinking_budget_tokens' in body, false);
    assert.equal(body.messages.length, 5);
  });
});

test('zoo model with --draft ngram: the answer\'s tokens per round', { timeout: 60_000 }, async () => {
  await onPage(servers.ngram, 'ngram', async (page, seen) => {
    await openChat(page, seen);
    assert.equal(await text(page, '[data-testid=prop-drafters]'), 'ngram');
    await setSetting(page, '#temperature', '0');
    await setSetting(page, '#max-tokens', '48');
    // The zoo's greedy answer repeats ("import sys\nimport sys\n..."): the n-gram drafter's guesses
    // are taken several at a time.
    await sendAndWait(page, 'import sys', 1);
    assert.equal(await visible(page, '#error'), false);
    assert.match(await text(page, `${LAST} [data-testid=answer]`), /^import sys\nimport sys\n/);
    const perRound = await page.$eval(`${LAST} [data-testid=stat-tokens-per-round]`, (e) => Number(e.dataset.value));
    assert.ok(perRound > 1, `tokens per round ${perRound}`);
    assert.equal(await text(page, `${LAST} [data-testid=stat-tokens-per-round]`), `${perRound.toFixed(2)} tokens/round`);
  });
});
