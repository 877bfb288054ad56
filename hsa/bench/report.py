"""The hsa-bench report: canonical and variant accuracy, call turns and no-call turns apart.

Every prompt is scored once: its completion is parsed (:func:`hsa.evaluation.parse` / ``parse_message``), each
call is carried back to the canonical harness with the row's mapping (:func:`hsa.evaluation.scoring.canonical_call`,
a call that would not reach a tool of the variant matches nothing), and compared with the gold turn:

* a **call turn** is right when the calls match the gold calls one to one, in any order; where BFCL lists every
  value it accepts for a parameter (``possible_answer``), any of them is right and a parameter whose list holds
  ``""`` may be left out, as BFCL's AST checker has it; elsewhere the arguments compare as ``hsa eval score``
  compares them (:func:`hsa.evaluation.arguments_match`);
* every call must give the parameters the variant's schema requires (a call without them would be refused by the
  deployed harness: a parameter ``added_required`` adds, for one);
* a **no-call turn** (BFCL's irrelevance categories) is right when the completion parses and makes no call.

The two kinds are never averaged together: a model that never calls a tool scores 0 on call turns and 100 on
no-call turns, and the report shows both. The **headline** is the call-turn gap: canonical accuracy minus accuracy
under the variants, in points, with a paired bootstrap interval over items (the same resampled items on both sides;
:func:`hsa.evaluation.report.paired_ci`); ``relative`` is variant accuracy over canonical accuracy.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hsa.bench.page import fmt_ci, fmt_pct, fmt_points
from hsa.bench.pool import BenchError

__all__ = ["HEADLINE", "score_prompt", "bfcl_turn_correct", "build_report", "write_bench_report", "to_markdown",
           "plot", "summary_text", "fmt_pct", "fmt_points", "fmt_ci"]

HEADLINE = ("call-turn gap: accuracy on the canonical harness minus accuracy under its variants, over call turns "
            "(points; positive = the model loses accuracy when the harness changes), paired 95% bootstrap interval "
            "over items")


# --------------------------------------------------------------------------- one prompt


def _option_match(option: Any, value: Any, schema: Any, string_match: str) -> bool:
    from hsa.evaluation import values_match

    if isinstance(option, dict) and isinstance(value, dict) and option and \
            all(isinstance(v, list) for v in option.values()):  # a nested answer: its keys hold option lists
        return _params_match(option, value, schema, string_match)
    if isinstance(option, list) and isinstance(value, list) and any(isinstance(o, dict) for o in option):
        items = schema.get("items") if isinstance(schema, dict) else None
        return len(option) == len(value) and all(_option_match(o, v, items, string_match)
                                                 for o, v in zip(option, value))
    return values_match(option, value, schema, string_match)


def _params_match(gold: dict, args: dict, schema: Any, string_match: str) -> bool:
    props = schema.get("properties") if isinstance(schema, dict) else None
    props = props if isinstance(props, dict) else {}
    for key, options in gold.items():
        options = options if isinstance(options, list) else [options]
        if key not in args:
            if "" not in options and None not in options:  # a null accepted: leaving it out gives the default
                return False
            continue
        if not any(_option_match(o, args[key], props.get(key), string_match) for o in options if o != ""):
            return False
    return all(k in gold for k in args)


def bfcl_turn_correct(answers: list[dict], calls: Sequence[dict | None], schemas: dict, string_match: str) -> bool:
    """Whether canonical ``calls`` (None: a call that maps to no tool) answer BFCL's ``possible_answer`` list: one
    call per gold function, any order, each parameter one of its accepted values."""
    if len(calls) != len(answers):
        return False
    edges = []
    for entry in answers:
        (name, params), = entry.items()
        edges.append([j for j, c in enumerate(calls) if c is not None and c["name"] == name
                      and isinstance(c["arguments"], dict)
                      and _params_match(params, c["arguments"], schemas.get(name), string_match)])
    from hsa.evaluation.scoring import max_matching

    return max_matching(edges, len(calls)) == len(answers)


def _typed(call: dict | None, code: dict) -> dict | None:
    from hsa.bench.suites import convert_code

    if call is None or not isinstance(call["arguments"], dict):
        return call
    types = code["types"].get(call["name"], {})
    return {**call, "arguments": {k: convert_code(v, types.get(k), code["language"])
                                  for k, v in call["arguments"].items()}}


def score_prompt(item, info: dict, answer: dict | None, *, canonical_schemas: dict, fmt: str,
                 string_match: str) -> dict:
    """The result of one prompt (see the module docstring)."""
    from hsa.evaluation import parse, parse_message
    from hsa.evaluation.scoring import canonical_call, score_turn

    p = item.prompt
    out: dict[str, Any] = {"id": p["id"], "source_id": p["source_id"], "suite": info["suite"],
                           "category": info["category"], "kind": info["kind"], "variant": p["variant"],
                           "family": info["family"], "held_out": info["held_out"], "transforms": p["transforms"]}
    if answer is None:
        return {**out, "status": "request_failed", "correct": 0, "format": 0, "calls": 0}
    pred = answer["prediction"]
    parsed = parse_message(pred["message"], fmt, schemas=item.schemas) if "message" in pred else \
        parse(pred.get("completion", ""), fmt, schemas=item.schemas)
    if not parsed.ok:
        return {**out, "status": "unparseable", "error": parsed.error, "correct": 0, "format": 0, "calls": 0}
    calls = list(parsed.calls)
    out.update(status="ok", format=1, calls=len(calls))
    if info["kind"] == "no_call":
        out["correct"] = int(not calls)
        return out
    missing = _missing_required(calls, item.schemas)
    if missing:
        out["missing_required"] = missing
    if info["answers"] is not None:
        canon = [canonical_call(c, item.mapping, item.schemas) for c in calls]
        if info.get("code"):  # Java / JavaScript: string arguments read as BFCL's checker reads them
            canon = [_typed(c, info["code"]) for c in canon]
            canonical_schemas = {}
        out["correct"] = int(not missing and bfcl_turn_correct(info["answers"], canon, canonical_schemas,
                                                               string_match))
    else:
        s = score_turn(parsed, item.gold, item.mapping, item.schemas, item.skill_tool,
                       canonical_schemas=canonical_schemas, string_match=string_match)
        out["correct"] = int(not missing and s["call"])
    return out


def _missing_required(calls: Sequence[dict], schemas: dict) -> list[str]:
    """``tool.param`` for each parameter the variant's schema requires that a call leaves out: the deployed harness
    would refuse that call (a parameter the variant added, such as ``tool.add_required``'s, included)."""
    out = []
    for c in calls:
        schema = schemas.get(c["name"])
        required = schema.get("required") if isinstance(schema, dict) else None
        args = c["arguments"] if isinstance(c["arguments"], dict) else {}
        out += [f"{c['name']}.{r}" for r in required or () if isinstance(r, str) and r not in args]
    return out


# --------------------------------------------------------------------------- groups


def _group(results: list[dict], *, seed: int, reps: int, label: str) -> dict:
    from hsa.evaluation.report import bootstrap_ci

    n = len(results)
    acc = sum(r["correct"] for r in results) / n if n else None
    return {"accuracy": acc, "ci95": bootstrap_ci(results, seed=seed, reps=reps, key="correct", label=label),
            "n": n, "n_items": len({r["source_id"] for r in results})}


def _gap(canonical: list[dict], variants: list[dict], *, seed: int, reps: int, label: str) -> dict:
    from hsa.evaluation.report import paired_ci

    g = paired_ci(canonical, variants, seed=seed, reps=reps, key="correct", label=label)
    if g is None:
        return {"gap": None, "ci95": None, "n": 0, "n_items": 0}
    return {"gap": g["correct"], "ci95": g["ci95"], "n": g["n"], "n_items": g["n_sources"]}


def _kind_block(results: list[dict], *, seed: int, reps: int, kind: str) -> dict:
    canonical = [r for r in results if r["variant"] == 0]
    variants = [r for r in results if r["variant"] != 0]
    seen = [r for r in variants if not r["held_out"]]
    held = [r for r in variants if r["held_out"]]

    def grp(rs, label):
        return _group(rs, seed=seed, reps=reps, label=f"{kind}:{label}")

    def gap(rs, label):
        return _gap(canonical, rs, seed=seed, reps=reps, label=f"{kind}:gap:{label}")

    block: dict[str, Any] = {"canonical": grp(canonical, "canonical"), "variants": grp(variants, "variants"),
                             "seen": grp(seen, "seen"), "held_out": grp(held, "held_out"),
                             "gap": gap(variants, "variants"), "seen_gap": gap(seen, "seen"),
                             "held_out_gap": gap(held, "held_out")}
    block["by_family"] = {}
    for f in sorted({r["family"] for r in variants}):
        rs = [r for r in variants if r["family"] == f]
        block["by_family"][f] = {**grp(rs, f"family:{f}"), "held_out": rs[0]["held_out"],
                                 "gap": gap(rs, f"family:{f}")}
    block["by_transform"] = {}
    for t in sorted({t for r in variants for t in r["transforms"]}):
        rs = [r for r in variants if t in r["transforms"]]
        block["by_transform"][t] = {**grp(rs, f"transform:{t}"), "gap": gap(rs, f"transform:{t}")}
    block["by_category"] = {}
    for s, c in sorted({(r["suite"], r["category"]) for r in results}):
        rs = [r for r in results if r["suite"] == s and r["category"] == c]
        cv = [r for r in rs if r["variant"] == 0]
        vv = [r for r in rs if r["variant"] != 0]
        block["by_category"][f"{s}/{c}"] = {"canonical": grp(cv, f"cat:{c}:canonical"),
                                            "variants": grp(vv, f"cat:{c}:variants")}
    return block


def _problems(results: list[dict], run: dict) -> dict:
    def named(rs, extra=None):
        return {"n": len(rs), "ids": [r["id"] for r in rs[:10]], **(extra or {})}

    failed = [r for r in results if r["status"] == "request_failed"]
    unparseable = [r for r in results if r["status"] == "unparseable"]
    no_call = [r for r in results if r["kind"] == "call" and r["status"] == "ok" and not r["calls"]]
    return {"request_failed": named(failed, {"by_error": run.get("failed", {})}),
            "unparseable": {"n": len(unparseable), "examples": [{"id": r["id"], "error": r.get("error")}
                                                                for r in unparseable[:10]]},
            "no_call_on_call_turns": named(no_call)}


def build_report(pool, sel, answers: Sequence[dict | None], *, run: dict, backend: dict, fmt: str = "auto",
                 string_match: str = "bfcl", seed: int = 0, bootstrap: int = 1000, options: dict | None = None,
                 compare: str | Path | dict | None = None, notes: Sequence[str] = ()) -> dict:
    """The report of one run (docs/benchmark.md lists its fields)."""
    from hsa._version import __version__
    from hsa.evaluation.parsers import FORMATS
    from hsa.evaluation.report import round_floats
    from hsa.evaluation.scoring import STRING_MATCH

    if fmt not in FORMATS:
        raise BenchError(f"--format must be one of {', '.join(FORMATS)} (got {fmt!r})")
    if string_match not in STRING_MATCH:
        raise BenchError(f"--string-match must be one of {', '.join(STRING_MATCH)} (got {string_match!r})")
    canonical_schemas = {it.prompt["source_id"]: it.schemas for it in sel.items if it.prompt["variant"] == 0}
    results = [score_prompt(it, info, a, canonical_schemas=canonical_schemas.get(it.prompt["source_id"], {}),
                            fmt=fmt, string_match=string_match)
               for it, info, a in zip(sel.items, sel.info, answers)]
    calls = [r for r in results if r["kind"] == "call"]
    no_calls = [r for r in results if r["kind"] == "no_call"]
    call_block = _kind_block(calls, seed=seed, reps=bootstrap, kind="call")
    report: dict[str, Any] = {
        "benchmark": pool.card["name"], "pool_sha256": pool.sha256, "pool": str(pool.path),
        "pool_hsa_version": pool.card.get("hsa_version"), "hsa_version": __version__, "backend": backend,
        "options": {**(options or {}), "format": fmt, "string_match": string_match, "seed": seed,
                    "bootstrap": bootstrap},
        "n_prompts": len(results), "n_items": len({r["source_id"] for r in results}),
        "headline": _headline(call_block),
        "call_turns": call_block,
        "no_call_turns": _kind_block(no_calls, seed=seed, reps=bootstrap, kind="no_call"),
        "problems": _problems(results, run),
        "run": run,
        "notes": list(notes),
    }
    if pool.card.get("hsa_version") != __version__:
        report["notes"].append(f"the pool was built by hsa {pool.card.get('hsa_version')}; this is hsa {__version__}")
    if compare is not None:
        report["paired"] = _compare(results, compare, pool.sha256, seed=seed, reps=bootstrap)
    report["results"] = results
    return round_floats(report)


def _headline(block: dict) -> dict:
    c, v, g = block["canonical"]["accuracy"], block["variants"]["accuracy"], block["gap"]
    return {"name": "call-turn gap", "definition": HEADLINE, "gap": g["gap"], "ci95": g["ci95"],
            "n_items": g["n_items"], "canonical": c, "variants": v,
            "relative": (v / c) if c else None}


def _compare(results: list[dict], other: str | Path | dict, sha: str, *, seed: int, reps: int) -> dict:
    from hsa.evaluation.report import paired_ci

    if not isinstance(other, dict):
        try:
            other_report = json.loads(Path(other).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise BenchError(f"--compare {other}: cannot read it as a report ({exc})") from None
    else:
        other_report = other
    if other_report.get("pool_sha256") != sha:
        raise BenchError(f"--compare {other}: that report is on pool {str(other_report.get('pool_sha256'))[:12]}..., "
                         f"this one on {sha[:12]}...; reports are comparable only on the same pool")
    theirs = {r["id"]: r for r in other_report.get("results") or ()}
    out: dict[str, Any] = {"other": str(other) if not isinstance(other, dict) else "", "other_backend":
                           other_report.get("backend")}
    for kind in ("call", "no_call"):
        mine = [r for r in results if r["kind"] == kind and r["id"] in theirs]
        d = paired_ci(mine, [theirs[r["id"]] for r in mine], seed=seed, reps=reps, key="correct",
                      label=f"compare:{kind}")
        out[f"{kind}_turns"] = {"difference": d["correct"] if d else None, "ci95": d["ci95"] if d else None,
                                "n": len(mine)}
    out["only_here"] = sum(r["id"] not in theirs for r in results)
    out["only_there"] = len(theirs) - (len(results) - out["only_here"])
    return out


# --------------------------------------------------------------------------- output


def to_markdown(report: dict) -> str:
    """The report as Markdown."""
    h = report["headline"]
    b = report["backend"]
    rel = "–" if h["relative"] is None else f"{h['relative']:.2f}"
    lines = [f"# {report['benchmark']}: {b.get('model')} ({b.get('backend')})", "",
             f"Pool sha256 `{report['pool_sha256']}`; {report['n_prompts']} prompts on {report['n_items']} items; "
             f"string match {report['options']['string_match']}, bootstrap {report['options']['bootstrap']} "
             "resamples of items. Values in %.", "",
             f"**Headline — {h['name']}: {fmt_points(h['gap'])} points, 95% CI {fmt_ci(h['ci95'], True)}** "
             f"(canonical {fmt_pct(h['canonical'])}, variants {fmt_pct(h['variants'])}, relative {rel}; "
             f"{h['n_items']} items). {h['definition']}."]
    for key, title in (("call_turns", "Call turns (a call is wanted)"),
                       ("no_call_turns", "No-call turns (BFCL irrelevance: the right answer calls nothing)")):
        blk = report[key]
        lines += ["", f"## {title}", "", "| group | accuracy | 95% CI | n | items | gap vs canonical (points) | gap CI |",
                  "|---|---|---|---|---|---|---|"]
        for name, g, gap in (("canonical", blk["canonical"], None), ("variants", blk["variants"], blk["gap"]),
                             ("seen families", blk["seen"], blk["seen_gap"]),
                             ("held-out families", blk["held_out"], blk["held_out_gap"])):
            lines.append(f"| {name} | {fmt_pct(g['accuracy'])} | {fmt_ci(g['ci95'])} | {g['n']} | {g['n_items']} | "
                         f"{fmt_points(gap['gap']) if gap else ''} | {fmt_ci(gap['ci95'], True) if gap else ''} |")
        for f, g in blk["by_family"].items():
            lines.append(f"| family {f}{' (held out)' if g['held_out'] else ''} | {fmt_pct(g['accuracy'])} | "
                         f"{fmt_ci(g['ci95'])} | {g['n']} | {g['n_items']} | {fmt_points(g['gap']['gap'])} | "
                         f"{fmt_ci(g['gap']['ci95'], True)} |")
        if blk["by_transform"]:
            lines += ["", "| transform | accuracy | n | gap (points) | gap CI |", "|---|---|---|---|---|"]
            lines += [f"| {t} | {fmt_pct(g['accuracy'])} | {g['n']} | {fmt_points(g['gap']['gap'])} | "
                      f"{fmt_ci(g['gap']['ci95'], True)} |" for t, g in blk["by_transform"].items()]
        if blk["by_category"]:
            lines += ["", "| category | canonical | n | variants | n |", "|---|---|---|---|---|"]
            lines += [f"| {c} | {fmt_pct(g['canonical']['accuracy'])} | {g['canonical']['n']} | "
                      f"{fmt_pct(g['variants']['accuracy'])} | {g['variants']['n']} |"
                      for c, g in blk["by_category"].items()]
    if report.get("paired"):
        p = report["paired"]
        lines += ["", f"## Compared with `{p['other']}`", ""]
        for kind in ("call_turns", "no_call_turns"):
            d = p[kind]
            lines.append(f"- {kind.replace('_', ' ')}: {fmt_points(d['difference'])} points, 95% CI {fmt_ci(d['ci95'], True)} "
                         f"on {d['n']} shared prompts")
    pr, run = report["problems"], report["run"]
    lines += ["", "## Run and problems", "",
              f"- prompts {run['prompts']}: {run['cache_hits']} answered from the cache, {run['asked']} asked, "
              f"{run['retries']} retries, {run['seconds']} s; tokens {run['tokens']['prompt']:,} in, "
              f"{run['tokens']['completion']:,} out" + (f"; cost {run['cost']}" if "cost" in run else "")]
    for k, v in pr.items():
        if v["n"]:
            lines.append(f"- {k.replace('_', ' ')}: {v['n']}" + (f" ({', '.join(map(str, v.get('ids', [])[:5]))})"
                                                                  if v.get("ids") else ""))
    for note in report.get("notes") or ():
        lines.append(f"- note: {note}")
    return "\n".join(lines) + "\n"


def plot(report: dict, path: str | Path) -> None:
    """Accuracy with 95% intervals: call turns (canonical, variants, each family) and no-call turns."""
    try:
        import matplotlib
    except ImportError:
        raise BenchError("the plot needs matplotlib: pip install 'hsa[bench]' (or pass --no-plot)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4), dpi=100, gridspec_kw={"width_ratios": [3, 2]})
    for ax, key, title in ((axes[0], "call_turns", "call turns"), (axes[1], "no_call_turns", "no-call turns")):
        blk = report[key]
        bars = [("canonical", blk["canonical"]), ("variants", blk["variants"])]
        fams = sorted(blk["by_family"].items(), key=lambda kv: (kv[1]["held_out"], kv[0]))  # seen, then held out
        bars += [(f + (" (held out)" if g["held_out"] else ""), g) for f, g in fams]
        bars = [(n, g) for n, g in bars if g.get("accuracy") is not None]
        xs = list(range(len(bars)))
        vals = [100 * g["accuracy"] for _, g in bars]
        errs = [[100 * (g["accuracy"] - g["ci95"][0]) for _, g in bars],
                [100 * (g["ci95"][1] - g["accuracy"]) for _, g in bars]]
        ax.bar(xs, vals, yerr=errs, capsize=3, color=["#4C72B0" if i < 2 else "#DD8452" for i in xs])
        ax.set_xticks(xs, [n for n, _ in bars], rotation=40, ha="right", fontsize=7)
        ax.set_ylim(0, 100)
        ax.set_ylabel("accuracy (%)")
        ax.set_title(f"{title} (n={blk['canonical']['n'] + blk['variants']['n']})", fontsize=9)
    fig.suptitle(f"{report['backend'].get('model')} on {report['benchmark']} (pool {report['pool_sha256'][:12]}), "
                 "95% bootstrap intervals", fontsize=8)
    fig.tight_layout()
    fig.savefig(str(path), metadata={"Software": None})
    plt.close(fig)


def write_bench_report(report: dict, out: str | Path, *, png: bool = True,
                       prompts: Sequence[dict] | None = None) -> None:
    """report.json, report.md, report.html and (unless turned off) report.png in the folder ``out``; ``prompts``:
    the sampled prompts the page shows one by one (:func:`hsa.bench.page.prompt_details`; without them the page
    has the report's numbers only)."""
    from hsa.bench.page import render_bench_page
    from hsa.evaluation.report import dumps

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(dumps(report), encoding="utf-8")
    (out / "report.md").write_text(to_markdown(report), encoding="utf-8")
    (out / "report.html").write_text(render_bench_page(report, prompts), encoding="utf-8")
    if png:
        plot(report, out / "report.png")


def summary_text(report: dict) -> str:
    """The report in a few lines for the terminal."""
    h = report["headline"]
    c, n = report["call_turns"], report["no_call_turns"]
    lines = [f"{report['benchmark']} (pool {report['pool_sha256'][:12]}): {report['n_prompts']} prompts",
             f"call turns: canonical {fmt_pct(c['canonical']['accuracy'])}% (n={c['canonical']['n']}), variants "
             f"{fmt_pct(c['variants']['accuracy'])}% (n={c['variants']['n']}), held-out "
             f"{fmt_pct(c['held_out']['accuracy'])}%",
             f"no-call turns: canonical {fmt_pct(n['canonical']['accuracy'])}% (n={n['canonical']['n']}), variants "
             f"{fmt_pct(n['variants']['accuracy'])}% (n={n['variants']['n']})",
             f"headline (call-turn gap): {fmt_points(h['gap'])} points, 95% CI {fmt_ci(h['ci95'], True)}"]
    run = report["run"]
    lines.append(f"run: {run['cache_hits']} cached, {run['asked']} asked, {run['retries']} retries, tokens "
                 f"{run['tokens']['prompt']:,} in / {run['tokens']['completion']:,} out")
    bad = {k: v["n"] for k, v in report["problems"].items() if v["n"]}
    if bad:
        lines.append("problems: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in bad.items())
                     + " (named in report.json 'problems')")
    return "\n".join(lines)
