// The contextengine web UI: plain JS, no build step; the only third-party code is the
// vendored markdown renderer (marked) and sanitizer (DOMPurify) under static/vendor/.
// Everything that comes from the server (model text, tool output, files) is treated as
// untrusted: it reaches the page as text nodes, or as markdown whose raw HTML is shown as
// text and whose output DOMPurify sanitizes.
'use strict';

const FINAL_STAGES = new Set(['done', 'skipped', 'timed_out', 'failed']);
// Task boxes as the plan writes them (pending, done, in progress, failed), shown as the
// same ASCII marks: readable without emoji or symbol fonts.
const STEP_MARKS = { ' ': 'pending', x: 'done', '>': 'doing', '!': 'failed' };

const state = {
  session: null,
  tab: 'chat',
  memoryFile: 'task_plan.md',
  memory: {},
  running: false,
  lastEventId: null,
};

const $ = (selector) => document.querySelector(selector);

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

// ---------------------------------------------------------------- API

async function api(path, options) {
  const response = await fetch(path, options);
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    throw new Error((body && body.error) || `${response.status} ${response.statusText}`);
  }
  return body;
}

const sessionPath = (rest) => `/api/sessions/${encodeURIComponent(state.session)}${rest}`;

// POST a message and hand each server-sent event to onEvent(type, payload, id). Returns
// whether `done` arrived; a stream cut short leaves the turn running on the server.
async function streamTurn(sessionId, message, onEvent) {
  const response = await fetch(`/api/sessions/${encodeURIComponent(sessionId)}/messages`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
    body: JSON.stringify({ message }),
  });
  if (!response.ok) {
    const body = await response.json().catch(() => null);
    throw new Error((body && body.error) || `${response.status} ${response.statusText}`);
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let sawDone = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let boundary;
      while ((boundary = buffer.search(/\r?\n\r?\n/)) !== -1) {
        const block = buffer.slice(0, boundary);
        buffer = buffer.slice(boundary).replace(/^\r?\n\r?\n/, '');
        const event = parseSseBlock(block);
        if (event) {
          if (event.type === 'done') sawDone = true;
          onEvent(event.type, event.data, event.id);
        }
      }
    }
  } catch {
    // The connection broke; the caller re-attaches after the last event it saw.
  }
  return sawDone;
}

// Follow a session's events after `afterId` (recorded ones, then the running turn's live
// ones) until `done`. EventSource resumes by itself after a network error, sending the
// last id it saw as Last-Event-ID.
function followEvents(sessionId, afterId, onEvent) {
  return new Promise((resolve) => {
    const url = `/api/sessions/${encodeURIComponent(sessionId)}/events?last_event_id=${afterId}`;
    const source = new EventSource(url);
    const finish = () => {
      source.close();
      resolve();
    };
    for (const type of Object.keys(HANDLERS)) {
      source.addEventListener(type, (message) => {
        onEvent(type, JSON.parse(message.data), Number(message.lastEventId));
        if (type === 'done') finish();
      });
    }
    source.onerror = () => {
      // A 204 (nothing left to follow) or a refused request closes it for good.
      if (source.readyState === EventSource.CLOSED) finish();
    };
  });
}

function parseSseBlock(block) {
  let type = 'message';
  let id = null;
  const data = [];
  for (const line of block.split(/\r?\n/)) {
    if (!line || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') type = value;
    else if (field === 'data') data.push(value);
    else if (field === 'id') id = Number(value);
  }
  if (!data.length) return null;
  return { type, id, data: JSON.parse(data.join('\n')) };
}

// ---------------------------------------------------------------- markdown (vendored, sanitized)

function escapeHtml(text) {
  return String(text)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

// GitHub-flavoured markdown; raw HTML in the source is shown as text, never rendered.
const markdown = new marked.Marked({
  gfm: true,
  breaks: true,
  renderer: { html: (token) => escapeHtml(token.text) },
});

function stepMark(mark) {
  return el('span', `check ${STEP_MARKS[mark]}`, `[${mark}]`);
}

// Task-list items keep their ASCII box ([ ] [x] [>] [!]), styled by status.
function markSteps(root) {
  for (const box of root.querySelectorAll('li input[type=checkbox]')) {
    box.replaceWith(stepMark(box.checked ? 'x' : ' '));
  }
  for (const item of root.querySelectorAll('li')) {
    const holder = item.firstElementChild && item.firstElementChild.tagName === 'P' ? item.firstElementChild : item;
    const first = holder.firstChild;
    const box = first && first.nodeType === Node.TEXT_NODE && first.textContent.match(/^\s*\[([>!])\]\s*/);
    if (box) {
      first.textContent = first.textContent.slice(box[0].length);
      holder.prepend(stepMark(box[1]), ' ');
    }
  }
}

// Render untrusted markdown into `node`: marked, then DOMPurify, then the task marks.
function setMarkdown(node, source) {
  node.innerHTML = DOMPurify.sanitize(markdown.parse(String(source ?? '')));
  for (const link of node.querySelectorAll('a[href]')) {
    link.target = '_blank';
    link.rel = 'noopener noreferrer';
  }
  markSteps(node);
}

// ---------------------------------------------------------------- chat

function chatLog() {
  return $('#chat-log');
}

function scrollChat() {
  const log = chatLog();
  log.scrollTop = log.scrollHeight;
}

function clearChat() {
  chatLog().replaceChildren();
}

function addUser(text) {
  const bubble = el('div', 'msg user');
  bubble.append(el('div', 'who', 'You'), el('div', 'text', text));
  chatLog().append(bubble);
  scrollChat();
}

// One user turn's rendering state: the agent's blocks go into `node`.
function newTurn() {
  const node = el('div', 'msg agent');
  node.append(el('div', 'who', 'Agent'));
  chatLog().append(node);
  return { node, stream: null, reasoning: null, lastStep: null, tools: new Map(), compaction: null, question: null };
}

function onThinking(turn, payload) {
  if (payload.reasoning) {
    if (!turn.reasoning) {
      turn.reasoning = el('details', 'reasoning');
      turn.reasoning.append(el('summary', null, 'Reasoning'), el('div', 'text'));
      turn.node.append(turn.reasoning);
    }
    turn.reasoning.lastChild.textContent += payload.text;
  } else {
    if (!turn.stream) {
      turn.stream = el('div', 'step-text');
      turn.node.append(turn.stream);
      turn.lastStep = turn.stream;
    }
    turn.stream.textContent += payload.text;
  }
  scrollChat();
}

function onUsage(turn, payload) {
  turn.stream = null;
  turn.reasoning = null;
  const share = payload.input_tokens ? Math.round((100 * payload.cached_tokens) / payload.input_tokens) : 0;
  const line = el('div', 'usage');
  line.textContent =
    `${payload.purpose} · ${fmt(payload.input_tokens)} in · ${fmt(payload.cached_tokens)} cached (${share}%)` +
    ` · ${fmt(payload.output_tokens)} out · ${Number(payload.latency_s || 0).toFixed(2)}s`;
  if (payload.cache_break) line.append(el('span', 'cache-break', `cache break: ${payload.cache_break}`));
  turn.node.append(line);
  scrollChat();
}

function summarizeArguments(text) {
  try {
    const args = JSON.parse(text);
    const parts = Object.entries(args).map(([key, value]) => {
      const shown = typeof value === 'string' ? value : JSON.stringify(value);
      return `${key}=${shown.length > 60 ? shown.slice(0, 59) + '…' : shown}`;
    });
    return parts.join('  ').replace(/\s+/g, ' ');
  } catch {
    return text.slice(0, 120);
  }
}

function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function toolBlock(turn, callId, name, argumentsJson) {
  const block = el('details', 'tool');
  block.dataset.callId = callId;
  const summary = el('summary');
  summary.append(
    el('span', 'tool-name', name),
    el('span', 'tool-args', summarizeArguments(argumentsJson)),
    el('span', 'badge running', 'running'),
  );
  const args = el('div', 'tool-section');
  args.append(el('div', 'label', 'Arguments'), el('pre', 'tool-arguments', pretty(argumentsJson)));
  block.append(summary, args);
  turn.node.append(block);
  turn.tools.set(callId, block);
  return block;
}

function onToolCall(turn, payload) {
  turn.stream = null;
  turn.lastStep = null;
  toolBlock(turn, payload.call_id, payload.name, payload.arguments);
  scrollChat();
}

function onToolResult(turn, payload) {
  const block = turn.tools.get(payload.call_id) || toolBlock(turn, payload.call_id, payload.name, '{}');
  const badge = block.querySelector('.badge');
  const status = payload.status === 'success' ? 'success' : 'error';
  badge.className = `badge ${status}`;
  badge.textContent = payload.error_class ? `${status}: ${payload.error_class}` : status;
  block.classList.add(status === 'success' ? 'tool-ok' : 'tool-failed');
  const section = el('div', 'tool-section');
  section.append(el('div', 'label', 'Result'));
  const ref = compressedRef(payload.preview);
  if (ref) {
    section.append(refCard(ref, payload.ref));
    // A ref stands for a long result: the card says what it is; the tool summary shows it.
    block.querySelector('summary').append(refChip(ref));
  } else {
    section.append(el('pre', 'tool-result', pretty(payload.preview)));
  }
  block.append(section);
  scrollChat();
}

function onError(turn, payload) {
  turn.stream = null;
  const box = el('div', 'error');
  box.append(el('span', 'error-class', payload.error_class), el('span', 'error-message', payload.message));
  turn.node.append(box);
  scrollChat();
}

function onMemoryUpdate(turn, payload) {
  const name = String(payload.file).split('/').pop();
  state.memory[name] = payload.content;
  if (state.tab === 'memory' && state.memoryFile === name) renderMemory();
  else markMemoryUpdated(name);
  if (turn) {
    // Consecutive updates share one row, one chip per file.
    let row = turn.node.lastElementChild;
    if (!row || !row.classList.contains('memory-notes')) {
      row = el('div', 'memory-notes');
      turn.node.append(row);
    }
    if (!row.querySelector(`[data-file="${CSS.escape(name)}"]`)) {
      const note = el('button', 'memory-note', `memory: ${name} updated`);
      note.type = 'button';
      note.dataset.file = name;
      note.addEventListener('click', () => {
        state.memoryFile = name;
        showTab('memory');
      });
      row.append(note);
    }
    scrollChat();
  }
}

function onCompaction(turn, payload) {
  if (!turn.compaction) {
    turn.compaction = el('div', 'compaction running');
    turn.node.append(turn.compaction);
  }
  turn.compaction.textContent = `compaction ${payload.stage}: ${payload.message}`;
  if (FINAL_STAGES.has(payload.stage)) {
    turn.compaction.classList.remove('running');
    turn.compaction = null;
  }
  scrollChat();
}

function onDone(turn, payload) {
  const result = payload.result || {};
  turn.stream = null;
  if (openQuestion(turn)) closeQuestion(turn.question, 'Not answered: the turn ended.');
  if (result.status === 'needs_human') {
    const note = 'The turn ended waiting for your answer. Send it as a message to go on.';
    turn.node.append(el('div', 'stopped', note));
    scrollChat();
  } else if (result.status === 'completed') {
    if (turn.lastStep) turn.lastStep.remove();
    addAnswer(turn, result.final_answer);
  } else if (result.status === 'cancelled') {
    turn.node.append(el('div', 'stopped', `Stopped after ${result.steps} step(s).`));
    scrollChat();
  } else {
    onError(turn, { error_class: `run ended: ${result.status}`, message: result.error || '' });
  }
}

function addAnswer(turn, text) {
  const answer = el('div', 'answer markdown');
  setMarkdown(answer, text);
  turn.node.append(answer);
  scrollChat();
}

const HANDLERS = {
  thinking: onThinking,
  usage: onUsage,
  tool_call: onToolCall,
  tool_result: onToolResult,
  error: onError,
  memory_update: onMemoryUpdate,
  compaction: onCompaction,
  question: onQuestion,
  done: onDone,
};

// Recorded entries of an existing session, drawn with the same blocks as live events;
// `questions` are the agent's questions to the human (by entry index), drawn as cards.
function renderHistory(entries, runningTurn, questions = []) {
  clearChat();
  const asked = new Map(questions.map((q) => [q.index, q]));
  let turn = null;
  let answered = false; // the next user entry is the answer a question card shows
  const agentTurn = () => turn || (turn = newTurn());
  entries.forEach((entry, index) => {
    switch (entry.kind) {
      case 'user':
        if (answered) {
          answered = false;
          break;
        }
        addUser(entry.text);
        turn = null;
        break;
      case 'assistant': {
        const t = agentTurn();
        if (entry.reasoning) onThinking(t, { text: entry.reasoning, reasoning: true });
        if (entry.tool_calls.length) {
          if (entry.text) onThinking(t, { text: entry.text, reasoning: false });
          t.stream = null;
          for (const call of entry.tool_calls) toolBlock(t, call.id, call.name, call.arguments_json);
        } else if (asked.has(index)) {
          onThinking(t, { text: entry.text, reasoning: false });
          addRecordedQuestion(t, asked.get(index));
          answered = asked.get(index).answer !== null;
        } else {
          t.stream = null;
          addAnswer(t, entry.text);
        }
        break;
      }
      case 'tool_result':
        onToolResult(agentTurn(), {
          call_id: entry.call_id,
          name: entry.tool_name,
          status: entry.status,
          preview: entry.content,
          error_class: entry.error_class,
        });
        break;
      case 'error':
        onError(agentTurn(), entry);
        break;
      case 'summary': {
        const box = el('details', 'compaction');
        const last = entry.end_index - 1;
        box.append(
          el('summary', null, `compaction: entries ${entry.first_index}–${last} archived to ${entry.archive}`),
          el('div', 'summary-text', entry.text),
        );
        agentTurn().node.append(box);
        break;
      }
      default:
        // Notes and reminders are harness context, not conversation.
        break;
    }
  });
  if (!entries.length && !runningTurn) {
    showEmptyChat('No messages yet in this session. Ask the agent something.');
  }
  scrollChat();
}

function showEmptyChat(text) {
  clearChat();
  chatLog().append(el('p', 'empty', text));
}

function setRunning(running) {
  state.running = running;
  document.body.dataset.turn = running ? 'running' : 'idle';
  $('#send').disabled = running;
  $('#send').textContent = running ? 'Running…' : 'Send';
  $('#stop').hidden = !running;
  $('#stop').disabled = false;
  $('#stop').textContent = 'Stop';
  $('#new-session').disabled = running;
  $('#session-select').disabled = running;
}

// Hands a turn's events to their handlers, remembering the last id seen.
function eventSink(turn) {
  return (type, payload, id) => {
    if (id) state.lastEventId = id;
    // Any later step means the question was answered (from another page, say).
    if (type !== 'done' && type !== 'question' && openQuestion(turn)) closeQuestion(turn.question, 'Answered.');
    const handler = HANDLERS[type];
    if (handler) handler(turn, payload);
  };
}

function turnEnded() {
  setRunning(false);
  refreshUsage();
  refreshSessions();
  if (state.tab === 'artifacts') loadArtifacts();
}

async function send(text) {
  if (state.running) return;
  setRunning(true);
  let turn = null;
  try {
    if (!state.session) await newSession();
    const empty = chatLog().querySelector('.empty');
    if (empty) empty.remove();
    addUser(text);
    turn = newTurn();
    state.lastEventId = null;
    const sink = eventSink(turn);
    const sawDone = await streamTurn(state.session, text, sink);
    if (!sawDone && state.lastEventId) await followEvents(state.session, state.lastEventId, sink);
    else if (!sawDone) throw new Error('the connection closed before the turn started');
  } catch (error) {
    if (turn) onError(turn, { error_class: 'request failed', message: error.message });
    else toast(error.message);
  } finally {
    turnEnded();
  }
}

// After a reload: draw the running turn from its first event and follow it to its end.
async function reattach(turnInfo) {
  setRunning(true);
  addUser(turnInfo.message);
  const turn = newTurn();
  try {
    await followEvents(state.session, turnInfo.first_event_id - 1, eventSink(turn));
  } finally {
    turnEnded();
  }
}

async function stopTurn() {
  if (!state.running || !state.session) return;
  $('#stop').disabled = true;
  try {
    await api(sessionPath('/cancel'), { method: 'POST' });
    if (state.running) $('#stop').textContent = 'Stopping…';
  } catch (error) {
    toast(error.message);
    $('#stop').disabled = false;
  }
}

// ---------------------------------------------------------------- sessions

async function refreshSessions() {
  const data = await api('/api/sessions').catch((error) => {
    // Without the token nothing else works: say so where the chat would be.
    showEmptyChat(error.message);
    return null;
  });
  if (!data) return [];
  $('#workspace').textContent = data.workspace;
  $('#workspace').title = `Workspace: ${data.workspace}`;
  const select = $('#session-select');
  select.replaceChildren();
  if (!data.sessions.length) select.append(new Option('no sessions yet', ''));
  for (const { session, depth } of nested(data.sessions)) {
    // Sub-agent sessions follow their parent, indented by a plain "--" per level.
    const label = `${'-- '.repeat(depth)}${sessionLabel(session)} - ${session.id}`;
    select.append(new Option(label, session.id, false, session.id === state.session));
  }
  if (state.tab === 'sessions') loadSessionList();
  return data.sessions;
}

async function newSession() {
  const session = await api('/api/sessions', { method: 'POST' });
  state.session = session.id;
  location.hash = `session=${encodeURIComponent(session.id)}`;
  state.memory = {};
  showEmptyChat('New session. Ask the agent something.');
  await refreshSessions();
  refreshUsage();
  if (state.tab === 'memory') loadMemory();
  if (state.tab === 'artifacts') loadArtifacts();
}

async function openSession(id) {
  state.session = id;
  location.hash = `session=${encodeURIComponent(id)}`;
  state.memory = {};
  const fail = (error) => {
    toast(error.message);
    return null;
  };
  // The session first: a turn that ends meanwhile is still drawn from its events.
  const info = await api(sessionPath('')).catch(fail);
  const data = (await api(sessionPath('/history')).catch(fail)) || { entries: [] };
  const running = info && info.turn;
  const entries = running ? data.entries.slice(0, running.entry_index) : data.entries;
  renderHistory(entries, running, data.questions);
  refreshUsage();
  if (state.tab === 'memory') loadMemory();
  if (state.tab === 'artifacts') loadArtifacts();
  if (state.tab === 'inspector') loadInspector();
  if (running) reattach(running);
}

async function refreshUsage() {
  const box = $('#usage-summary');
  if (!state.session) {
    box.textContent = '';
    return;
  }
  const usage = await api(sessionPath('/usage')).catch(() => null);
  if (!usage) return;
  box.textContent =
    `${usage.calls} calls · ${fmt(usage.input_tokens)} in · ${Math.round(usage.hit_rate * 100)}% cached` +
    ` · ${fmt(usage.output_tokens)} out`;
}

// ---------------------------------------------------------------- tabs, memory, artifacts

function showTab(name) {
  state.tab = name;
  for (const tab of document.querySelectorAll('.tabs [role=tab]')) {
    tab.setAttribute('aria-selected', String(tab.dataset.tab === name));
  }
  for (const panel of document.querySelectorAll('main > .panel')) {
    panel.hidden = panel.id !== `panel-${name}`;
  }
  if (name === 'memory') {
    $('#tab-memory .dot').hidden = true;
    loadMemory();
  }
  if (name === 'artifacts') loadArtifacts();
  if (name === 'inspector') loadInspector();
  if (name === 'sessions') loadSessionList();
}

function markMemoryUpdated(name) {
  if (state.tab !== 'memory') $('#tab-memory .dot').hidden = false;
  const sub = document.querySelector(`.subtabs [data-file="${CSS.escape(name)}"] .dot`);
  if (sub && state.memoryFile !== name) sub.hidden = false;
}

async function loadMemory() {
  if (!state.session) {
    renderMemory();
    return;
  }
  const session = state.session;
  const data = await api(sessionPath('/memory')).catch((error) => {
    toast(error.message);
    return null;
  });
  if (!data || session !== state.session) return;
  for (const file of data.files) state.memory[file.name] = file.content;
  renderMemory();
}

function renderMemory() {
  for (const tab of document.querySelectorAll('#panel-memory .subtabs [role=tab]')) {
    const selected = tab.dataset.file === state.memoryFile;
    tab.setAttribute('aria-selected', String(selected));
    if (selected) tab.querySelector('.dot').hidden = true;
  }
  const box = $('#memory-content');
  const content = state.memory[state.memoryFile];
  box.dataset.file = state.memoryFile;
  if (!state.session) {
    box.replaceChildren(el('p', 'empty', 'No session selected.'));
  } else if (content === null || content === undefined) {
    box.replaceChildren(el('p', 'empty', `${state.memoryFile} has not been written in this session yet.`));
  } else {
    setMarkdown(box, content);
  }
}

async function loadArtifacts() {
  const list = $('#artifact-list');
  if (!state.session) {
    list.replaceChildren(el('li', 'empty', 'No session selected.'));
    return;
  }
  const data = await api(sessionPath('/artifacts')).catch((error) => {
    toast(error.message);
    return null;
  });
  if (!data) return;
  list.replaceChildren();
  if (!data.artifacts.length) list.append(el('li', 'empty', 'No artifacts yet.'));
  for (const artifact of data.artifacts) {
    const item = el('li');
    item.append(artifactCard(artifact));
    list.append(item);
  }
}

async function showArtifact(path) {
  for (const card of document.querySelectorAll('#artifact-list .artifact-card')) {
    card.classList.toggle('selected', card.dataset.path === path);
  }
  const encoded = path.split('/').map(encodeURIComponent).join('/');
  const data = await api(sessionPath(`/artifacts/${encoded}`)).catch((error) => {
    toast(error.message);
    return null;
  });
  if (!data) return;
  let note = `${data.path} · ${fmtBytes(data.size)}`;
  if (data.truncated) note += ' · showing the first part';
  $('#artifact-title').textContent = note;
  $('#artifact-view').textContent = data.binary ? '(binary file, not shown)' : data.content;
}

async function openArtifactTab(path) {
  showTab('artifacts');
  await loadArtifacts();
  showArtifact(path);
}

// ---------------------------------------------------------------- helpers and wiring

function fmt(n) {
  return Number(n || 0).toLocaleString('en-US');
}

function fmtBytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

let toastTimer = null;
function toast(message) {
  const box = $('#toast');
  box.textContent = message;
  box.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => {
    box.hidden = true;
  }, 6000);
}

function sessionFromHash() {
  const match = location.hash.match(/session=([^&]+)/);
  return match ? decodeURIComponent(match[1]) : null;
}

async function start() {
  for (const tab of document.querySelectorAll('.tabs [role=tab]')) {
    tab.addEventListener('click', () => showTab(tab.dataset.tab));
  }
  for (const tab of document.querySelectorAll('#panel-memory .subtabs [role=tab]')) {
    tab.addEventListener('click', () => {
      state.memoryFile = tab.dataset.file;
      renderMemory();
    });
  }
  $('#stop').addEventListener('click', stopTurn);
  $('#session-search').addEventListener('input', searchSessionsSoon);
  $('#new-session').addEventListener('click', () => newSession().catch((error) => toast(error.message)));
  $('#session-select').addEventListener('change', (event) => {
    if (event.target.value) openSession(event.target.value);
  });
  const input = $('#message');
  $('#composer').addEventListener('submit', (event) => {
    event.preventDefault();
    const text = input.value;
    if (!text.trim() || state.running) return;
    input.value = '';
    send(text);
  });
  input.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $('#composer').requestSubmit();
    }
  });

  const sessions = await refreshSessions();
  const wanted = sessionFromHash();
  const chosen = sessions.find((s) => s.id === wanted) || sessions[0];
  if (chosen) {
    await openSession(chosen.id);
    await refreshSessions();
  }
  document.body.dataset.ready = 'true';
}

document.addEventListener('DOMContentLoaded', start);
