"""The proxy's live page: plain HTML and a script that polls the stats endpoint."""

LIVE_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>contextengine proxy</title>
<style>
body{font:14px system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;
text-align:left;vertical-align:top}th{background:#f4f4f4}pre{margin:0;white-space:pre-wrap;
font-size:12px;max-width:40em}.big{font-size:20px;margin-right:2em}
</style></head><body>
<h1>contextengine proxy</h1>
<p><span class="big" id="requests">0 requests</span><span class="big" id="hit">-</span>
<span class="big" id="cost">-</span><span class="big" id="breaks">0 breaks</span></p>
<p id="log"></p>
<h2>Recent requests</h2>
<table><thead><tr><th>#</th><th>conversation</th><th>model</th><th>tokens</th>
<th>reusable</th><th>cached (usage)</th><th>break</th></tr></thead><tbody id="rows"></tbody></table>
<script>
function cell(row, text) {
  const td = document.createElement("td"); td.textContent = text; row.appendChild(td); return td;
}
async function refresh() {
  let data;
  try { data = await (await fetch("/_contextengine/stats")).json(); } catch (e) { return; }
  const s = data.summary;
  const rate = s.measured_hit_rate !== null ? s.measured_hit_rate : s.hit_rate;
  const measured = s.measured_hit_rate !== null ? "cache hit rate (usage)" : "reusable prefix";
  document.getElementById("requests").textContent = s.requests + " requests";
  document.getElementById("hit").textContent = (100 * rate).toFixed(1) + "% " + measured;
  document.getElementById("cost").textContent = "$" + s.measured_cost_usd.toFixed(4) + " cost";
  document.getElementById("breaks").textContent = s.breaks + " breaks ($" +
    s.break_cost_usd.toFixed(4) + ")";
  document.getElementById("log").textContent = "capture: " + data.log;
  const rows = document.getElementById("rows");
  rows.replaceChildren();
  for (const r of data.recent.slice().reverse()) {
    const row = document.createElement("tr");
    cell(row, r.index); cell(row, r.conversation); cell(row, r.model);
    cell(row, r.total_tokens); cell(row, r.reusable_tokens);
    cell(row, r.usage ? r.usage.cached_tokens + " / " + r.usage.input_tokens : "-");
    const b = cell(row, "");
    if (r.break) {
      const what = document.createElement("div");
      what.textContent = r.break.description + " (" + r.break.lost_tokens + " tokens re-read)";
      const diff = document.createElement("pre"); diff.textContent = r.break.snippet;
      const fix = document.createElement("div"); fix.textContent = "fix: " + r.break.fix;
      b.append(what, diff, fix);
    }
    rows.appendChild(row);
  }
}
refresh(); setInterval(refresh, 1000);
</script></body></html>
"""
