// The tfjob dashboard (docs/dashboard.md). Plain JavaScript, served by tfjob itself. Every string
// that comes from the cluster or from a replica's output is put into the page as text
// (textContent, createTextNode, SVG <title> text): never as HTML.
"use strict";

const $ = (id) => document.getElementById(id);
let config = { mode: "cluster", title: "", actions: false, csrf: "" };

// el("td", {class: "x"}, "text", child, ...): an element with attributes and text/children.
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "onclick") e.addEventListener("click", v);
    else e.setAttribute(k, String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
  }
  return e;
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = String(text);
  return e;
}

function ms(t) { return t ? Date.parse(t) : NaN; }
function age(t, now) {
  const s = Math.max(0, Math.floor(((now || Date.now()) - ms(t)) / 1000));
  if (!isFinite(s)) return "-";
  if (s < 60) return s + "s";
  const m = Math.floor(s / 60);
  if (m < 10) return m + "m" + (s % 60 ? (s % 60) + "s" : "");
  if (m < 60) return m + "m";
  const h = Math.floor(m / 60);
  if (h < 8) return h + "h" + (m % 60 ? (m % 60) + "m" : "");
  if (h < 48) return h + "h";
  const d = Math.floor(h / 24);
  return d < 8 ? d + "d" + (h % 24 ? (h % 24) + "h" : "") : d + "d";
}
function span(seconds) {
  if (!isFinite(seconds)) return "";
  seconds = Math.max(0, Math.round(seconds));
  if (seconds < 120) return seconds + "s";
  const m = Math.floor(seconds / 60);
  return m < 120 ? m + "m" + (seconds % 60 ? (seconds % 60) + "s" : "") : Math.floor(m / 60) + "h" + (m % 60) + "m";
}
function stateBadge(state) {
  return el("span", { class: "badge s-" + String(state).toLowerCase() }, state);
}

function setLive(ok, text) {
  const l = $("live");
  l.textContent = text || (ok ? "live" : "reconnecting");
  l.className = "live " + (ok ? "ok" : "down");
}

// A long poll: resolves with the JSON answer; throws on a failure (retried by the caller).
async function getJson(path) {
  const r = await fetch(path, { credentials: "same-origin", cache: "no-store" });
  const body = await r.json().catch(() => ({ error: "HTTP " + r.status }));
  if (!r.ok) { const e = new Error(body.error || "HTTP " + r.status); e.status = r.status; throw e; }
  return body;
}
const sleep = (t) => new Promise((r) => setTimeout(r, t));

// Runs `step(since)` forever: each answer's version is the next `since`.
async function follow(step) {
  let since = 0;
  for (;;) {
    try {
      since = await step(since);
      setLive(true);
    } catch (e) {
      // 404: the job is not (or no longer) in the dashboard's model; it may come (a local run
      // starting, a job about to be created), so keep asking, slowly.
      setLive(false, e.status === 404 ? "no such job" : e.status === 403 ? "refused" : "reconnecting");
      if (e.status === 403) return;
      since = 0;
      await sleep(e.status === 404 ? 1500 : 1000);
    }
  }
}

function toast(text, bad) {
  const t = $("toast");
  t.textContent = text;
  t.className = "toast" + (bad ? " bad" : "");
  t.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { t.hidden = true; }, 5000);
}

function confirmBox(text, ok) {
  return new Promise((resolve) => {
    $("modal-text").textContent = text;
    $("modal-ok").textContent = ok;
    $("modal").hidden = false;
    const done = (v) => () => { $("modal").hidden = true; $("modal-ok").onclick = $("modal-cancel").onclick = null; resolve(v); };
    $("modal-ok").onclick = done(true);
    $("modal-cancel").onclick = done(false);
  });
}

async function act(action, ns, name) {
  if (!(await confirmBox(`${action[0].toUpperCase() + action.slice(1)} TFJob ${ns}/${name}?`, action))) return;
  const r = await fetch("/api/action", {
    method: "POST", credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-Tfjob-Csrf": config.csrf },
    body: JSON.stringify({ action, ns, name }),
  });
  const body = await r.json().catch(() => ({}));
  toast(r.ok ? body.message : (body.error || "HTTP " + r.status), !r.ok);
}

// ---------------------------------------------------------------- the list

function replicaCell(replicas) {
  const c = el("td", { class: "replicas" });
  for (const r of replicas) {
    const bar = el("span", { class: "rep", title: `${r.type}: ${r.running} running, ${r.succeeded} succeeded, ${r.failed} failed, ${r.wanted} wanted` },
      el("span", { class: "rep-type" }, r.type), " ",
      el("span", { class: "rep-run" }, r.running), "/",
      el("span", { class: "rep-ok" }, r.succeeded), "/",
      el("span", { class: "rep-want" }, r.wanted));
    c.appendChild(bar);
  }
  return c;
}

function rowElement(r) {
  const link = el("a", { href: `/job?ns=${encodeURIComponent(r.ns)}&name=${encodeURIComponent(r.name)}` }, r.name);
  const tr = el("tr", { "data-key": r.key },
    el("td", { class: "ns" }, r.ns),
    el("td", { class: "name" }, link),
    el("td", {}, stateBadge(r.state)),
    el("td", { class: "age", "data-created": r.created || "" }, age(r.created)),
    replicaCell(r.replicas),
    el("td", { class: "num" + (r.restarts ? " warn" : "") }, r.restarts),
    el("td", { class: "queue" }, r.queue || ""),
    el("td", { class: "admission" }, r.admission || ""));
  tr.dataset.sort = `${r.created || ""}|${r.key}`;
  return tr;
}

function listPage() {
  const filter = el("input", { id: "filter", type: "search", placeholder: "filter by namespace, name, state or queue", autocomplete: "off" });
  const count = el("span", { id: "count", class: "muted" });
  const tbody = el("tbody", { id: "jobs" });
  const table = el("table", { class: "jobs" },
    el("thead", {}, el("tr", {}, ...["Namespace", "Name", "State", "Age", "Replicas run/ok/want", "Restarts", "Queue", "Admission"].map((h) => el("th", {}, h)))),
    tbody);
  const empty = el("p", { id: "empty", class: "empty" }, "No TFJobs yet.");
  const status = el("p", { id: "status", class: "muted small" });
  $("main").replaceChildren(el("section", { class: "card" },
    el("div", { class: "toolbar" }, el("h1", {}, "TFJobs"), count, filter), table, empty, status));
  const rows = new Map();
  const applyFilter = () => {
    const f = filter.value.trim().toLowerCase();
    let shown = 0;
    for (const tr of rows.values()) {
      const hit = !f || tr.textContent.toLowerCase().includes(f);
      tr.hidden = !hit;
      if (hit) shown++;
    }
    count.textContent = `${shown} of ${rows.size}`;
    empty.hidden = rows.size > 0;
  };
  filter.addEventListener("input", applyFilter);
  const place = (tr) => {
    // Newest first.
    let before = null;
    for (const other of tbody.children) if (other.dataset.sort < tr.dataset.sort) { before = other; break; }
    tbody.insertBefore(tr, before);
  };
  follow(async (since) => {
    const a = await getJson(`/api/jobs?since=${since}&wait=${since ? 1 : 0}`);
    if (a.full) { rows.clear(); tbody.replaceChildren(); }
    const fragment = a.full && a.rows.length > 50;
    const sorted = fragment ? a.rows.slice().sort((x, y) => (`${y.created}|${y.key}` > `${x.created}|${x.key}` ? 1 : -1)) : a.rows;
    for (const r of sorted) {
      const tr = rowElement(r);
      const old = rows.get(r.key);
      rows.set(r.key, tr);
      if (old) old.replaceWith(tr);
      else if (fragment) tbody.appendChild(tr);
      else place(tr);
    }
    for (const k of a.removed) { const tr = rows.get(k); if (tr) { tr.remove(); rows.delete(k); } }
    status.textContent = a.status || "";
    applyFilter();
    document.body.dataset.listVersion = a.version;
    return a.version;
  });
  setInterval(() => {
    for (const td of tbody.querySelectorAll("td.age")) td.textContent = age(td.dataset.created);
  }, 1000);
}

// ---------------------------------------------------------------- a job's page

function conditionsTimeline(conds, created) {
  const list = el("ol", { class: "timeline" });
  for (const c of conds) {
    const when = c.time ? "+" + span((ms(c.time) - ms(created)) / 1000) : "";
    list.appendChild(el("li", { class: "cond " + (c.status === "True" ? "c-" + c.type.toLowerCase() : "c-false") },
      el("span", { class: "dot" }),
      el("div", {},
        el("div", {}, el("strong", {}, c.type), " ", el("span", { class: "muted" }, c.status), " ", el("span", { class: "reason" }, c.reason), " ", el("span", { class: "when" }, when)),
        c.message ? el("div", { class: "msg" }, c.message) : null)));
  }
  if (!conds.length) list.appendChild(el("li", { class: "muted" }, "No conditions yet."));
  return list;
}

const OUTCOME_TEXT = { pending: "pending", running: "running", succeeded: "succeeded", failed: "failed", deleted: "deleted" };

// The Gantt chart: one row per replica, one bar per attempt.
function gantt(page) {
  const attempts = page.attempts;
  const wrap = el("div", { class: "gantt" });
  if (!attempts.length) { wrap.appendChild(el("p", { class: "muted" }, "No pods yet.")); return wrap; }
  const now = ms(page.now);
  const t0 = Math.min(ms(page.row.created) || Infinity, ...attempts.map((a) => ms(a.start)).filter(isFinite));
  // At least 30 s wide: a young job's bars grow from the left instead of filling the chart.
  let t1 = Math.max(...attempts.map((a) => (a.end ? ms(a.end) : now)).filter(isFinite), t0 + (page.completed ? 1000 : 30000));
  if (!page.completed) t1 = Math.max(t1, now);
  const replicas = [...new Set(attempts.map((a) => a.replica))];
  // Drawn 1000 units wide and scaled to the card (viewBox), so it fits any window.
  const label = 120, width = 1000, rowH = 26, top = 22;
  const plot = width - label - 40;
  const x = (t) => label + ((t - t0) / (t1 - t0)) * plot;
  const height = top + replicas.length * rowH + 8;
  const s = svg("svg", { viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: "xMinYMin meet", class: "gantt-svg", role: "img" });
  // Axis: about 6 ticks at round seconds.
  const total = (t1 - t0) / 1000;
  const step = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200].find((v) => total / v <= 6) || 14400;
  for (let v = 0; v <= total; v += step) {
    const px = x(t0 + v * 1000);
    s.appendChild(svg("line", { x1: px, x2: px, y1: top - 4, y2: top + replicas.length * rowH, class: "tick" }));
    s.appendChild(svg("text", { x: px + 2, y: 12, class: "axis" }, "+" + span(v)));
  }
  replicas.forEach((r, i) => {
    const y = top + i * rowH;
    if (i % 2 === 0) s.appendChild(svg("rect", { x: 0, y, width, height: rowH, class: "stripe" }));
    s.appendChild(svg("text", { x: 6, y: y + 17, class: "rlabel" }, r));
  });
  // Ended attempts are drawn last, over the running ones: a short crash right before its
  // replacement stays visible and can be pointed at.
  const order = attempts.map((a, n) => [a, n]).sort((p, q) => (p[0].end ? 1 : 0) - (q[0].end ? 1 : 0));
  order.forEach(([a, n]) => {
    const i = replicas.indexOf(a.replica);
    const start = ms(a.start), end = a.end ? ms(a.end) : now;
    if (!isFinite(start)) return;
    const x0 = x(start), x1 = Math.max(x(end), x0 + 5);
    const bar = svg("rect", { x: x0, y: top + i * rowH + 5, width: x1 - x0, height: rowH - 10, rx: 3, class: "bar o-" + a.outcome, "data-attempt": n });
    const lines = [
      `${a.replica} · attempt ${a.instance + 1}${a.uid ? " · pod " + a.pod : ""}`,
      `${OUTCOME_TEXT[a.outcome] || a.outcome}${a.exitCode !== null ? " · exit code " + a.exitCode : ""}${a.reason ? " · " + a.reason : ""}`,
      `restart ${a.instance}${a.node ? " · node " + a.node : ""}`,
      `${a.start ? new Date(start).toLocaleTimeString() : "?"} → ${a.end ? new Date(end).toLocaleTimeString() : "now"} (${span((end - start) / 1000)})`,
    ];
    bar.appendChild(svg("title", {}, lines.join("\n")));
    bar.addEventListener("mousemove", (ev) => showTip(ev, lines));
    bar.addEventListener("mouseleave", hideTip);
    s.appendChild(bar);
  });
  wrap.appendChild(s);
  const legend = el("div", { class: "legend" });
  for (const o of ["pending", "running", "succeeded", "failed", "deleted"])
    legend.appendChild(el("span", {}, el("i", { class: "sw o-" + o }), o));
  wrap.appendChild(legend);
  return wrap;
}

function showTip(ev, lines) {
  const t = $("tooltip");
  t.replaceChildren(...lines.map((l, i) => el("div", { class: i ? "" : "tip-head" }, l)));
  t.hidden = false;
  t.style.left = Math.min(ev.clientX + 14, window.innerWidth - 330) + "px";
  t.style.top = ev.clientY + 14 + "px";
}
function hideTip() { $("tooltip").hidden = true; }

function conditionCard(title, object, extra) {
  if (!object) return null;
  return el("div", { class: "mini" }, el("h3", {}, title), el("div", { class: "mono" }, extra),
    conditionsTimeline(object.conditions || [], null));
}

function eventsTable(events) {
  if (!events.length) return el("p", { class: "muted" }, "No events.");
  const tb = el("tbody");
  for (const e of events.slice().reverse())
    tb.appendChild(el("tr", { class: e.type === "Warning" ? "warn-row" : "" },
      el("td", { class: "nowrap" }, e.time ? age(e.time) + " ago" : ""),
      el("td", {}, e.type), el("td", {}, e.reason), el("td", { class: "mono nowrap" }, e.object),
      el("td", { class: "num" }, e.count > 1 ? "×" + e.count : ""), el("td", { class: "msg" }, e.message)));
  return el("table", { class: "events" }, el("thead", {}, el("tr", {}, ...["When", "Type", "Reason", "Object", "", "Message"].map((h) => el("th", {}, h)))), tb);
}

function podsTable(pods) {
  if (!pods.length) return el("p", { class: "muted" }, "No pods.");
  const tb = el("tbody");
  for (const p of pods)
    tb.appendChild(el("tr", {}, el("td", { class: "mono nowrap" }, p.name), el("td", {}, stateBadge(p.state)), el("td", { class: "num" }, p.restarts), el("td", { class: "mono" }, p.node)));
  return el("table", { class: "pods" }, el("thead", {}, el("tr", {}, ...["Pod", "State", "Restarts", "Node"].map((h) => el("th", {}, h)))), tb);
}

function jobPage(ns, name) {
  const head = el("div", { class: "jobhead" });
  const body = el("div", { id: "job" });
  const logs = el("pre", { id: "logs", class: "logs" });
  const replicaSel = el("select", { id: "log-replica" }, el("option", { value: "" }, "all replicas"));
  const dropped = el("span", { class: "muted small", id: "log-dropped" });
  const yaml = el("pre", { id: "yaml", class: "yaml" });
  $("main").replaceChildren(
    el("a", { href: "/", class: "back" }, "← all TFJobs"), head, body,
    el("section", { class: "card" }, el("div", { class: "toolbar" }, el("h2", {}, "Logs"), replicaSel, dropped), logs),
    el("section", { class: "card" }, el("details", {}, el("summary", {}, el("h2", { class: "inline" }, "TFJob YAML")), yaml)));
  document.title = `${name} · tfjob dashboard`;
  const q = `ns=${encodeURIComponent(ns)}&name=${encodeURIComponent(name)}`;
  follow(async (since) => {
    const p = await getJson(`/api/job?${q}&since=${since}&wait=${since ? 1 : 0}`);
    renderJob(p, head, body, ns, name);
    if (yaml.textContent !== p.yaml) yaml.textContent = p.yaml;
    document.body.dataset.jobVersion = p.version;
    return p.version;
  });
  const filterLogs = () => {
    const want = replicaSel.value;
    for (const line of logs.children) line.hidden = !!want && line.dataset.replica !== want;
  };
  replicaSel.addEventListener("change", filterLogs);
  const seen = new Set();
  follow(async (after) => {
    const a = await getJson(`/api/logs?${q}&after=${after}&wait=${after ? 1 : 0}`);
    const stick = logs.scrollTop + logs.clientHeight >= logs.scrollHeight - 4;
    for (const text of a.lines) {
      const m = /^\[([^\]]+)\]/.exec(text);
      const replica = m ? m[1] : "";
      if (replica && !seen.has(replica)) { seen.add(replica); replicaSel.appendChild(el("option", { value: replica }, replica)); }
      const line = el("div", { class: "line" }, text);
      line.dataset.replica = replica;
      line.hidden = !!replicaSel.value && replica !== replicaSel.value;
      logs.appendChild(line);
    }
    while (logs.children.length > 5000) logs.firstChild.remove();
    if (a.dropped) dropped.textContent = `(${a.dropped} older lines not kept)`;
    if (stick) logs.scrollTop = logs.scrollHeight;
    return Math.max(after, a.next);
  });
}

function renderJob(p, head, body, ns, name) {
  const r = p.row;
  const actions = el("div", { class: "actions" });
  if (config.actions) {
    if (r.suspended) actions.appendChild(el("button", { class: "btn", id: "act-resume", onclick: () => act("resume", ns, name) }, "Resume"));
    else actions.appendChild(el("button", { class: "btn", id: "act-suspend", onclick: () => act("suspend", ns, name) }, "Suspend"));
    actions.appendChild(el("button", { class: "btn danger", id: "act-delete", onclick: () => act("delete", ns, name) }, "Delete"));
  }
  const facts = el("dl", { class: "facts" },
    el("dt", {}, "Namespace"), el("dd", {}, r.ns),
    el("dt", {}, "Age"), el("dd", {}, age(r.created)),
    el("dt", {}, "Replicas"), el("dd", {}, r.replicas.map((x) => `${x.type} ${x.running}/${x.succeeded}/${x.wanted}`).join("  ")),
    el("dt", {}, "Restarts"), el("dd", {}, r.restarts),
    r.queue ? el("dt", {}, "Queue") : null, r.queue ? el("dd", {}, `${r.queue} (${r.admission})`) : null);
  head.replaceChildren(el("div", { class: "titlerow" }, el("h1", {}, r.name), stateBadge(r.state), actions), facts);
  const parts = [];
  if (p.why) parts.push(el("div", { class: "why", id: "why" }, el("strong", {}, "Why it is not running: "), p.why));
  parts.push(el("div", { class: "grid" },
    el("section", { class: "card" }, el("h2", {}, "Conditions"), conditionsTimeline(p.conditions, r.created)),
    el("section", { class: "card wide" }, el("h2", {}, "Replicas over time"), gantt(p))));
  const gang = [conditionCard("Kueue Workload", p.workload, p.workload && p.workload.name),
    conditionCard("PodGroup", p.podGroup, p.podGroup && `${p.podGroup.kind} · ${p.podGroup.phase}`)].filter(Boolean);
  parts.push(el("div", { class: "grid" },
    el("section", { class: "card" }, el("h2", {}, "Pods"), podsTable(p.pods)),
    el("section", { class: "card wide" }, el("h2", {}, "Events"), eventsTable(p.events))));
  if (gang.length) parts.push(el("section", { class: "card" }, el("h2", {}, "Scheduling"), el("div", { class: "minis" }, ...gang)));
  body.replaceChildren(...parts);
}

// ---------------------------------------------------------------- start

async function main() {
  try { config = await getJson("/api/config"); } catch (e) { setLive(false, "no server"); }
  $("title").textContent = (config.mode === "local" ? "tfjob run · " : "") + (config.title || "");
  if (!config.actions) $("title").appendChild(el("span", { class: "ro" }, "read-only"));
  const params = new URLSearchParams(location.search);
  if (location.pathname === "/job" && params.get("ns") && params.get("name")) jobPage(params.get("ns"), params.get("name"));
  else listPage();
}
document.addEventListener("DOMContentLoaded", main);
