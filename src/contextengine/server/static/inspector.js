// The Inspector tab: every request the session sent (parts, cache boundaries, breaks, diff)
// and the Timeline (per-call cached / cache-write / uncached tokens as stacked bars).
// Uses app.js's helpers (api, sessionPath, el, fmt, toast, state, $). Server text reaches
// the page only as text nodes.
'use strict';

const PART_LABELS = {
  tools: 'tools (L1)',
  system: 'system (L1)',
  l2: 'L2 code law',
  history: 'history',
  live: 'live observation',
  tail: 'task-status tail',
  instruction: 'side-call instruction',
};
const SHOW_HEAD = 300;
const SHOW_END = 160;
const SHOW_AROUND = 240;

const inspector = { view: 'requests', call: null, calls: [] };

async function loadInspector() {
  const box = $('#inspector-main');
  if (!state.session) {
    box.replaceChildren(el('p', 'empty', 'No session selected.'));
    return;
  }
  if (inspector.view === 'timeline') return loadTimeline();
  const session = state.session;
  const data = await api(sessionPath('/inspect')).catch((error) => {
    toast(error.message);
    return null;
  });
  if (!data || session !== state.session) return;
  inspector.calls = data.calls;
  const list = el('div', 'call-list');
  list.id = 'inspector-calls';
  const detail = el('div', 'call-detail');
  detail.id = 'inspector-detail';
  box.replaceChildren(list, detail);
  if (!data.calls.length) {
    list.append(el('p', 'empty', 'No model calls recorded yet.'));
    return;
  }
  const table = el('table', 'calls');
  const head = el('tr');
  for (const name of ['#', 'purpose', 'chars', 'cached tok', 'predicted ch', 'break']) {
    head.append(el('th', '', name));
  }
  table.append(head);
  for (const call of data.calls) {
    const row = el('tr');
    row.dataset.call = call.call;
    row.append(
      el('td', 'num', call.call),
      el('td', '', call.purpose),
      el('td', 'num', fmt(call.request_chars)),
      el('td', 'num', fmt(call.cached_prefix_reported)),
      el('td', 'num', fmt(call.cached_prefix_predicted)),
      el('td', call.break ? 'break' : '', call.break ? call.break.cause : ''),
    );
    row.addEventListener('click', () => showCall(call.call));
    table.append(row);
  }
  list.append(table);
  const wanted = data.calls.find((c) => c.call === inspector.call);
  showCall(wanted ? wanted.call : data.calls[data.calls.length - 1].call);
}

async function showCall(number) {
  inspector.call = number;
  for (const row of document.querySelectorAll('#inspector-calls tr[data-call]')) {
    row.classList.toggle('selected', Number(row.dataset.call) === number);
  }
  const data = await api(sessionPath(`/inspect/${number}`)).catch((error) => {
    toast(error.message);
    return null;
  });
  const detail = $('#inspector-detail');
  if (!data || !detail) return;
  const marks = [];
  if (data.cached_prefix_predicted) {
    marks.push({ at: data.cached_prefix_predicted, kind: 'predicted', label: `predicted cached prefix ends (${fmt(data.cached_prefix_predicted)} chars)` });
  }
  if (data.cached_prefix_reported_chars) {
    marks.push({ at: data.cached_prefix_reported_chars, kind: 'reported', label: `reported cached prefix ends (${fmt(data.cached_prefix_reported)} tokens ≈ ${fmt(data.cached_prefix_reported_chars)} chars)` });
  }
  if (data.diff && data.diff.position !== null) {
    marks.push({ at: data.diff.position, kind: 'diff', label: `first difference vs call ${data.diff.previous}` });
  }
  const header = el('div', 'call-head');
  header.append(
    el('h3', '', `Call ${data.call} · ${data.purpose} · ${fmt(data.request_chars)} chars`),
    el('p', '', `Cached prefix: reported ${fmt(data.cached_prefix_reported)} tokens (≈ ${fmt(data.cached_prefix_reported_chars)} chars), predicted ${fmt(data.cached_prefix_predicted)} chars.`),
  );
  if (data.break) {
    const brk = el('div', 'break-box');
    brk.append(
      el('strong', '', `Cache break: ${data.break.cause} at char ${fmt(data.break.position)}`),
      el('pre', '', `old: ${data.break.old}\nnew: ${data.break.new}`),
    );
    header.append(brk);
  }
  if (data.diff) {
    const where = data.parts.find((p) => p.start <= data.diff.position && data.diff.position < p.end);
    const text = data.diff.position === null
      ? `Identical to call ${data.diff.previous}.`
      : `Diff vs call ${data.diff.previous}: first difference at char ${fmt(data.diff.position)} (in ${where ? where.name : 'the end'}).`;
    const diff = el('div', 'diff-box');
    diff.append(el('span', '', text));
    if (data.diff.old !== null) diff.append(el('pre', '', `was: ${data.diff.old}\nnow: ${data.text.slice(Math.max(0, data.diff.position - 40), data.diff.position + 120)}`));
    header.append(diff);
  }
  const refs = artifactRefs(data.text);
  if (refs.length) {
    const links = el('div', 'refs');
    links.append(el('span', '', 'Compressed refs: '));
    for (const path of refs) {
      const link = el('button', 'ref-link', path);
      link.type = 'button';
      link.addEventListener('click', () => openArtifactTab(path));
      links.append(link);
    }
    header.append(links);
  }
  const legend = el('div', 'legend');
  for (const part of data.parts) legend.append(el('span', `swatch part-${part.name}`, PART_LABELS[part.name] || part.name));
  legend.append(el('span', 'swatch mark-predicted', 'predicted boundary'), el('span', 'swatch mark-reported', 'reported boundary'));
  header.append(legend);
  const parts = el('div', 'parts');
  for (const part of data.parts) parts.append(partBlock(data.text, part, marks));
  detail.replaceChildren(header, parts);
}

// Artifact paths the request points to (externalized observations), relative to artifacts/.
function artifactRefs(text) {
  const found = new Set();
  for (const match of text.matchAll(/\/artifacts\/([A-Za-z0-9._-]+(?:\/[A-Za-z0-9._-]+)*)/g)) {
    found.add(match[1]);
  }
  return [...found];
}

function partBlock(text, part, marks) {
  const block = el('section', `part part-${part.name}`);
  block.dataset.part = part.name;
  block.dataset.start = part.start;
  block.dataset.end = part.end;
  block.append(el('div', 'part-label', `${PART_LABELS[part.name] || part.name} · chars ${fmt(part.start)}–${fmt(part.end)} (${fmt(part.end - part.start)})`));
  const inside = marks.filter((m) => m.at >= part.start && m.at < part.end);
  const shown = [[part.start, part.start + SHOW_HEAD], [part.end - SHOW_END, part.end]];
  for (const mark of inside) shown.push([mark.at - SHOW_AROUND, mark.at + SHOW_AROUND]);
  const ranges = mergeRanges(shown.map(([a, b]) => [Math.max(a, part.start), Math.min(b, part.end)]));
  const pre = el('pre', 'part-text');
  let at = part.start;
  for (const [a, b] of ranges) {
    if (a > at) pre.append(foldButton(text, at, a, inside));
    appendMarked(pre, text, a, b, inside);
    at = b;
  }
  block.append(pre);
  return block;
}

function mergeRanges(ranges) {
  const sorted = ranges.filter(([a, b]) => b > a).sort((x, y) => x[0] - y[0]);
  const out = [];
  for (const range of sorted) {
    const last = out[out.length - 1];
    if (last && range[0] <= last[1]) last[1] = Math.max(last[1], range[1]);
    else out.push([...range]);
  }
  return out;
}

function foldButton(text, a, b, marks) {
  const button = el('button', 'fold', `⋯ ${fmt(b - a)} chars folded (show) ⋯`);
  button.type = 'button';
  button.addEventListener('click', () => {
    const span = el('span');
    appendMarked(span, text, a, b, marks);
    button.replaceWith(span);
  });
  return button;
}

function appendMarked(node, text, a, b, marks) {
  let at = a;
  for (const mark of marks.filter((m) => m.at >= a && m.at < b).sort((x, y) => x.at - y.at)) {
    node.append(document.createTextNode(text.slice(at, mark.at)));
    const marker = el('span', `boundary mark-${mark.kind}`);
    marker.title = mark.label;
    marker.dataset.at = mark.at;
    node.append(marker);
    at = mark.at;
  }
  node.append(document.createTextNode(text.slice(at, b)));
}

// ---------------------------------------------------------------- timeline

const SVG_NS = 'http://www.w3.org/2000/svg';

function svg(tag, attributes, text) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attributes || {})) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

async function loadTimeline() {
  const session = state.session;
  const data = await api(sessionPath('/inspect/timeline')).catch((error) => {
    toast(error.message);
    return null;
  });
  if (!data || session !== state.session) return;
  const box = el('div', 'timeline');
  box.id = 'timeline';
  box.append(totalsBox(data.totals));
  if (!data.calls.length) box.append(el('p', 'empty', 'No model calls recorded yet.'));
  else box.append(timelineChart(data.calls));
  $('#inspector-main').replaceChildren(box);
}

function totalsBox(t) {
  const box = el('dl', 'totals');
  const rows = [
    ['model calls', fmt(t.calls)],
    ['input tokens', fmt(t.input_tokens)],
    ['cached', `${fmt(t.cached_tokens)} (${(t.hit_rate * 100).toFixed(1)}%)`],
    ['cache writes', fmt(t.cache_write_tokens)],
    ['uncached', fmt(t.uncached_tokens)],
    ['output tokens', fmt(t.output_tokens)],
    [`cost (${t.prices || '-'})`, `$${t.cost_usd.toFixed(4)}`],
    ['cost without a cache', `$${t.cost_without_cache_usd.toFixed(4)}`],
    ['savings', `$${t.savings_usd.toFixed(4)} (${(t.savings_share * 100).toFixed(1)}%)`],
    ['cache breaks', fmt(t.cache_breaks.length)],
  ];
  for (const [name, value] of rows) box.append(el('dt', '', name), el('dd', '', value));
  return box;
}

function niceStep(rough) {
  const power = 10 ** Math.floor(Math.log10(Math.max(rough, 1)));
  return [1, 2, 5, 10].map((m) => m * power).find((step) => step >= rough);
}

function timelineChart(calls) {
  const room = ($('#inspector-main').clientWidth || 900) - 60;
  const width = Math.max(640, Math.min(room, calls.length * 60 + 120));
  const height = 380;
  const left = 70;
  const top = 70;
  const bottom = 40;
  const plotH = height - top - bottom;
  const plotW = width - left - 20;
  const step = plotW / calls.length;
  const highest = Math.max(1, ...calls.map((c) => c.cached + c.cache_write + c.uncached));
  const tickStep = niceStep(highest / 4);
  const maxTokens = Math.ceil(highest / tickStep) * tickStep;
  const y = (tokens) => top + plotH - (tokens / maxTokens) * plotH;
  const chart = svg('svg', { width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': 'input tokens per model call' });
  for (let tokens = 0; tokens <= maxTokens; tokens += tickStep) {
    chart.append(svg('line', { x1: left, x2: width - 20, y1: y(tokens), y2: y(tokens), class: 'grid' }));
    chart.append(svg('text', { x: left - 6, y: y(tokens) + 4, 'text-anchor': 'end', class: 'tick' }, fmt(tokens)));
  }
  let eventCount = 0;
  const every = Math.max(1, Math.ceil(calls.length / 20));
  calls.forEach((call, k) => {
    const x = left + k * step + step * 0.1;
    const w = Math.max(1, step * 0.8);
    let base = 0;
    for (const [key, cls] of [['cached', 'bar-cached'], ['cache_write', 'bar-write'], ['uncached', 'bar-uncached']]) {
      const tokens = call[key];
      if (tokens > 0) {
        const rect = svg('rect', { x, y: y(base + tokens), width: w, height: y(base) - y(base + tokens), class: cls });
        rect.dataset.call = call.call;
        rect.append(svg('title', {}, `call ${call.call} (${call.purpose}): ${fmt(tokens)} ${key.replace('_', ' ')} · $${call.cost_usd.toFixed(4)}`));
        chart.append(rect);
      }
      base += tokens;
    }
    if (call.call % every === 0 || k === 0) {
      chart.append(svg('text', { x: x + w / 2, y: height - bottom + 16, 'text-anchor': 'middle', class: 'tick' }, String(call.call)));
    }
    call.events.forEach((label) => {
      const cx = x + w / 2;
      const kind = label.startsWith('break') ? 'ev-break' : `ev-${label}`;
      // Neighbouring events get different rows so their labels never overlap.
      const row = eventCount % 3;
      eventCount += 1;
      chart.append(svg('line', { x1: cx, x2: cx, y1: top - 12 - row * 14, y2: top + plotH, class: `event ${kind}` }));
      const text = svg('text', { x: cx + 3, y: top - 14 - row * 14, class: `event-label ${kind}` }, label);
      text.dataset.call = call.call;
      chart.append(text);
    });
  });
  chart.append(svg('text', { x: left + plotW / 2, y: height - 6, 'text-anchor': 'middle', class: 'axis' }, 'model call'));
  chart.append(svg('text', { x: 14, y: top + plotH / 2, transform: `rotate(-90 14 ${top + plotH / 2})`, 'text-anchor': 'middle', class: 'axis' }, 'input tokens'));
  const legend = el('div', 'legend');
  legend.append(
    el('span', 'swatch bar-cached', 'cached'),
    el('span', 'swatch bar-write', 'cache write'),
    el('span', 'swatch bar-uncached', 'uncached'),
    el('span', 'swatch ev-break', 'cache break'),
    el('span', 'swatch ev-compaction', 'compaction'),
  );
  const wrap = el('div', 'chart');
  wrap.append(legend, chart);
  return wrap;
}

function showInspectorView(view) {
  inspector.view = view;
  for (const tab of document.querySelectorAll('#panel-inspector .subtabs [role=tab]')) {
    tab.setAttribute('aria-selected', String(tab.dataset.view === view));
  }
  loadInspector();
}

document.addEventListener('DOMContentLoaded', () => {
  for (const tab of document.querySelectorAll('#panel-inspector .subtabs [role=tab]')) {
    tab.addEventListener('click', () => showInspectorView(tab.dataset.view));
  }
});
