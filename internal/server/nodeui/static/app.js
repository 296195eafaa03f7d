// The node page. Plain JavaScript, no framework: it polls the JSON API next to it (relative
// URLs only, so it works under any proxy prefix) and redraws. Text from the node always goes
// in through textContent, never as HTML.
(function () {
  "use strict";

  const REFRESH_MS = 5000; // pods, events and the selected pod's timeline
  const SLOW_EVERY = 3;    // node and stats every third refresh (the stats are sampled every 15 s)

  const state = { node: null, pods: [], stats: null, events: [], timeline: null, selected: null, skew: 0, tick: 0 };

  // ---- small helpers ----

  const $ = (sel) => document.querySelector(sel);

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    }
    for (const c of children) {
      if (c === undefined || c === null) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  const SVG = "http://www.w3.org/2000/svg";
  function svg(tag, attrs) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    return e;
  }

  async function getJSON(path) {
    const resp = await fetch(path, { headers: { Accept: "application/json" }, cache: "no-store" });
    if (!resp.ok) throw new Error(path + ": " + resp.status + " " + (await resp.text()).trim());
    return resp.json();
  }

  // nodeNow is the node's clock: ages are computed against it, not the browser's.
  const nodeNow = () => Date.now() + state.skew;
  const setSkew = (serverNow) => { state.skew = Date.parse(serverNow) - Date.now(); };

  function fmtDuration(ms) {
    if (!isFinite(ms)) return "";
    if (ms < 0) ms = 0;
    if (ms < 1000) return Math.round(ms) + "ms";
    const s = ms / 1000;
    if (s < 60) return (s < 10 ? s.toFixed(1) : Math.round(s)) + "s";
    const m = Math.floor(s / 60);
    if (m < 60) return m + "m" + (Math.floor(s) % 60 ? (Math.floor(s) % 60) + "s" : "");
    const h = Math.floor(m / 60);
    if (h < 48) return h + "h" + (m % 60 ? (m % 60) + "m" : "");
    return Math.floor(h / 24) + "d";
  }
  // age of a timestamp; "" for none (Go's zero time encodes as year 1).
  const age = (ts) => (ts && Date.parse(ts) > 0 ? fmtDuration(nodeNow() - Date.parse(ts)) : "");

  function fmtBytes(b) {
    if (b === null || b === undefined) return "–";
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (b >= 1024 && i < units.length - 1) { b /= 1024; i++; }
    return (b < 10 && i > 0 ? b.toFixed(1) : Math.round(b)) + " " + units[i];
  }
  function fmtCPU(m) {
    if (m === null || m === undefined) return "–";
    if (m >= 1000) return (m / 1000).toFixed(2) + " cores";
    return (m < 10 ? m.toFixed(1) : Math.round(m)) + "m";
  }

  function last(values) {
    for (let i = (values || []).length - 1; i >= 0; i--) if (values[i] !== null) return values[i];
    return null;
  }

  function statusClass(p) {
    if (p.deleting) return "status-warn";
    if (p.phase === "Failed" || /BackOff|Err|Error|Invalid|OOM/.test(p.status)) return "status-bad";
    if (p.phase === "Running" && p.ready) return "status-ok";
    if (p.phase === "Succeeded") return "status-ok";
    return "status-warn";
  }

  function fill(tbody, rows, empty, cols) {
    tbody.replaceChildren(...(rows.length ? rows : [el("tr", {}, el("td", { colspan: cols, class: "hint" }, empty))]));
  }

  // ---- graphs ----

  // plot draws values (aligned with times, null for gaps) as lines in a 0..100 box.
  function plot(box, times, values, cls, t0, t1, ymax) {
    let pts = [];
    const flush = () => {
      if (pts.length > 1) box.append(svg("polyline", { class: "line " + cls, points: pts.join(" ") }));
      else if (pts.length === 1) box.append(svg("circle", { class: "line " + cls, cx: pts[0].split(",")[0], cy: pts[0].split(",")[1], r: 0.8 }));
      pts = [];
    };
    for (let i = 0; i < times.length; i++) {
      const v = values[i];
      if (v === null || v === undefined) { flush(); continue; }
      const x = ((times[i] - t0) / (t1 - t0)) * 100;
      const y = 100 - Math.min(v / ymax, 1) * 98;
      pts.push(x.toFixed(2) + "," + y.toFixed(2));
    }
    flush();
  }

  // graph fills a figure: title, current value, an hour of values, the scale.
  function graph(fig, title, series, cls, fmt, limit) {
    const times = (state.stats && state.stats.times) || [];
    const values = series || [];
    const t1 = times.length ? times[times.length - 1] : Math.floor(nodeNow() / 1000);
    const t0 = t1 - 3600;
    let peak = 0;
    for (const v of values) if (v !== null && v > peak) peak = v;
    let ymax = Math.max(peak * 1.2, cls === "cpu" ? 10 : 16 * 1024 * 1024);
    if (limit && limit < ymax * 1.5) ymax = Math.max(ymax, limit * 1.05);
    const box = svg("svg", { viewBox: "0 0 100 100", preserveAspectRatio: "none", role: "img", "aria-label": title });
    if (limit && limit <= ymax) {
      const y = (100 - (limit / ymax) * 98).toFixed(2);
      box.append(svg("line", { class: "limit", x1: 0, x2: 100, y1: y, y2: y }));
    }
    plot(box, times, values, cls, t0, t1, ymax);
    const now = last(values);
    const reading = now === null ? el("span", {}, "no samples yet") : el("span", {}, "now ", el("b", {}, fmt(now)), " · peak " + fmt(peak));
    fig.replaceChildren(
      el("figcaption", {}, el("span", {}, title), reading),
      box,
      el("div", { class: "axis" }, el("span", {}, "−1h"), el("span", {}, "top " + fmt(ymax) + (limit ? " · limit " + fmt(limit) : "")), el("span", {}, "now")));
  }

  function sparkline(values, cls) {
    const times = (state.stats && state.stats.times) || [];
    const box = svg("svg", { viewBox: "0 0 100 100", preserveAspectRatio: "none", "aria-hidden": "true" });
    if (!times.length) return box;
    let peak = 0;
    for (const v of values) if (v !== null && v > peak) peak = v;
    const t1 = times[times.length - 1];
    plot(box, times, values, cls, t1 - 3600, t1, peak * 1.15 || 1);
    return box;
  }

  // ---- rendering ----

  function resourceValue(name, key) {
    const r = state.node && state.node.resources.find((x) => x.name === name);
    return r ? r[key] : null;
  }

  function renderNode() {
    const n = state.node;
    if (!n) return;
    document.title = n.name + " · nodelet";
    $("#node-name").textContent = n.name;
    const ready = n.conditions.find((c) => c.type === "Ready");
    const badge = $("#node-ready");
    badge.textContent = !n.known ? "not registered yet" : ready ? (ready.status === "True" ? "Ready" : "NotReady") : "unknown";
    badge.className = "badge " + (ready && ready.status === "True" ? "ok" : "bad");
    badge.title = ready ? ready.message : "";
    const meta = [n.mode, n.version, n.kubeletVersion && "Kubernetes " + n.kubeletVersion, n.runtime,
      n.os, n.kernel && "kernel " + n.kernel, n.arch].filter(Boolean);
    $("#node-meta").textContent = meta.join(" · ") + (n.addresses.length ? " · " + n.addresses.join(", ") : "");
    $("#conditions").replaceChildren(...n.conditions.map((c) => {
      const bad = c.type === "Ready" ? c.status !== "True" : c.status === "True";
      return el("span", { class: "chip " + (bad ? "bad" : "ok"), title: (c.reason || "") + (c.message ? ": " + c.message : ""), "data-condition": c.type },
        c.type + " " + c.status + (age(c.since) ? " · " + age(c.since) : ""));
    }));
    fill($("#resources tbody"), n.resources.map((r) => el("tr", {}, el("td", {}, r.name), el("td", {}, r.capacity), el("td", {}, r.allocatable))),
      "No capacity reported yet.", 3);
    renderTopology(n.topology);
  }

  // renderTopology shows the machine's sockets, cores and NUMA nodes, read once at start, and
  // the resource managers' policies.
  function renderTopology(t) {
    $("#topology").hidden = !t;
    if (!t) return;
    const count = (k, word) => k + " " + word + (k === 1 ? "" : "s");
    $("#topology-summary").textContent = [count(t.sockets, "socket"), count(t.cores, "core"),
      count(t.cpus, "CPU") + " (" + t.cpusPerCore + " per core)", count(t.numaNodes.length, "NUMA node")].join(" · ");
    $("#policies").replaceChildren(...t.policies.map((p) => el("span", { class: "chip" }, p.name + ": " + p.value)));
    fill($("#numa-nodes tbody"), t.numaNodes.map((n) => el("tr", {}, el("td", {}, n.id), el("td", {}, n.cpus),
      el("td", {}, fmtBytes(n.memoryBytes)), el("td", {}, n.distances.join(" ")))), "No NUMA node read.", 4);
  }

  function renderNodeGraphs() {
    const s = state.stats;
    const cpu = resourceValue("cpu", "capacityValue");
    const mem = resourceValue("memory", "capacityValue");
    graph($("#node-cpu"), "Node CPU", s ? s.node.cpuMillicores : [], "cpu", fmtCPU, cpu);
    graph($("#node-memory"), "Node memory (working set)", s ? s.node.memoryBytes : [], "mem", fmtBytes, mem);
  }

  function podStats(uid) {
    return state.stats ? state.stats.pods.find((p) => p.uid === uid) : null;
  }

  function renderPods() {
    $("#pod-count").textContent = String(state.pods.length);
    const rows = state.pods.map((p) => {
      const key = p.namespace + "/" + p.name;
      const s = podStats(p.uid);
      const cpu = s ? s.cpuMillicores : [], mem = s ? s.memoryBytes : [];
      const open = () => { location.hash = "pod=" + encodeURIComponent(key); };
      return el("tr", {
        "data-pod": key, "data-phase": p.phase, "data-status": p.status, "data-ready": String(p.ready), tabindex: "0",
        class: state.selected === key ? "selected" : "", onclick: open, onkeydown: (e) => { if (e.key === "Enter") open(); },
      },
        el("td", {}, el("span", { class: "ns" }, p.namespace), el("span", { class: "name" }, p.name)),
        el("td", { class: "status " + statusClass(p) }, p.status),
        el("td", { class: "ready" }, p.readyContainers),
        el("td", { class: "restarts" }, String(p.restarts)),
        el("td", { class: "wide" }, p.ip || ""),
        el("td", { class: "wide" }, age(p.started)),
        el("td", { class: "usage" }, fmtCPU(last(cpu)), sparkline(cpu, "cpu")),
        el("td", { class: "usage" }, fmtBytes(last(mem)), sparkline(mem, "mem")));
    });
    fill($("#pod-table tbody"), rows, "No pods on this node.", 8);
  }

  function renderEvents(tbody, events, withObject) {
    const rows = events.map((e) => el("tr", { "data-reason": e.reason },
      el("td", {}, age(e.lastTime) + (e.count > 1 ? " (×" + e.count + ")" : "")),
      el("td", { class: e.type }, e.type),
      el("td", {}, e.reason),
      withObject ? el("td", {}, e.kind.toLowerCase() + "/" + (e.namespace ? e.namespace + "/" : "") + e.name) : null,
      el("td", { class: "msg" }, e.message)));
    fill(tbody, rows, "No events yet.", withObject ? 5 : 4);
  }

  function renderPod() {
    const section = $("#pod");
    const p = state.pods.find((x) => x.namespace + "/" + x.name === state.selected);
    if (!state.selected) { section.hidden = true; return; }
    section.hidden = false;
    $("#pod-title").textContent = state.selected;
    if (!p) {
      $("#pod-summary").textContent = "This pod is not on the node any more; its last timeline is shown if the node kept it.";
    } else {
      $("#pod-summary").textContent = [p.phase, p.status !== p.phase ? p.status : "", p.qosClass, p.ip,
        p.started ? "started " + age(p.started) + " ago" : "", "uid " + p.uid].filter(Boolean).join(" · ");
    }
    fill($("#containers tbody"), (p ? p.containers : []).map((c) => el("tr", { "data-container": c.name, "data-state": c.state },
      el("td", {}, c.name + (c.init ? " (init)" : "")),
      el("td", {}, c.state),
      el("td", { class: "msg", title: c.message || "" }, (c.reason || "") + (c.exitCode !== undefined ? " (exit " + c.exitCode + ")" : "")),
      el("td", {}, c.ready ? "yes" : "no"),
      el("td", {}, String(c.restarts)))), "No container status yet.", 5);
    const s = p && podStats(p.uid);
    graph($("#pod-cpu"), "Pod CPU", s ? s.cpuMillicores : [], "cpu", fmtCPU, 0);
    graph($("#pod-memory"), "Pod memory (working set)", s ? s.memoryBytes : [], "mem", fmtBytes, 0);
    renderWaterfall();
    const [ns, name] = state.selected.split("/");
    renderEvents($("#pod-events tbody"), state.events.filter((e) => e.kind === "Pod" && e.namespace === ns && e.name === name), false);
  }

  // renderWaterfall draws the selected pod's timeline: one row per step, its bar placed on one
  // time axis from the first step's start to the last step's end.
  function renderWaterfall() {
    const box = $("#waterfall");
    const tl = state.timeline;
    if (!tl || !tl.steps || !tl.steps.length) {
      box.replaceChildren(el("p", { class: "hint" }, tl === false ? "No timeline recorded for this pod." : "Loading…"));
      $("#timeline-note").textContent = "";
      return;
    }
    const steps = tl.steps.map((s) => ({ ...s, t0: Date.parse(s.start), t1: Date.parse(s.end) }));
    const start = Math.min(...steps.map((s) => s.t0));
    const end = Math.max(...steps.map((s) => s.t1), start + 1);
    const span = end - start;
    $("#timeline-note").textContent = steps.length + " steps over " + fmtDuration(span) +
      (tl.droppedSteps ? " · " + tl.droppedSteps + " middle steps dropped" : "") + (tl.finished ? " · finished" : "");
    box.replaceChildren(...steps.map((s) => {
      const left = ((s.t0 - start) / span) * 100;
      const width = Math.max(((s.t1 - s.t0) / span) * 100, 0);
      const sub = [s.container, s.call, s.detail].filter(Boolean).join(" · ");
      // Placed through the CSSOM: the page's content security policy forbids style attributes.
      const bar = el("div", { class: "bar" });
      bar.style.left = left.toFixed(3) + "%";
      bar.style.width = width.toFixed(3) + "%";
      return el("div", { class: "step" + (s.error ? " failed" : ""), "data-step": s.name, "data-container": s.container || "" },
        el("div", { class: "label" }, s.name, sub ? el("small", {}, sub) : null),
        el("div", { class: "track", title: "+" + fmtDuration(s.t0 - start) + " for " + fmtDuration(s.t1 - s.t0) },
          bar),
        el("div", { class: "dur" }, fmtDuration(s.t1 - s.t0), el("small", {}, "at +" + fmtDuration(s.t0 - start))),
        s.error ? el("div", { class: "err" }, s.error) : null);
    }));
  }

  // ---- data ----

  async function loadTimeline() {
    if (!state.selected) { state.timeline = null; return; }
    const [ns, name] = state.selected.split("/");
    const resp = await fetch("api/pods/" + encodeURIComponent(ns) + "/" + encodeURIComponent(name) + "/timeline", { cache: "no-store" });
    if (resp.status === 404) { state.timeline = false; return; }
    if (!resp.ok) throw new Error("timeline: " + resp.status + " " + (await resp.text()).trim());
    state.timeline = await resp.json();
  }

  async function refresh() {
    const slow = state.tick++ % SLOW_EVERY === 0;
    const jobs = [
      getJSON("api/pods").then((d) => { setSkew(d.now); state.pods = d.pods; }),
      getJSON("api/events").then((d) => { state.events = d.events; }),
      loadTimeline(),
    ];
    if (slow) {
      jobs.push(getJSON("api/node").then((d) => { state.node = d; }));
      jobs.push(getJSON("api/stats").then((d) => { state.stats = d; }));
    }
    const results = await Promise.allSettled(jobs);
    const failed = results.filter((r) => r.status === "rejected").map((r) => r.reason.message);
    const err = $("#error");
    err.hidden = !failed.length;
    err.textContent = failed.length ? "Could not read from the node: " + failed.join("; ") : "";
    render(slow);
  }

  function render(slow) {
    renderNode();
    if (slow) renderNodeGraphs();
    renderPods();
    renderEvents($("#event-table tbody"), state.events, true);
    renderPod();
  }

  function selectFromHash() {
    const m = /^#pod=(.+)$/.exec(location.hash);
    const key = m ? decodeURIComponent(m[1]) : null;
    if (key === state.selected) return;
    state.selected = key && key.includes("/") ? key : null;
    state.timeline = null;
    render(false);
    if (state.selected) {
      loadTimeline().then(() => render(false), () => {});
      $("#pod").scrollIntoView({ behavior: "smooth", block: "start" });
    }
  }

  function start() {
    $("#pod-close").addEventListener("click", () => { history.replaceState(null, "", location.pathname + location.search); selectFromHash(); });
    window.addEventListener("hashchange", selectFromHash);
    selectFromHash();
    refresh();
    setInterval(() => { if (!document.hidden) refresh(); }, REFRESH_MS);
  }

  start();
})();
