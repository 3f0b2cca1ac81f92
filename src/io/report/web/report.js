"use strict";
// Draws the report from the JSON document in #report-data (schema/report.schema.json).
// render(data) rebuilds every section from one document, so a live page can call it again
// with a newer one. The DOM is built with createElement and textContent only; the charts
// are SVG drawn here, with a bounded number of elements whatever the session's size.
(function () {
  const SVG_NS = "http://www.w3.org/2000/svg";
  // Leaf states in the order they are stacked; cached is a part of completed.
  const STATES = ["completed", "cached", "degraded", "failed", "killed", "cancelled", "skipped", "not_run", "running", "waiting"];
  const STATE_LABEL = {
    completed: "completed", cached: "cached", degraded: "degraded", failed: "failed", killed: "killed",
    cancelled: "cancelled", skipped: "skipped", not_run: "not run", running: "running", waiting: "waiting at a gate",
    waiting_approval: "waiting for approval", budget_exhausted: "budget exhausted", interrupted: "interrupted (arun died)",
  };

  // ---- small DOM helpers ------------------------------------------------------------------

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    setProps(node, props);
    append(node, children);
    return node;
  }

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) node.setAttribute(k, String(v));
    append(node, children);
    return node;
  }

  function setProps(node, props) {
    for (const [k, v] of Object.entries(props || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "text") node.textContent = String(v);
      else if (k === "class") node.className = v;
      else if (k === "style") node.setAttribute("style", v);
      else if (k === "open") node.open = true;
      else node.setAttribute(k, String(v));
    }
  }

  function append(node, children) {
    for (const c of children.flat(Infinity)) {
      if (c === undefined || c === null || c === false) continue;
      node.append(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    }
  }

  function tip(text) { return svg("title", {}, text); }

  // ---- formatting -------------------------------------------------------------------------

  function fmtInt(n) { return n === null || n === undefined ? "—" : Number(n).toLocaleString(); }

  function trimZeros(s) { return s.indexOf(".") < 0 ? s : s.replace(/\.?0+$/, ""); }

  // 230 ms, 1.2 s, 12 s, 3 min 4 s, 2 h 5 min, 3 d 4 h
  function fmtDuration(s) {
    if (s === null || s === undefined || !isFinite(s)) return "—";
    if (s < 0) s = 0;
    if (s === 0) return "0 s";
    if (s < 0.001) return "< 1 ms";
    if (s < 1) return Math.round(s * 1000) + " ms";
    if (s < 10) return trimZeros(s.toFixed(1)) + " s";
    if (s < 60) return Math.round(s) + " s";
    const m = Math.floor(s / 60);
    if (s < 3600) { const r = Math.round(s - m * 60); return r ? m + " min " + r + " s" : m + " min"; }
    const h = Math.floor(s / 3600);
    if (s < 86400) { const r = Math.round((s - h * 3600) / 60); return r ? h + " h " + r + " min" : h + " h"; }
    const d = Math.floor(s / 86400);
    const r = Math.round((s - d * 86400) / 3600);
    return r ? d + " d " + r + " h" : d + " d";
  }

  function toDate(t) {
    if (t === null || t === undefined || t === "") return null;
    const d = typeof t === "number" ? new Date(t * 1000) : new Date(t);
    return isNaN(d.getTime()) ? null : d;
  }

  function fmtDate(t) {
    const d = toDate(t);
    if (!d) return "—";
    try { return d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" }); } catch (e) { return d.toLocaleString(); }
  }

  function fmtTime(t) {
    const d = toDate(t);
    if (!d) return "—";
    try { return d.toLocaleTimeString(undefined, { timeStyle: "medium" }); } catch (e) { return d.toLocaleTimeString(); }
  }

  function fmtCost(v) {
    if (v === null || v === undefined) return "—";
    if (v === 0) return "$0";
    if (v < 0.01) return "$" + Number(v.toPrecision(2));
    if (v < 1) return "$" + v.toFixed(3);
    if (v < 1000) return "$" + v.toFixed(2);
    return "$" + Math.round(v).toLocaleString();
  }

  function fmtBytes(n) {
    if (n === null || n === undefined) return "—";
    if (n < 1024) return n + " B";
    if (n < 1048576) return trimZeros((n / 1024).toFixed(1)) + " KiB";
    return trimZeros((n / 1048576).toFixed(1)) + " MiB";
  }

  function plural(n, one, many) { return fmtInt(n) + " " + (n === 1 ? one : (many || one + "s")); }

  // An argument as a shell would need it written: quoted when it holds anything but plain characters.
  function shellWord(a) {
    const s = String(a);
    return /^[A-Za-z0-9_%+=:,.\/-]+$/.test(s) ? s : "'" + s.replace(/'/g, "'\\''") + "'";
  }

  function firstLine(s) { return String(s || "").split("\n")[0]; }

  // Axis labels: a tick step of about `target` ticks, labelled in s, min or h.
  function timeTicks(total, target) {
    const steps = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600,
      7200, 10800, 21600, 43200, 86400, 172800, 604800];
    // Past the table (a span of years: a clock that was wrong), whole powers of ten of days,
    // so the ticks stay about `target` whatever the span.
    let step = Math.pow(10, Math.ceil(Math.log10(Math.max(total / target / 86400, 1)))) * 86400;
    for (const s of steps) if (total / s <= target) { step = s; break; }
    const ticks = [];
    for (let t = 0; t <= total + 1e-9; t += step) ticks.push(t);
    return { step, ticks };
  }

  function fmtTick(t, step) {
    if (t === 0) return "0";
    if (step < 60) return trimZeros(t.toFixed(step < 0.1 ? 2 : step < 1 ? 1 : 0)) + " s";
    if (step < 3600) return trimZeros((t / 60).toFixed(step % 60 ? 1 : 0)) + " min";
    if (step < 86400) return trimZeros((t / 3600).toFixed(step % 3600 ? 1 : 0)) + " h";
    return Math.round(t / 86400).toLocaleString() + " d";
  }

  // ---- shared building blocks --------------------------------------------------------------

  function section(key, title, aside) {
    const body = el("div", { class: "body" });
    const node = el("section", { "data-section": key, "aria-label": title },
      el("header", {}, el("h2", { text: title }), aside ? el("span", { class: "aside", text: aside }) : null), body);
    return { node, body };
  }

  function badge(state, label, small) {
    return el("span", { class: small ? "badge small" : "badge", "data-state": state, text: label || STATE_LABEL[state] || state });
  }

  function scrollTable(head, rows, numeric) {
    const isNum = (i) => numeric && numeric.indexOf(i) >= 0;
    const thead = el("thead", {}, el("tr", {}, head.map((h, i) => el("th", { class: isNum(i) ? "num" : null, text: h }))));
    const tbody = el("tbody", {}, rows);
    return el("div", { class: "scroll" }, el("table", {}, thead, tbody));
  }

  function cell(content, cls) {
    if (content instanceof Node) return el("td", { class: cls }, content);
    return el("td", { class: cls, text: content === null || content === undefined || content === "" ? "—" : content });
  }

  // Leaf counts as the stacked bar's segments: completed less the cached, then the rest.
  function segments(counts) {
    const out = [];
    if (!counts) return out;
    for (const s of STATES) {
      let n = counts[s] || 0;
      if (s === "completed") n -= counts.cached || 0;
      if (n > 0) out.push([s, n]);
    }
    return out;
  }

  function leafTotal(counts) {
    let n = 0;
    for (const s of STATES) if (s !== "cached") n += (counts && counts[s]) || 0;
    return n;
  }

  // `items`, when known and larger, leaves the part not started yet empty.
  function stackBar(counts, mini, items) {
    const segs = segments(counts);
    const total = segs.reduce((a, [, n]) => a + n, 0);
    const bar = el("div", { class: mini ? "stack mini" : "stack", role: "img",
      "aria-label": segs.map(([s, n]) => n + " " + STATE_LABEL[s]).join(", ") || "none" });
    for (const [s, n] of segs) {
      bar.append(el("span", { "data-state": s, style: "flex:" + n + " 1 0", title: fmtInt(n) + " " + STATE_LABEL[s] }));
    }
    if (items && items > total) bar.append(el("span", { class: "rest", style: "flex:" + (items - total) + " 1 0" }));
    else if (!total) bar.append(el("span", { class: "rest", style: "flex:1 1 0" }));
    return bar;
  }

  function countsText(counts) {
    return segments(counts).map(([s, n]) => fmtInt(n) + " " + STATE_LABEL[s]).join(" · ") || "none";
  }

  // A chart is drawn at the width of its box (crisp text at any width) and again on resize.
  let charts = [];
  function chart(draw) {
    const box = el("div", { class: "chart" });
    charts.push({ box, draw, width: 0 });
    return box;
  }

  function drawCharts(force) {
    for (const c of charts) {
      if (!c.box.isConnected) continue;
      const w = Math.max(280, Math.floor(c.box.clientWidth || 800));
      if (!force && Math.abs(w - c.width) < 8) continue;
      c.width = w;
      c.box.replaceChildren(c.draw(w));
    }
  }

  // ---- 1. header --------------------------------------------------------------------------

  function runsDuration(d) {
    let total = 0;
    const now = toDate(d.generated_at);
    for (const r of d.runs || []) {
      if (typeof r.duration === "number") total += r.duration;
      else if (r.ended === "running" && now && toDate(r.started_at)) total += (now - toDate(r.started_at)) / 1000;
    }
    // a killed run has no duration: the timeline's span stands for it
    if (!total && d.timeline && d.timeline.seconds) total = d.timeline.seconds;
    return total;
  }

  function sessionState(s) {
    if (s.interrupted) return "interrupted";
    return s.status || "running";
  }

  function wide(item) { item.className = "wide"; return item; }

  function metaItem(label, value, mono) {
    if (value === null || value === undefined || value === "") return null;
    return el("div", {}, el("dt", { text: label }), el("dd", { class: mono ? "mono" : null }, value));
  }

  function renderHeader(d) {
    const s = d.session || {};
    const state = sessionState(s);
    const { node, body } = section("header", "Run");
    node.querySelector("header").remove();
    const runs = d.runs || [];
    const title = el("div", { class: "title" },
      el("h1", { text: s.recipe_name || "run" }),
      badge(state, null),
      s.live ? badge("live", "live", true) : null);
    const sub = el("div", { class: "subtitle" },
      el("span", { class: "mono", text: s.id || "" }),
      el("span", { text: "started " + fmtDate(s.created) }),
      el("span", { text: "ran for " + fmtDuration(runsDuration(d)) + (runs.length > 1 ? " over " + runs.length + " runs" : "") }));
    const meta = el("dl", { class: "meta" },
      metaItem("Working directory", s.working_dir, true),
      metaItem("Recipe file", s.recipe_path, true),
      metaItem("Executor", [s.executor, s.max_concurrent ? "max " + s.max_concurrent + " at once" : null].filter(Boolean).join(" · ")),
      metaItem("Instances", fmtInt(d.instances) + " (" + fmtInt(leafTotal(d.counts)) + " leaves)"),
      metaItem("Resumed", s.resumes ? plural(s.resumes, "time") : null),
      metaItem("arun", s.arun_version && s.arun_version !== d.arun_version
        ? s.arun_version + " (report by " + d.arun_version + ")" : (s.arun_version || d.arun_version)),
      metaItem("Session directory", s.dir, true),
      metaItem("Report made", fmtDate(d.generated_at)),
      runs.length && commandLine(runs[0].by) ? wide(metaItem("Command", commandLine(runs[0].by), true)) : null);
    body.append(el("div", { class: "top", text: "arun report" }), title, sub, meta);
    if (s.interrupted) {
      body.append(el("p", { class: "note", text: "The session says running but no arun holds it: the arun that ran it died (a crash or kill -9). “arun resume " + (s.id || "ID") + "” takes it up." }));
    }
    if (s.error) {
      body.append(el("div", { class: "error-box" }, el("div", { class: "label", text: "Error" }), el("pre", { class: "mono", text: s.error })));
    }
    if (runs.length) body.append(renderRuns(runs));
    return node;
  }

  // user@host · pid, from state.json's runs entry
  function whoRan(by) {
    if (!by || typeof by !== "object") return "";
    const who = [by.user, by.host].filter(Boolean).join("@");
    return [who, by.pid ? "pid " + by.pid : null].filter(Boolean).join(" · ");
  }

  function commandLine(by) {
    return by && Array.isArray(by.argv) && by.argv.length ? by.argv.map(shellWord).join(" ") : "";
  }

  function renderRuns(runs) {
    const anyBy = runs.some((r) => whoRan(r.by));
    const commands = runs.map((r) => commandLine(r.by));
    const manyCommands = commands.some((c, i) => c && c !== commands[0] && i > 0);
    const rows = runs.map((r, i) => {
      const state = r.ended === "killed" ? "killed" : r.ended === "running" ? "running" : (r.status || "running");
      const how = r.ended === "killed" ? "ended without its recipe_end (killed)" : r.ended === "running" ? "running now" : "ended";
      const by = whoRan(r.by);
      return el("tr", {},
        cell(i === 0 ? "run" : "resume " + i, "nowrap"),
        cell(fmtDate(r.started_at), "nowrap"),
        cell(fmtDuration(r.duration), "num"),
        cell(badge(state, null, true)),
        cell(how + (r.error ? ": " + firstLine(r.error) : ""), "wrap"),
        anyBy ? cell(by || null, "nowrap") : null,
        manyCommands ? cell(commands[i] || null, "cmd") : null);
    });
    return el("div", {}, el("h3", { text: runs.length === 1 ? "Invocation" : "Invocations" }),
      scrollTable(["", "Started", "Duration", "Status", "How it ended"].concat(anyBy ? ["By"] : [], manyCommands ? ["Command"] : []), rows, [2]));
  }

  // ---- 2. counts --------------------------------------------------------------------------

  function renderCounts(d) {
    const c = d.counts || {};
    const total = leafTotal(c);
    const { node, body } = section("counts", "Instances", plural(total, "leaf", "leaves") + " (commands, agent calls, gates)");
    body.append(stackBar(c));
    const tiles = el("div", { class: "tiles" });
    for (const s of STATES) {
      const n = c[s] || 0;
      if (!n && s !== "completed" && s !== "failed") continue;
      tiles.append(el("div", { class: "tile", "data-state": s },
        el("span", { class: "n", "data-count": s, text: fmtInt(n) }),
        el("span", { class: "l" }, el("span", { class: "dot" }), STATE_LABEL[s])));
    }
    body.append(tiles);
    return node;
  }

  // ---- 3. failures ------------------------------------------------------------------------

  function renderFailures(d) {
    const f = d.failures;
    if (!f || !f.total) return null;
    const shown = f.shown || [];
    const { node, body } = section("failures", "Failures", plural(f.total, "failed leaf", "failed leaves"));
    shown.forEach((x, i) => body.append(i < 3 ? renderFailure(x) : renderFailureLine(x)));
    if (f.total > shown.length) body.append(el("p", { class: "note", text: fmtInt(f.total - shown.length) + " more failures not shown." }));
    return node;
  }

  function renderFailure(x) {
    const chips = el("span", { class: "chips" });
    const chip = (t) => chips.append(el("span", { class: "chip", text: t }));
    if (x.timed_out) chip("timed out");
    if (x.signal !== null && x.signal !== undefined) chip("signal " + x.signal);
    if (x.exit_code !== null && x.exit_code !== undefined) chip("exit " + x.exit_code);
    if (x.attempts > 1) chip(x.attempts + " attempts");
    if (typeof x.duration === "number") chip(fmtDuration(x.duration));
    if (x.fatal) chip("fatal");
    const excerpt = (x.excerpt || []).filter((l) => l !== firstLine(x.error));
    // "step 'a': exit code 3 ..." says no more than the chips when the excerpt follows
    const plain = excerpt.length && /^step '.*': exit code \d+( \.\.\.)?$/.test(x.error || "");
    const box = el("div", { class: "failure", "data-state": "failed" },
      el("div", { class: "head" }, el("span", { class: "inst", text: x.instance }), chips),
      plain ? null : el("div", { class: "err", text: x.error || "" }));
    if (excerpt.length) box.append(el("pre", { class: "excerpt mono", text: excerpt.join("\n") }));
    const log = x.log;
    if (log && log.text) {
      const what = "Log tail · " + (log.stream || "output") + " · " + fmtBytes(log.bytes) + (log.cut ? " (last part shown)" : "");
      box.append(el("details", {}, el("summary", { text: what }),
        el("pre", { class: "log mono", text: (log.cut ? "…\n" : "") + log.text }),
        log.path ? el("div", { class: "note mono", text: log.path }) : null));
    }
    return box;
  }

  // Past the first few, a failure is one line that opens to the same details.
  function renderFailureLine(x) {
    const card = renderFailure(x);
    const head = card.querySelector(".head");
    const err = el("span", { class: "muted", text: (x.excerpt || [])[0] || x.error || "" });
    const det = el("details", { class: "failure folded", "data-state": "failed" }, el("summary", {}, head, err));
    for (const n of Array.from(card.childNodes)) if (n !== head) det.append(n);
    return det;
  }

  // ---- 4. timeline ------------------------------------------------------------------------

  function ganttRows(t, steps) {
    const instancesOf = new Map((steps || []).map((s) => [s.step, s.instances]));
    const rows = [];
    const tops = t.steps || [];
    const topNames = new Set(tops.map((s) => s.step));
    if (tops.length) rows.push({ kind: "heading", label: "Steps" });
    for (const s of tops) {
      rows.push({ kind: "bars", label: s.step, sub: s.type, lanes: [[s]], h: 14,
        tipOf: (b) => b.step + " (" + b.type + ") · " + (STATE_LABEL[b.status] || b.status) + " · " + fmtDuration(b.end - b.start) });
    }
    const groups = new Map();
    for (const b of t.bars || []) {
      if (topNames.has(b.step) && b.instance === b.step) continue;
      if (!groups.has(b.step)) groups.set(b.step, []);
      groups.get(b.step).push(b);
    }
    if (groups.size) {
      const sampled = (t.bars || []).length < (t.leaves || 0);
      rows.push({ kind: "heading", label: sampled ? "Instances (sampled)" : "Instances" });
    }
    for (const [step, bars] of groups) {
      const lanes = packLanes(bars, 16);
      const h = lanes.length <= 4 ? 10 : lanes.length <= 10 ? 6 : 4;
      const all = instancesOf.get(step);
      const sub = all && all > bars.length ? fmtInt(bars.length) + " of " + fmtInt(all) : plural(bars.length, "instance");
      rows.push({ kind: "bars", label: step, sub, lanes, h,
        tipOf: (b) => b.instance + " · " + (STATE_LABEL[b.status] || b.status) + " · " + fmtDuration(b.end - b.start) + " from " + fmtDuration(b.start) });
    }
    return rows;
  }

  // Greedy interval packing into at most `max` lanes; past that, the lane that frees first.
  function packLanes(bars, max) {
    const lanes = [], ends = [];
    const sorted = bars.slice().sort((a, b) => a.start - b.start);
    for (const b of sorted) {
      let i = ends.findIndex((e) => e <= b.start);
      if (i < 0 && lanes.length < max) { lanes.push([]); ends.push(0); i = lanes.length - 1; }
      if (i < 0) { i = 0; for (let k = 1; k < ends.length; k++) if (ends[k] < ends[i]) i = k; }
      lanes[i].push(b);
      ends[i] = Math.max(ends[i], b.end);
    }
    return lanes;
  }

  function layout(width) {
    const narrow = width < 560;
    const left = narrow ? 96 : 190;
    const right = 14;
    return { left, right, plot: width - left - right, narrow };
  }

  function clip(label, px) {
    const max = Math.max(4, Math.floor(px / 6.6));
    return label.length > max ? "…" + label.slice(label.length - max + 1) : label;
  }

  function drawAxis(g, L, seconds, y0, y1) {
    const { ticks, step } = timeTicks(seconds, L.narrow ? 4 : 9);
    const x = (s) => L.left + (s / seconds) * L.plot;
    for (const tk of ticks) {
      const xx = Math.round(x(tk)) + 0.5;
      g.append(svg("line", { class: "grid", x1: xx, x2: xx, y1: y0, y2: y1 }));
      const anchor = tk === 0 ? "start" : xx > L.left + L.plot - 20 ? "end" : "middle";
      g.append(svg("text", { x: xx, y: y1 + 14, "text-anchor": anchor, text: null }, fmtTick(tk, step)));
    }
  }

  function drawGantt(t, width, steps) {
    const L = layout(width);
    const seconds = Math.max(t.seconds || 0, 1e-3);
    const x = (s) => L.left + (Math.max(0, Math.min(s, seconds)) / seconds) * L.plot;
    const rows = ganttRows(t, steps);
    const gap = 2, pad = 6;
    let y = 4;
    const body = svg("g", {});
    const bands = svg("g", {});
    let band = false;
    for (const r of rows) {
      if (r.kind === "heading") {
        y += 10;
        body.append(svg("text", { class: "group", x: 0, y: y + 10 }, r.label.toUpperCase()));
        y += 18;
        continue;
      }
      const hh = r.lanes.length * (r.h + gap) - gap + pad * 2;
      if ((band = !band)) bands.append(svg("rect", { class: "band", x: 0, y, width, height: hh }));
      body.append(svg("text", { class: "lab", x: 4, y: y + Math.min(hh / 2 + 4, pad + 11) }, clip(r.label, L.left - 10), tip(r.label + (r.sub ? " · " + r.sub : ""))));
      if (r.lanes.length > 2 && r.sub) body.append(svg("text", { x: 4, y: y + pad + 26 }, clip(r.sub, L.left - 10)));
      r.lanes.forEach((lane, i) => {
        const ly = y + pad + i * (r.h + gap);
        for (const b of lane) {
          const x0 = x(b.start), x1 = x(b.end);
          body.append(svg("rect", { x: x0.toFixed(1), y: ly, width: Math.max(1.5, x1 - x0).toFixed(1), height: r.h, rx: r.h >= 10 ? 2 : 0,
            "data-state": b.status }, tip(r.tipOf(b))));
        }
      });
      y += hh;
    }
    const H = y + 24;
    const root = svg("svg", { viewBox: "0 0 " + width + " " + H, width, height: H, role: "img", "aria-label": "Timeline of steps and instances" });
    const grid = svg("g", {});
    drawAxis(grid, L, seconds, 0, y + 2);
    root.append(bands, grid, body);
    return root;
  }

  // Mean leaves running per bin, as a step area; the peak and the limit marked.
  function drawConcurrency(d, width) {
    const t = d.timeline;
    const L = layout(width);
    const bins = t.concurrency || [];
    const H = 110, top = 14, bottom = H - 24;
    const seconds = Math.max(t.seconds || 0, 1e-3);
    const limit = d.session && d.session.max_concurrent;
    const peak = Math.max(t.max_concurrency || 0, ...bins, 0);
    const showLimit = limit && limit >= peak && limit <= peak * 1.6;
    const ymax = Math.max(1, peak, showLimit ? limit : 0);
    const x = (i) => L.left + (i / Math.max(1, bins.length)) * L.plot;
    const y = (v) => bottom - (v / ymax) * (bottom - top);
    let p = "M" + x(0).toFixed(1) + " " + bottom;
    bins.forEach((v, i) => { p += " V" + y(v).toFixed(1) + " H" + x(i + 1).toFixed(1); });
    const line = p.replace(/^M[^V]*/, "M" + x(0).toFixed(1) + " " + y(bins[0] || 0).toFixed(1) + " ");
    p += " V" + bottom + " Z";
    const root = svg("svg", { viewBox: "0 0 " + width + " " + H, width, height: H, role: "img", "aria-label": "Leaves running over time" });
    const g = svg("g", {});
    drawAxis(g, L, seconds, top - 4, bottom);
    root.append(g);
    root.append(svg("path", { class: "area", d: p }));
    root.append(svg("path", { class: "line", d: line }, tip("mean leaves running per " + fmtDuration(t.bin_seconds))));
    root.append(svg("line", { class: "axis", x1: L.left, x2: L.left + L.plot, y1: bottom + 0.5, y2: bottom + 0.5 }));
    if (showLimit) {
      root.append(svg("line", { class: "limit", x1: L.left, x2: L.left + L.plot, y1: y(limit), y2: y(limit) }));
      root.append(svg("text", { x: L.left - 8, y: y(limit) + 4, "text-anchor": "end" }, "limit " + limit));
    }
    root.append(svg("text", { class: "peak", x: L.left - 8, y: y(peak) + 4 + (showLimit && Math.abs(y(limit) - y(peak)) < 12 ? 12 : 0), "text-anchor": "end" }, "peak " + fmtInt(peak)));
    root.append(svg("text", { x: L.left - 8, y: bottom + 4, "text-anchor": "end" }, "0"));
    return root;
  }

  // Leaves that ended per bin: completed up, failed down, one path per state.
  function drawEnded(d, width) {
    const t = d.timeline;
    const L = layout(width);
    const bins = t.ended || [];
    const H = 96, top = 8, mid = 58, bottom = H - 24;
    const seconds = Math.max(t.seconds || 0, 1e-3);
    const maxOk = Math.max(1, ...bins.map((b) => b[0] || 0));
    const maxBad = Math.max(0, ...bins.map((b) => b[1] || 0));
    const downRoom = maxBad ? bottom - mid - 2 : 0;
    const midY = maxBad ? mid : bottom;
    const w = L.plot / Math.max(1, bins.length);
    const x = (i) => L.left + i * w;
    let ok = "", bad = "", nOk = 0, nBad = 0;
    bins.forEach((b, i) => {
      const c = b[0] || 0, f = b[1] || 0;
      nOk += c; nBad += f;
      const x0 = x(i).toFixed(1), ww = Math.max(0.8, w - (w > 3 ? 1 : 0)).toFixed(1);
      if (c) ok += "M" + x0 + " " + midY + " v" + (-Math.max(1, (c / maxOk) * (midY - top))).toFixed(1) + " h" + ww + " V" + midY + " Z";
      if (f) bad += "M" + x0 + " " + (midY + 1) + " v" + Math.max(1.5, (f / Math.max(1, maxBad)) * downRoom).toFixed(1) + " h" + ww + " V" + (midY + 1) + " Z";
    });
    const root = svg("svg", { viewBox: "0 0 " + width + " " + H, width, height: H, role: "img", "aria-label": "Leaves ended over time" });
    const g = svg("g", {});
    drawAxis(g, L, seconds, top, bottom);
    root.append(g);
    if (ok) root.append(svg("path", { "data-state": "completed", d: ok }, tip(fmtInt(nOk) + " completed")));
    if (bad) root.append(svg("path", { "data-state": "failed", d: bad }, tip(fmtInt(nBad) + " failed")));
    root.append(svg("line", { class: "axis", x1: L.left, x2: L.left + L.plot, y1: midY + 0.5, y2: midY + 0.5 }));
    root.append(svg("text", { x: L.left - 8, y: top + 8, "text-anchor": "end" }, fmtInt(maxOk) + " / bin"));
    if (maxBad) root.append(svg("text", { x: L.left - 8, y: bottom, "text-anchor": "end", "data-state": "failed" }, fmtInt(maxBad) + " failed"));
    return root;
  }

  function legend(states) {
    return el("div", { class: "legend" }, states.map((s) => el("span", { "data-state": s }, el("span", { class: "dot" }), STATE_LABEL[s] || s)));
  }

  function renderTimeline(d) {
    const t = d.timeline;
    if (!t || (!(t.steps || []).length && !(t.bars || []).length)) return null;
    const { node, body } = section("timeline", "Timeline", fmtDuration(t.seconds) + " from " + fmtTime(t.start));
    const used = new Set();
    for (const b of (t.steps || []).concat(t.bars || [])) used.add(b.status);
    body.append(chart((w) => drawGantt(t, w, d.steps)));
    const bars = (t.bars || []).length;
    const notes = [];
    if (t.leaves > bars) notes.push("Showing " + fmtInt(bars) + " of " + fmtInt(t.leaves) + " leaves: the failures and the longest first.");
    body.append(legend(STATES.filter((s) => used.has(s)).concat([...used].filter((s) => STATES.indexOf(s) < 0))));
    if (notes.length) body.append(el("p", { class: "note", text: notes.join(" ") }));
    if ((t.concurrency || []).length) {
      body.append(el("div", { class: "chart-title" }, el("span", { text: "Running at once" }),
        el("span", { class: "aside", text: "peak " + fmtInt(t.max_concurrency) + " · mean per " + fmtDuration(t.bin_seconds) })));
      body.append(chart((w) => drawConcurrency(d, w)));
    }
    if ((t.ended || []).some((b) => b[0] || b[1])) {
      body.append(el("div", { class: "chart-title" }, el("span", { text: "Ended" }),
        el("span", { class: "aside", text: "leaves completed (up) and failed (down) per " + fmtDuration(t.bin_seconds) })));
      body.append(chart((w) => drawEnded(d, w)));
    }
    return node;
  }

  // ---- 5. steps and loops -----------------------------------------------------------------

  function renderSteps(d) {
    const steps = d.steps || [];
    if (!steps.length) return null;
    const anyCost = steps.some((s) => s.cost_usd);
    const { node, body } = section("steps", "Steps", plural(steps.length, "step"));
    const rows = steps.map((s) => {
      const container = s.type === "loop" || s.type === "iteration" || s.type === "recipe" || s.type === "stage";
      const dur = s.duration || {};
      const states = el("div", { class: "states" }, stackBar(s.counts, true), el("span", { class: "txt", text: countsText(s.counts) }));
      const cells = [
        cell(s.step, "name"), cell(s.type), cell(fmtInt(s.instances), "num"), cell(states),
        cell(fmtDuration(dur.median), "num"), cell(fmtDuration(dur.p90), "num"), cell(fmtDuration(dur.max), "num"),
        cell(s.attempts ? fmtInt(s.attempts) : "—", "num"), cell(s.retried ? fmtInt(s.retried) : "—", "num"),
      ];
      if (anyCost) cells.push(cell(s.cost_usd ? fmtCost(s.cost_usd) : "—", "num"));
      return el("tr", { class: container ? "container" : null, "data-step": s.step }, cells);
    });
    const head = ["Step", "Type", "Instances", "States", "Median", "p90", "Max", "Attempts", "Retried"];
    if (anyCost) head.push("Cost");
    body.append(scrollTable(head, rows, [2, 4, 5, 6, 7, 8, 9]));
    const loops = renderLoops(d);
    if (loops) body.append(loops);
    return node;
  }

  function renderLoops(d) {
    const loops = d.loops || [];
    if (!loops.length) return null;
    const rows = loops.map((l) => {
      const c = l.counts || {};
      const done = leafTotal(c) - (c.running || 0);
      const items = l.items === null || l.items === undefined ? null : l.items;
      const pct = items ? Math.round((done / Math.max(1, items)) * 100) : null;
      return el("tr", { "data-loop": l.step },
        cell(l.step, "name"),
        cell(l.loops > 1 ? fmtInt(l.loops) : "1", "num"),
        cell(items === null ? "unknown yet" : fmtInt(items), "num"),
        cell(el("div", { class: "states" }, stackBar(c, true, items), el("span", { class: "txt", text: (pct === null ? "" : pct + "% · ") + countsText(c) }))));
    });
    return el("div", { "data-section": "loops" }, el("h3", { text: "Loops" }), scrollTable(["Loop", "Loops", "Items", "Progress"], rows, [1, 2]));
  }

  // ---- 6. retries, cache, worktrees, gates ------------------------------------------------

  function renderRetries(d) {
    const r = d.retries;
    if (!r || !r.total) return null;
    const { node, body } = section("retries", "Retries", plural(r.total, "retry", "retries"));
    body.append(scrollTable(["Step", "Reason", "Times"],
      (r.by_reason || []).map((x) => el("tr", {}, cell(x.step, "name"), cell(x.reason, "wrap"), cell(fmtInt(x.times), "num"))), [2]));
    const listed = r.listed || [];
    if (listed.length) {
      body.append(el("details", {}, el("summary", { text: "Each retry (" + fmtInt(listed.length) + (r.total > listed.length ? " of " + fmtInt(r.total) : "") + ")" }),
        scrollTable(["Instance", "Attempt", "Waited", "Error", "At"], listed.map((x) => el("tr", {},
          cell(x.instance, "name"), cell(fmtInt(x.attempt), "num"), cell(fmtDuration(x.delay), "num"), cell(x.error, "wrap"), cell(fmtTime(x.at)))), [1, 2])));
    }
    return node;
  }

  function renderCache(d) {
    const c = d.cache;
    if (!c || !c.hits) return null;
    const { node, body } = section("cache", "Cache hits", plural(c.hits, "instance") + " reused");
    const by = Object.entries(c.by_step || {}).sort((a, b) => b[1] - a[1]);
    body.append(scrollTable(["Step", "Hits"], by.map(([s, n]) => el("tr", {}, cell(s, "name"), cell(fmtInt(n), "num"))), [1]));
    const listed = c.listed || [];
    if (listed.length) {
      body.append(el("details", {}, el("summary", { text: "Instances (" + fmtInt(listed.length) + (c.hits > listed.length ? " of " + fmtInt(c.hits) : "") + ")" }),
        el("ul", { class: "plain mono" }, listed.map((i) => el("li", { text: i })))));
    }
    return node;
  }

  function renderWorktrees(d) {
    const w = d.isolation;
    if (!w || !w.total) return null;
    const { node, body } = section("worktrees", "Worktrees", plural(w.total, "worktree") + " · " + fmtInt(w.kept) + " kept");
    const listed = w.listed || [];
    body.append(scrollTable(["Instance", "Status", "Branch", "Worktree", "Kept"], listed.map((x) => el("tr", {},
      cell(x.instance, "name"), cell(badge(x.status, null, true)), cell(x.branch, "name"), cell(x.worktree, "name"), cell(x.kept ? "kept" : "removed"))), []));
    if (w.total > listed.length) body.append(el("p", { class: "note", text: fmtInt(w.total - listed.length) + " more not shown." }));
    return node;
  }

  function renderGates(d) {
    const g = d.gates;
    const gates = (g && g.gates) || [];
    if (!gates.length) return null;
    const { node, body } = section("gates", "Approval gates", plural(gates.length, "gate"));
    for (const x of gates) {
      const decision = x.decision || "pending";
      const when = ["asked " + fmtDate(x.requested_at)];
      if (x.decided_at) when.push("decided " + fmtDate(x.decided_at) + (x.requested_at ? " (after " + fmtDuration(x.decided_at - x.requested_at) + ")" : ""));
      body.append(el("div", { class: "gate", "data-gate": x.gate },
        el("div", { class: "head" }, el("span", { class: "mono", text: x.gate }), badge(decision, decision === "pending" ? "waiting for a decision" : decision, true),
          x.by ? el("span", { class: "muted", text: "by " + x.by }) : null),
        x.prompt ? el("div", { class: "prompt", text: x.prompt }) : null,
        x.message ? el("div", {}, el("span", { class: "muted", text: "Comment: " }), x.message) : null,
        el("div", { class: "muted", text: when.join(" · ") })));
    }
    return node;
  }

  // ---- 7. agent usage and transcripts -----------------------------------------------------

  function hbars(items) {
    const max = Math.max(1e-12, ...items.map((i) => i.value));
    const box = el("div", { class: "bars" });
    for (const i of items) {
      box.append(el("div", { class: "k", text: i.label, title: i.label }),
        el("div", { class: "track" }, el("div", { class: "fill", style: "width:" + Math.max(1, (i.value / max) * 100).toFixed(1) + "%" })),
        el("div", { class: "v", text: i.text }));
    }
    return box;
  }

  function drawSpend(d, width) {
    const t = d.timeline;
    const L = layout(width);
    const bins = t.spend || [];
    const H = 110, top = 12, bottom = H - 24;
    const seconds = Math.max(t.seconds || 0, 1e-3);
    let acc = 0;
    const cum = bins.map((v) => (acc += v || 0));
    const ymax = Math.max(1e-9, acc);
    const x = (i) => L.left + (i / Math.max(1, bins.length)) * L.plot;
    const y = (v) => bottom - (v / ymax) * (bottom - top);
    let p = "M" + x(0).toFixed(1) + " " + bottom;
    cum.forEach((v, i) => { p += " L" + x(i + 1).toFixed(1) + " " + y(v).toFixed(1); });
    const root = svg("svg", { viewBox: "0 0 " + width + " " + H, width, height: H, role: "img", "aria-label": "Cumulative agent spend" });
    const g = svg("g", {});
    drawAxis(g, L, seconds, top, bottom);
    root.append(g, svg("path", { class: "area", d: p + " V" + bottom + " Z" }), svg("path", { class: "line", d: p }, tip(fmtCost(acc) + " in all")));
    root.append(svg("line", { class: "axis", x1: L.left, x2: L.left + L.plot, y1: bottom + 0.5, y2: bottom + 0.5 }));
    root.append(svg("text", { class: "peak", x: L.left - 8, y: top + 4, "text-anchor": "end" }, fmtCost(acc)));
    root.append(svg("text", { x: L.left - 8, y: bottom + 4, "text-anchor": "end" }, "$0"));
    return root;
  }

  function renderUsage(d) {
    const u = d.usage;
    const tot = u && u.totals;
    if (!tot || !tot.calls) return null;
    const costKnown = tot.cost_usd !== null && tot.cost_usd !== undefined;
    const { node, body } = section("usage", "Agent usage", plural(tot.calls, "call") + (costKnown ? " · " + fmtCost(tot.cost_usd) : ""));
    const stat = (label, v, key) => el("div", { class: "tile" }, el("span", { class: "n", "data-usage": key, text: v }), el("span", { class: "l", text: label }));
    body.append(el("div", { class: "stats" },
      stat("calls", fmtInt(tot.calls), "calls"),
      stat("input tokens", fmtInt(tot.input), "input"),
      stat("output tokens", fmtInt(tot.output), "output"),
      tot.cache_read ? stat("cache read", fmtInt(tot.cache_read), "cache_read") : null,
      tot.cache_write ? stat("cache write", fmtInt(tot.cache_write), "cache_write") : null,
      stat(tot.calls_without_cost ? "cost (" + fmtInt(tot.calls_without_cost) + " calls unpriced)" : "cost", costKnown ? fmtCost(tot.cost_usd) : "unknown", "cost")));
    const byCost = costKnown && tot.cost_usd > 0;
    const value = (x) => byCost ? (x.cost_usd || 0) : (x.tokens !== undefined ? x.tokens : (x.input || 0) + (x.output || 0) + (x.cache_read || 0) + (x.cache_write || 0));
    const text = (x) => byCost ? fmtCost(x.cost_usd) : fmtInt(value(x)) + " tokens";
    const models = (u.by_model || []).map((m) => ({ label: (m.provider || "?") + " / " + (m.model || "unknown model"), value: value(m), text: text(m) + " · " + plural(m.calls, "call") }));
    const steps = (u.by_step || []).map((s) => ({ label: s.step, value: value(s), text: text(s) }));
    models.sort((a, b) => b.value - a.value);
    steps.sort((a, b) => b.value - a.value);
    const cols = el("div", { class: "two" });
    if (models.length) cols.append(el("div", {}, el("h3", { text: (byCost ? "Cost" : "Tokens") + " by model" }), hbars(models.slice(0, 12))));
    if (steps.length) cols.append(el("div", {}, el("h3", { text: (byCost ? "Cost" : "Tokens") + " by step" }), hbars(steps.slice(0, 12))));
    body.append(cols);
    if (u.lost_lines) body.append(el("p", { class: "note", text: plural(u.lost_lines, "damaged usage line") + " could not be counted." }));
    const t = d.timeline;
    if (byCost && t && (t.spend || []).some((v) => v > 0)) {
      body.append(el("div", { class: "chart-title" }, el("span", { text: "Spend over time" }), el("span", { class: "aside", text: "cumulative, as calls ended" })));
      body.append(chart((w) => drawSpend(d, w)));
    }
    const tr = renderTranscripts(d);
    if (tr) body.append(tr);
    return node;
  }

  function renderTranscripts(d) {
    const t = d.transcripts;
    const listed = (t && t.listed) || [];
    if (!listed.length) return null;
    const box = el("div", { "data-section": "transcripts" },
      el("h3", { text: "Transcripts" + (t.failed ? " · " + plural(t.failed, "failed call") : "") }));
    for (const c of listed) {
      const failed = c.error || (c.exit_code !== 0 && c.exit_code !== null && c.exit_code !== undefined);
      const model = c.model || (c.usage && c.usage.model) || "";
      const summary = el("summary", {},
        el("span", { class: "inst", text: c.instance }),
        failed ? badge("failed", "exit " + (c.exit_code === null || c.exit_code === undefined ? "?" : c.exit_code), true) : null,
        model ? el("span", { class: "muted", text: model }) : null,
        el("span", { class: "muted", text: fmtDuration(c.duration) }),
        c.usage && c.usage.cost_usd ? el("span", { class: "muted", text: fmtCost(c.usage.cost_usd) }) : null,
        c.error ? el("span", { text: firstLine(c.error) }) : null);
      const part = (label, text) => text ? [el("h4", { text: label }), el("pre", { class: "block mono", text })] : null;
      box.append(el("details", { class: "transcript", "data-state": failed ? "failed" : "completed" }, summary,
        el("div", { class: "body" },
          part("Command", (c.argv || []).map(shellWord).join(" ")),
          part("System prompt", c.system_prompt),
          part("Prompt", c.prompt),
          part("Reply", c.reply),
          c.error ? part("Error", c.error) : null,
          c.cut ? el("p", { class: "note", text: "Long texts are cut; the whole transcript is in the session directory." }) : null)));
    }
    if (t.calls > listed.length) box.append(el("p", { class: "note", text: fmtInt(t.calls - listed.length) + " more calls not listed." }));
    return box;
  }

  // ---- 8. warnings, limit changes, problems -----------------------------------------------

  function renderWarnings(d) {
    const w = d.warnings;
    if (!w || !w.total) return null;
    const { node, body } = section("warnings", "Warnings", fmtInt(w.total));
    body.append(el("ul", { class: "plain" }, (w.listed || []).map((x) => el("li", {},
      x.step ? el("span", { class: "mono", text: x.step + ": " }) : null, x.message,
      x.at ? el("span", { class: "muted", text: " · " + fmtTime(x.at) }) : null))));
    if (w.total > (w.listed || []).length) body.append(el("p", { class: "note", text: fmtInt(w.total - w.listed.length) + " more not shown." }));
    return node;
  }

  function renderLimits(d) {
    const l = d.limit_changes;
    if (!l || !l.total) return null;
    const str = (v) => v === null || v === undefined ? "—" : typeof v === "object" ? JSON.stringify(v) : String(v);
    const { node, body } = section("limit-changes", "Limit changes", fmtInt(l.total));
    body.append(scrollTable(["At", "Group", "Running", "Limit", "Configured", "Reason"], (l.listed || []).map((x) => el("tr", {},
      cell(fmtTime(x.at)), cell(str(x.group), "name"), cell(str(x.running), "num"), cell(str(x.limit), "num"), cell(str(x.configured), "num"), cell(str(x.reason), "wrap"))), [2, 3, 4]));
    if (l.total > (l.listed || []).length) body.append(el("p", { class: "note", text: fmtInt(l.total - l.listed.length) + " more not shown." }));
    return node;
  }

  function renderProblems(d) {
    const p = d.problems || [];
    if (!p.length) return null;
    const { node, body } = section("problems", "Could not be read", plural(p.length, "problem"));
    body.append(el("ul", { class: "plain" }, p.map((x) => el("li", { text: x }))));
    return node;
  }

  function renderFooter(d) {
    return el("footer", { class: "foot", text: "arun " + (d.arun_version || "") + " · report format " + (d.format_version || "?") + " · " + fmtDate(d.generated_at) });
  }

  // ---- the page ---------------------------------------------------------------------------

  const root = document.getElementById("report");

  function render(data) {
    charts = [];
    const d = data || {};
    const parts = [renderHeader, renderCounts, renderFailures, renderTimeline, renderSteps, renderRetries, renderCache,
      renderWorktrees, renderGates, renderUsage, renderWarnings, renderLimits, renderProblems, renderFooter];
    const nodes = [];
    for (const part of parts) {
      try {
        const n = part(d);
        if (n) nodes.push(n);
      } catch (e) {
        nodes.push(el("section", { "data-section": "error" }, el("p", { text: "This part of the report could not be drawn: " + e })));
      }
    }
    root.replaceChildren(...nodes);
    const s = d.session || {};
    document.title = (s.recipe_name || "run") + " · " + (STATE_LABEL[sessionState(s)] || sessionState(s)) + " · arun report";
    drawCharts(true);
  }

  // Charts follow the width of the page: redrawn when it changes (a rotated phone, a resized window).
  let resizeTimer = 0;
  const redraw = () => { clearTimeout(resizeTimer); resizeTimer = setTimeout(() => drawCharts(false), 60); };
  if (typeof ResizeObserver === "function") new ResizeObserver(redraw).observe(root);
  else window.addEventListener("resize", redraw);

  window.arunReport = { render };
  render(JSON.parse(document.getElementById("report-data").textContent));
})();
