// Cards: a compressed ref (a long result saved as an artifact), a file of the Artifacts tab,
// and the agent's question to the human, whose answer continues the running turn. Uses
// app.js's helpers (api, sessionPath, el, fmt, fmtBytes, toast, state, scrollChat,
// openArtifactTab, showArtifact); loaded before app.js so its event handlers exist when
// app.js lists them. Server text reaches the page only as text nodes.
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

// A card: a kind label, a title, a size, the first lines, then its actions and a note.
function infoCard({ kind, title, size, preview, actions = [], note = '' }) {
  const card = el('div', 'ref-card');
  const head = el('div', 'ref-head');
  head.append(el('span', 'ref-kind', kind), el('span', 'ref-title', title));
  if (size) head.append(el('span', 'ref-size', size));
  card.append(head);
  if (preview) {
    const lines = String(preview).split('\n');
    const shown = lines.slice(0, 12).join('\n');
    card.append(el('pre', 'ref-preview', lines.length > 12 ? `${shown}\n...` : shown));
  }
  if (actions.length) {
    const row = el('div', 'ref-actions');
    row.append(...actions);
    card.append(row);
  }
  if (note) card.append(el('div', 'ref-note', note));
  return card;
}

function openButton(label, path, onOpen) {
  const open = el('button', 'link ref-open', label);
  open.type = 'button';
  open.addEventListener('click', () => onOpen(path));
  return open;
}

// A card for a compressed ref: what it holds, its size, a preview, and where to open it.
// A live event carries the ref's kind, title and size whole (`summary`); its preview is cut.
function refCard(ref, summary) {
  const whole = summary ? { ...ref, type: summary.kind, title: summary.title, original_length: summary.size } : ref;
  const actions = [];
  const artifact = artifactPath(whole);
  if (artifact) actions.push(openButton(`Open ${artifact}`, artifact, openArtifactTab));
  if (typeof whole.url === 'string' && /^https?:\/\//i.test(whole.url)) {
    const link = el('a', 'ref-url', whole.url);
    link.href = whole.url;
    link.target = '_blank';
    link.rel = 'noopener noreferrer';
    actions.push(link);
  }
  if (whole.recoverable === false) actions.push(el('span', 'ref-note', 'not recoverable'));
  return infoCard({
    kind: whole.type || 'ref',
    title: whole.title || whole.url || whole.query || whole.path || '',
    size: whole.original_length === undefined ? '' : `${fmt(whole.original_length)} chars`,
    preview: whole.preview,
    actions,
    note: whole.note,
  });
}

// A card for a file under the session's artifacts/ (the Artifacts tab).
function artifactCard(artifact) {
  const binary = artifact.preview === null;
  const card = infoCard({
    kind: binary ? 'binary' : 'text',
    title: artifact.path,
    size: fmtBytes(artifact.size),
    preview: binary ? '' : artifact.preview || '(empty)',
    actions: [openButton('Open', artifact.path, showArtifact)],
  });
  card.classList.add('artifact-card');
  card.dataset.path = artifact.path;
  return card;
}

// ---------------------------------------------------------------- question card

// The agent hands over to the human: a card whose answer continues the same turn.
function onQuestion(turn, payload) {
  turn.stream = null;
  turn.lastStep = null;
  const card = questionCard(payload.question);
  turn.question = card;
  turn.node.append(card);
  scrollChat();
  if (state.running) card.querySelector('.question-input').focus();
}

// A question asked in the recorded history: its card, closed with the answer if any.
function addRecordedQuestion(turn, asked) {
  turn.stream = null;
  turn.lastStep = null;
  const card = questionCard(asked.question);
  const ended = 'Not answered: the turn ended. Send your answer as a message to go on.';
  closeQuestion(card, asked.answer === null ? ended : `You answered: ${asked.answer}`);
  turn.node.append(card);
}

function questionCard(question) {
  const card = el('div', 'question-card');
  card.append(el('div', 'question-label', 'The agent asks you'), el('div', 'question-text', question));
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
  return card;
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
