"""Predictions in, report out: reading predictions, grouping the scores, intervals, Markdown and a plot.

:func:`score` is the whole of ``hsa eval score``; the fields of the dict it returns are
documented in docs/evaluation.md. Everything here is deterministic: the same inputs and
seed give the same report bytes (:func:`dumps`).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hsa.evaluation.parsers import FORMATS, Parsed, parse, parse_message
from hsa.evaluation.prompts import EvalInputError, Item, collect, paused_gc
from hsa.evaluation.scoring import STRING_MATCH, score_turn

__all__ = ["read_predictions", "score", "score_items", "group", "bootstrap_ci", "paired_ci", "paired_groups",
           "expects", "dumps", "to_markdown", "plot", "write_report", "METRICS", "round_floats", "summary_text"]

#: Per-prompt score keys and the report field each one is averaged into.
METRICS = {"call": "call_accuracy", "name": "name_accuracy", "argument": "argument_accuracy",
           "skill": "skill_accuracy", "no_call": "no_call_accuracy", "format": "format_validity",
           "schema": "schema_validity"}
_EXAMPLES = 20  # ids named per problem kind in the report (all are counted)


# --------------------------------------------------------------------------- predictions


def _prediction_of(obj: dict) -> tuple[Any, str | None]:
    """``(id, text or message)`` of one prediction object, or raise ``ValueError`` saying what is wrong."""
    pid = obj.get("id", obj.get("custom_id"))
    if not isinstance(pid, str):
        raise ValueError("no string 'id'; expected {\"id\": ..., \"completion\": text} or "
                         "{\"id\": ..., \"message\": {\"content\", \"tool_calls\"}}")
    if "completion" in obj:
        c = obj["completion"]
        if isinstance(c, list) and c and isinstance(c[-1], dict):  # trl's conversational completion
            return pid, c[-1]
        return pid, c
    if isinstance(obj.get("message"), dict):
        return pid, obj["message"]
    resp = obj.get("response")
    if isinstance(resp, dict):  # an OpenAI chat completion (or a Batch API output line)
        body = resp.get("body", resp)
        choices = body.get("choices") if isinstance(body, dict) else None
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            msg = choices[0].get("message")
            if isinstance(msg, dict):
                return pid, msg
            if isinstance(choices[0].get("text"), str):
                return pid, choices[0]["text"]
    raise ValueError("neither 'completion' (text) nor 'message' ({\"content\", \"tool_calls\"}) nor an OpenAI "
                     "'response' with choices")


def read_predictions(source: str | Path | Iterable[dict]) -> tuple[dict[str, Any], list[dict], list[str]]:
    """``({id: completion text or message}, bad lines [{"line", "reason"}], duplicate ids)`` of a JSONL file
    (or of prediction dicts). A later line with the same id is a duplicate; the first one is scored."""
    out: dict[str, Any] = {}
    bad: list[dict] = []
    dupes: list[str] = []
    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.is_file():
            raise EvalInputError(f"--predictions {source}: no such file; expected JSONL lines "
                                 "{\"id\": ..., \"completion\": text} (or \"message\")")
        lines: Iterable[tuple[int, Any]] = _jsonl(path, bad)
    else:
        lines = enumerate(source, 1)
    for n, obj in lines:
        if not isinstance(obj, dict):
            bad.append({"line": n, "reason": f"expected a JSON object, got {type(obj).__name__}"})
            continue
        try:
            pid, value = _prediction_of(obj)
        except ValueError as exc:
            bad.append({"line": n, "reason": str(exc)})
            continue
        if pid in out:
            dupes.append(pid)
            continue
        out[pid] = value
    return out, bad, dupes


def _jsonl(path: Path, bad: list[dict]) -> Iterable[tuple[int, Any]]:
    with path.open("rb") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield n, json.loads(line)
            except ValueError as exc:
                bad.append({"line": n, "reason": f"not JSON ({exc})"})


def _parse_prediction(value: Any, fmt: str, schemas) -> Parsed:
    if isinstance(value, dict):
        return parse_message(value, fmt, schemas=schemas)
    return parse(value, fmt, schemas=schemas)


# --------------------------------------------------------------------------- scoring


def score_items(items: Sequence[Item], predictions: Mapping[str, Any], *, fmt: str = "auto",
                string_match: str = "exact") -> tuple[list[dict], dict]:
    """Per-prompt results (in prompt order) and the problems found (missing, unparseable, unknown ids)."""
    with paused_gc():
        return _score_items(items, predictions, fmt=fmt, string_match=string_match)


def _score_items(items, predictions, *, fmt: str, string_match: str) -> tuple[list[dict], dict]:
    if fmt not in FORMATS:
        raise EvalInputError(f"--format must be one of {', '.join(FORMATS)} (got {fmt!r})")
    if string_match not in STRING_MATCH:
        raise EvalInputError(f"--string-match must be one of {', '.join(STRING_MATCH)} (got {string_match!r})")
    canonical_schemas = {it.prompt["source_id"]: it.schemas for it in items if it.prompt["variant"] == 0}
    results, missing, unparseable, formats = [], [], [], {}
    for it in items:
        p = it.prompt
        value = predictions.get(p["id"], _MISSING)
        if value is _MISSING:
            parsed, status = None, "missing"
            missing.append(p["id"])
        else:
            parsed = _parse_prediction(value, fmt, it.schemas)
            status = "ok" if parsed.ok else "unparseable"
            if not parsed.ok:
                unparseable.append({"id": p["id"], "error": parsed.error})
            elif parsed.format:
                formats[parsed.format] = formats.get(parsed.format, 0) + 1
        s = score_turn(parsed, it.gold, it.mapping, it.schemas, it.skill_tool,
                       canonical_schemas=canonical_schemas.get(p["source_id"]), string_match=string_match)
        results.append({"id": p["id"], "source_id": p["source_id"], "variant": p["variant"],
                        "expects": "call" if it.gold["calls"] else "reply",
                        "families": p["families"], "transforms": p["transforms"], "status": status, **s})
        if "slot" in p:
            results[-1]["slot"] = p["slot"]
    known = {it.prompt["id"] for it in items}
    unknown = sorted(pid for pid in predictions if pid not in known)
    problems = {"missing": _named(missing), "unparseable": {"n": len(unparseable),
                                                            "examples": unparseable[:_EXAMPLES]},
                "unknown_ids": _named(unknown), "formats": dict(sorted(formats.items()))}
    return results, problems


class _Missing:
    pass


_MISSING = _Missing()


def _named(ids: Sequence[str]) -> dict:
    return {"n": len(ids), "ids": list(ids[:_EXAMPLES])}


# --------------------------------------------------------------------------- intervals


def _rng(seed: int, label: str):
    import numpy as np

    return np.random.Generator(np.random.PCG64([seed, zlib.crc32(label.encode())]))


def _clusters(results: Sequence[dict], key: str = "call"):
    """Per-source (successes, counts) as int64 arrays, sources in first-seen order."""
    import numpy as np

    index: dict[str, int] = {}
    hits: list[int] = []
    counts: list[int] = []
    for r in results:
        v = r.get(key)
        if v is None:
            continue
        i = index.setdefault(r["source_id"], len(index))
        if i == len(hits):
            hits.append(0)
            counts.append(0)
        hits[i] += int(v)
        counts[i] += 1
    return np.asarray(hits, dtype=np.int64), np.asarray(counts, dtype=np.int64), index


def _draws(rng, n_sources: int, reps: int):
    """``reps`` resamples of ``n_sources`` source indices (with replacement), in chunks."""
    chunk = max(1, min(reps, 2_000_000 // max(1, n_sources)))
    done = 0
    while done < reps:
        k = min(chunk, reps - done)
        yield rng.integers(0, n_sources, size=(k, n_sources))
        done += k


def _percentiles(values, lo: float = 2.5, hi: float = 97.5) -> list[float]:
    import numpy as np

    return [float(np.percentile(values, lo)), float(np.percentile(values, hi))]


def bootstrap_ci(results: Sequence[dict], *, seed: int = 0, reps: int = 1000, key: str = "call",
                 label: str = "") -> list[float] | None:
    """The 95% percentile interval of the mean of ``key``, resampling source records (cluster bootstrap)."""
    import numpy as np

    hits, counts, _ = _clusters(results, key)
    if not len(hits):
        return None
    if len(hits) == 1 or reps <= 0:
        m = float(hits.sum() / counts.sum())
        return [m, m]
    means = []
    for idx in _draws(_rng(seed, label), len(hits), reps):
        means.append(hits[idx].sum(axis=1) / counts[idx].sum(axis=1))
    return _percentiles(np.concatenate(means))


def paired_ci(a: Sequence[dict], b: Sequence[dict], *, seed: int = 0, reps: int = 1000, key: str = "call",
              label: str = "") -> dict | None:
    """mean(a) - mean(b) over the source records both have, with the 95% interval of a paired bootstrap
    (the same resampled sources on both sides)."""
    import numpy as np

    ha, ca, ia = _clusters(a, key)
    hb, cb, ib = _clusters(b, key)
    shared = [s for s in ia if s in ib]
    if not shared:
        return None
    sa = np.asarray([ia[s] for s in shared])
    sb = np.asarray([ib[s] for s in shared])
    ha, ca, hb, cb = ha[sa], ca[sa], hb[sb], cb[sb]
    point = float(ha.sum() / ca.sum() - hb.sum() / cb.sum())
    out = {"call_accuracy" if key == "call" else key: point, "ci95": [point, point], "n": int(ca.sum() + cb.sum()),
           "n_sources": len(shared)}
    if len(shared) > 1 and reps > 0:
        diffs = [ha[i].sum(1) / ca[i].sum(1) - hb[i].sum(1) / cb[i].sum(1)
                 for i in _draws(_rng(seed, label), len(shared), reps)]
        out["ci95"] = _percentiles(np.concatenate(diffs))
    return out


# --------------------------------------------------------------------------- grouping


def expects(result: dict) -> str:
    """What a per-prompt result's gold turn is: ``"call"`` (a turn with tool calls) or ``"reply"`` (no call
    expected). Results of reports written before the field existed are told apart by ``name``, which only
    call turns have."""
    kind = result.get("expects")
    if kind in ("call", "reply"):
        return kind
    return "call" if result.get("name") is not None else "reply"


def _split(results: Sequence[dict]) -> tuple[list[dict], list[dict]]:
    calls, replies = [], []
    for r in results:
        (calls if expects(r) == "call" else replies).append(r)
    return calls, replies


def _mean(results: Sequence[dict], key: str = "call") -> float | None:
    vals = [r[key] for r in results if r.get(key) is not None]
    return sum(vals) / len(vals) if vals else None


def group(results: Sequence[dict], *, seed: int = 0, reps: int = 1000, label: str = "") -> dict:
    """The metrics of a set of per-prompt results. The headline, ``call_accuracy`` with ``ci95`` and ``n``, is
    over the tool-call turns (a model that never calls scores 0 there); ``reply_accuracy`` with ``reply_ci95``
    and ``n_replies`` over the reply turns; ``turn_accuracy`` and ``n_turns`` over both; then the other means
    and their counts (docs/evaluation.md)."""
    calls, replies = _split(results)
    out: dict[str, Any] = {
        "call_accuracy": _mean(calls), "ci95": bootstrap_ci(calls, seed=seed, reps=reps, label=label),
        "n": len(calls),
        "reply_accuracy": _mean(replies), "reply_ci95": bootstrap_ci(replies, seed=seed, reps=reps,
                                                                     label=f"{label}:replies"),
        "n_replies": len(replies),
        "turn_accuracy": _mean(results), "n_turns": len(results),
        "n_sources": len({r["source_id"] for r in results})}
    for key, field in METRICS.items():
        if key == "call":
            continue
        out[field] = _mean(results, key)
        if key in ("name", "skill", "no_call", "schema"):
            out[f"n_{field.rsplit('_', 1)[0]}"] = sum(1 for r in results if r.get(key) is not None)
    return out


_NO_PAIRS = {"call_accuracy": None, "ci95": None, "n": 0, "n_sources": 0}


def paired_groups(a: Sequence[dict], b: Sequence[dict], *, seed: int = 0, reps: int = 1000, label: str = "") -> dict:
    """``a`` minus ``b`` over the sources both have, with paired-bootstrap intervals: ``call_accuracy``,
    ``ci95``, ``n``, ``n_sources`` for the tool-call turns, ``reply_accuracy``, ``reply_ci95``, ``n_replies``
    for the reply turns."""
    (ca, ra), (cb, rb) = _split(a), _split(b)
    calls = paired_ci(ca, cb, seed=seed, reps=reps, label=label) or dict(_NO_PAIRS)
    replies = paired_ci(ra, rb, seed=seed, reps=reps, label=f"{label}:replies") or dict(_NO_PAIRS)
    return {**calls, "reply_accuracy": replies["call_accuracy"], "reply_ci95": replies["ci95"],
            "n_replies": replies["n"]}


def round_floats(value: Any) -> Any:
    """``value`` with every float rounded to 6 digits (a report's numbers, stable across platforms)."""
    if isinstance(value, float):
        return round(value, 6) + 0.0
    if isinstance(value, dict):
        return {k: round_floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [round_floats(v) for v in value]
    return value


def summarize(results: Sequence[dict], *, held_out: Sequence[str] = (), seed: int = 0, reps: int = 1000
              ) -> dict:
    """The grouped part of the report: canonical, variants, seen, held_out, gap, by_family, by_transform."""
    with paused_gc():
        return _summarize(results, held_out=held_out, seed=seed, reps=reps)


def _summarize(results, *, held_out, seed: int, reps: int) -> dict:
    held = set(held_out)
    canonical = [r for r in results if r["variant"] == 0]
    variants = [r for r in results if r["variant"] != 0]
    out: dict[str, Any] = {
        "all": group(results, seed=seed, reps=reps, label="all"),
        "canonical": group(canonical, seed=seed, reps=reps, label="canonical"),
        "variants": group(variants, seed=seed, reps=reps, label="variants"),
        "seen": group([r for r in variants if not held & set(r["families"])], seed=seed, reps=reps, label="seen"),
    }
    if held:
        out["held_out"] = group([r for r in variants if held & set(r["families"])], seed=seed, reps=reps,
                                label="held_out")
    out["gap"] = paired_groups(canonical, variants, seed=seed, reps=reps, label="gap")
    if held:
        out["held_out_gap"] = paired_groups(canonical, [r for r in variants if held & set(r["families"])],
                                            seed=seed, reps=reps, label="held_out_gap")
    families = sorted({f for r in variants for f in r["families"]})
    out["by_family"] = {f: {**group([r for r in variants if f in r["families"]], seed=seed, reps=reps,
                                    label=f"family:{f}"), "held_out": f in held} for f in families}
    out["by_family_alone"] = {f: group([r for r in variants if r["families"] == [f]], seed=seed, reps=reps,
                                       label=f"alone:{f}") for f in families}
    slots = sorted({r["slot"] for r in variants if r.get("slot") is not None}, key=lambda k: (str(type(k)), k))
    if slots:
        out["by_slot"] = {str(k): group([r for r in variants if r.get("slot") == k], seed=seed, reps=reps,
                                        label=f"slot:{k}") for k in slots}
    names = sorted({t for r in variants for t in r["transforms"]})
    out["by_transform"] = {t: group([r for r in variants if t in r["transforms"]], seed=seed, reps=reps,
                                    label=f"transform:{t}") for t in names}
    return out


def compare(results: Sequence[dict], other: dict, *, seed: int = 0, reps: int = 1000, name: str = "") -> dict:
    """This run minus ``other`` (a report with ``results``) on the prompts both scored, paired by source."""
    theirs = {r["id"]: r for r in other.get("results") or ()}
    if not theirs:
        raise EvalInputError(f"--compare {name}: that report has no per-prompt 'results' (write it with this hsa)")
    mine = [r for r in results if r["id"] in theirs]
    paired = paired_groups(mine, [theirs[r["id"]] for r in mine], seed=seed, reps=reps, label="compare")
    calls, replies = _split(mine)
    return {"other": name, **paired, "n": len(calls), "n_replies": len(replies),
            "only_here": len(results) - len(mine), "only_there": len(theirs) - len(mine)}


# --------------------------------------------------------------------------- the whole report


def score(data: str | Path | Iterable[dict] | Sequence[Item], predictions: str | Path | Iterable[dict] | Mapping,
          *, turns: str = "all", max_prompts: int | None = None, fmt: str = "auto", string_match: str = "exact",
          held_out: Sequence[str] = (), train_manifest: str | Path | None = None, seed: int = 0,
          bootstrap: int = 1000, compare_to: str | Path | dict | None = None,
          prompts: str | Path | Sequence[str] | None = None) -> dict:
    """The evaluation report of ``predictions`` on the prompts of ``data`` (docs/evaluation.md lists its
    fields). ``predictions``: a JSONL path, prediction dicts, or ``{id: completion text or message}``.
    ``prompts``: a prompts file (``hsa eval prompts --out``) or prompt ids: exactly those prompts are scored,
    whatever ``turns`` and ``max_prompts`` say (a note says so when those would select others).

    Raises :class:`EvalInputError` when most prediction ids are no prompt of ``data``."""
    with paused_gc():
        return _score(data, predictions, turns=turns, max_prompts=max_prompts, fmt=fmt, string_match=string_match,
                      held_out=held_out, train_manifest=train_manifest, seed=seed, bootstrap=bootstrap,
                      compare_to=compare_to, prompts=prompts)


def _chosen_prompts(data, prompts, turns: str, max_prompts: int | None) -> tuple[list[Item], Any, str]:
    """The items of exactly the prompts of ``prompts`` (a file or ids), what reading found, and a note when
    ``turns`` / ``max_prompts`` would have chosen other prompts (empty when they agree)."""
    from hsa.evaluation.prompts import read_prompt_ids, sample_items, select_turns

    named = isinstance(prompts, (str, Path))
    ids = read_prompt_ids(prompts) if named else [str(i) for i in prompts]
    flag = f"--prompts {prompts}" if named else "the prompt ids given"
    every, source = collect(data, turns="all", messages=False)
    by_id = {it.prompt["id"]: it for it in every}
    unknown = [i for i in ids if i not in by_id]
    if unknown:
        example = f"; {data}'s prompts look like {every[0].prompt['id']!r}" if every else ""
        raise EvalInputError(f"{flag}: {len(unknown)} of its {len(ids)} prompt ids are no prompt of {data} (e.g. "
                             f"{unknown[0]!r}{example}); give the data the prompts were written from")
    wanted = set(ids)
    items = [it for it in every if it.prompt["id"] in wanted]
    own = select_turns(every, turns)
    if max_prompts is not None:
        own = sample_items(own, max_prompts)
    own_ids = {it.prompt["id"] for it in own}
    note = ""
    if own_ids != wanted:
        options = f"--turns {turns}" + (f" --max-prompts {max_prompts}" if max_prompts is not None else "")
        note = (f"scored exactly the {len(items)} prompts of {flag}; {options} would have chosen "
                f"{len(own_ids)} prompts of the data ({len(own_ids - wanted)} of them not in the file, "
                f"{len(wanted - own_ids)} of the file's not among them)")
    return items, source, note


def _foreign_predictions(preds: Mapping[str, Any], items: Sequence[Item], row_ids: set[str] | None,
                         data: Any) -> str | None:
    """Why the predictions cannot be for these prompts (most of their ids are no prompt here), or None."""
    known = {it.prompt["id"] for it in items}
    unknown = [pid for pid in preds if pid not in known]
    if not preds or 2 * len(unknown) <= len(preds):
        return None
    where = f"of {data}" if isinstance(data, (str, Path)) else "here"
    example = f"a prediction's id: {unknown[0]!r}; a prompt's id {where}: {items[0].prompt['id']!r}"
    other_rows = [pid for pid in unknown if row_ids is None or pid.rpartition("#")[0] not in row_ids]
    if 2 * len(other_rows) > len(preds):
        return (f"{len(unknown)} of the {len(preds)} prediction ids are no prompt {where}, and {len(other_rows)} "
                f"name no row of it ({example}): the predictions were made for other data. Score them against the "
                "data their prompts were written from.")
    return (f"{len(unknown)} of the {len(preds)} prediction ids are turns of these rows that the options do not "
            f"select ({example}): the prompts were written with other --turns / --max-prompts. Pass their file "
            "with --prompts FILE (or the same --turns and --max-prompts).")


def _score(data, predictions, *, turns, max_prompts, fmt, string_match, held_out, train_manifest, seed, bootstrap,
           compare_to, prompts=None) -> dict:
    notes: list[str] = []
    rejected: list[dict] = []
    row_ids = None
    if isinstance(data, Sequence) and data and isinstance(data[0], Item):
        items = list(data)
    else:
        if prompts is not None:
            items, source, note = _chosen_prompts(data, prompts, turns, max_prompts)
            notes += [note] if note else []
        else:
            items, source = collect(data, turns=turns, max_prompts=max_prompts, messages=False)
        notes.extend(source.notes)
        rejected = source.rejected
        row_ids = source.row_ids
        if not isinstance(data, (str, Path)):
            data = None
    if not items:
        raise EvalInputError("no prompts to score: no row has an assistant turn after a user message"
                             + (f" of the kind --turns {turns}" if turns != "all" else ""))
    if isinstance(predictions, Mapping):
        preds, bad, dupes = dict(predictions), [], []
    else:
        preds, bad, dupes = read_predictions(predictions)
    if problem := _foreign_predictions(preds, items, row_ids, data):
        raise EvalInputError(problem)
    held = sorted(set(held_out) | set(_held_out_of(train_manifest)))
    results, problems = score_items(items, preds, fmt=fmt, string_match=string_match)
    problems["bad_lines"] = {"n": len(bad), "examples": bad[:_EXAMPLES]}
    problems["duplicate_ids"] = _named(dupes)
    problems["rejected_rows"] = {"n": len(rejected), "examples": rejected[:_EXAMPLES]}
    options = {"turns": turns, "max_prompts": max_prompts, "format": fmt, "string_match": string_match,
               "held_out": held, "seed": seed, "bootstrap": bootstrap}
    if prompts is not None:
        options["prompts"] = str(prompts) if isinstance(prompts, (str, Path)) else "ids"
    report: dict[str, Any] = {
        "hsa_version": _version(),
        "data": str(data) if isinstance(data, (str, Path)) else None,
        "predictions": str(predictions) if isinstance(predictions, (str, Path)) else None,
        "options": options,
        "n_prompts": len(items),
        "n_predictions": len(preds),
        **summarize(results, held_out=held, seed=seed, reps=bootstrap),
        "problems": problems,
        "notes": notes,
    }
    if compare_to is not None:
        other = compare_to if isinstance(compare_to, dict) else _load_json(compare_to, "--compare")
        report["paired"] = compare(results, other, seed=seed, reps=bootstrap, name=str(compare_to)
                                   if not isinstance(compare_to, dict) else "")
    report["results"] = results
    return round_floats(report)


def _pct_of(g: dict | None, key: str) -> str:
    v = (g or {}).get(key)
    return "–" if v is None else f"{100 * v:.1f}%"


def summary_text(report: dict) -> str:
    """A report in a few lines for the terminal: the tool-call turns (the headline) and the reply turns per
    harness, the gap, the problems found, the notes."""
    groups = [("canonical", "canonical"), ("variants", "variants"), ("held_out", "held-out")]
    groups = [(k, name) for k, name in groups if k in report]
    lines = []
    if report["all"]["n"]:
        parts = [f"{name} {_pct_of(report[k], 'call_accuracy')} (n={report[k]['n']})" for k, name in groups]
        gap = report.get("gap") or {}
        if gap.get("call_accuracy") is not None:
            parts.append(f"gap {100 * gap['call_accuracy']:+.1f} points, 95% CI "
                         f"[{100 * gap['ci95'][0]:+.1f}, {100 * gap['ci95'][1]:+.1f}]")
        lines.append("call accuracy (tool-call turns): " + ", ".join(parts))
    else:
        lines.append(f"call accuracy (tool-call turns): none among the {report['n_prompts']} prompts "
                     f"(--turns {report['options']['turns']})")
    if report["all"]["n_replies"]:
        parts = [f"{name} {_pct_of(report[k], 'reply_accuracy')} (n={report[k]['n_replies']})" for k, name in groups]
        lines.append("reply accuracy (reply turns, no call expected): " + ", ".join(parts))
    pr = report["problems"]
    bad = {k: v["n"] for k, v in pr.items() if isinstance(v, dict) and v.get("n") and k != "formats"}
    if bad:
        lines.append("problems: " + ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in bad.items()) +
                     " (named in the report's 'problems')")
    missing = {r["id"] for r in report.get("results") or () if r.get("status") == "missing"}
    if pr["unknown_ids"]["n"] and pr["missing"]["n"]:
        lines.append("hint: predictions with ids that are not prompts, and prompts without predictions: were the "
                     "prompts written with other --turns / --max-prompts? Pass their file with --prompts FILE.")
    elif missing and len(missing) < report["n_prompts"]:
        kinds = {expects(r) for r in report["results"] if r["id"] in missing}
        if len(kinds) == 1:
            kind = "reply" if kinds == {"reply"} else "tool-call"
            other = "calls" if kinds == {"reply"} else "replies"
            lines.append(f"hint: the {len(missing)} prompts without a prediction are all {kind} turns: were the "
                         f"prompts written with --turns {other}? Pass their file with --prompts FILE.")
        else:
            given = report["n_prompts"] - len(missing)
            lines.append(f"hint: predictions for {given} of the {report['n_prompts']} prompts; the missing ones "
                         f"count as wrong. Were they made with --max-prompts {given}? Pass the same --max-prompts, "
                         "or the prompts file with --prompts FILE.")
    lines += [f"note: {n}" for n in report.get("notes") or ()]
    return "\n".join(lines)


def _version() -> str:
    from hsa._version import __version__

    return __version__


def _load_json(path: str | Path, flag: str) -> dict:
    try:
        value = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise EvalInputError(f"{flag} {path}: cannot read it ({exc.strerror})") from None
    except ValueError as exc:
        raise EvalInputError(f"{flag} {path}: not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise EvalInputError(f"{flag} {path}: expected a JSON object")
    return value


def _held_out_of(manifest: str | Path | None) -> list[str]:
    """The families a training run held out: ``hold_out`` of its manifest (a file, or a folder holding
    manifest.json)."""
    if manifest is None:
        return []
    p = Path(manifest)
    if p.is_dir():
        p = p / "manifest.json"
    value = _load_json(p, "--train-manifest").get("hold_out")
    if value is None:
        raise EvalInputError(f"--train-manifest {manifest}: no 'hold_out' key; give the manifest.json of the "
                             "`hsa augment` run that made the training data")
    return [str(f) for f in value]


# --------------------------------------------------------------------------- output


def dumps(report: dict) -> str:
    """The report as JSON text (the same report, the same bytes)."""
    return json.dumps(report, indent=2, ensure_ascii=False) + "\n"


def _pct(v: Any) -> str:
    return "–" if v is None else f"{100 * v:.1f}"


def _ci(ci: Any) -> str:
    return "–" if not ci else f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def _turns_text(g: dict, acc: str, ci: str, n: str) -> list[str]:
    return [_pct(g.get(acc)), _ci(g.get(ci)), str(g.get(n, 0))]


def to_markdown(report: dict, report_path: str | Path | None = None) -> str:
    """The report as Markdown tables: per group, tool-call turns (the headline) and reply turns apart, ending with
    the ``hsa report`` command that shows it prompt by prompt (``report_path``: where the JSON report is)."""
    head = ("| group | tool-call turns | 95% CI | n | reply turns | 95% CI | n | name | arguments | skill | format "
            "| schema |")
    rule = "|" + "---|" * 12

    def row(name: str, g: dict) -> str:
        cells = (_turns_text(g, "call_accuracy", "ci95", "n") + _turns_text(g, "reply_accuracy", "reply_ci95",
                                                                             "n_replies")
                 + [_pct(g.get(c)) for c in ("name_accuracy", "argument_accuracy", "skill_accuracy",
                                             "format_validity", "schema_validity")])
        return f"| {name} | " + " | ".join(cells) + " |"

    def difference(g: dict) -> str:
        text = f"tool-call turns {_pct(g.get('call_accuracy'))} points, 95% CI {_ci(g.get('ci95'))}"
        if g.get("n_replies"):
            text += f"; reply turns {_pct(g.get('reply_accuracy'))} points, 95% CI {_ci(g.get('reply_ci95'))}"
        return text

    lines = ["# Evaluation report", ""]
    if report.get("data"):
        lines.append(f"Data `{report['data']}`" + (f", predictions `{report['predictions']}`"
                                                   if report.get("predictions") else "") + ".")
    o = report["options"]
    chosen = f"the prompts of `{o['prompts']}`" if o.get("prompts") else f"--turns {o['turns']}"
    lines += [f"{report['n_prompts']} prompts ({chosen}), string match {o['string_match']}, "
              f"bootstrap {o['bootstrap']} resamples of source records, seed {o['seed']}. Values in %. "
              "Tool-call turns (the gold turn calls tools) and reply turns (no call expected) are scored apart; "
              "name, arguments and skill are over tool-call turns.", "",
              "## Harnesses", "", head, rule]
    for key in ("canonical", "variants", "seen", "held_out", "all"):
        if key in report:
            lines.append(row(key.replace("_", "-"), report[key]))
    for key in ("gap", "held_out_gap"):
        if key in report:
            g = report[key]
            lines.append(f"\n**{key.replace('_', ' ')}** (canonical minus {'held-out ' if 'held' in key else ''}"
                         f"variants, paired over {g.get('n_sources', 0)} source records): {difference(g)}")
    if report.get("paired"):
        p = report["paired"]
        lines.append(f"\n**compared with** `{p['other']}` on {p['n']} shared tool-call turns and "
                     f"{p.get('n_replies', 0)} reply turns: {difference(p)}")
    for title, key in (("By family", "by_family"), ("By transform", "by_transform")):
        if report.get(key):
            lines += ["", f"## {title}", "", head.replace("group", key.split("_")[1]), rule]
            lines += [row(name + (" (held out)" if g.get("held_out") else ""), g) for name, g in report[key].items()]
    if report.get("instructions"):
        i = report["instructions"]
        lines += ["", "## Instruction following", "", "| prompt strict | prompt loose | instruction strict | "
                  "instruction loose | n |", "|---|---|---|---|---|",
                  f"| {_pct(i.get('prompt_strict'))} | {_pct(i.get('prompt_loose'))} | "
                  f"{_pct(i.get('instruction_strict'))} | {_pct(i.get('instruction_loose'))} | {i.get('n')} |"]
    pr = report.get("problems") or {}
    issues = [(k, v) for k, v in pr.items() if isinstance(v, dict) and v.get("n") and k != "formats"]
    lines += ["", "## Input problems", ""]
    if not issues:
        lines.append("None: every prompt had one prediction that parsed, and every prediction matched a prompt.")
    for k, v in issues:
        named = v.get("ids") or [e.get("id", e.get("line", e.get("where"))) for e in v.get("examples", [])]
        lines.append(f"- {k.replace('_', ' ')}: {v['n']} (e.g. {', '.join(map(str, named[:5]))})")
    if pr.get("formats"):
        lines.append("- call formats read: " + ", ".join(f"{k} x{n}" for k, n in pr["formats"].items()))
    for note in report.get("notes") or ():
        lines.append(f"- note: {note}")
    lines += ["", "## Prompt by prompt", "", "The page of `hsa report` shows the prompts of a sample of source records, "
              "each with its gold turn, the model's raw completion, the parsed calls, the calls mapped back and why "
              "it was scored wrong, beside the variants themselves (docs/report.md):", "", "```",
              f"hsa report {report.get('data') or 'DATA'} --eval {report_path or 'REPORT.json'}"
              + (f" --predictions {report['predictions']}" if report.get("predictions") else "")
              + " --out report.html", "```"]
    return "\n".join(lines) + "\n"


def plot(report: dict, path: str | Path) -> None:
    """A bar chart with 95% intervals: per harness, then per family, the tool-call turns (dark) and, when there
    are any, the reply turns (light) beside them (matplotlib, no display)."""
    try:
        import matplotlib
    except ImportError:
        raise EvalInputError("--plot needs matplotlib: pip install 'hsa[eval]' (or pip install matplotlib)") \
            from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    harnesses = [(k.replace("_", "-"), report[k]) for k in ("canonical", "variants", "seen", "held_out")
                 if k in report]
    bars = harnesses + [(f"{f}{' (held out)' if g.get('held_out') else ''}", g)
                        for f, g in report.get("by_family", {}).items()]
    bars = [(n, g) for n, g in bars if g.get("call_accuracy") is not None or g.get("reply_accuracy") is not None]
    series = [("tool-call turns", "call_accuracy", "ci95", "n", ("#4C72B0", "#DD8452"))]
    if any(g.get("reply_accuracy") is not None for _, g in bars):
        series.append(("reply turns", "reply_accuracy", "reply_ci95", "n_replies", ("#A6BDDB", "#F5C6A5")))
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(bars) * len(series) + 1.5), 3.6), dpi=100)
    n_harness = sum(1 for name, _ in bars if name in {h for h, _ in harnesses})
    for s, (label, acc, ci, n, (dark, light)) in enumerate(series):
        xs = [i + (s - (len(series) - 1) / 2) * width for i in range(len(bars))]
        vals = [100 * (g.get(acc) or 0.0) for _, g in bars]
        errs = [[100 * (g[acc] - g[ci][0]) if g.get(acc) is not None else 0 for _, g in bars],
                [100 * (g[ci][1] - g[acc]) if g.get(acc) is not None else 0 for _, g in bars]]
        colors = [dark if i < n_harness else light for i in range(len(bars))]
        ax.bar(xs, vals, width=width, yerr=errs, capsize=3, color=colors, label=label,
               hatch=None if s == 0 else "//", edgecolor="white")
        for x, v, (_, g) in zip(xs, vals, bars):
            text = "–" if g.get(acc) is None else f"{v:.1f}"
            ax.text(x, 1, f"{text}\nn={g.get(n, 0)}", ha="center", va="bottom", fontsize=6, color="black")
    ax.set_xticks(list(range(len(bars))), [n for n, _ in bars], rotation=30, ha="right", fontsize=8)
    ax.set_ylim(0, 100)
    ax.set_ylabel("accuracy (%)")
    ax.set_title("tool-call turns" + (" and reply turns" if len(series) > 1 else "") +
                 " by harness, 95% bootstrap intervals", fontsize=9)
    if len(series) > 1:
        ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(str(path), metadata={"Software": None})
    plt.close(fig)


def write_report(report: dict, out: str | Path | None = None, *, md: str | Path | None = None,
                 png: str | Path | None = None) -> None:
    """Write the report as JSON (``out``), Markdown (``md``) and a PNG chart (``png``); folders are made."""
    for path, write in ((out, lambda p: Path(p).write_text(dumps(report), encoding="utf-8")),
                        (md, lambda p: Path(p).write_text(to_markdown(report, out), encoding="utf-8")),
                        (png, lambda p: plot(report, p))):
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            write(path)
