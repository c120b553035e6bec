// graft serve driven by the official `openai` npm client, on the committed zoo model (no
// reasoning, no tools): chat and completions whole and streamed, the models list, a bad request,
// the API key, and a stream cancelled mid-way. The scripted-model tests (reasoning, budgets,
// tool calls) are in openai_scripted.test.mjs.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI, { APIUserAbortError, AuthenticationError, BadRequestError } from 'openai';
import { metrics, startServer, waitIdle, ZOO_MODEL } from './server.mjs';

const MODEL = 'zoo-qwen3-4x256';
const messages = [{ role: 'user', content: 'Tell me a story about a cat.' }];
const prompt = 'Once upon a time';

function checkUsage(usage, completionTokens) {
  assert.equal(typeof usage.prompt_tokens, 'number');
  assert.ok(usage.prompt_tokens > 0);
  assert.equal(usage.completion_tokens, completionTokens);
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
}

describe('openai client, zoo model', () => {
  let server;
  let client;
  before(async () => {
    // A 4096-token context: the cancelled stream below could run for seconds if not stopped.
    server = await startServer({ model: ZOO_MODEL, args: ['-c', '4096'] });
    client = new OpenAI({ baseURL: server.baseURL, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => {
    await server?.stop();
  });

  test('models list', async () => {
    const ids = [];
    for await (const m of client.models.list()) ids.push(m.id);
    assert.deepEqual(ids, [MODEL]);
  });

  test('chat: non-streamed equals streamed at temperature 0, finish_reason length, usage adds up', async () => {
    const whole = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 8, temperature: 0 });
    assert.equal(whole.object, 'chat.completion');
    assert.equal(whole.choices.length, 1);
    const choice = whole.choices[0];
    assert.equal(choice.message.role, 'assistant');
    assert.equal(typeof choice.message.content, 'string');
    assert.ok(choice.message.content.length > 0, 'content is empty');
    assert.equal(choice.finish_reason, 'length');
    checkUsage(whole.usage, 8);

    const stream = await client.chat.completions.create({
      model: MODEL, messages, max_tokens: 8, temperature: 0, stream: true, stream_options: { include_usage: true },
    });
    let text = '';
    let finish = null;
    let usage = null;
    let role = null;
    for await (const chunk of stream) {
      assert.equal(chunk.object, 'chat.completion.chunk');
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        if (c.delta?.role) role = c.delta.role;
        if (c.delta?.content) text += c.delta.content;
        if (c.finish_reason) finish = c.finish_reason;
      }
    }
    assert.equal(role, 'assistant');
    assert.equal(text, choice.message.content);
    assert.equal(finish, 'length');
    assert.ok(usage, 'no usage chunk with stream_options.include_usage');
    checkUsage(usage, 8);
    assert.equal(usage.prompt_tokens, whole.usage.prompt_tokens);
  });

  test('completions: non-streamed equals streamed at temperature 0', async () => {
    const whole = await client.completions.create({ model: MODEL, prompt, max_tokens: 8, temperature: 0 });
    assert.equal(whole.object, 'text_completion');
    assert.equal(whole.choices.length, 1);
    assert.ok(whole.choices[0].text.length > 0, 'text is empty');
    assert.equal(whole.choices[0].finish_reason, 'length');
    checkUsage(whole.usage, 8);

    const stream = await client.completions.create({
      model: MODEL, prompt, max_tokens: 8, temperature: 0, stream: true, stream_options: { include_usage: true },
    });
    let text = '';
    let finish = null;
    let usage = null;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        text += c.text ?? '';
        if (c.finish_reason) finish = c.finish_reason;
      }
    }
    assert.equal(text, whole.choices[0].text);
    assert.equal(finish, 'length');
    assert.ok(usage, 'no usage chunk with stream_options.include_usage');
    checkUsage(usage, 8);
  });

  test('a bad request is a 400 BadRequestError naming the field', async () => {
    await assert.rejects(
      client.chat.completions.create({ model: MODEL, messages, max_tokens: 8, temperature: 500 }),
      (e) => {
        assert.ok(e instanceof BadRequestError, `${e.constructor.name}: ${e.message}`);
        assert.equal(e.status, 400);
        assert.match(e.message, /temperature/);
        assert.equal(e.param, 'temperature');
        return true;
      },
    );
    await assert.rejects(client.completions.create({ model: MODEL, prompt: '', max_tokens: 8 }), (e) => {
      assert.ok(e instanceof BadRequestError, `${e.constructor.name}: ${e.message}`);
      assert.match(e.message, /prompt/);
      return true;
    });
  });

  test('cancellation: a stream aborted mid-way stops; the server answers the next request and ends idle', async () => {
    const before = await metrics(server.url);
    const ac = new AbortController();
    const stream = await client.chat.completions.create(
      { model: MODEL, messages, max_tokens: 100000, temperature: 0, stream: true },
      { signal: ac.signal },
    );
    let chunks = 0;
    let finish = null;
    try {
      for await (const chunk of stream) {
        if (chunk.choices[0]?.finish_reason) finish = chunk.choices[0].finish_reason;
        if (++chunks === 3) {
          // The SDK still yields the events it has buffered after an abort: stop reading too.
          ac.abort();
          break;
        }
      }
    } catch (e) {
      // openai 6.x ends the iteration quietly on its own abort; a rejection must be the abort.
      assert.ok(e instanceof APIUserAbortError || e.name === 'AbortError', `${e.constructor.name}: ${e.message}`);
    }
    assert.equal(chunks, 3);
    assert.equal(finish, null);

    const next = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 4, temperature: 0 });
    assert.ok(next.choices[0].message.content.length > 0);
    assert.equal(next.usage.completion_tokens, 4);

    const m = await waitIdle(server.url);
    assert.equal(m.graft_requests_running, 0, 'a generation is still running');
    assert.equal(m.graft_queue_depth, 0, 'a request is still queued');
    assert.equal(m.graft_generations_total, before.graft_generations_total + 2);
    // The aborted stream stopped long before its context (4096 tokens) was full.
    const aborted = m.graft_generated_tokens_total - before.graft_generated_tokens_total - 4;
    assert.ok(aborted < 1000, `the aborted stream generated ${aborted} tokens`);
  });
});

describe('openai client, --api-key', () => {
  const KEY = 'sk-graft-test-key';
  let server;
  before(async () => {
    server = await startServer({ model: ZOO_MODEL, apiKey: KEY });
  });
  after(async () => {
    await server?.stop();
  });

  test('a wrong key is a 401 AuthenticationError', async () => {
    const wrong = new OpenAI({ baseURL: server.baseURL, apiKey: 'sk-wrong', maxRetries: 0 });
    await assert.rejects(wrong.chat.completions.create({ model: MODEL, messages, max_tokens: 2 }), (e) => {
      assert.ok(e instanceof AuthenticationError, `${e.constructor.name}: ${e.message}`);
      assert.equal(e.status, 401);
      return true;
    });
    await assert.rejects(wrong.models.list(), AuthenticationError);
  });

  test('the right key works', async () => {
    const right = new OpenAI({ baseURL: server.baseURL, apiKey: KEY, maxRetries: 0 });
    const r = await right.chat.completions.create({ model: MODEL, messages, max_tokens: 2, temperature: 0 });
    assert.equal(r.usage.completion_tokens, 2);
    const ids = [];
    for await (const m of right.models.list()) ids.push(m.id);
    assert.deepEqual(ids, [MODEL]);
  });

  test('GET /health needs no key; /metrics does', async () => {
    const h = await fetch(`${server.url}/health`);
    assert.equal(h.status, 200);
    assert.deepEqual(await h.json(), { status: 'ok' });
    assert.equal((await fetch(`${server.url}/metrics`)).status, 401);
    assert.equal((await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${KEY}` } })).status, 200);
  });
});
