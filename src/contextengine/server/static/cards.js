// Cards in the chat: a compressed ref (a long result saved as an artifact) and the agent's
// question to the human, whose answer continues the running turn. Uses app.js's helpers
// (api, sessionPath, el, fmt, toast, state, scrollChat, openArtifactTab); loaded before
// app.js so its event handlers exist when app.js lists them. Server text reaches the page
// only as text nodes.
'use strict';

const REF_PREFIX = '{"_type":"compressed_ref"';

// A compressed_ref observation's fields, and the note after it; null for other text.
// Live previews are cut short, so when the JSON does not parse, the fields that arrived
// whole are read one by one (canonical JSON: sorted keys, no spaces).
function compressedRef(text) {
  const source = String(text);
  if (!source.startsWith(REF_PREFIX)) return null;
  const line = source.split('\n', 1)[0];
  const note = source.slice(line.length).trim();
  try {
    return { ...JSON.parse(line), note, complete: true };
  } catch {
    const ref = { note, complete: false };
    const fields = line.matchAll(/"(\w+)":("(?:[^"\\]|\\.)*"|-?\d+|true|false)/g);
    for (const [, key, value] of fields) ref[key] = JSON.parse(value);
    const cut = line.match(/"preview":"((?:[^"\\]|\\.)*)$/);
    if (cut && ref.preview === undefined) ref.preview = unescapeJson(cut[1].replace(/\\u?[0-9a-fA-F]{0,3}$|\\$/, ''));
    return ref;
  }
}

function unescapeJson(body) {
  try {
    return JSON.parse(`"${body}"`);
  } catch {
    return body;
  }
}

// The artifact a ref points to, relative to the session's artifacts/ folder.
function artifactPath(ref) {
  const match = typeof ref.path === 'string' && ref.path.match(/(?:^|\/)artifacts\/(.+)$/);
  return match ? match[1] : null;
}

function refChip(ref) {
  return el('span', 'badge ref', `saved: ${fmt(ref.original_length)} chars`);
}

// A card for a compressed ref: what it holds, its size, a preview, and where to open it.
function refCard(ref) {
  const card = el('div', 'ref-card');
  const head = el('div', 'ref-head');
  head.append(el('span', 'ref-kind', ref.type || 'ref'));
  head.append(el('span', 'ref-title', ref.title || ref.url || ref.query || ref.path || ''));
  if (ref.original_length !== undefined) head.append(el('span', 'ref-size', `${fmt(ref.original_length)} chars`));
  card.append(head);
  if (ref.preview) {
    const lines = String(ref.preview).split('\n');
    const shown = lines.slice(0, 12).join('\n');
    card.append(el('pre', 'ref-preview', lines.length > 12 ? `${shown}\n...` : shown));
  }
  const actions = el('div', 'ref-actions');
  const artifact = artifactPath(ref);
  if (artifact) {
    const open = el('button', 'link ref-open', `Open ${artifact}`);
    open.type = 'button';
    open.addEventListener('click', () => openArtifactTab(artifact));
    actions.append(open);
  }
  if (typeof ref.url === 'string' && /^https?:\/\//i.test(ref.url)) {
    const link = el('a', 'ref-url', ref.url);
    link.href = ref.url;
    link.target = '_blank';
    link.rel = 'noopener noreferrer';
    actions.append(link);
  }
  if (ref.recoverable === false) actions.append(el('span', 'ref-note', 'not recoverable'));
  if (actions.childElementCount) card.append(actions);
  if (ref.note) card.append(el('div', 'ref-note', ref.note));
  return card;
}

// ---------------------------------------------------------------- question card

// The agent hands over to the human: a card whose answer continues the same turn.
function onQuestion(turn, payload) {
  turn.stream = null;
  turn.lastStep = null;
  const card = el('div', 'question-card');
  card.append(el('div', 'question-label', 'The agent asks you'), el('div', 'question-text', payload.question));
  const form = el('form', 'question-form');
  const input = el('textarea', 'question-input');
  input.rows = 2;
  input.placeholder = 'Your answer (Enter to send)';
  const button = el('button', null, 'Answer');
  button.type = 'submit';
  form.append(input, button);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    answerQuestion(card, input.value);
  });
  input.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  card.append(form);
  turn.question = card;
  turn.node.append(card);
  scrollChat();
  if (state.running) input.focus();
}

async function answerQuestion(card, text) {
  if (!text.trim()) return;
  const form = card.querySelector('form');
  for (const field of form.elements) field.disabled = true;
  try {
    await api(sessionPath('/answer'), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ answer: text }),
    });
    closeQuestion(card, `You answered: ${text}`);
  } catch (error) {
    toast(error.message);
    for (const field of form.elements) field.disabled = false;
  }
}

function closeQuestion(card, text) {
  for (const old of card.querySelectorAll('form, .question-answer')) old.remove();
  card.append(el('div', 'question-answer', text));
  card.classList.add('answered');
}

// A question still open on this page (not being answered from it).
function openQuestion(turn) {
  const form = turn.question && turn.question.querySelector('form');
  return form && !form.elements[0].disabled ? turn.question : null;
}
