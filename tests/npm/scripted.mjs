// What the scripted model (the ctest fixture scripted_model: test-models/scripted.gguf and
// scripted.json) says at temperature 0, as its fixture's contract states it. Its real Qwen3 chat
// template; thinking on by default: `<think>`, four reasoning tokens, end of sequence inside the
// thinking (graft forces `</think>\n\n`), then the answer and end of sequence. With a +20 logit
// bias on `<tool_call>` it calls get_weather(city: "Paris") instead.
import assert from 'node:assert/strict';
import { scriptedInfo } from './server.mjs';

// The reasoning tokens' text; the APIs return it without the whitespace that frames the block.
export const REASONING_TEXT = ' Let me think. The user asks about weather. I should answer. Done.';
export const REASONING = REASONING_TEXT.trim();
export const REASONING_TOKENS = 4;
export const REASONING_BUDGET_2 = 'Let me think. The user asks about weather.';
export const ANSWER = 'It is sunny in Paris.';
export const TOOL_ARGUMENTS = { city: 'Paris' };
export const QUESTION = 'What is the weather in Paris?';

// scripted.json read once; its texts must be the ones above (the fixture and these tests agree).
export function loadScripted() {
  const info = scriptedInfo();
  assert.equal(info.texts?.reasoning, REASONING_TEXT, 'scripted.json texts.reasoning');
  assert.equal(info.texts?.answer, ANSWER, 'scripted.json texts.answer');
  const toolCallId = info.tokens?.['<tool_call>'];
  assert.equal(typeof toolCallId, 'number', 'scripted.json tokens["<tool_call>"]');
  return { info, toolCallId };
}
