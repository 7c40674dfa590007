// The console page: renders the channel the mock Slack server recorded, sends what the person types or clicks
// back through the console's API (which signs it as Slack would), and shows a node's clickable topology.
"use strict";

const state = {
  info: null, version: -1, feed: { messages: [] },
  thread: null,        // the root ts of the thread shown
  threadPinned: false, // the person chose it (otherwise the most recently active thread is shown)
  topology: null,      // the view model of the open topology
  asked: null,         // the link whose draft was asked from the topology, and the thread's last reply then
};
const $ = (id) => document.getElementById(id);

async function api(path, body) {
  const opts = body === undefined ? {} : {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  };
  const r = await fetch(path, opts);
  const data = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(data.error || `HTTP ${r.status}`);
  return data;
}

function users() {
  const u = {};
  if (state.info) { u[state.info.user] = state.info.name; u[state.info.bot] = "fabricbot"; }
  return u;
}

// -- messages ----------------------------------------------------------------------------------------------
function avatar(m) {
  const a = document.createElement("div");
  a.className = m.bot ? "avatar bot" : "avatar";
  a.textContent = m.bot ? "fb" : (m.name || "?").slice(0, 1).toUpperCase();
  return a;
}

async function onAction(message, element, blockId, option, control) {
  control.disabled = true;
  try {
    await api("/api/action", { message_ts: message.ts, action_id: element.action_id, option });
    if (message.thread_ts || (message.replies && message.replies.length)) openThread(message.thread_ts || message.ts, true);
  } catch (e) {
    flash(`Could not send the click: ${e.message}`);
  } finally {
    setTimeout(() => { control.disabled = false; }, 600);
  }
}

function fileBlock(m, f) {
  const fig = document.createElement("figure");
  fig.className = "file";
  if (f.mimetype.startsWith("image/")) {
    const img = document.createElement("img");
    img.className = "file-image";
    img.src = f.url; img.alt = f.title; img.loading = "lazy";
    img.title = "Open the interactive topology";
    img.addEventListener("click", () => openTopology(f.id));
    img.addEventListener("load", () => { // the picture grew its pane: stay at the bottom if we were there
      const pane = img.closest(".messages");
      if (pane && pane.dataset.stick !== "0") pane.scrollTop = pane.scrollHeight;
    });
    fig.appendChild(img);
  }
  const cap = document.createElement("figcaption");
  cap.innerHTML = `<span class="file-name">${BlockKit.escapeHtml(f.title)}</span>`;
  if (f.name.endsWith(".png")) {
    const open = document.createElement("button");
    open.type = "button"; open.className = "bk-btn open-topology";
    open.textContent = "Open interactive topology";
    open.addEventListener("click", () => openTopology(f.id));
    cap.appendChild(open);
  }
  fig.appendChild(cap);
  return fig;
}

function messageEl(m, { inThread = false } = {}) {
  const row = document.createElement("div");
  row.className = `msg${m.ephemeral ? " ephemeral" : ""}`;
  row.dataset.ts = m.ts;
  row.appendChild(avatar(m));
  const body = document.createElement("div");
  body.className = "msg-body";
  const head = document.createElement("div");
  head.className = "msg-head";
  head.innerHTML = `<span class="who">${BlockKit.escapeHtml(m.name)}</span>` +
    (m.bot ? '<span class="badge">APP</span>' : "") +
    (m.ephemeral ? '<span class="only-you">Only visible to you</span>' : "") +
    (m.edited ? '<span class="edited">(edited)</span>' : "");
  body.appendChild(head);
  const ctx = { users: users(), onAction: (el, blockId, option, control) => onAction(m, el, blockId, option, control) };
  if (m.blocks && m.blocks.length) body.appendChild(BlockKit.render(m.blocks, ctx));
  else if (m.text) {
    const t = document.createElement("div");
    t.className = "msg-text";
    t.innerHTML = BlockKit.mrkdwn(m.text, ctx.users);
    body.appendChild(t);
  }
  for (const f of m.files || []) body.appendChild(fileBlock(m, f));
  if (!inThread && m.replies && m.replies.length) {
    const link = document.createElement("button");
    link.type = "button";
    link.className = "replies";
    const n = m.replies.length;
    link.textContent = `${n} ${n === 1 ? "reply" : "replies"}`;
    link.addEventListener("click", () => openThread(m.ts, true));
    body.appendChild(link);
  }
  row.appendChild(body);
  return row;
}

function renderList(host, items, opts) {
  const atBottom = host.dataset.stick !== "0";
  host.replaceChildren(...items.map((m) => messageEl(m, opts)));
  if (atBottom) host.scrollTop = host.scrollHeight;
}

function render() {
  const msgs = state.feed.messages;
  if (!msgs.length) {
    $("messages").innerHTML = '<div class="empty">This is the start of <b>#ops</b>. Type <code>/fabric hpc-gpu-node-12</code> below.</div>';
  } else {
    renderList($("messages"), msgs, {});
  }
  if (!state.threadPinned) {
    // follow the thread with the newest reply
    let latest = null;
    for (const m of msgs) for (const r of m.replies || []) if (!latest || r.ts > latest.ts) latest = { ts: r.ts, root: m.ts };
    if (latest) state.thread = latest.root;
  }
  renderThread();
}

// The outcome the bot posted for the draft asked from the topology: the preview, then filed or discarded.
function showOutcome() {
  if (!state.topology || !state.asked) return;
  const root = state.feed.messages.find((m) => m.ts === state.topology.thread_ts);
  const newer = ((root && root.replies) || []).filter((r) => r.ts > state.asked.after && r.bot);
  for (const r of newer.reverse()) {
    const d = r.decision; // what the server says the draft came to, whatever the reply's wording
    if (!d) continue;
    const said = d.outcome === "discarded" ? "draft discarded" : `${d.outcome === "joined" ? "already open as" : "filed as"} ${d.ticket}`;
    flash(`${state.asked.component}: ${said}.`);
    return;
  }
}

function renderThread() {
  const root = state.feed.messages.find((m) => m.ts === state.thread);
  $("thread").hidden = !root;
  $("app").classList.toggle("with-thread", !!root);
  if (!root) return;
  renderList($("thread-messages"), [root, ...(root.replies || [])], { inThread: true });
}

function openThread(ts, pinned) {
  state.thread = ts;
  state.threadPinned = pinned || state.threadPinned;
  renderThread();
}

async function refresh(after) {
  const q = after === undefined ? "" : `?after=${after}`;
  const data = await api(`/api/feed${q}`);
  if (data.version !== state.version) {
    state.version = data.version;
    state.feed = data;
    render();
    showOutcome();
  }
}

async function poll() {
  for (;;) {
    try { await refresh(state.version); } catch (e) { await new Promise((r) => setTimeout(r, 1500)); }
  }
}

function flash(text) {
  const s = $("topo-status");
  s.textContent = text;
  if (state.topology === null) console.warn(text);
}

// -- sending -------------------------------------------------------------------------------------------------
function wireComposer(form, threadOf) {
  const area = form.querySelector("textarea");
  const send = async () => {
    const text = area.value.trim();
    if (!text) return;
    area.value = "";
    area.style.height = "";
    try {
      await api("/api/send", { text, thread_ts: threadOf() });
    } catch (e) {
      area.value = text;
      alert(`Could not send: ${e.message}`);
    }
    refresh().catch(() => {});
  };
  form.addEventListener("submit", (ev) => { ev.preventDefault(); send(); });
  area.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); send(); }
  });
  area.addEventListener("input", () => {
    area.style.height = "";
    area.style.height = `${Math.min(area.scrollHeight, 220)}px`;
  });
}

// -- topology ------------------------------------------------------------------------------------------------
function fmt(v) {
  const a = Math.abs(v);
  if (a >= 1e6) return `${(v / 1e6).toFixed(1)}M`;
  if (a >= 1e3) return `${(v / 1e3).toFixed(a >= 1e4 ? 0 : 1)}k`;
  return `${Math.round(v * 10) / 10}`;
}

function tipHtml(link) {
  const esc = BlockKit.escapeHtml;
  const rates = Object.entries(link.rates).map(([k, v]) => `<li>${esc(k)}: <b>${fmt(v)}/h</b></li>`).join("");
  const counts = Object.entries(link.counts).map(([k, v]) => `${esc(k)} ${fmt(v)}`).join(", ");
  const crossed = link.crossed.map((c) => `<li>${esc(c)}</li>`).join("");
  const evidence = link.evidence.map((c) => `<li>${esc(c)}</li>`).join("");
  return `<div class="tip-title sev-${esc(link.severity)}">${esc(link.component)}</div>` +
    `<div class="tip-sub">${esc(link.severity)} · state ${esc(link.state)}${link.port ? ` · ${esc(link.port)}` : ""}</div>` +
    (rates ? `<div class="tip-h">Rates</div><ul>${rates}</ul>` : "") +
    (counts ? `<div class="tip-h">Counts in window</div><div>${counts}</div>` : "") +
    (crossed ? `<div class="tip-h">Thresholds crossed</div><ul>${crossed}</ul>` : "") +
    (evidence ? `<div class="tip-h">Evidence</div><ul>${evidence}</ul>` : "") +
    `<div class="tip-foot">${link.action ? "Click to draft its ticket" : "No draft button for this link"}</div>`;
}

function showTip(link, ev) {
  const tip = $("tip");
  tip.innerHTML = tipHtml(link);
  tip.hidden = false;
  const pad = 16;
  const w = tip.offsetWidth, h = tip.offsetHeight;
  // beside the cursor, on the side of the picture with more room, so the card does not hide the link's end
  const host = $("svg-host").getBoundingClientRect();
  const leftHalf = ev.clientX < host.left + host.width / 2;
  let x = leftHalf ? ev.clientX + pad : ev.clientX - w - pad, y = ev.clientY + pad;
  if (x + w > window.innerWidth - 8) x = ev.clientX - w - pad;
  if (x < 8) x = ev.clientX + pad;
  if (y + h > window.innerHeight - 8) y = Math.max(8, window.innerHeight - h - 8);
  tip.style.left = `${x}px`; tip.style.top = `${y}px`;
}

async function draftLink(link) {
  if (!link.action) { flash(`${link.component}: no draft action in the summary`); return; }
  flash(`Drafting the ticket for ${link.component}…`);
  const root = state.feed.messages.find((m) => m.ts === state.topology.thread_ts);
  const replies = (root && root.replies) || [];
  state.asked = { component: link.component, after: replies.length ? replies[replies.length - 1].ts : "" };
  try {
    await api("/api/action", link.action);
    openThread(state.topology.thread_ts, true);
    flash(`Draft requested for ${link.component}: review it in the thread, then File or Discard.`);
  } catch (e) {
    flash(`Could not draft: ${e.message}`);
  }
}

async function openTopology(fileId) {
  let view;
  try { view = await api(`/api/topology/${encodeURIComponent(fileId)}`); } catch (e) { alert(e.message); return; }
  state.topology = view;
  state.asked = null;
  $("topo-title").textContent = `${view.node} · topology`;
  const parts = view.parts || [];
  $("topo-sub").textContent = view.links.length
    ? "Hover a coloured link for its rates; click it to draft its ticket."
    : parts.length ? "The fault is not on a link: draft the suspect's ticket below."
    : view.fault ? "The fault names no part drawn here: see the summary." : "No degraded links on this node.";
  const host = $("svg-host");
  host.innerHTML = view.svg.slice(view.svg.indexOf("<svg"));
  const svg = host.querySelector("svg");
  svg.removeAttribute("width"); svg.removeAttribute("height");
  const list = $("topo-links");
  list.replaceChildren();
  if (view.links.length) list.appendChild(Object.assign(document.createElement("div"), { className: "topo-h", textContent: "Degraded links" }));
  for (const link of view.links) {
    for (const id of [link.gid, `${link.gid}-label`]) {
      const node = host.querySelector(`[id="${id}"]`);
      if (!node) continue;
      node.classList.add("hot", `sev-${link.severity}`);
      const line = id === link.gid && node.querySelector("path");
      if (line) { // a wider, invisible stroke: easier to hover and click than the drawn line
        const hit = line.cloneNode();
        hit.setAttribute("class", "hit");
        hit.setAttribute("style", "fill: none; stroke: transparent; stroke-width: 16; pointer-events: stroke");
        node.appendChild(hit);
      }
      node.setAttribute("tabindex", "0");
      node.setAttribute("role", "button");
      node.setAttribute("aria-label", `Draft the ticket for ${link.component}`);
      node.addEventListener("mousemove", (ev) => showTip(link, ev));
      node.addEventListener("mouseleave", () => { $("tip").hidden = true; });
      node.addEventListener("click", () => { $("tip").hidden = true; draftLink(link); });
      node.addEventListener("keydown", (ev) => { if (ev.key === "Enter") draftLink(link); });
    }
    const row = document.createElement("button");
    row.type = "button";
    row.className = `topo-link sev-${link.severity}`;
    row.dataset.gid = link.gid;
    const rates = Object.entries(link.rates).map(([k, v]) => `${k} ${fmt(v)}/h`).join(", ") || `state ${link.state}`;
    row.innerHTML = `<span class="chip">${BlockKit.escapeHtml(link.severity)}</span> ` +
      `<span class="comp">${BlockKit.escapeHtml(link.component)}</span><span class="rates">${BlockKit.escapeHtml(rates)}</span>`;
    row.addEventListener("mousemove", (ev) => showTip(link, ev));
    row.addEventListener("mouseleave", () => { $("tip").hidden = true; });
    row.addEventListener("click", () => draftLink(link));
    list.appendChild(row);
  }
  if (parts.length) list.appendChild(Object.assign(document.createElement("div"), { className: "topo-h", textContent: "Suspects not on a link" }));
  for (const part of parts) { // a GPU off the bus, an NVSwitch, Fabric Manager: the summary's draft for it
    const row = document.createElement("button");
    row.type = "button";
    row.className = `topo-link sev-${part.severity}`;
    row.title = part.evidence.join("\n");
    row.innerHTML = `<span class="chip">${BlockKit.escapeHtml(part.severity)}</span> ` +
      `<span class="comp">${BlockKit.escapeHtml(part.component)}</span><span class="rates">${BlockKit.escapeHtml(part.kind)}</span>`;
    row.addEventListener("click", () => draftLink(part));
    list.appendChild(row);
  }
  flash("");
  $("app").classList.add("mode-topology");
  $("topology").hidden = false;
  if (view.thread_ts) openThread(view.thread_ts, true);
}

function closeTopology() {
  state.topology = null;
  state.asked = null;
  $("app").classList.remove("mode-topology");
  $("topology").hidden = true;
  $("tip").hidden = true;
}

// -- start ---------------------------------------------------------------------------------------------------
function followScroll(host) { // stay at the newest message unless the person scrolled up
  host.addEventListener("scroll", () => {
    host.dataset.stick = host.scrollHeight - host.scrollTop - host.clientHeight < 80 ? "1" : "0";
  });
}

async function start() {
  followScroll($("messages"));
  followScroll($("thread-messages"));
  state.info = await api("/api/info");
  for (const e of document.querySelectorAll("#chan-name, #chan-title, .chan-name")) e.textContent = state.info.channel_name;
  $("me").textContent = state.info.name;
  document.querySelector("#composer textarea").placeholder =
    `Message #${state.info.channel_name}: /fabric ${state.info.nodes[0] || "<node>"}, or @fabricbot why is job 4411 slow?`;
  wireComposer($("composer"), () => null);
  wireComposer($("thread-composer"), () => state.thread);
  $("thread-close").addEventListener("click", () => { state.thread = null; state.threadPinned = true; renderThread(); });
  $("topo-back").addEventListener("click", closeTopology);
  $("chan-link").addEventListener("click", (ev) => { ev.preventDefault(); closeTopology(); });
  document.addEventListener("keydown", (ev) => { if (ev.key === "Escape" && state.topology) closeTopology(); });
  await refresh();
  poll();
}

document.addEventListener("DOMContentLoaded", start);
