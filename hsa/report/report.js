// hsa report: the variant browser, the per-prompt table, keyboard navigation and one URL fragment per view.
// Hand-written, no framework and no build step; it reads the JSON in #hsa-data and makes no request.
(function () {
  "use strict";
  const DATA = JSON.parse(document.getElementById("hsa-data").textContent);
  const SOURCES = DATA.sources || [];
  const EVAL = DATA.eval;
  const PROMPTS = EVAL ? EVAL.prompts : [];
  const MODELS = EVAL ? EVAL.models : [];
  const SECTIONS = [["tools", "Tools"], ["skills", "Skills"], ["system", "System prompt"], ["messages", "Messages"],
    ["hooks", "Hooks"]];
  const ROWS = []; // every (source, variant) in page order: what j / k walk through
  const BY_ROW = {};
  SOURCES.forEach(function (s, i) {
    s.variants.forEach(function (v, j) { BY_ROW[v.id] = [i, j]; ROWS.push(v.id); });
  });
  const BY_PROMPT = {};
  PROMPTS.forEach(function (p, i) { BY_PROMPT[p.id] = i; });
  const state = { source: 0, variant: 0, prompt: null, model: 0, showSame: false, limit: 300 };

  // ------------------------------------------------------------------ small helpers
  function h(tag, attrs, children) {
    const e = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        if (k === "text") e.textContent = attrs[k];
        else if (k === "class") e.className = attrs[k];
        else if (k.slice(0, 2) === "on") e.addEventListener(k.slice(2), attrs[k]);
        else e.setAttribute(k, attrs[k]);
      });
    }
    (children || []).forEach(function (c) {
      if (c === null || c === undefined) return;
      e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return e;
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); return e; }
  function callText(c) {
    if (c === null || c === undefined) return "(does not map back)";
    return c.name + "(" + JSON.stringify(c.arguments) + ")";
  }
  function go(hash) { if (location.hash !== "#" + hash) location.hash = hash; else route(); }

  // ------------------------------------------------------------------ views and the URL fragment
  const VIEWS = ["overview", "plots", "variants", "eval"];
  let current = null;
  function showView(name) {
    if (current !== name && current !== null) window.scrollTo(0, 0);
    current = name;
    document.querySelectorAll(".view").forEach(function (v) { v.classList.toggle("active", v.id === name); });
    document.querySelectorAll("#tabs a").forEach(function (a) {
      a.classList.toggle("active", a.getAttribute("data-view") === name);
    });
  }
  function route() {
    const hash = decodeURIComponent(location.hash.slice(1));
    if (hash.indexOf("variant=") === 0) {
      const at = BY_ROW[hash.slice(8)];
      if (at) { state.source = at[0]; state.variant = at[1]; }
      showView("variants");
      renderBrowser();
    } else if (hash.indexOf("prompt=") === 0 && EVAL) {
      const id = hash.slice(7);
      if (id in BY_PROMPT) state.prompt = id;
      showView("eval");
      renderPrompts();
    } else if (VIEWS.indexOf(hash) >= 0 && (hash !== "eval" || EVAL)) {
      showView(hash);
      if (hash === "variants") renderBrowser();
      if (hash === "eval") renderPrompts();
    } else {
      showView("overview");
    }
  }

  // ------------------------------------------------------------------ the variant browser
  const browser = document.getElementById("browser");
  let listBox = null;
  let panel = null;
  let search = null;
  function snippet(s) {
    const keys = Object.keys(s.fields || {});
    for (let i = 0; i < keys.length; i++) {
      const t = s.fields[keys[i]];
      if (keys[i].indexOf("messages/") === 0 && t.indexOf("[user]") === 0) return t.slice(7, 90);
    }
    return "";
  }
  function matches(s, q) {
    if (!q) return true;
    if (s.id.toLowerCase().indexOf(q) >= 0) return true;
    if (s.variants.some(function (v) { return v.id.toLowerCase().indexOf(q) >= 0; })) return true;
    const f = s.fields || {};
    return Object.keys(f).some(function (k) { return f[k].toLowerCase().indexOf(q) >= 0; });
  }
  function buildBrowser() {
    clear(browser);
    search = h("input", { type: "search", id: "search", placeholder: "search sources by id or text  ( / )" });
    listBox = h("div", { id: "source-list" });
    panel = h("div", { id: "variant-panel" });
    let timer = null;
    search.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(renderList, 150); });
    browser.appendChild(h("div", null, [search, listBox]));
    browser.appendChild(panel);
    if (!SOURCES.length) {
      panel.appendChild(h("p", { class: "muted", text: "No rows were sampled (--sample 0, or an empty dataset)." }));
    }
  }
  function renderList() {
    const q = search.value.trim().toLowerCase();
    clear(listBox);
    let shown = 0;
    SOURCES.forEach(function (s, i) {
      if (!matches(s, q)) return;
      shown++;
      const item = h("div", { class: "item" + (i === state.source ? " active" : ""), "data-source": s.id,
        onclick: function () { go("variant=" + encodeURIComponent(s.variants[Math.min(1, s.variants.length - 1)].id)); } },
      [s.id + " (" + s.variants.length + " rows)", h("small", { text: snippet(s) || (s.found ? "" : "source not found") })]);
      listBox.appendChild(item);
    });
    if (!shown) listBox.appendChild(h("p", { class: "muted", text: "No sampled source matches." }));
  }
  const KEEP = 3; // unchanged lines kept on each side of a change; longer unchanged runs fold
  function same(t, left, right, first, last) {
    const nl = [];
    for (let i = t.indexOf("\n"); i >= 0; i = t.indexOf("\n", i + 1)) nl.push(i);
    const headN = first ? 0 : KEEP + 1, tailN = last ? 0 : KEEP + 1; // line ends kept before and after the fold
    if (nl.length < headN + tailN + 4) {
      left.appendChild(document.createTextNode(t)); right.appendChild(document.createTextNode(t)); return;
    }
    const cut1 = headN ? nl[headN - 1] + 1 : 0;
    const cut2 = tailN ? nl[nl.length - tailN] + 1 : t.length;
    const middle = t.slice(cut1, cut2);
    const count = middle.split("\n").length - (middle.slice(-1) === "\n" ? 1 : 0);
    const ends = middle.slice(-1) === "\n";
    const folds = [left, right].map(function (side) {
      side.appendChild(document.createTextNode(t.slice(0, cut1)));
      const fold = h("span", { class: "fold", title: "show the unchanged lines", text: "⋯ " + count + " unchanged lines ⋯" });
      const br = document.createTextNode(ends ? "\n" : ""); // the folded lines' last line end
      side.appendChild(fold);
      side.appendChild(br);
      side.appendChild(document.createTextNode(t.slice(cut2)));
      return [fold, br];
    });
    folds.forEach(function (f) {
      f[0].addEventListener("click", function () {
        folds.forEach(function (g) { g[1].remove(); g[0].replaceWith(document.createTextNode(middle)); });
      });
    });
  }
  function sides(a, ops) {
    const left = h("div"), right = h("div");
    let i = 0;
    ops.forEach(function (op, k) {
      if (typeof op === "string") { right.appendChild(h("ins", { text: op })); return; }
      const n = Math.abs(op);
      const t = a.slice(i, i + n);
      i += n;
      if (op > 0) same(t, left, right, k === 0, k === ops.length - 1);
      else left.appendChild(h("del", { text: t }));
    });
    return [left, right];
  }
  function partLabel(it) {
    if (it.old && it.new && it.old !== it.new) {
      return h("span", { class: "rename" }, [h("del", { text: it.old }), " → ", h("ins", { text: it.new })]);
    }
    return h("span", { class: "rename", text: it.new || it.old || "" });
  }
  const STATUS = { changed: "changed", same: "unchanged", order: "key order only (not a change)",
    added: "only in the variant", removed: "only in the source" };
  function renderPart(it, fields) {
    const box = h("div", { class: "part", "data-status": it.status, "data-key": it.key },
      [h("div", { class: "head" }, [partLabel(it), h("span", { class: "status", text: STATUS[it.status] || it.status })])]);
    const a = fields[it.key];
    let l, r;
    if (it.status === "changed") { const s = sides(a, it.ops); l = s[0]; r = s[1]; }
    else if (it.status === "added") { l = h("div", { class: "muted", text: "(not in the source)" }); r = h("div", null, [h("ins", { text: it.text })]); }
    else if (it.status === "removed") { l = h("div", null, [h("del", { text: a })]); r = h("div", { class: "muted", text: "(not in the variant)" }); }
    else { l = h("div", { text: a }); r = h("div", { text: a }); }
    box.appendChild(h("div", { class: "sides" }, [l, r]));
    return box;
  }
  function mappingTable(rows) {
    if (!rows || !rows.length) return h("p", { class: "muted", text: "Identity mapping: no tool, skill, parameter or value was renamed." });
    const body = rows.map(function (r) {
      return h("tr", null, [h("td", { text: r.kind }), h("td", { text: r.where }), h("td", { class: "rename", text: r.old }),
        h("td", { class: "rename", text: r.new })]);
    });
    return h("table", { id: "mapping-table", class: "wide" }, [h("thead", null, [h("tr", null, [h("th", { text: "kind" }),
      h("th", { text: "where" }), h("th", { text: "old (source)" }), h("th", { text: "new (variant)" })])]), h("tbody", null, body)]);
  }
  function renderBrowser() {
    if (!listBox) { buildBrowser(); }
    renderList();
    clear(panel);
    const s = SOURCES[state.source];
    if (!s) return;
    const v = s.variants[state.variant];
    const chips = h("div", { class: "chips" }, s.variants.map(function (w, j) {
      return h("button", { class: "chip" + (j === state.variant ? " active" : ""), text: w.source ? "0 (source)" : String(w.variant),
        onclick: function () { go("variant=" + encodeURIComponent(w.id)); } });
    }));
    panel.appendChild(h("h3", { id: "variant-title", text: v.id }));
    panel.appendChild(h("p", { class: "muted" }, ["source " + s.id + (s.found ? " (from " + (s.where === "variant 0 row" ? "its variant 0 row" : s.where) + ")" : " — the source record was not found: the variant is shown alone") +
      (v.slot !== undefined ? " · harness slot " + v.slot : "") + " · ", h("a", { href: "#variant=" + encodeURIComponent(v.id), text: "link" })]));
    panel.appendChild(chips);
    if (v.error) { panel.appendChild(h("p", { class: "note", text: v.error })); return; }
    if (v.families && v.families.length) {
      panel.appendChild(h("p", null, ["families: "].concat(v.families.map(function (f) { return h("span", { class: "tag", text: f }); }))));
    }
    (v.notes || []).forEach(function (n) { panel.appendChild(h("p", { class: "note", text: n })); });
    const fields = s.found ? s.fields : (v.fields || s.fields || {});
    if (v.source) {
      panel.appendChild(h("p", { class: "muted", text: "The source record (variant 0): its parts as written." }));
      Object.keys(fields).forEach(function (k) {
        panel.appendChild(h("div", { class: "part" }, [h("div", { class: "head" }, [h("span", { class: "rename", text: k })]),
          h("div", { class: "sides" }, [h("div", { text: fields[k] })])]));
      });
      return;
    }
    if (v.transforms.length) {
      panel.appendChild(h("h4", { text: "Transforms applied (" + v.transforms.length + ", in order; their replay params)" }));
      panel.appendChild(h("table", { class: "wide transforms" }, [h("tbody", null, v.transforms.map(function (t) {
        const params = t[1].length > 110 ? h("details", null, [h("summary", { text: t[1].slice(0, 100) + " …" }), h("code", { text: t[1] })]) : h("code", { text: t[1] });
        return h("tr", null, [h("td", null, [h("code", { text: t[0] })]), h("td", null, [params])]);
      }))]));
    } else {
      panel.appendChild(h("p", { class: "muted", text: "No transform applied: this variant equals its source." }));
    }
    panel.appendChild(h("h4", { text: "Mapping (old → new)" }));
    panel.appendChild(mappingTable(v.mapping));
    const items = v.items || [];
    SECTIONS.forEach(function (sec) {
      const mine = items.filter(function (it) { return it.section === sec[0]; });
      if (!mine.length) return;
      const shown = mine.filter(function (it) { return state.showSame || (it.status !== "same" && it.status !== "order"); });
      const same = mine.length - mine.filter(function (it) { return it.status !== "same" && it.status !== "order"; }).length;
      const head = h("h4", { class: "section-title", "data-section": sec[0], text: sec[1] + " — " + (mine.length - same) + " changed, " + same + " unchanged" });
      panel.appendChild(head);
      shown.forEach(function (it) { panel.appendChild(renderPart(it, fields)); });
      if (same && !state.showSame) {
        panel.appendChild(h("button", { class: "chip", text: "show the " + same + " unchanged", onclick: function () { state.showSame = true; renderBrowser(); } }));
      }
    });
    if (state.showSame) panel.appendChild(h("button", { class: "chip", text: "hide unchanged parts", onclick: function () { state.showSame = false; renderBrowser(); } }));
    const related = PROMPTS.filter(function (p) { return p.row === v.id; });
    if (related.length) {
      panel.appendChild(h("h4", { text: "Prompts of this row" }));
      panel.appendChild(h("ul", null, related.map(function (p) {
        return h("li", null, [h("a", { href: "#prompt=" + encodeURIComponent(p.id), text: p.id }), " ", outcomeMarks(p)]);
      })));
    }
  }

  // ------------------------------------------------------------------ the per-prompt table
  const promptBox = document.getElementById("prompts");
  const filters = {};
  function outcomeMarks(p) {
    return h("span", null, p.outcomes.map(function (o, k) {
      if (!o) return h("span", { class: "muted", text: " –" });
      return h("span", { class: o.ok ? "ok" : "bad", title: MODELS[k], text: " " + (o.ok ? "✓" : "✗") });
    }));
  }
  function distinct(f) {
    const seen = {};
    PROMPTS.forEach(function (p) { f(p).forEach(function (x) { seen[x] = 1; }); });
    return Object.keys(seen).sort();
  }
  function select(name, label, options) {
    const s = h("select", { id: "filter-" + name, "aria-label": label }, options.map(function (o) { return h("option", { value: o[0], text: o[1] }); }));
    s.addEventListener("change", function () { state.limit = 300; renderTable(); });
    filters[name] = s;
    return h("label", null, [label + " ", s]);
  }
  function buildPrompts() {
    clear(promptBox);
    const bar = h("div", { id: "prompt-filters" });
    if (MODELS.length > 1) {
      bar.appendChild(select("model", "model", MODELS.map(function (m, k) { return [String(k), m]; }).concat([["any", "any model"]])));
    }
    bar.appendChild(select("outcome", "outcome", [["all", "all"], ["wrong", "wrong"], ["right", "right"]]));
    bar.appendChild(select("kind", "turn", [["all", "calls and replies"], ["call", "call turns"], ["reply", "reply turns"]]));
    bar.appendChild(select("family", "family", [["all", "all"], ["(canonical)", "canonical (variant 0)"]].concat(distinct(function (p) { return p.families; }).map(function (f) { return [f, f]; }))));
    bar.appendChild(select("transform", "transform", [["all", "all"]].concat(distinct(function (p) { return p.transforms; }).map(function (f) { return [f, f]; }))));
    bar.appendChild(select("reason", "reason", [["all", "all"]].concat(distinct(function (p) {
      const out = []; p.outcomes.forEach(function (o) { if (o) o.reasons.forEach(function (r) { out.push(r[0]); }); }); return out;
    }).map(function (f) { return [f, f]; }))));
    const q = h("input", { type: "search", id: "prompt-search", placeholder: "id or text" });
    let timer = null;
    q.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(renderTable, 150); });
    filters.q = q;
    bar.appendChild(q);
    promptBox.appendChild(bar);
    promptBox.appendChild(h("p", { id: "prompt-count", class: "muted" }));
    promptBox.appendChild(h("table", { id: "prompt-table", class: "wide" }));
  }
  function modelIndex() { return filters.model ? filters.model.value : "0"; }
  function isWrong(p, m) {
    if (m === "any") return p.outcomes.some(function (o) { return o && !o.ok; });
    const o = p.outcomes[+m];
    return !!o && !o.ok;
  }
  function visible(p) {
    const m = modelIndex();
    const out = filters.outcome.value;
    if (out === "wrong" && !isWrong(p, m)) return false;
    if (out === "right" && (m === "any" ? !p.outcomes.every(function (o) { return o && o.ok; }) : !(p.outcomes[+m] && p.outcomes[+m].ok))) return false;
    if (filters.kind.value !== "all" && p.kind !== filters.kind.value) return false;
    const fam = filters.family.value;
    if (fam === "(canonical)" ? p.variant !== 0 : fam !== "all" && p.families.indexOf(fam) < 0) return false;
    if (filters.transform.value !== "all" && p.transforms.indexOf(filters.transform.value) < 0) return false;
    const r = filters.reason.value;
    if (r !== "all" && !p.outcomes.some(function (o, k) { return o && (m === "any" || String(k) === m) && o.reasons.some(function (x) { return x[0] === r; }); })) return false;
    const q = filters.q.value.trim().toLowerCase();
    if (q && p.id.toLowerCase().indexOf(q) < 0 && !p.outcomes.some(function (o) { return o && o.raw && o.raw.toLowerCase().indexOf(q) >= 0; })) return false;
    return true;
  }
  function firstReason(p) {
    const m = modelIndex();
    for (let k = 0; k < p.outcomes.length; k++) {
      const o = p.outcomes[k];
      if (o && (m === "any" || String(k) === m) && o.reasons.length) return o.reasons[0][1];
    }
    return "";
  }
  function callList(calls) {
    if (!calls || !calls.length) return h("pre", { class: "muted", text: "(no call)" });
    return h("pre", { text: calls.map(callText).join("\n") });
  }
  function detail(p) {
    const box = h("div", { class: "detail" });
    box.appendChild(h("p", null, [h("a", { href: "#variant=" + encodeURIComponent(p.row), text: "open the variant " + p.row }),
      " · turn " + p.turn + " · " + (p.variant === 0 ? "canonical harness" : "variant " + p.variant) + (p.slot !== undefined ? " · slot " + p.slot : "")]));
    if (p.kind === "call") {
      box.appendChild(h("h4", { text: "Gold calls (this variant's names)" }));
      box.appendChild(callList(p.gold));
      box.appendChild(h("h4", { text: "Gold calls (canonical harness)" }));
      box.appendChild(callList(p.gold_canonical));
    } else {
      box.appendChild(h("h4", { text: "Gold reply (no call)" }));
      box.appendChild(h("pre", { text: p.gold_reply || "(empty)" }));
    }
    const outs = h("div", { class: "outcomes" });
    p.outcomes.forEach(function (o, k) {
      const col = h("div", { class: "outcome" }, [h("h4", null, [MODELS[k] + ": ", o ? h("span", { class: o.ok ? "ok" : "bad", text: o.ok ? "right" : "wrong" }) : h("span", { class: "muted", text: "not scored" })])]);
      if (o) {
        if (o.reasons.length) col.appendChild(h("ul", { class: "reasons" }, o.reasons.map(function (r) { return h("li", null, [h("span", { class: "tag", text: r[0] }), " " + r[1]]); })));
        if (o.raw !== undefined) { col.appendChild(h("h4", { text: "Raw completion" })); col.appendChild(h("pre", { text: o.raw })); }
        if (o.parsed !== undefined) { col.appendChild(h("h4", { text: "Parsed calls (variant harness)" })); col.appendChild(callList(o.parsed)); }
        if (o.back !== undefined) { col.appendChild(h("h4", { text: "Mapped back (canonical harness)" })); col.appendChild(callList(o.back)); }
      }
      outs.appendChild(col);
    });
    box.appendChild(outs);
    return box;
  }
  function renderTable() {
    const table = clear(document.getElementById("prompt-table"));
    const rows = PROMPTS.filter(visible);
    document.getElementById("prompt-count").textContent = rows.length + " of " + PROMPTS.length + " prompts of the sampled sources";
    table.appendChild(h("thead", null, [h("tr", null, [h("th", { text: "prompt" }), h("th", { text: "turn" }), h("th", { text: "families" }),
      h("th", { text: MODELS.length > 1 ? "outcome per model" : "outcome" }), h("th", { text: "why wrong" })])]));
    const body = h("tbody");
    rows.slice(0, state.limit).forEach(function (p) {
      const active = p.id === state.prompt;
      body.appendChild(h("tr", { class: "row" + (active ? " active" : ""), "data-id": p.id, onclick: function () {
        go(active ? "eval" : "prompt=" + encodeURIComponent(p.id)); } }, [
        h("td", null, [h("a", { href: "#prompt=" + encodeURIComponent(p.id), text: p.id })]), h("td", { text: p.kind }),
        h("td", { text: p.variant === 0 ? "(canonical)" : p.families.join(", ") }), h("td", null, [outcomeMarks(p)]),
        h("td", { class: "reason", text: firstReason(p) })]));
      if (active) body.appendChild(h("tr", { class: "detail-row" }, [h("td", { colspan: "5" }, [detail(p)])]));
    });
    table.appendChild(body);
    if (rows.length > state.limit) {
      table.appendChild(h("tr", null, [h("td", { colspan: "5" }, [h("button", { class: "chip", text: "show " + Math.min(300, rows.length - state.limit) + " more",
        onclick: function () { state.limit += 300; renderTable(); } })])]));
    }
    const active = table.querySelector("tr.row.active");
    if (active && active.scrollIntoView) active.scrollIntoView({ block: "nearest" });
  }
  function renderPrompts() {
    if (!EVAL || !promptBox) return;
    if (!filters.outcome) buildPrompts();
    if (state.prompt && !visible(PROMPTS[BY_PROMPT[state.prompt]])) {
      Object.keys(filters).forEach(function (k) { if (k !== "model") filters[k].value = k === "q" ? "" : "all"; });
    }
    renderTable();
  }

  // ------------------------------------------------------------------ keys
  function stepVariant(d) {
    const cur = ROWS.indexOf((SOURCES[state.source] || { variants: [] }).variants[state.variant] ? SOURCES[state.source].variants[state.variant].id : "");
    const next = Math.max(0, Math.min(ROWS.length - 1, cur + d));
    if (ROWS.length) go("variant=" + encodeURIComponent(ROWS[next]));
  }
  function stepWrong(d) {
    if (!EVAL) return;
    if (!filters.outcome) buildPrompts();
    const m = modelIndex();
    const start = state.prompt in BY_PROMPT ? BY_PROMPT[state.prompt] : (d > 0 ? -1 : PROMPTS.length);
    for (let i = start + d; i >= 0 && i < PROMPTS.length; i += d) {
      if (isWrong(PROMPTS[i], m)) { go("prompt=" + encodeURIComponent(PROMPTS[i].id)); return; }
    }
  }
  const help = h("div", { id: "help" }, [h("b", { text: "Keys" }), h("ul", null, [
    h("li", { text: "j / k — next / previous variant" }), h("li", { text: "n / p — next / previous wrong prompt" }),
    h("li", { text: "/ — search" }), h("li", { text: "? — this help, Esc — close" })])]);
  document.body.appendChild(help);
  document.addEventListener("keydown", function (e) {
    const t = e.target;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA")) {
      if (e.key === "Escape") t.blur();
      return;
    }
    if (e.key === "j") stepVariant(1);
    else if (e.key === "k") stepVariant(-1);
    else if (e.key === "n") stepWrong(1);
    else if (e.key === "p") stepWrong(-1);
    else if (e.key === "?") help.classList.toggle("open");
    else if (e.key === "Escape") help.classList.remove("open");
    else if (e.key === "/") {
      e.preventDefault();
      const onEval = document.getElementById("eval") && document.getElementById("eval").classList.contains("active");
      if (onEval) { if (!filters.q) buildPrompts(); filters.q.focus(); }
      else { if (!location.hash.match(/^#variant/)) go("variants"); if (!search) buildBrowser(); search.focus(); }
    } else return;
    e.preventDefault();
  });
  window.addEventListener("hashchange", route);
  route();
  // a link to a view (#plots) opens it at the top, the header and its sample note in sight, not scrolled to its section
  if (VIEWS.indexOf(location.hash.slice(1)) >= 0) {
    window.scrollTo(0, 0);
    window.addEventListener("load", function () { setTimeout(function () { window.scrollTo(0, 0); }, 0); });
  }
  document.documentElement.setAttribute("data-ready", "1");
  window.hsaReadyMs = performance.now();
})();
