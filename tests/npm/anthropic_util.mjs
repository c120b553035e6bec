// Helpers of the @anthropic-ai/sdk tests.
import assert from 'node:assert/strict';

// Streams a message and returns {events, message}: every raw event and finalMessage().
export async function streamMessage(client, params) {
  const stream = client.messages.stream(params);
  const events = [];
  for await (const event of stream) events.push(event);
  return { events, message: await stream.finalMessage() };
}

// A content block's fields that matter, for comparing a streamed message with a whole one.
export function blocks(content) {
  return content.map((b) => {
    switch (b.type) {
      case 'thinking': return { type: b.type, thinking: b.thinking, signature: b.signature };
      case 'text': return { type: b.type, text: b.text };
      case 'tool_use': return { type: b.type, id: b.id, name: b.name, input: b.input };
      default: return b;
    }
  });
}

// Checks the event grammar: message_start, per block content_block_start, its deltas of the
// block's kind, content_block_stop; message_delta with the stop reason; message_stop.
export function checkEventOrder(events) {
  const types = events.map((e) => e.type);
  assert.equal(types[0], 'message_start', types.join(' '));
  assert.equal(types.at(-1), 'message_stop', types.join(' '));
  assert.equal(types.at(-2), 'message_delta', types.join(' '));
  assert.ok(events.at(-2).delta.stop_reason, 'message_delta without stop_reason');
  const deltaKind = { thinking: ['thinking_delta', 'signature_delta'], text: ['text_delta'], tool_use: ['input_json_delta'] };
  let open = null;
  let next = 0;
  for (const e of events.slice(1, -2)) {
    if (e.type === 'ping') continue;
    if (e.type === 'content_block_start') {
      assert.equal(open, null, 'a block started inside another');
      assert.equal(e.index, next, 'block indices count up from 0');
      open = e;
    } else if (e.type === 'content_block_delta') {
      assert.ok(open, 'a delta outside a block');
      assert.equal(e.index, open.index);
      assert.ok(deltaKind[open.content_block.type]?.includes(e.delta.type), `${e.delta.type} in a ${open.content_block.type} block`);
    } else if (e.type === 'content_block_stop') {
      assert.ok(open, 'a stop outside a block');
      assert.equal(e.index, open.index);
      open = null;
      next++;
    } else {
      assert.fail(`unexpected event ${e.type} between message_start and message_delta`);
    }
  }
  assert.equal(open, null, 'a block was never stopped');
  return events.filter((e) => e.type === 'content_block_start').map((e) => e.content_block.type);
}
