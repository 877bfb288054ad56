"""The HTML of ``hsa report``: one self-contained file, its CSS and JavaScript inline, its plots inline SVG.

The overview, the plots and the evaluation's groups are written here as HTML (they read without
JavaScript); the variant browser and the per-prompt table are drawn in the browser by
``report.js`` from the sampled rows, embedded once as JSON. A Content-Security-Policy forbids
every request the page could make (no network, no CDN): ``default-src 'none'``.

The CSS and JavaScript are hand-written files beside this module (no build step, no framework):
a page of tables, two lists and a diff viewer does not need one, and a file that must open from
disk for years is better without a bundle.
"""

from __future__ import annotations

import json
from html import escape
from importlib import resources
from typing import Any

from hsa.report.plots import Bar, bars, histogram

__all__ = ["render_page", "CSP", "asset", "code", "escape_html", "key_values", "number", "table"]

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"


def _asset(name: str) -> str:
    return resources.files("hsa.report").joinpath(name).read_text(encoding="utf-8")


def _e(value: Any) -> str:
    return escape(str(value))


def _yn(value: Any) -> str:
    """A manifest's flag as a reader says it (yes / no), anything else as it is."""
    return ("yes" if value else "no") if isinstance(value, bool) else _e(value)


def _n(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else _e(value)


def _table(head: list[str], rows: list[list[Any]], *, cls: str = "", raw: bool = False, empty: str = "") -> str:
    if not rows:
        return f'<p class="muted">{_e(empty)}</p>' if empty else ""
    cell = (lambda v: str(v)) if raw else (lambda v: _n(v))
    body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in r) + "</tr>" for r in rows)
    return (f'<table class="{cls}"><thead><tr>' + "".join(f"<th>{_e(h)}</th>" for h in head) +
            f"</tr></thead><tbody>{body}</tbody></table>")


def _kv(pairs: list[tuple[str, Any]]) -> str:
    return '<dl class="kv">' + "".join(f"<dt>{_e(k)}</dt><dd>{v}</dd>" for k, v in pairs) + "</dl>"


def _code(value: Any) -> str:
    return f"<code>{_e(value)}</code>"


# --------------------------------------------------------------------------- overview


def _overview(page: dict, notes: list[str]) -> str:
    m, st, s = page["manifest"], page["stats"], page["sample"]
    c = m.get("counts", {})
    out = ['<section id="overview" class="view"><h2>Overview</h2>']
    out.append(f'<p class="lead">{_n(st.get("rows", 0))} rows from {_n(st.get("sources", 0))} source records '
               f'({_e(st.get("variants_per_source", 0))} rows per source, {_n(st.get("unchanged_rows", 0))} unchanged); '
               f'{_n(c.get("rejected", 0))} input records rejected, {_n(c.get("variants_failed", 0))} variants failed '
               f'verification.</p>')
    for note in notes:
        out.append(f'<p class="note">{_e(note)}</p>')
    out.append("<h3>Inputs</h3>")
    out.append(_table(["input", "kind", "sha256"], [[_code(i.get("path")), _e(i.get("kind", "")),
                                                      _code(i.get("sha256", "–"))] for i in m.get("inputs", [])],
                      raw=True, empty="The manifest names no inputs."))
    if m.get("tools_file"):
        tf = m["tools_file"]
        out.append(f'<p>Harness file {_code(tf.get("path"))}, sha256 {_code(tf.get("sha256", "–"))}</p>')
    run = [("command", _code(m.get("command") or "–")), ("hsa version", _e(m.get("hsa_version", "–"))),
           ("seed", _e(m.get("seed"))), ("variants per record", _e(m.get("variants"))),
           ("keep original (variant 0)", _yn(m.get("keep_original"))),
           ("held-out families", _e(", ".join(m.get("hold_out") or []) or "none")),
           ("harness pool (slots)", _e(m.get("harness_pool", 0))), ("engine", _e(m.get("engine", "local"))),
           ("call arguments", _e(m.get("call_arguments", "keep"))), ("hooks replayed", _yn(m.get("exec_hooks", True))),
           ("strict hooks", _yn(m.get("strict_hooks", False)))]
    out.append("<h3>Run</h3>" + _kv(run))
    out.append('<details><summary>Recipe (as run)</summary><pre class="code">' +
               _e(json.dumps(m.get("recipe"), indent=2, ensure_ascii=False)) + "</pre></details>")
    out.append("<h3>Counts</h3>" + _table(["count", "value"], [[k.replace("_", " "), v] for k, v in c.items()]))
    out.append(_rejects(page, m))
    out.append(_transforms(m))
    out.append(_hooks(m))
    extra = []
    if m.get("converted_layouts"):
        extra.append("<h3>Records read from other layouts</h3>" + _table(
            ["layout", "records"], [[k, v] for k, v in m["converted_layouts"].items()]))
    if m.get("records_with_unread_calls"):
        extra.append(f'<p class="note">{_n(m["records_with_unread_calls"])} records call a tool in their assistant '
                     "text in a layout hsa does not read; those calls stay text.</p>")
    out += extra
    out.append("</section>")
    return "".join(out)


def _rejects(page: dict, m: dict) -> str:
    rj = page["rejects"]
    out = ["<h3>Rejects</h3>"]
    if not rj["n"] and not m.get("reject_reasons"):
        return "<h3>Rejects</h3><p>No input record was rejected.</p>"
    out.append(_table(["reason", "records"], [[r, n] for r, n in (m.get("reject_reasons") or {}).items()]))
    shown = rj["listed"]
    out.append(f'<p>{_n(rj["n"])} lines in rejects.jsonl' + (f", the first {len(shown)} listed" if len(shown) < rj["n"]
                                                             else "") + ":</p>")
    out.append(_table(["input:line", "id", "reason", "detail"],
                      [[_code(f'{r.get("input", "?")}:{r.get("line", "?")}'), _e(r.get("id", "")), _e(r.get("reason", "")),
                        _e(str(r.get("detail", ""))[:300])] for r in shown], raw=True, cls="wide"))
    if m.get("variant_failures"):
        out.append("<h4>Variants that failed verification (not written)</h4>" + _table(
            ["reason", "variants"], [[r, n] for r, n in m["variant_failures"].items()]))
    return "".join(out)


def _top(reasons: dict, k: int = 3) -> str:
    items = sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))
    text = "; ".join(f"{n} × {r}" for r, n in items[:k])
    return text + (f"; and {len(items) - k} more reasons" if len(items) > k else "")


def _transforms(m: dict) -> str:
    rows = []
    families = m.get("families") or {}
    by_family: dict[str, list] = {}
    for name, t in (m.get("transforms") or {}).items():
        fam = next((f for f in families if name.startswith(f + ".")), name.split(".", 1)[0])
        by_family.setdefault(fam, []).append((name, t))
    for fam, members in by_family.items():
        f = families.get(fam)
        if f is not None:
            rows.append([f"<b>{_e(fam)}</b>", _n(f.get("applied", 0)), _n(f.get("skipped", 0)), _n(f.get("failed", 0)), ""])
        for name, t in members:
            skipped, failed = t.get("skipped") or {}, t.get("failed") or {}
            why = " ".join(x for x in (f"skipped: {_e(_top(skipped))}" if skipped else "",
                                       f"failed: {_e(_top(failed))}" if failed else "") if x)
            rows.append([f"&nbsp;&nbsp;{_e(name)}", _n(t.get("applied", 0)), _n(sum(skipped.values())),
                         _n(sum(failed.values())), why or "–"])
    return "<h3>Transforms</h3>" + _table(["family / transform", "applied", "skipped", "failed", "top reasons"], rows,
                                          raw=True, cls="wide", empty="The recipe applied no transform.")


def _hooks(m: dict) -> str:
    out = ["<h3>Hooks</h3>"]
    sandbox = m.get("hook_sandbox")
    if isinstance(sandbox, dict) and isinstance(sandbox.get("layers"), dict):  # hsa.sandbox.Status.to_dict()
        rows = [[_e(layer), "on" if st.get("on") else "off", _e(st.get("how") or st.get("why") or "")]
                for layer, st in sandbox["layers"].items() if isinstance(st, dict)]
        left = sandbox.get("open") or []
        out.append(f"<p>The sandbox the hooks were replayed in (policy {_e(sandbox.get('policy', '?'))}), layer by "
                   "layer:</p>" + _table(["layer", "state", "how / why off"], rows, raw=True)
                   + (f'<p class="note">Left open: {_e(", ".join(map(str, left)))}</p>' if left
                      else "<p>Nothing known left open.</p>"))
    elif isinstance(sandbox, dict) and sandbox.get("exec_hooks") is False:
        out.append("<p>Hook sandbox: not used (no hook was run).</p>")
    elif isinstance(sandbox, dict) and sandbox:
        rows = []
        for layer, state in sandbox.items():
            if isinstance(state, dict):
                on = state.get("on", state.get("active", state.get("enabled")))
                why = state.get("why") or state.get("reason") or state.get("detail") or ""
                rows.append([_e(layer), "on" if on else "off" if on is not None else "–", _e(why or json.dumps(
                    {k: v for k, v in state.items() if k not in ("on", "active", "enabled")}, ensure_ascii=False)
                    if len(state) > 1 else why)])
            else:
                rows.append([_e(layer), _e(state if not isinstance(state, bool) else ("on" if state else "off")), ""])
        out.append("<p>The sandbox the hooks were replayed in, layer by layer:</p>" +
                   _table(["layer", "state", "why / detail"], rows, raw=True))
    elif sandbox is not None:
        out.append(f"<p>Hook sandbox: {_e(sandbox)}</p>")
    else:
        out.append('<p class="muted">The manifest does not say which sandbox layers were active (written by an hsa '
                   "without that record).</p>")
    if not m.get("exec_hooks", True):
        out.append('<p class="note">Hooks were not replayed (--no-exec-hooks): invariant 7 was checked statically '
                   "only.</p>")
    nr = m.get("hooks_not_replayed") or {}
    out.append("<h4>Hooks not replayed</h4>" + (_table(["hook", "records"], [[h, n] for h, n in nr.items()]) if nr else
               "<p>Every hook ran on its own payloads (none was left out of invariant 7).</p>"))
    return "".join(out)


# --------------------------------------------------------------------------- plots


def _plots(page: dict) -> str:
    st = page["stats"]
    out = ['<section id="plots" class="view"><h2>Plots</h2>',
           '<p class="muted">Over every row of the dataset. Hover a bar for its numbers.</p><div class="grid">']
    out.append(histogram({int(k): v for k, v in (st.get("rows_per_source") or {}).items()},
                         title="Rows per source record", xlabel="rows (variants, with variant 0) per source record",
                         ylabel="source records"))
    lengths = page.get("lengths") or {}
    tok = page.get("tokenizer")
    if "rendered_tokens" in lengths:
        values, unit = lengths["rendered_tokens"], f"tokens per row ({tok}, chat template with tools)"
    elif "prompt_tokens" in lengths:
        values = [a + b for a, b in zip(lengths["prompt_tokens"], lengths["completion_tokens"])]
        unit = f"tokens per row ({tok}, message text only)"
    else:
        values = [a + b for a, b in zip(lengths.get("prompt_chars", []), lengths.get("completion_chars", []))]
        unit = "characters per row (message text; give --tokenizer for tokens)"
    out.append(histogram(values, title="Length of a row", xlabel=unit, ylabel="rows"))
    out.append(histogram({int(k): v for k, v in (st.get("transforms_per_row") or {}).items()},
                         title="Transforms applied per row", xlabel="transforms applied (0: unchanged)",
                         ylabel="rows"))
    renames = st.get("renames") or {}
    kinds = sorted({k for c in renames.values() for k in c}, key=lambda k: (k != "kept", k))
    if kinds:
        series = [s for s in ("tools", "skills") if s in renames]
        out.append(bars([Bar(k, [renames[s].get(k) for s in series]) for k in kinds], series=series,
                        title="Names in the variants, by what the rename did",
                        xlabel="names (tool names of every row; skill renames)"))
    fam = st.get("families") or {}
    if fam:
        out.append(bars([Bar(f, [n]) for f, n in fam.items()], title="Transform applications by family",
                        xlabel="applications (rows × transforms)"))
    tr = st.get("transforms") or {}
    if tr:
        out.append(bars([Bar(t, [n]) for t, n in sorted(tr.items(), key=lambda kv: -kv[1])],
                        title="Applications by transform", xlabel="rows the transform was applied to"))
    out.append("</div>")
    q = st.get("lengths") or {}
    if q:
        out.append("<h3>Lengths</h3>" + _table(["measure", "min", "p50", "p90", "p99", "max", "mean"],
                                              [[k.replace("_", " "), v["min"], v["p50"], v["p90"], v["p99"], v["max"],
                                                v["mean"]] for k, v in q.items()]))
    if st.get("unrendered_rows"):
        u = st["unrendered_rows"]
        out.append(f'<p class="note">{_n(u["rows"])} rows the chat template could not render (first: '
                   f'{_e(u["first_error"])}).</p>')
    names = st.get("names") or {}
    for key, table in names.items():
        out.append(f"<details><summary>Distinct names per {key[:-1]} across the variants</summary>" +
                   _table([key[:-1], "distinct names"], sorted(table.items(), key=lambda kv: -kv[1])) + "</details>")
    out.append("</section>")
    return "".join(out)


# --------------------------------------------------------------------------- evaluation


def _pct(v: Any) -> str:
    return "–" if v is None else f"{100 * v:.1f}"


def _ci(ci: Any) -> str:
    return "–" if not ci else f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def _eval(ev: dict) -> str:
    models = ev["models"]
    names = [m["name"] for m in models]
    out = ['<section id="eval" class="view"><h2>Evaluation</h2>']
    for m in models:
        o = m.get("options") or {}
        out.append(f'<p><b>{_e(m["name"])}</b>: {_code(m["file"])}' +
                   (f", predictions {_code(m['predictions'])}" if m.get("predictions") else ", no predictions") +
                   f'; {_n(m.get("n_prompts"))} prompts (--turns {_e(o.get("turns", "all"))}, format '
                   f'{_e(o.get("format", "auto"))}, string match {_e(o.get("string_match", "exact"))}, bootstrap '
                   f'{_e(o.get("bootstrap", "–"))} resamples of source records).</p>')
        for note in m.get("notes") or ():
            out.append(f'<p class="note">{_e(m["name"])}: {_e(note)}</p>')
        if m.get("problems"):
            out.append(f'<p class="note">{_e(m["name"])}: input problems: ' + ", ".join(
                f"{_e(k.replace('_', ' '))} {_n(v)}" for k, v in m["problems"].items()) + "</p>")
    for note in ev.get("notes") or ():
        out.append(f'<p class="note">{_e(note)}</p>')
    # the harness groups (canonical, variants, seen, held_out, all and any other), then call and reply turns
    harness_keys: list[str] = []
    for m in models:
        for k in list(m["groups"]["harness"]) + list(m.get("turn_kinds") or {}):
            if k not in harness_keys:
                harness_keys.append(k)

    def group_of(m: dict, key: str) -> dict | None:
        return m["groups"]["harness"].get(key) or (m.get("turn_kinds") or {}).get(key)

    head = ["group", *[f"{n}: call acc. % [95% CI] (n)" for n in names]]
    rows = [[_e(k.replace("_", "-"))] + [
        (f"{_pct(g.get('call_accuracy'))} {_ci(g.get('ci95'))} ({_n(g.get('n'))})" if g else "–")
        for g in (group_of(m, k) for m in models)] for k in harness_keys]
    out.append("<h3>Harnesses and turns</h3>" + _table(head, rows, raw=True, cls="wide"))
    out.append('<div class="grid">')
    out.append(bars([Bar(k.replace("_", "-"), [_acc(group_of(m, k)) for m in models],
                         [_iv(group_of(m, k)) for m in models], [(group_of(m, k) or {}).get("n") for m in models])
                     for k in harness_keys], series=names, xmax=100, unit="%",
                    title="Call accuracy: canonical vs variants vs held-out, call and reply turns",
                    xlabel="call accuracy (%), whiskers: 95% bootstrap interval"))
    by_keys: list[str] = []
    for m in models:
        by_keys += [k for k in m["groups"]["by"] if k not in by_keys]
    for key in by_keys:
        labels: list[str] = []
        for m in models:
            labels += [lab for lab in m["groups"]["by"].get(key, {}) if lab not in labels]
        title = "Call accuracy " + key.replace("_", " ") + {"by_slot": " (one deployable harness variant each)"}.get(
            key, "") + (" (variant rows)" if key != "by_slot" else "")
        out.append(bars([Bar(lab + (" (held out)" if any(m["groups"]["by"].get(key, {}).get(lab, {}).get("held_out")
                                                         for m in models) else ""),
                             [_acc(m["groups"]["by"].get(key, {}).get(lab)) for m in models],
                             [_iv(m["groups"]["by"].get(key, {}).get(lab)) for m in models],
                             [(m["groups"]["by"].get(key, {}).get(lab) or {}).get("n") for m in models])
                         for lab in labels], series=names, xmax=100, unit="%", title=title,
                        xlabel="call accuracy (%), whiskers: 95% bootstrap interval"))
    out.append("</div>")
    diffs = []
    for m in models:
        for k, g in m["groups"]["differences"].items():
            diffs.append([_e(m["name"]), _e(k.replace("_", " ")), f"{_pct(g.get('call_accuracy'))} points",
                          _ci(g.get("ci95")), _n(g.get("n_sources", g.get("n")))])
        if m.get("versus"):
            v = m["versus"]
            diffs.append([_e(m["name"]), f"minus {_e(v['other'])} (same prompts, paired)",
                          f"{_pct(v.get('call_accuracy'))} points", _ci(v.get("ci95")), _n(v.get("n_sources"))])
    if diffs:
        out.append("<h3>Differences</h3>" + _table(["model", "difference", "call accuracy", "95% CI",
                                                     "source records"], diffs, raw=True))
    inst = [(m["name"], m["instructions"]) for m in models if isinstance(m.get("instructions"), dict)]
    if inst:
        out.append("<h3>Instruction following</h3>" + _table(
            ["model", "prompt strict", "prompt loose", "instruction strict", "instruction loose", "n"],
            [[n, _pct(i.get("prompt_strict")), _pct(i.get("prompt_loose")), _pct(i.get("instruction_strict")),
              _pct(i.get("instruction_loose")), i.get("n")] for n, i in inst]))
    out.append('<h3>Prompts of the sampled sources</h3><div id="prompts"><p class="muted">The per-prompt table needs '
               "JavaScript.</p></div></section>")
    return "".join(out)


def _acc(g: dict | None) -> float | None:
    return None if not g or g.get("call_accuracy") is None else 100 * g["call_accuracy"]


def _iv(g: dict | None) -> list[float] | None:
    return None if not g or not g.get("ci95") else [100 * g["ci95"][0], 100 * g["ci95"][1]]


# --------------------------------------------------------------------------- the page


def _json_script(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c")


def render_page(page: dict, *, title: str = "hsa report", command: str | None = None,
                notes: list[str] | None = None) -> str:
    """The page of :func:`hsa.report.data.collect_page`'s values, as one HTML string."""
    from hsa._version import __version__

    s = page["sample"]
    has_eval = "eval" in page
    sample = (f"Rows shown one by one: {_n(s['rows'])} rows of {_n(s['sources'])} source records, a sample of "
              f"{_n(s['of_sources'])} ({_e(s['from'])}; --sample {_n(s['requested'])}, the sources with the smallest "
              f"hash of (seed {_e(s['seed'])}, source id)). Counts, plots and accuracies cover all "
              f"{_n(s['of_rows'])} rows.")
    client = {"sources": page["sources"], "sample": s,
              "eval": {"models": [m["name"] for m in page["eval"]["models"]], "prompts": page["eval"]["prompts"]}
              if has_eval else None}
    tabs = [("overview", "Overview"), ("plots", "Plots"), ("variants", "Variants")] + \
        ([("eval", "Evaluation")] if has_eval else [])
    nav = "".join(f'<a href="#{k}" data-view="{k}">{v}</a>' for k, v in tabs)
    head = (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta name="color-scheme" content="light dark"><title>{_e(title)}</title>'
            f'<style>{_asset("report.css")}</style></head><body>')
    header = (f'<header><h1>{_e(title)}</h1><p class="muted">{_code(page["dataset"])} · written by '
              f'{_code(command or "hsa.report.write_report")} · hsa {_e(__version__)}</p>'
              f'<p class="muted" id="sample-note">{sample}</p>'
              + "".join(f'<p class="note">{_e(n)}</p>' for n in s.get("notes") or ()) +
              f'</header><nav id="tabs">{nav}<span class="keys">keys: j/k variant · n/p wrong prompt · / search · '
              f'? help</span></nav><main>')
    variants = ('<section id="variants" class="view"><h2>Variants</h2><div id="browser"><p class="muted">The variant '
                "browser needs JavaScript.</p></div></section>")
    body = [_overview(page, notes or []), _plots(page), variants]
    if has_eval:
        body.append(_eval(page["eval"]))
    return (head + header + "".join(body) + "</main>"
            f'<script type="application/json" id="hsa-data">{_json_script(client)}</script>'
            f"<script>{_asset('report.js')}</script></body></html>\n")


# the pieces other pages are drawn with (hsa.bench.page): the stylesheet and script, escaping, numbers, tables
asset, code, escape_html, key_values, number, table = _asset, _code, _e, _kv, _n, _table
