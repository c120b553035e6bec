// graft serve's Anthropic route with thinking blocks, thinking budgets and tool use, driven by the
// official `@anthropic-ai/sdk` npm client on the scripted model (the ctest fixture
// scripted_model; run.mjs skips this file with exit 77 while it is missing). Contract: scripted.mjs.
// Tool use is forced with graft's extension body field `logit_bias` (token id -> bias), which the
// SDK sends through as it is.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { SCRIPTED_MODEL, startServer } from './server.mjs';
import { ANSWER, loadScripted, QUESTION, REASONING, REASONING_BUDGET_2, TOOL_ARGUMENTS } from './scripted.mjs';
import { blocks, checkEventOrder, streamMessage } from './anthropic_util.mjs';

const MODEL = 'scripted';
const messages = [{ role: 'user', content: QUESTION }];
const tools = [
  {
    name: 'get_weather',
    description: 'The weather in a city now',
    input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
];
const MAX = 64;
const text = (content) => content.filter((b) => b.type === 'text').map((b) => b.text).join('');

describe('anthropic client, scripted model: thinking and tool use', () => {
  let server;
  let client;
  let toolCallId;
  before(async () => {
    ({ toolCallId } = loadScripted());
    server = await startServer({ model: SCRIPTED_MODEL });
    client = new Anthropic({ baseURL: server.url, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => {
    await server?.stop();
  });

  test('a thinking block, then the text; stop_reason end_turn', async () => {
    const r = await client.messages.create({ model: MODEL, max_tokens: MAX, temperature: 0, messages });
    assert.deepEqual(blocks(r.content), [
      { type: 'thinking', thinking: REASONING, signature: '' },
      { type: 'text', text: ANSWER },
    ]);
    assert.equal(r.stop_reason, 'end_turn');
    assert.equal(typeof r.usage.input_tokens, 'number');
    assert.equal(typeof r.usage.output_tokens, 'number');
    assert.ok(r.usage.output_tokens > 0);
  });

  test('thinking budget_tokens 2 cuts the thinking; the text is the same', async () => {
    const r = await client.messages.create({
      model: MODEL, max_tokens: MAX, temperature: 0, messages, thinking: { type: 'enabled', budget_tokens: 2 },
    });
    assert.deepEqual(blocks(r.content), [
      { type: 'thinking', thinking: REASONING_BUDGET_2, signature: '' },
      { type: 'text', text: ANSWER },
    ]);
    assert.equal(r.stop_reason, 'end_turn');
  });

  test('thinking disabled: no thinking block', async () => {
    const r = await client.messages.create({
      model: MODEL, max_tokens: MAX, temperature: 0, messages, thinking: { type: 'disabled' },
    });
    assert.deepEqual(blocks(r.content), [{ type: 'text', text: ANSWER }]);
    assert.equal(r.stop_reason, 'end_turn');
  });

  test('streamed: thinking_delta then text_delta; finalMessage() equals the whole message', async () => {
    const params = { model: MODEL, max_tokens: MAX, temperature: 0, messages };
    const whole = await client.messages.create(params);
    const { events, message } = await streamMessage(client, params);
    assert.deepEqual(checkEventOrder(events), ['thinking', 'text']);
    const deltas = events.filter((e) => e.type === 'content_block_delta');
    const thinking = deltas.filter((e) => e.delta.type === 'thinking_delta').map((e) => e.delta.thinking).join('');
    const answer = deltas.filter((e) => e.delta.type === 'text_delta').map((e) => e.delta.text).join('');
    assert.equal(thinking, REASONING);
    assert.equal(answer, ANSWER);
    assert.equal(events.at(-2).delta.stop_reason, 'end_turn');
    assert.deepEqual(blocks(message.content), blocks(whole.content));
    assert.equal(message.stop_reason, 'end_turn');
  });

  test('streamed with a budget of 2, and with thinking disabled', async () => {
    const budget = await streamMessage(client, {
      model: MODEL, max_tokens: MAX, temperature: 0, messages, thinking: { type: 'enabled', budget_tokens: 2 },
    });
    assert.deepEqual(checkEventOrder(budget.events), ['thinking', 'text']);
    assert.equal(budget.message.content[0].thinking, REASONING_BUDGET_2);
    assert.equal(text(budget.message.content), ANSWER);
    const off = await streamMessage(client, {
      model: MODEL, max_tokens: MAX, temperature: 0, messages, thinking: { type: 'disabled' },
    });
    assert.deepEqual(checkEventOrder(off.events), ['text']);
    assert.equal(text(off.message.content), ANSWER);
  });

  test('max_tokens 3: stop_reason max_tokens', async () => {
    const r = await client.messages.create({ model: MODEL, max_tokens: 3, temperature: 0, messages });
    assert.equal(r.stop_reason, 'max_tokens');
    assert.equal(r.usage.output_tokens, 3);
  });

  test('tool use round trip (logit_bias passed through the SDK)', async () => {
    const r = await client.messages.create({
      model: MODEL, max_tokens: MAX, temperature: 0, messages, tools, logit_bias: { [toolCallId]: 20 },
    });
    assert.equal(r.stop_reason, 'tool_use');
    const uses = r.content.filter((b) => b.type === 'tool_use');
    assert.equal(uses.length, 1, JSON.stringify(r.content));
    const use = uses[0];
    assert.equal(typeof use.id, 'string');
    assert.ok(use.id.length > 0);
    assert.equal(use.name, 'get_weather');
    assert.deepEqual(use.input, TOOL_ARGUMENTS);
    assert.equal(text(r.content), '');

    // As clients do: the assistant turn sent back whole (thinking block included), then the result.
    const followUp = await client.messages.create({
      model: MODEL,
      max_tokens: MAX,
      temperature: 0,
      tools,
      messages: [
        ...messages,
        { role: 'assistant', content: r.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny' }] },
      ],
    });
    assert.equal(text(followUp.content), ANSWER);
    assert.equal(followUp.stop_reason, 'end_turn');
    assert.ok(!followUp.content.some((b) => b.type === 'tool_use'), 'a second tool use');
  });

  test('streamed tool use: input_json_delta assembled by the SDK', async () => {
    const { events, message } = await streamMessage(client, {
      model: MODEL, max_tokens: MAX, temperature: 0, messages, tools, logit_bias: { [toolCallId]: 20 },
    });
    const kinds = checkEventOrder(events);
    assert.ok(kinds.includes('tool_use'), kinds.join(' '));
    assert.equal(events.at(-2).delta.stop_reason, 'tool_use');
    const use = message.content.find((b) => b.type === 'tool_use');
    assert.equal(use.name, 'get_weather');
    assert.deepEqual(use.input, TOOL_ARGUMENTS);
    assert.equal(message.stop_reason, 'tool_use');
  });
});
