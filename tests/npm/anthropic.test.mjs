// graft serve's Anthropic route (POST /v1/messages) driven by the official `@anthropic-ai/sdk`
// npm client, on the committed zoo model (no reasoning): a whole and a streamed message, the
// max_tokens stop and the API key both ways. Thinking blocks, budgets and tool use are in
// anthropic_scripted.test.mjs.
//
// The SDK posts to `${baseURL}/v1/messages`: its baseURL is the server's root. @anthropic-ai/sdk
// 1.x sends `apiKey` as `Authorization: Bearer KEY` (0.x sent `x-api-key`); the x-api-key path is
// checked with the header set by hand.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic, { AuthenticationError } from '@anthropic-ai/sdk';
import { startServer, ZOO_MODEL } from './server.mjs';
import { blocks, checkEventOrder, streamMessage } from './anthropic_util.mjs';

const MODEL = 'zoo-qwen3-4x256';
const messages = [{ role: 'user', content: 'Tell me a story about a cat.' }];

describe('anthropic client, zoo model', () => {
  let server;
  let client;
  before(async () => {
    server = await startServer({ model: ZOO_MODEL });
    client = new Anthropic({ baseURL: server.url, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => {
    await server?.stop();
  });

  test('a whole message: text, usage, stop_reason max_tokens at max_tokens 3', async () => {
    const r = await client.messages.create({ model: MODEL, max_tokens: 3, temperature: 0, messages });
    assert.equal(r.type, 'message');
    assert.equal(r.role, 'assistant');
    assert.equal(typeof r.id, 'string');
    assert.equal(r.stop_reason, 'max_tokens');
    assert.ok(r.content.length >= 1);
    for (const b of r.content) assert.ok(['text', 'thinking'].includes(b.type), b.type);
    assert.equal(typeof r.usage.input_tokens, 'number');
    assert.ok(r.usage.input_tokens > 0);
    assert.equal(r.usage.output_tokens, 3);
  });

  test('streamed: the event grammar, and finalMessage() equals the whole message at temperature 0', async () => {
    const params = { model: MODEL, max_tokens: 8, temperature: 0, messages };
    const whole = await client.messages.create(params);
    const { events, message } = await streamMessage(client, params);
    checkEventOrder(events);
    assert.deepEqual(blocks(message.content), blocks(whole.content));
    assert.equal(message.stop_reason, whole.stop_reason);
    assert.equal(message.usage.output_tokens, whole.usage.output_tokens);
    assert.equal(events[0].message.usage.input_tokens, whole.usage.input_tokens);
  });

  test('create({stream: true}) gives the same events', async () => {
    const params = { model: MODEL, max_tokens: 3, temperature: 0, messages };
    const whole = await client.messages.create(params);
    const stream = await client.messages.create({ ...params, stream: true });
    const events = [];
    for await (const e of stream) events.push(e);
    checkEventOrder(events);
    assert.equal(events.at(-2).delta.stop_reason, 'max_tokens');
    const text = events.filter((e) => e.delta?.type === 'text_delta').map((e) => e.delta.text).join('');
    assert.equal(text, whole.content.filter((b) => b.type === 'text').map((b) => b.text).join(''));
  });
});

describe('anthropic client, --api-key', () => {
  const KEY = 'sk-ant-graft-test-key';
  let server;
  before(async () => {
    server = await startServer({ model: ZOO_MODEL, apiKey: KEY });
  });
  after(async () => {
    await server?.stop();
  });
  const params = { model: MODEL, max_tokens: 2, temperature: 0, messages };

  test('a wrong key is a 401 AuthenticationError (the SDK\'s own header, and x-api-key)', async () => {
    const wrong = new Anthropic({ baseURL: server.url, apiKey: 'sk-ant-wrong', maxRetries: 0 });
    await assert.rejects(wrong.messages.create(params), (e) => {
      assert.ok(e instanceof AuthenticationError, `${e.constructor.name}: ${e.message}`);
      assert.equal(e.status, 401);
      return true;
    });
    const wrongHeader = new Anthropic({
      baseURL: server.url, apiKey: null, authToken: null, defaultHeaders: { 'x-api-key': 'sk-ant-wrong' }, maxRetries: 0,
    });
    await assert.rejects(wrongHeader.messages.create(params), AuthenticationError);
  });

  test('the right key works (the SDK\'s own header, and x-api-key)', async () => {
    const right = new Anthropic({ baseURL: server.url, apiKey: KEY, maxRetries: 0 });
    assert.equal((await right.messages.create(params)).usage.output_tokens, 2);
    const rightHeader = new Anthropic({
      baseURL: server.url, apiKey: null, authToken: null, defaultHeaders: { 'x-api-key': KEY }, maxRetries: 0,
    });
    assert.equal((await rightHeader.messages.create(params)).usage.output_tokens, 2);
  });
});
