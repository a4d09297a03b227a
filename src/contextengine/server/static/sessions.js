// The Sessions tab (search, rename, delete; sub-agent sessions under their parent) and the
// nesting the top-bar picker shares. Uses app.js's helpers (api, el, toast, state, $,
// showTab, openSession, refreshSessions, refreshUsage, showEmptyChat). Server text reaches
// the page only as text nodes.
'use strict';

function sessionLabel(session) {
  return session.title || '(no messages yet)';
}

// Sessions in list order, each sub-agent session right after its parent (one level
// deeper); a session whose parent is not in the list stays at the top level.
function nested(sessions) {
  const ids = new Set(sessions.map((s) => s.id));
  const children = new Map();
  for (const session of sessions) {
    const parent = session.parent && ids.has(session.parent) ? session.parent : null;
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent).push(session);
  }
  const out = [];
  const seen = new Set();
  const walk = (parent, depth) => {
    for (const session of children.get(parent) || []) {
      if (seen.has(session.id)) continue;
      seen.add(session.id);
      out.push({ session, depth });
      walk(session.id, depth + 1);
    }
  };
  walk(null, 0);
  return out;
}

// ---------------------------------------------------------------- sessions tab

let searchTimer = null;

// Search as the user types, once typing pauses.
function searchSessionsSoon() {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(loadSessionList, 200);
}

async function loadSessionList() {
  const query = $('#session-search').value.trim();
  const path = query ? `/api/sessions?search=${encodeURIComponent(query)}` : '/api/sessions';
  const data = await api(path).catch((error) => {
    toast(error.message);
    return null;
  });
  if (!data || query !== $('#session-search').value.trim()) return;
  const list = $('#session-list');
  list.replaceChildren();
  if (!data.sessions.length) {
    list.append(el('li', 'empty', query ? `No session matches "${query}".` : 'No sessions yet.'));
  }
  const items = new Map();
  for (const { session } of nested(data.sessions)) {
    const item = sessionItem(session);
    items.set(session.id, item);
    const parent = items.get(session.parent);
    if (parent) parent.querySelector('.session-children').append(item);
    else list.append(item);
  }
}

function sessionItem(session) {
  const item = el('li', 'session-item');
  item.dataset.id = session.id;
  const row = el('div', 'session-row');
  if (session.id === state.session) row.classList.add('current');
  const open = el('button', 'session-open', sessionLabel(session));
  open.type = 'button';
  open.addEventListener('click', () => {
    showTab('chat');
    if (session.id !== state.session && !state.running) openSession(session.id).then(refreshSessions);
  });
  const when = session.created ? session.created.slice(0, 16).replace('T', ' ') : '';
  const meta = [session.id, when, session.model, session.busy ? 'running' : ''].filter(Boolean).join(' | ');
  const rename = el('button', 'session-rename', 'Rename');
  rename.type = 'button';
  rename.addEventListener('click', () => startRename(row, session));
  const remove = el('button', 'session-delete', 'Delete');
  remove.type = 'button';
  remove.disabled = session.busy;
  remove.title = session.busy ? 'Stop its turn first' : 'Move this session to the trash';
  remove.addEventListener('click', () => deleteSession(session));
  row.append(open, el('span', 'session-meta', meta), rename, remove);
  item.append(row, el('ul', 'session-children'));
  return item;
}

function startRename(row, session) {
  const form = el('form', 'session-rename-form');
  const input = el('input', 'session-title-input');
  input.value = session.title;
  input.maxLength = 200;
  input.setAttribute('aria-label', 'New title (empty: the first message)');
  const save = el('button', null, 'Save');
  save.type = 'submit';
  const cancel = el('button', null, 'Cancel');
  cancel.type = 'button';
  cancel.addEventListener('click', () => loadSessionList());
  form.append(input, save, cancel);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      await api(`/api/sessions/${encodeURIComponent(session.id)}`, {
        method: 'PATCH',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ title: input.value }),
      });
    } catch (error) {
      toast(error.message);
      return;
    }
    await refreshSessions();
    await loadSessionList();
  });
  input.addEventListener('keydown', (event) => {
    if (event.key === 'Escape') loadSessionList();
  });
  row.replaceChildren(form);
  input.focus();
  input.select();
}

async function deleteSession(session) {
  const question =
    `Delete "${sessionLabel(session)}" (${session.id})?\n\n` +
    'Its folder moves to the trash folder (.trash under the session root); move it back to restore it.';
  if (!window.confirm(question)) return;
  try {
    await api(`/api/sessions/${encodeURIComponent(session.id)}`, { method: 'DELETE' });
  } catch (error) {
    toast(error.message);
    return;
  }
  if (session.id === state.session) {
    state.session = null;
    history.replaceState(null, '', location.pathname);
    showEmptyChat('Session deleted. Start a new session or pick one above.');
    refreshUsage();
  }
  await refreshSessions();
  await loadSessionList();
}
