// graft's chat page (docs/serve.md, "The chat page"). Plain JavaScript, no framework, no build step:
// it talks to this server's own routes only (GET /props, POST /v1/chat/completions) and streams
// the answer over SSE with fetch + ReadableStream.
'use strict';

const $ = (id) => document.getElementById(id);

const ui = {
  conversation: $('conversation'),
  emptyHint: $('empty-hint'),
  error: $('error'),
  composer: $('composer'),
  input: $('input'),
  send: $('send'),
  stop: $('stop'),
  newChat: $('new-chat'),
  maxTokens: $('max-tokens'),
  temperature: $('temperature'),
  thinking: $('thinking'),
  thinkingBudget: $('thinking-budget'),
  apiKey: $('api-key'),
  props: {
    root: $('props'),
    model: $('prop-model'),
    profile: $('prop-profile'),
    context: $('prop-context'),
    drafters: $('prop-drafters'),
  },
};

// ---- settings, kept in localStorage -------------------------------------------------------------

const STORE_PREFIX = 'graft.chat.';
const SETTINGS = [ui.maxTokens, ui.temperature, ui.thinking, ui.thinkingBudget, ui.apiKey];

function loadSettings() {
  for (const input of SETTINGS) {
    const saved = localStorage.getItem(STORE_PREFIX + input.id);
    if (saved === null) continue;
    if (input.type === 'checkbox') input.checked = saved === 'true';
    else input.value = saved;
  }
  ui.thinkingBudget.disabled = !ui.thinking.checked;
}

function saveSetting(input) {
  localStorage.setItem(STORE_PREFIX + input.id, input.type === 'checkbox' ? String(input.checked) : input.value);
}

function authHeaders() {
  const key = ui.apiKey.value.trim();
  return key ? { Authorization: `Bearer ${key}` } : {};
}

// ---- errors -------------------------------------------------------------------------------------

function showError(text) {
  ui.error.textContent = text;
  ui.error.hidden = false;
}

function clearError() {
  ui.error.textContent = '';
  ui.error.hidden = true;
}

// graft answers errors as {"error": {"message": ...}} (OpenAI's shape).
async function errorText(res) {
  try {
    const body = await res.json();
    if (body && body.error && body.error.message) return `${res.status}: ${body.error.message}`;
  } catch (_) {
    // not JSON: fall through
  }
  return `HTTP ${res.status} ${res.statusText}`;
}

// ---- the header: GET /props ---------------------------------------------------------------------

async function loadProps() {
  let res;
  try {
    res = await fetch('/props', { headers: authHeaders() });
  } catch (e) {
    showError(`GET /props failed: ${e.message}`);
    return;
  }
  if (!res.ok) {
    const why = await errorText(res);
    showError(res.status === 401 ? `${why}\nEnter the key under Settings.` : `GET /props: ${why}`);
    ui.props.root.dataset.loaded = 'false';
    return;
  }
  const p = await res.json();
  ui.props.model.textContent = p.model.id;
  ui.props.model.title = p.model_path;
  ui.props.profile.textContent = p.profile;
  ui.props.profile.title = p.profile;
  ui.props.context.textContent =
    `${p.n_ctx_per_request} tokens per request` + (p.parallel > 1 ? ` · ${p.parallel} parallel` : '');
  ui.props.context.title = p.context_split;
  ui.props.drafters.textContent = p.drafters.length ? p.drafters.join(', ') : 'off';
  ui.maxTokens.placeholder = `server default (${p.default_max_tokens})`;
  document.title = `graft chat · ${p.model.id}`;
  ui.props.root.dataset.loaded = 'true';
  clearError();
}

// ---- the conversation ---------------------------------------------------------------------------

const history = [];     // what is sent: [{role, content}], answers without their thinking
let controller = null;  // the AbortController of the request in flight

function element(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

// Keeps the view at the bottom while text arrives, unless the user scrolled up to read.
function follow(update) {
  const c = ui.conversation;
  const atBottom = c.scrollHeight - c.scrollTop - c.clientHeight < 40;
  update();
  if (atBottom) c.scrollTop = c.scrollHeight;
}

function addUserMessage(text) {
  ui.emptyHint.hidden = true;
  const msg = element('div', 'msg user');
  msg.dataset.testid = 'msg-user';
  msg.append(element('div', 'role', 'you'), element('div', 'bubble', text));
  follow(() => ui.conversation.append(msg));
  return msg;
}

// An assistant message: a folded "Thinking" block (shown once there is any), the answer, figures.
function addAssistantMessage() {
  const msg = element('div', 'msg assistant');
  msg.dataset.testid = 'msg-assistant';
  const bubble = element('div', 'bubble');
  const thinking = element('details', 'thinking');
  thinking.dataset.testid = 'thinking';
  thinking.hidden = true;
  const summary = element('summary', null, 'Thinking…');  // 'Thinking' once the answer is done
  const thinkingText = element('div', 'thinking-text');
  thinkingText.dataset.testid = 'thinking-text';
  // Text grows by appendData on one text node each: no re-parse of all that came before.
  const thinkingNode = document.createTextNode('');
  thinkingText.append(thinkingNode);
  thinking.append(summary, thinkingText);
  const answer = element('div', 'answer');
  answer.dataset.testid = 'answer';
  const answerNode = document.createTextNode('');
  answer.append(answerNode);
  bubble.append(thinking, answer);
  const stats = element('div', 'stats');
  stats.dataset.testid = 'stats';
  msg.append(element('div', 'role', 'graft'), bubble, stats);
  follow(() => ui.conversation.append(msg));
  return { msg, thinking, summary, thinkingNode, answerNode, stats };
}

// One figure under an answer: <span data-testid="stat-NAME" data-value="...">text</span>.
function stat(view, name, text, value, className) {
  let s = view.stats.querySelector(`[data-testid="stat-${name}"]`);
  if (!s) {
    s = element('span', className);
    s.dataset.testid = `stat-${name}`;
    view.stats.append(s);
  }
  s.textContent = text;
  if (value !== undefined) s.dataset.value = String(value);
  return s;
}

function fixed(x, digits = 1) {
  return Number(x).toFixed(digits);
}

// ---- SSE over fetch -----------------------------------------------------------------------------

// Yields the data of each server-sent event ("data: ..." lines, events apart by a blank line).
async function* sseData(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value.replace(/\r\n/g, '\n');
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = event
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).replace(/^ /, ''))
        .join('\n');
      if (data) yield data;
    }
  }
}

// ---- sending ------------------------------------------------------------------------------------

function requestBody() {
  const body = {
    messages: history.slice(),
    stream: true,
    stream_options: { include_usage: true },
    chat_template_kwargs: { enable_thinking: ui.thinking.checked },
  };
  const maxTokens = ui.maxTokens.value.trim();
  if (maxTokens !== '') body.max_tokens = Number(maxTokens);
  const temperature = ui.temperature.value.trim();
  if (temperature !== '') body.temperature = Number(temperature);
  const budget = ui.thinkingBudget.value.trim();
  if (ui.thinking.checked && budget !== '') body.thinking_budget_tokens = Number(budget);
  return body;
}

function setBusy(busy) {
  ui.send.disabled = busy;
  ui.stop.hidden = !busy;
  ui.composer.dataset.busy = String(busy);
}

async function send(text) {
  clearError();
  const userMsg = addUserMessage(text);
  history.push({ role: 'user', content: text });
  const view = addAssistantMessage();
  let answerText = '';
  let tokens = 0;       // the server's count of the answer's tokens (chunk.graft.completion_tokens)
  let seconds = 0;      // the server's seconds since the first of them (chunk.graft.decode_seconds)
  let failed = false;

  // Chunks can come faster than a page can lay text out: they are parsed as they come, and the
  // text and live figure go to the page once per frame.
  const unshown = { thinking: '', answer: '' };
  let frame = 0;
  const render = () => {
    frame = 0;
    follow(() => {
      if (unshown.thinking) {
        view.thinking.hidden = false;
        view.thinkingNode.appendData(unshown.thinking);
      }
      if (unshown.answer) view.answerNode.appendData(unshown.answer);
      unshown.thinking = unshown.answer = '';
      if (tokens > 0) {
        // Over the server's clock: chunks that arrive in a burst do not make a speed.
        const rate = tokens > 1 && seconds > 0 ? (tokens - 1) / seconds : 0;
        stat(view, 'live', `${tokens} tokens · ${fixed(rate)} tok/s`, rate, 'live');
      }
    });
  };
  const renderNow = () => {
    if (frame) cancelAnimationFrame(frame);
    render();
  };
  // The server sends the model's thinking apart from the answer (delta.reasoning_content); the
  // page shows both as they come.
  const append = (thinking, answer) => {
    unshown.thinking += thinking;
    unshown.answer += answer;
    answerText += answer;
    if (!frame) frame = requestAnimationFrame(render);
  };

  controller = new AbortController();
  setBusy(true);
  stat(view, 'live', 'waiting for the first token…', 0, 'live');
  try {
    const res = await fetch('/v1/chat/completions', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...authHeaders() },
      body: JSON.stringify(requestBody()),
      signal: controller.signal,
    });
    if (!res.ok) throw new Error(await errorText(res));
    for await (const data of sseData(res.body)) {
      if (data === '[DONE]') break;
      const event = JSON.parse(data);
      if (event.error) throw new Error(event.error.message || 'the generation failed');
      const choice = event.choices && event.choices[0];
      if (choice) {
        const delta = choice.delta || {};
        const reasoning = delta.reasoning_content || '';
        const content = delta.content || '';
        if (reasoning || content) {
          const g = event.graft || {};
          tokens = typeof g.completion_tokens === 'number' ? g.completion_tokens : tokens + 1;
          if (typeof g.decode_seconds === 'number') seconds = g.decode_seconds;
          append(reasoning, content);
        }
        if (choice.finish_reason) {
          renderNow();
          showFinal(view, choice.finish_reason, event.graft || {});
        }
      }
      if (event.usage) showUsage(view, event.usage);
    }
  } catch (e) {
    if (e.name === 'AbortError') {
      stat(view, 'stopped', 'stopped', undefined, 'stopped');
    } else {
      failed = true;
      showError(e.message);
      stat(view, 'failed', `error: ${e.message}`, undefined, 'stopped');
    }
  } finally {
    controller = null;
    setBusy(false);
    renderNow();
    const live = view.stats.querySelector('[data-testid="stat-live"]');
    if (tokens === 0) live?.remove();  // no token came
    else live?.classList.remove('live');     // as seen here; graft's own figures follow it
    view.msg.classList.add('done');
    view.summary.textContent = 'Thinking';  // no longer live
  }

  if (failed && answerText === '') {
    // Nothing came back: the question is taken back (and put back in the box) so it can be resent.
    history.pop();
    userMsg.remove();
    view.msg.remove();
    ui.emptyHint.hidden = ui.conversation.querySelector('.msg') !== null;
    if (ui.input.value === '') ui.input.value = text;
  } else {
    history.push({ role: 'assistant', content: answerText });
  }
  ui.input.focus();
}

// The final chunk (the one with finish_reason) carries graft's own figures.
function showFinal(view, finishReason, graft) {
  if (typeof graft.decode_tokens_per_second === 'number')
    stat(view, 'decode', `decode ${fixed(graft.decode_tokens_per_second)} tok/s`, graft.decode_tokens_per_second);
  if (typeof graft.prefill_tokens_per_second === 'number')
    stat(view, 'prefill', `prefill ${fixed(graft.prefill_tokens_per_second)} tok/s`, graft.prefill_tokens_per_second);
  if (typeof graft.tokens_per_round === 'number')
    stat(view, 'tokens-per-round', `${fixed(graft.tokens_per_round, 2)} tokens/round`, graft.tokens_per_round);
  stat(view, 'stop', `stop: ${graft.stop_reason || finishReason}`, graft.stop_reason || finishReason);
  if (Array.isArray(graft.context_shifts) && graft.context_shifts.length)
    stat(view, 'context-shifts', `context shifts at ${graft.context_shifts.join(', ')}`, graft.context_shifts.length);
}

function showUsage(view, usage) {
  const cached = usage.prompt_tokens_details && usage.prompt_tokens_details.cached_tokens;
  stat(view, 'usage',
       `prompt ${usage.prompt_tokens}${cached ? ` (${cached} cached)` : ''} · completion ${usage.completion_tokens} tokens`,
       usage.completion_tokens);
}

// ---- wiring -------------------------------------------------------------------------------------

ui.composer.addEventListener('submit', (e) => {
  e.preventDefault();
  const text = ui.input.value.trim();
  if (!text || controller) return;
  ui.input.value = '';
  send(text);
});

ui.input.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    ui.composer.requestSubmit();
  }
});

ui.stop.addEventListener('click', () => {
  if (controller) controller.abort();
});

ui.newChat.addEventListener('click', () => {
  if (controller) controller.abort();
  history.length = 0;
  for (const m of ui.conversation.querySelectorAll('.msg')) m.remove();
  ui.emptyHint.hidden = false;
  clearError();
  ui.input.focus();
});

for (const input of SETTINGS) input.addEventListener('change', () => saveSetting(input));
ui.thinking.addEventListener('change', () => {
  ui.thinkingBudget.disabled = !ui.thinking.checked;
});
ui.apiKey.addEventListener('change', loadProps);

loadSettings();
loadProps();
ui.input.focus();
