// graft serve's reasoning split, thinking budgets and tool calls through the official `openai`
// npm client, on the scripted model (the ctest fixture scripted_model; run.mjs skips this file
// with exit 77 while it is missing). Contract: scripted.mjs.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { SCRIPTED_MODEL, startServer } from './server.mjs';
import { ANSWER, loadScripted, QUESTION, REASONING, REASONING_BUDGET_2, REASONING_TOKENS, TOOL_ARGUMENTS } from './scripted.mjs';

const MODEL = 'scripted';
const messages = [{ role: 'user', content: QUESTION }];
const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The weather in a city now',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  },
];
const MAX = 64;

function reasoningTokens(usage) {
  return usage?.completion_tokens_details?.reasoning_tokens;
}

// Reads a streamed chat completion: reasoning and content concatenated, tool calls assembled by
// index (OpenAI's delta shape), the finish reason and the usage chunk.
async function collect(stream) {
  const r = { reasoning: '', content: '', toolCalls: [], finish: null, usage: null, order: [] };
  for await (const chunk of stream) {
    if (chunk.usage) r.usage = chunk.usage;
    for (const c of chunk.choices) {
      const d = c.delta ?? {};
      if (d.reasoning_content) {
        r.reasoning += d.reasoning_content;
        if (r.order.at(-1) !== 'reasoning') r.order.push('reasoning');
      }
      if (d.content) {
        r.content += d.content;
        if (r.order.at(-1) !== 'content') r.order.push('content');
      }
      for (const t of d.tool_calls ?? []) {
        assert.equal(typeof t.index, 'number', 'delta.tool_calls[].index');
        const call = (r.toolCalls[t.index] ??= { id: '', type: '', function: { name: '', arguments: '' } });
        if (t.id) call.id += t.id;
        if (t.type) call.type = t.type;
        if (t.function?.name) call.function.name += t.function.name;
        if (t.function?.arguments) call.function.arguments += t.function.arguments;
        if (r.order.at(-1) !== 'tool_calls') r.order.push('tool_calls');
      }
      if (c.finish_reason) r.finish = c.finish_reason;
    }
  }
  return r;
}

describe('openai client, scripted model: reasoning and tool calls', () => {
  let server;
  let client;
  let toolCallId;
  before(async () => {
    ({ toolCallId } = loadScripted());
    server = await startServer({ model: SCRIPTED_MODEL });
    client = new OpenAI({ baseURL: server.baseURL, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => {
    await server?.stop();
  });

  test('reasoning_content apart from content; EOS inside thinking forces its end', async () => {
    const r = await client.chat.completions.create({ model: MODEL, messages, max_tokens: MAX, temperature: 0 });
    const m = r.choices[0].message;
    assert.equal(m.reasoning_content, REASONING);
    assert.equal(m.content, ANSWER);
    assert.equal(r.choices[0].finish_reason, 'stop');
    assert.equal(reasoningTokens(r.usage), REASONING_TOKENS);
  });

  test('streamed: reasoning_content deltas, then content deltas, equal to the whole answer', async () => {
    const whole = await client.chat.completions.create({ model: MODEL, messages, max_tokens: MAX, temperature: 0 });
    const s = await collect(
      await client.chat.completions.create({
        model: MODEL, messages, max_tokens: MAX, temperature: 0, stream: true, stream_options: { include_usage: true },
      }),
    );
    assert.deepEqual(s.order, ['reasoning', 'content']);
    assert.equal(s.reasoning, whole.choices[0].message.reasoning_content);
    assert.equal(s.content, whole.choices[0].message.content);
    assert.equal(s.finish, 'stop');
    assert.equal(reasoningTokens(s.usage), REASONING_TOKENS);
  });

  test('thinking_budget_tokens: 2 cuts the thinking after two tokens; the answer is the same', async () => {
    const r = await client.chat.completions.create({
      model: MODEL, messages, max_tokens: MAX, temperature: 0, thinking_budget_tokens: 2,
    });
    const m = r.choices[0].message;
    assert.ok(reasoningTokens(r.usage) <= 2, `reasoning_tokens ${reasoningTokens(r.usage)}`);
    assert.equal(m.reasoning_content, REASONING_BUDGET_2);
    assert.equal(m.content, ANSWER);
    assert.equal(r.choices[0].finish_reason, 'stop');

    const s = await collect(
      await client.chat.completions.create({
        model: MODEL, messages, max_tokens: MAX, temperature: 0, thinking_budget_tokens: 2, stream: true,
      }),
    );
    assert.equal(s.reasoning, REASONING_BUDGET_2);
    assert.equal(s.content, ANSWER);
  });

  test('chat_template_kwargs.enable_thinking false: no reasoning at all', async () => {
    const r = await client.chat.completions.create({
      model: MODEL, messages, max_tokens: MAX, temperature: 0, chat_template_kwargs: { enable_thinking: false },
    });
    const m = r.choices[0].message;
    assert.ok(m.reasoning_content == null || m.reasoning_content === '', `reasoning_content ${JSON.stringify(m.reasoning_content)}`);
    assert.equal(m.content, ANSWER);
    assert.equal(reasoningTokens(r.usage) ?? 0, 0);
  });

  test('tool call round trip', async () => {
    const r = await client.chat.completions.create({
      model: MODEL, messages, tools, max_tokens: MAX, temperature: 0, logit_bias: { [toolCallId]: 20 },
    });
    const choice = r.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls');
    const m = choice.message;
    assert.ok(m.content == null || m.content === '', `content ${JSON.stringify(m.content)}`);
    assert.equal(m.tool_calls?.length, 1, JSON.stringify(m));
    const call = m.tool_calls[0];
    assert.equal(typeof call.id, 'string');
    assert.ok(call.id.length > 0);
    assert.equal(call.type, 'function');
    assert.equal(call.function.name, 'get_weather');
    assert.equal(typeof call.function.arguments, 'string', 'arguments must be a JSON string');
    assert.deepEqual(JSON.parse(call.function.arguments), TOOL_ARGUMENTS);

    const followUp = await client.chat.completions.create({
      model: MODEL,
      tools,
      max_tokens: MAX,
      temperature: 0,
      messages: [
        ...messages,
        { role: 'assistant', content: m.content ?? null, tool_calls: m.tool_calls },
        { role: 'tool', tool_call_id: call.id, content: 'sunny' },
      ],
    });
    assert.equal(followUp.choices[0].message.content, ANSWER);
    assert.equal(followUp.choices[0].finish_reason, 'stop');
    assert.ok(!followUp.choices[0].message.tool_calls?.length, 'a second tool call');
  });

  test('streamed tool call: delta.tool_calls with index, finish_reason tool_calls', async () => {
    const s = await collect(
      await client.chat.completions.create({
        model: MODEL, messages, tools, max_tokens: MAX, temperature: 0, logit_bias: { [toolCallId]: 20 }, stream: true,
      }),
    );
    assert.equal(s.finish, 'tool_calls');
    assert.equal(s.content, '');
    assert.equal(s.toolCalls.length, 1);
    const call = s.toolCalls[0];
    assert.ok(call.id.length > 0, 'a tool call id');
    assert.equal(call.type, 'function');
    assert.equal(call.function.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.function.arguments), TOOL_ARGUMENTS);
  });
});
