"""The dashboard page: one self-contained HTML document (hand-written SVG charts, no CDN, no external script).

It polls `dashboard/data` (relative, so it works behind a path prefix) every 2 s and redraws from the server's
ring, so a page opened late shows the last 10 minutes at once. Each tile and chart carries its current value in
`data-value` (and each chart its point count in `data-points`) for tests and scrapers of the DOM. The
Content-Security-Policy admits only this inline script and style (by hash) and requests to this server.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from types import MappingProxyType

STYLE = """
:root { font: 14px/1.4 system-ui, sans-serif; color: #1f2937; background: #f3f4f6; }
body { margin: 0; padding: 14px 22px; }
header { display: flex; align-items: baseline; gap: 16px; }
h1 { font-size: 20px; margin: 0 0 10px; }
h2 { font-size: 14px; margin: 0 0 6px; }
#status { color: #6b7280; }
#status[data-state=error] { color: #b91c1c; }
#tiles { display: grid; grid-template-columns: repeat(auto-fill, minmax(116px, 1fr)); gap: 8px; }
.tile, figure, .panel { background: #fff; border-radius: 6px; box-shadow: 0 1px 2px #0002; }
.tile { padding: 8px 10px; }
.tile span { display: block; color: #6b7280; font-size: 12px; }
.tile b { font-size: 19px; font-weight: 600; }
.tile.warn { background: #fef3c7; }
.tile[data-state=none] b { font-size: 14px; font-weight: 400; color: #6b7280; }
#charts { display: grid; grid-template-columns: repeat(3, 1fr); gap: 10px; margin-top: 10px; }
figure { margin: 0; padding: 8px; }
figcaption { font-weight: 600; }
figcaption i { font-style: normal; font-weight: 400; font-size: 12px; margin-left: 10px; }
figcaption i::before { content: "\\25CF  "; color: var(--c); }
svg { width: 100%; height: auto; display: block; }
svg text { font-size: 10px; fill: #6b7280; }
svg line { stroke: #e5e7eb; }
svg path { fill: none; stroke: var(--c); stroke-width: 2; }
svg circle { fill: var(--c); }
.s0 { --c: #2563eb; } .s1 { --c: #d97706; } .s2 { --c: #dc2626; }
#tables { display: grid; grid-template-columns: 3fr 4fr 3fr 1.4fr; gap: 10px; margin-top: 10px; }
.panel { padding: 8px 10px; }
.wide { grid-column: 1 / -1; }
#slo-none { margin: 0; color: #6b7280; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: right; padding: 2px 6px; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
th { color: #6b7280; font-weight: 500; }
tr.bad td { color: #b91c1c; }
"""

SCRIPT = """
"use strict";
const NS = "http://www.w3.org/2000/svg";
const W = 600, H = 170, LEFT = 46, BOTTOM = 18, TOP = 8;
const DEGRADATION = ["normal", "features off", "int8", "tiny", "cache-only batch"];
const BREAKER = ["closed", "half-open", "open"];
const fixed = (digits) => (v) => v.toFixed(digits);
const PCT = (v) => (100 * v).toFixed(1) + " %";
const MS = (v) => (1000 * v).toFixed(v < 0.1 ? 1 : 0) + " ms";
const TILES = [
  ["rps", "Requests/s", (p) => p.rps, fixed(1)],
  ["success", "Success (2xx)", (p) => p.success, PCT],
  ["p50", "Latency p50", (p) => p.p50, MS],
  ["p95", "Latency p95", (p) => p.p95, MS],
  ["p99", "Latency p99", (p) => p.p99, MS],
  ["queue", "Queue length", (p) => p.queue, fixed(0)],
  ["cache_hit", "Cache hits", (p) => p.cache_hit, PCT],
  ["tm_hit", "TM hits", (p) => p.tm_hit, PCT],
  ["busy", "Engines busy", (p) => p.busy, PCT],
  ["degradation", "Degradation", (p) => p.degradation, (v) => v + " " + (DEGRADATION[v] || "")],
];
const CHARTS = [  // key, title, series [label, value], scale, fixed maximum
  ["rps", "Requests/s", [["all", (p) => p.rps], ["5xx", (p) => p.error_rps]], 1],
  ["latency", "Latency (ms)", [["p50", (p) => p.p50], ["p95", (p) => p.p95], ["p99", (p) => p.p99]], 1000],
  ["success", "Success (%)", [["2xx", (p) => p.success]], 100, 100],
  ["queue", "Queue length", [["queued", (p) => p.queue]], 1],
  ["hits", "Cache and TM hits (%)", [["cache", (p) => p.cache_hit], ["TM", (p) => p.tm_hit]], 100, 100],
  ["busy", "Engines busy (%)", [["engines", (p) => p.busy], ["GPU", (p) => p.gpu]], 100, 100],
];

function el(tag, attrs, text, svg) {
  const node = svg ? document.createElementNS(NS, tag) : document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

function build() {
  const tiles = document.getElementById("tiles");
  for (const [key, label] of [...TILES, ["budget", "Error budget"]]) {
    tiles.append(el("div", {class: "tile", "data-metric": key, "data-value": ""}));
    tiles.lastChild.append(el("span", {}, label), el("b", {}, "\\u2013"));
  }
  const charts = document.getElementById("charts");
  for (const [key, title, series] of CHARTS) {
    const caption = el("figcaption", {}, title);
    series.forEach(([label], i) => caption.append(el("i", {class: "s" + i}, label)));
    const svg = el("svg", {"data-chart": key, "data-points": "0", "data-value": "", viewBox: `0 0 ${W} ${H}`},
                   undefined, true);
    charts.append(el("figure"));
    charts.lastChild.append(caption, svg);
  }
}

function tile(key, value, text, warn) {
  const node = document.querySelector(`[data-metric="${key}"]`);
  node.dataset.value = value == null ? "" : String(value);
  node.querySelector("b").textContent = text;
  node.classList.toggle("warn", Boolean(warn));
}

function niceCeil(v) {
  if (!(v > 0)) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(v));
  return [1, 2, 5, 10].map((m) => m * magnitude).find((m) => v <= m);
}

function chart(data, [key, , series, scale, fixedMax]) {
  const svg = document.querySelector(`[data-chart="${key}"]`);
  svg.replaceChildren();
  const values = data.points.flatMap((p) => series.map(([, get]) => get(p))).filter((v) => v != null);
  const max = fixedMax || niceCeil(Math.max(0, ...values) * scale);
  // The x axis spans the data held, 20 s at least: a ring just started is not a sliver at the right edge.
  const first = data.points.length ? data.points[0].t - data.step_s : data.now;
  const span = Math.min(data.window_s, Math.max(20, data.now - first));
  const x = (t) => LEFT + (W - LEFT) * (1 - (data.now - t) / span);
  const y = (v) => H - BOTTOM - (H - BOTTOM - TOP) * Math.min(1, (v * scale) / max);
  for (const f of [0, 0.5, 1]) {
    const at = H - BOTTOM - (H - BOTTOM - TOP) * f;
    svg.append(el("line", {x1: LEFT, x2: W, y1: at, y2: at}, undefined, true));
    svg.append(el("text", {x: LEFT - 4, y: at + 3, "text-anchor": "end"}, String(+(max * f).toPrecision(3)), true));
  }
  const ago = span < 120 ? `-${Math.round(span)} s` : `-${Math.round(span / 60)} min`;
  svg.append(el("text", {x: LEFT, y: H - 4}, ago, true));
  svg.append(el("text", {x: W, y: H - 4, "text-anchor": "end"}, "now", true));
  series.forEach(([, get], i) => line(svg, data.points, get, x, y, "s" + i));
  const last = data.points.at(-1);
  svg.dataset.points = String(data.points.length);
  svg.dataset.value = last && series[0][1](last) != null ? String(series[0][1](last)) : "";
}

function line(svg, points, get, x, y, cls) {
  let d = "", pen = "M", end = null;
  for (const p of points) {
    const v = get(p);
    if (v == null) { pen = "M"; continue; }  // a gap in the data is a gap in the line
    end = [x(p.t).toFixed(1), y(v).toFixed(1)];
    d += `${pen}${end[0]},${end[1]} `;
    pen = "L";
  }
  if (d) svg.append(el("path", {d, class: cls}, undefined, true));
  if (end) svg.append(el("circle", {cx: end[0], cy: end[1], r: 3, class: cls}, undefined, true));
}

const show = (v, format) => (v == null ? "\\u2013" : format(v));

function fill(id, rows) {
  document.querySelector(`#${id} tbody`).replaceChildren(...rows.map(([cells, bad]) => {
    const row = el("tr", bad ? {class: "bad"} : {});
    for (const cell of cells) row.append(el("td", {}, cell));
    return row;
  }));
}

function tables(latest) {
  fill("models", latest.models.map((m) => [[m.name, String(m.workers), show(m.workers_ready, fixed(0)),
    show(m.busy, PCT), m.queue.toFixed(0), show(m.breaker, (b) => BREAKER[b] || String(b))], m.breaker >= 2]));
  fill("classes", Object.entries(latest.classes).map(([name, c]) => [[name, c.rps.toFixed(2),
    c.shed_rps.toFixed(2), c.error_rps.toFixed(2), show(c.p50, MS), show(c.p95, MS), show(c.p99, MS)],
    c.shed_rps + c.error_rps > 0]));
  fill("tiers", Object.entries(latest.tiers).map(([tier, t]) => [[tier, t.rps.toFixed(2), show(t.p50, MS),
    show(t.p95, MS), show(t.p99, MS)]]));
  fill("statuses", Object.entries(latest.by_status).sort().map(([c, rps]) => [[c, rps.toFixed(2)], c === "5xx"]));
  slos(latest.slos);
}

function slos(list) {
  document.getElementById("slo").dataset.state = list.length ? "ok" : "none";
  document.getElementById("slo-none").hidden = list.length > 0;
  document.getElementById("slos").hidden = !list.length;
  const windows = list.length ? Object.keys(list[0].burn) : [];
  const titles = ["SLO", "budget left", ...windows.map((w) => "burn " + w), "alerts firing"];
  document.querySelector("#slos thead tr").replaceChildren(...titles.map((t) => el("th", {}, t)));
  const spent = (s) => s.budget_remaining != null && s.budget_remaining <= 0;
  fill("slos", list.map((s) => [[s.name, show(s.budget_remaining, PCT),
    ...windows.map((w) => show(s.burn[w], fixed(2))), s.alerts.join(", ") || "none"], s.alerts.length || spent(s)]));
}

function render(data) {
  const last = data.points.at(-1);
  for (const [key, , get, format] of TILES) {
    const v = last ? get(last) : null;
    tile(key, v, show(v, format), key === "degradation" && v > 0);
  }
  const slos = data.latest ? data.latest.slos : null;
  const left = (slos || []).map((s) => s.budget_remaining).filter((v) => v != null);
  const budget = left.length ? Math.min(...left) : null;
  tile("budget", budget, !slos ? "\\u2013" : !slos.length ? "no SLO configured" : show(budget, PCT),
       budget != null && budget < 0.25);
  document.querySelector('[data-metric="budget"]').dataset.state = !slos ? "waiting" : slos.length ? "ok" : "none";
  for (const spec of CHARTS) chart(data, spec);
  if (data.latest) tables(data.latest);
}

async function poll() {
  const status = document.getElementById("status");
  try {
    const reply = await fetch("dashboard/data", {cache: "no-store"});
    if (!reply.ok) throw new Error("HTTP " + reply.status);
    const data = await reply.json();
    render(data);
    status.dataset.state = "live";
    status.textContent = `live: every ${data.step_s} s, last ${Math.round(data.window_s / 60)} min`;
  } catch (error) {
    status.dataset.state = "error";
    status.textContent = "no data: " + error.message;
  }
}

build();
poll();
setInterval(poll, 2000);
"""

_BODY = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>peakgate dashboard</title>
<style>{style}</style>
</head>
<body>
<header><h1>peakgate</h1><span id="status" data-state="waiting">waiting for data\u2026</span></header>
<section id="tiles"></section>
<section id="charts"></section>
<section id="tables">
<div class="panel"><h2>Engines</h2><table id="models"><thead><tr><th>model</th><th>workers</th><th>ready</th>
<th>busy</th><th>queue</th><th>breaker</th></tr></thead><tbody></tbody></table></div>
<div class="panel"><h2>Priority classes</h2><table id="classes"><thead><tr><th>class</th><th>served/s</th>
<th>shed/s</th><th>errors/s</th><th>p50</th><th>p95</th><th>p99</th></tr></thead><tbody></tbody></table></div>
<div class="panel"><h2>Tiers</h2><table id="tiers"><thead><tr><th>tier</th><th>req/s</th><th>p50</th>
<th>p95</th><th>p99</th></tr></thead><tbody></tbody></table></div>
<div class="panel"><h2>Status</h2><table id="statuses"><thead><tr><th>class</th><th>req/s</th></tr></thead>
<tbody></tbody></table></div>
<div class="panel wide" id="slo" data-state="waiting"><h2>Error budget</h2><p id="slo-none" hidden>no SLO
configured</p><table id="slos" hidden><thead><tr></tr></thead><tbody></tbody></table></div>
</section>
<script>{script}</script>
</body>
</html>
"""

PAGE = _BODY.format(style=STYLE, script=SCRIPT).encode()


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


# Nothing but this page's own script and style, and fetches of this server: no CDN, no external anything.
HEADERS: Mapping[str, str] = MappingProxyType({
    "Content-Security-Policy": f"default-src 'none'; script-src {_sha256(SCRIPT)}; style-src {_sha256(STYLE)}; "
                               "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "Cache-Control": "no-store",
})
