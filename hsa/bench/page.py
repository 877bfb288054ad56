"""report.html of ``hsa bench run``: the bench report as one self-contained page, beside report.json.

The page is drawn with the pieces of ``hsa report`` (:mod:`hsa.report.page`'s stylesheet and its Content-Security-
Policy, :mod:`hsa.report.plots`' inline SVG bars) and says what report.json says: the pool (name, sha256), the model
and backend, call turns and no-call turns apart, canonical vs variants vs seen vs held-out families with their 95%
intervals, the gap per family / transform / category, and a sample of prompts one by one: the variant's tools, the
gold call, the model's answer and why it was scored wrong (:func:`hsa.report.evalview.explain`, plus the bench's
own reasons: a request that failed, a required parameter left out). It needs no JavaScript and makes no request.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hsa.report.page import CSP
from hsa.report.page import asset as _asset
from hsa.report.page import code as _code
from hsa.report.page import escape_html as _e
from hsa.report.page import key_values as _kv
from hsa.report.page import number as _n
from hsa.report.page import table as _table
from hsa.report.plots import Bar, bars

__all__ = ["PAGE_WRONG", "PAGE_RIGHT", "prompt_details", "render_bench_page"]

#: Prompts shown one by one on the page: at most this many scored wrong, and this many scored right.
PAGE_WRONG, PAGE_RIGHT = 50, 10


def fmt_pct(v: Any) -> str:
    """A fraction as a percentage with one decimal ("–" for None)."""
    return "–" if v is None else f"{100 * v:.1f}"


def fmt_points(v: Any) -> str:
    """A difference of fractions in signed percentage points."""
    return "–" if v is None else f"{100 * v:+.1f}"


def fmt_ci(ci: Any, pts: bool = False) -> str:
    """An interval ``[lo, hi]`` in % (or points with ``pts``)."""
    f = fmt_points if pts else fmt_pct
    return "–" if not ci else f"[{f(ci[0])}, {f(ci[1])}]"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True)


# --------------------------------------------------------------------------- the sampled prompts


def _sample(results: Sequence[dict]) -> list[int]:
    """Indices of the prompts shown: the first :data:`PAGE_WRONG` wrong and :data:`PAGE_RIGHT` right, by id."""
    order = sorted(range(len(results)), key=lambda i: results[i]["id"])
    wrong = [i for i in order if not results[i]["correct"]][:PAGE_WRONG]
    right = [i for i in order if results[i]["correct"]][:PAGE_RIGHT]
    return sorted(wrong + right, key=lambda i: results[i]["id"])


def prompt_details(sel, answers: Sequence[dict | None], results: Sequence[dict], *, fmt: str = "auto",
                   string_match: str = "bfcl") -> list[dict]:
    """The sampled prompts of a run (:func:`_sample`), each with what the page shows of it: the question, the
    variant's tools, the gold calls (variant names; BFCL's accepted values, canonical names, where it lists them),
    the model's answer as it came, the calls parsed from it and mapped back, and the reasons it is wrong."""
    from hsa.report.evalview import explain

    canonical_schemas = {it.prompt["source_id"]: it.schemas for it in sel.items if it.prompt["variant"] == 0}
    out = []
    for i in _sample(results):
        item, info, answer, res = sel.items[i], sel.info[i], answers[i], results[i]
        user = next((m.get("content") for m in reversed(item.prompt.get("messages") or ())
                     if isinstance(m, dict) and m.get("role") == "user"), None)
        d: dict[str, Any] = {"result": res, "question": user if isinstance(user, str) else _json(user),
                             "tools": item.schemas,
                             "gold": [item.mapping.to_variant(g) for g in item.gold["calls"]],
                             "accepted": info.get("answers")}
        if answer is None:
            failed = "the request failed (no answer; see report.json 'problems')"
            d.update(answer=None, reasons=[["request failed", failed]])
            out.append(d)
            continue
        pred = answer["prediction"]
        value = pred["message"] if "message" in pred else pred.get("completion", "")
        ex = explain(item, value, {"call": res["correct"], "status": res["status"]}, fmt=fmt,
                     string_match="exact" if string_match == "exact" else "bfcl",
                     canonical_schemas=canonical_schemas.get(item.prompt["source_id"], {}))
        reasons = list(ex["reasons"])
        if res.get("missing_required"):
            reasons.insert(0, ["missing required", "the call leaves out " + ", ".join(
                f"`{m}`" for m in res["missing_required"]) + ", required by this variant's schema (the harness "
                "would refuse it)"])
        if not res["correct"] and info.get("answers") is not None and reasons and reasons[-1][0] == "other":
            reasons[-1] = ["argument", "no value is among the ones BFCL accepts for this call (see accepted values)"]
        d.update(answer=ex.get("raw"), parsed=ex.get("parsed"), back=ex.get("back"),
                 reasons=reasons if not res["correct"] else [])
        out.append(d)
    return out


def _prompt(d: dict) -> str:
    r = d["result"]
    verdict = '<span class="ok">right</span>' if r["correct"] else '<span class="bad">wrong</span>'
    fam = r["family"] or "canonical"
    head = (f'{verdict} {_code(r["id"])} · {_e(r["suite"])}/{_e(r["category"])} · '
            f'{_e(r["kind"].replace("_", "-"))} turn · {_e(fam)}' + (" (held out)" if r["held_out"] else "") +
            (f' · {_e(", ".join(r["transforms"]))}' if r["transforms"] else ""))
    why = "".join(f"<li><b>{_e(k)}</b>: {_e(t)}</li>" for k, t in d["reasons"])
    parts = [f'<details class="prompt" id="p-{_e(r["id"])}"><summary>{head}</summary><div class="detail">']
    if why:
        parts.append(f"<p>Why it was scored wrong:</p><ul>{why}</ul>")
    parts.append(f"<p>Question</p><pre>{_e(d['question'] or '')}</pre>")
    tools = "".join(f"<b>{_e(name)}</b>\n{_e(_json(schema))}\n" for name, schema in (d["tools"] or {}).items())
    parts.append(f"<p>The variant's tools ({len(d['tools'] or {})}, name and parameters)</p>"
                 f"<pre>{tools or '(none)'}</pre>")
    parts.append(f"<p>Gold call(s), in this variant's names</p><pre>{_e(_json(d['gold'])) if d['gold'] else 'no call'}"
                 "</pre>")
    if d.get("accepted") is not None:
        parts.append(f"<p>Values BFCL accepts (canonical names)</p><pre>{_e(_json(d['accepted']))}</pre>")
    if d.get("answer") is None:
        parts.append('<p class="muted">No answer (the request failed).</p>')
    else:
        parts.append(f"<p>The model's answer (status {_e(r['status'])})</p><pre>{_e(d['answer'])}</pre>")
        if d.get("parsed") is not None:
            parts.append(f"<p>Calls parsed</p><pre>{_e(_json(d['parsed']))}</pre>")
        if d.get("back") is not None:
            parts.append(f"<p>Mapped back to the canonical harness (null: maps to no tool)</p>"
                         f"<pre>{_e(_json(d['back']))}</pre>")
    parts.append("</div></details>")
    return "".join(parts)


# --------------------------------------------------------------------------- the page


def _groups_table(blk: dict) -> str:
    rows = []
    for name, g, gap in (("canonical", blk["canonical"], None), ("variants", blk["variants"], blk["gap"]),
                         ("seen families", blk["seen"], blk["seen_gap"]),
                         ("held-out families", blk["held_out"], blk["held_out_gap"])):
        rows.append([_e(name), fmt_pct(g["accuracy"]), fmt_ci(g["ci95"]), _n(g["n"]), _n(g["n_items"]),
                     fmt_points(gap["gap"]) if gap else "", fmt_ci(gap["ci95"], True) if gap else ""])
    return _table(["group", "accuracy %", "95% CI", "prompts", "items", "gap vs canonical (points)", "gap 95% CI"],
                  rows, raw=True, cls="wide")


def _by_table(by: dict, label: str, *, family: bool = False) -> str:
    rows = []
    for name, g in by.items():
        rows.append([_e(name) + (" (held out)" if family and g.get("held_out") else ""), fmt_pct(g["accuracy"]),
                     fmt_ci(g["ci95"]), _n(g["n"]), fmt_points(g["gap"]["gap"]), fmt_ci(g["gap"]["ci95"], True)])
    return _table([label, "accuracy %", "95% CI", "prompts", "gap vs canonical (points)", "gap 95% CI"], rows,
                  raw=True, cls="wide", empty=f"No variant prompts (no {label}).")


def _category_table(by: dict) -> str:
    rows = []
    for name, g in by.items():
        c, v = g["canonical"], g["variants"]
        diff = None if c["accuracy"] is None or v["accuracy"] is None else c["accuracy"] - v["accuracy"]
        rows.append([_e(name), fmt_pct(c["accuracy"]), fmt_ci(c["ci95"]), _n(c["n"]), fmt_pct(v["accuracy"]), fmt_ci(v["ci95"]),
                     _n(v["n"]), fmt_points(diff)])
    return _table(["suite/category", "canonical %", "95% CI", "n", "variants %", "95% CI", "n",
                   "canonical − variants (points)"], rows, raw=True, cls="wide")


def _iv(g: dict) -> list[float] | None:
    return None if not g.get("ci95") else [100 * g["ci95"][0], 100 * g["ci95"][1]]


def _acc_bars(blk: dict, title: str) -> str:
    items = [Bar(n, [None if g["accuracy"] is None else 100 * g["accuracy"]], [_iv(g)], [g["n"]])
             for n, g in (("canonical", blk["canonical"]), ("variants", blk["variants"]), ("seen", blk["seen"]),
                          ("held-out", blk["held_out"]))]
    fams = sorted(blk["by_family"].items(), key=lambda kv: (bool(kv[1].get("held_out")), kv[0]))
    items += [Bar(f + (" (held out)" if g.get("held_out") else ""),
                  [None if g["accuracy"] is None else 100 * g["accuracy"]], [_iv(g)], [g["n"]]) for f, g in fams]
    return bars(items, title=title, xlabel="accuracy (%), whiskers: 95% bootstrap interval", xmax=100, unit="%")


def _kind_section(report: dict, key: str, title: str, intro: str) -> str:
    blk = report[key]
    out = [f'<section id="{key.replace("_", "-")}"><h2>{_e(title)}</h2><p class="muted">{_e(intro)}</p>']
    if not blk["canonical"]["n"] and not blk["variants"]["n"]:
        return out[0] + '<p class="muted">No prompts of this kind in the run.</p></section>'
    out.append(_groups_table(blk))
    out.append('<div class="grid">' + _acc_bars(blk, f"{title}: accuracy by harness and family") + "</div>")
    out.append("<h3>By family</h3>" + _by_table(blk["by_family"], "family", family=True))
    out.append("<h3>By transform</h3>" + _by_table(blk["by_transform"], "transform"))
    out.append("<h3>By category</h3>" + _category_table(blk["by_category"]))
    out.append("</section>")
    return "".join(out)


def render_bench_page(report: dict, prompts: Sequence[dict] | None = None, *, title: str | None = None) -> str:
    """The page of a bench report (and of :func:`prompt_details`' sampled prompts, when given) as one HTML string."""
    from hsa._version import __version__

    b, h, o, run = report["backend"], report["headline"], report["options"], report["run"]
    title = title or f"hsa bench: {b.get('model')} on {report['benchmark']}"
    rel = "–" if h.get("relative") is None else f"{h['relative']:.2f}"
    head = (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta name="color-scheme" content="light dark"><title>{_e(title)}</title>'
            f'<style>{_asset("report.css")}</style></head><body>')
    out = [head, f'<header><h1>{_e(title)}</h1><p class="muted">written by hsa bench run · hsa '
                 f'{_e(report.get("hsa_version", __version__))} · the numbers of report.json beside this page</p>'
                 "</header><main>"]
    out.append('<section id="overview"><h2>Overview</h2>')
    out.append(f'<p class="lead"><b>Headline — {_e(h["name"])}: {fmt_points(h["gap"])} points, 95% CI '
               f'{fmt_ci(h["ci95"], True)}</b> (canonical {fmt_pct(h["canonical"])}%, variants {fmt_pct(h["variants"])}%, '
               f'relative {rel}; {_n(h["n_items"])} items). {_e(h["definition"])}.</p>')
    for note in report.get("notes") or ():
        out.append(f'<p class="note">{_e(note)}</p>')
    backend = ", ".join(f"{k} {json.dumps(v, ensure_ascii=False)}" for k, v in b.items()
                        if k not in ("model", "backend"))
    out.append(_kv([("benchmark", _e(report["benchmark"])), ("pool", _code(report.get("pool", "–"))),
                    ("pool sha256", _code(report["pool_sha256"])),
                    ("pool built by", _e(f"hsa {report.get('pool_hsa_version')}")),
                    ("model", _code(b.get("model"))), ("backend", _e(b.get("backend"))),
                    ("backend settings", _e(backend or "–")),
                    ("prompts", _e(f"{report['n_prompts']:,} on {report['n_items']:,} items")),
                    ("options", _code(json.dumps(o, ensure_ascii=False))),
                    ("run", _e(f"{run.get('cache_hits', 0):,} cached, {run.get('asked', 0):,} asked, "
                               f"{run.get('retries', 0):,} retries, tokens {run.get('tokens', {}).get('prompt', 0):,} "
                               f"in / {run.get('tokens', {}).get('completion', 0):,} out, {run.get('seconds', 0)} s"
                               + (f", cost {run['cost']}" if "cost" in run else "")))]))
    probs = report.get("problems") or {}
    bad = [[_e(k.replace("_", " ")), _n(v.get("n", 0)), _e(", ".join(v.get("ids") or [e["id"] for e in
                                                                                       v.get("examples") or ()]))]
           for k, v in probs.items() if v.get("n")]
    ok = "<p>No request failed, every answer parsed, every call turn got a call.</p>"
    out.append("<h3>Problems</h3>" + (_table(["problem", "prompts", "first ids"], bad, raw=True, cls="wide") if bad
                                      else ok))
    if report.get("paired"):
        p = report["paired"]
        out.append("<h3>Paired with another report on the same pool</h3>" + _table(
            ["turns", "difference (points)", "95% CI", "prompts"],
            [[_e(k.replace("_", "-")), fmt_points(p[f"{k}_turns"]["difference"]), fmt_ci(p[f"{k}_turns"]["ci95"], True),
              _n(p[f"{k}_turns"]["n"])] for k in ("call", "no_call") if f"{k}_turns" in p], raw=True) +
            f'<p class="muted">other: {_code(p.get("other"))}, {_e(json.dumps(p.get("other_backend")))}</p>')
    out.append("</section>")
    out.append(_kind_section(report, "call_turns", "Call turns",
                             "A call is wanted: right when the calls, carried back to the canonical harness, match "
                             "the gold calls one to one."))
    out.append(_kind_section(report, "no_call_turns", "No-call turns",
                             "BFCL irrelevance: right when the answer parses and calls nothing. Never averaged with "
                             "call turns."))
    out.append('<section id="prompts"><h2>Prompts</h2>')
    if prompts is None:
        out.append('<p class="muted">No prompts shown (the page was written from report.json alone).</p>')
    else:
        n_wrong = sum(not r["correct"] for r in report["results"])
        shown_wrong = sum(not d["result"]["correct"] for d in prompts)
        out.append(f'<p class="muted">A sample: {_n(len(prompts))} of {_n(report["n_prompts"])} prompts — the first '
                   f'{_n(shown_wrong)} of the {_n(n_wrong)} scored wrong and the first '
                   f'{_n(len(prompts) - shown_wrong)} scored right, by prompt id (at most {PAGE_WRONG} and '
                   f'{PAGE_RIGHT}). Every prompt is in report.json \'results\' and predictions.jsonl.</p>')
        out += [_prompt(d) for d in prompts]
    out.append("</section></main></body></html>\n")
    return "".join(out)
