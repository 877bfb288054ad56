"""What ``hsa report`` puts on its page, read from an ``hsa augment`` output folder and evaluation reports.

Aggregates (counts, transforms, rejects, plots, evaluation groups) cover every row; the rows
shown one by one (the variant browser, the per-prompt table) are those of a *sample* of source
records, all their variants and all their prompts, so that the page stays a few MB whatever the
size of the dataset. The sample is the ``sample`` source records with the smallest
``blake2b(seed, source id)``: fixed by the seed, independent of the order of the shards, and
drawn from the sources an evaluation scored when one is given (so that its prompts are on the page).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hsa.report.diff import mapping_rows, section_diffs
from hsa.report.evalview import EvalRun, ReportInputError, explain, groups_of, load_eval

__all__ = ["DEFAULT_SAMPLE", "MAX_REJECTS", "check_dataset", "collect_page", "sample_sources"]

#: Source records shown one by one by default (each with all its variants).
DEFAULT_SAMPLE = 40
#: Lines of rejects.jsonl listed on the page (all are counted).
MAX_REJECTS = 200
_PARAMS_CHARS = 400


def check_dataset(path: str | Path) -> tuple[Path, dict]:
    """``(folder, manifest)`` of an ``hsa augment`` output, or a :class:`ReportInputError` saying what it is instead."""
    p = Path(path)
    if not p.exists():
        raise ReportInputError(f"{p} does not exist; give the --out folder of an `hsa augment` run")
    if not p.is_dir():
        raise ReportInputError(f"{p} is a file, not an `hsa augment` output folder; `hsa augment {p} --out DIR` makes "
                               "one, then `hsa report DIR --out report.html`")
    missing = [f for f in ("state.json", "manifest.json") if not (p / f).is_file()]
    if missing:
        why = ("an unfinished run (state.json but no manifest.json): finish it with `hsa augment ... --resume`"
               if missing == ["manifest.json"] else "not an `hsa augment` output folder")
        raise ReportInputError(f"{p}: no {' and no '.join(missing)}: {why}")
    try:
        manifest = json.loads((p / "manifest.json").read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ReportInputError(f"{p / 'manifest.json'}: not JSON ({exc})") from None
    if not isinstance(manifest, dict) or "counts" not in manifest:
        raise ReportInputError(f"{p / 'manifest.json'} is not the manifest of an `hsa augment` run (no 'counts')")
    return p, manifest


def _batches(dataset: Path, columns: Sequence[str]):
    """``(batch, {column: list})`` over the shards, the listed columns as Python values."""
    import pyarrow as pa

    state = json.loads((dataset / "state.json").read_text(encoding="utf-8"))
    for f in state["_data_files"]:
        with pa.memory_map(str(dataset / f["filename"])) as src:
            for batch in pa.ipc.open_stream(src):
                names = batch.schema.names
                yield batch, {c: batch.column(names.index(c)).to_pylist() for c in columns if c in names}


def _source_ids(dataset: Path) -> dict[str, int]:
    """Rows per source id, in the order the dataset first holds them (one column read, no JSON parsed)."""
    out: dict[str, int] = {}
    for _, cols in _batches(dataset, ("source_id",)):
        for sid in cols.get("source_id", ()):
            out[sid] = out.get(sid, 0) + 1
    return out


def sample_sources(ids: Sequence[str], n: int, seed: int = 0) -> list[str]:
    """The ``n`` ids with the smallest ``blake2b(seed, id)``, in the order of ``ids``."""
    def key(sid: str) -> bytes:
        return hashlib.blake2b(f"{seed}\x00{sid}".encode(), digest_size=8).digest()

    chosen = set(sorted(ids, key=key)[:n]) if n < len(ids) else set(ids)
    return [s for s in ids if s in chosen]


def _rows_of(dataset: Path, wanted: set[str]) -> list[dict]:
    """The rows (records, JSON decoded) whose source id is in ``wanted``, in dataset order."""
    import pyarrow as pa

    from hsa import _json
    from hsa.io import JSON_COLUMNS, row_to_record

    out = []
    for batch, cols in _batches(dataset, ("source_id",)):
        idx = [i for i, s in enumerate(cols.get("source_id", ())) if s in wanted]
        if not idx:
            continue
        sub = batch.take(pa.array(idx))
        columns = {name: sub.column(i).to_pylist() for i, name in enumerate(sub.schema.names)}
        for k in range(sub.num_rows):
            row = {name: (_json.loads(v[k]) if name in JSON_COLUMNS and isinstance(v[k], str) else v[k])
                   for name, v in columns.items()}
            out.append(row_to_record(row))
    return out


def _rejects(dataset: Path) -> dict:
    path = dataset / "rejects.jsonl"
    listed, total = [], 0
    if path.is_file():
        with path.open("rb") as f:
            for line in f:
                if not line.strip():
                    continue
                total += 1
                if len(listed) < MAX_REJECTS:
                    try:
                        listed.append(json.loads(line))
                    except ValueError:
                        listed.append({"reason": "unreadable line of rejects.jsonl", "detail": line[:200].decode(
                            "utf-8", "replace")})
    return {"n": total, "listed": listed}


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= _PARAMS_CHARS else text[:_PARAMS_CHARS - 1] + "…"


def _variant_entry(row: dict, source: dict | None) -> dict:
    from hsa.evaluation.prompts import row_families
    from hsa.records import RecordError

    families, _ = row_families(row.get("transforms"))
    entry: dict[str, Any] = {
        "id": str(row.get("id")), "variant": int(row.get("variant") or 0), "families": families,
        "transforms": [[t.get("name"), _short(t.get("params"))] for t in row.get("transforms") or ()
                       if isinstance(t, dict)],
        "notes": [str(n) for n in row.get("notes") or ()],
    }
    if row.get("slot") is not None:
        entry["slot"] = row["slot"]
    try:
        entry["mapping"] = mapping_rows(row.get("mapping"))
        fields, items = section_diffs(source if source is not None else row, row)
    except (RecordError, ValueError, KeyError, TypeError) as exc:
        entry["error"] = f"cannot compare with the source: {exc}"
        return entry
    entry["fields"], entry["items"] = fields, items
    return entry


def _sources_entries(dataset: Path, rows: list[dict], order: list[str]) -> tuple[list[dict], list[dict], list[str]]:
    """Page entries per sampled source, the canonical rows found in the manifest's inputs (for evaluation), notes."""
    from hsa.evaluation.prompts import sources_from_manifest
    from hsa.records import RecordError

    by_source: dict[str, list[dict]] = {}
    for r in rows:
        by_source.setdefault(str(r.get("source_id")), []).append(r)
    originals = {sid: next((r for r in rs if int(r.get("variant") or 0) == 0), None) for sid, rs in by_source.items()}
    originals_in_rows = {sid: r is not None for sid, r in originals.items()}
    missing = {sid for sid, r in originals.items() if r is None}
    found_rows: list[dict] = []
    notes: list[str] = []
    if missing:
        found, tried = sources_from_manifest(dataset, set(missing))
        for _, raw in found:
            originals[str(raw["source_id"])] = raw
            found_rows.append(raw)
        notes.append(f"{len(found)} of the {len(missing)} sampled sources without a variant 0 row (augmented without "
                     f"--keep-original) were read from the inputs the manifest names ({tried})")
        if len(found) < len(missing):
            notes.append(f"{len(missing) - len(found)} sampled sources were not found there: their variants are "
                         "shown alone")
    entries = []
    for sid in order:
        source = originals.get(sid)
        fields: dict[str, str] = {}
        variants = []
        if source is not None:
            try:
                fields.update(section_diffs(source, source)[0])
            except (RecordError, ValueError, KeyError, TypeError) as exc:
                notes.append(f"source {sid} cannot be read ({exc}); its variants are shown alone")
                source = None
        for r in by_source.get(sid, ()):
            if r is source:
                variants.append({"id": str(r.get("id")), "variant": 0, "source": True, "families": [],
                                 "transforms": [], "notes": [str(n) for n in r.get("notes") or ()]})
                continue
            v = _variant_entry(r, source)
            if source is not None:  # a variant's items refer to its source's texts; alone, it keeps its own
                fields.update(v.pop("fields", {}))
            variants.append(v)
        entries.append({"id": sid, "found": source is not None, "fields": fields, "variants": variants,
                        "where": None if source is None else "variant 0 row" if originals_in_rows.get(sid)
                        else "the input file the manifest names"})
    return entries, found_rows, notes


# --------------------------------------------------------------------------- evaluation


def _check_sources(run: EvalRun, data_sources: dict[str, int], dataset: Path) -> None:
    """An error when no source record of ``run`` is in the dataset; a note when some are not."""
    scored: dict[str, None] = {}
    for r in run.results.values():
        scored.setdefault(str(r["source_id"]), None)
    inside = [s for s in scored if s in data_sources]
    if not inside:
        example_data = next(iter(data_sources), "(none)")
        raise ReportInputError(
            f"--eval {run.path} scores another dataset: none of its {len(scored)} source records (e.g. "
            f"{next(iter(scored), '(none)')!r}) is in {dataset} (whose sources look like {example_data!r}); give the "
            "report of an evaluation on this folder")
    if len(inside) < len(scored):
        run.notes.append(f"{len(scored) - len(inside)} of the {len(scored)} source records the report scored are not "
                         f"in {dataset}; their prompts are left out of the table")


def _eval_section(runs: list[EvalRun], rows: list[dict], extra_rows: list[dict], order: list[str]) -> dict:
    """The prompts of the sampled sources with each model's outcome, and each model's groups."""
    from hsa.evaluation.prompts import EvalInputError, collect

    by_turns: dict[str, list] = {}
    items: dict[str, Any] = {}
    for run in runs:
        turns = str(run.options.get("turns") or "all")
        if turns in by_turns:
            continue
        try:
            found, _ = collect([*rows, *extra_rows], turns=turns, messages=False)
        except EvalInputError as exc:
            raise ReportInputError(f"the sampled rows cannot be read as evaluation prompts: {exc}") from None
        by_turns[turns] = found
        for it in found:
            items.setdefault(it.prompt["id"], it)
    canonical = {it.prompt["source_id"]: it.schemas for it in items.values() if it.prompt["variant"] == 0}
    sampled = set(order)
    rank = {sid: k for k, sid in enumerate(order)}
    wanted: dict[str, None] = {}
    for run in runs:
        for pid, r in run.results.items():
            if str(r["source_id"]) in sampled:
                wanted.setdefault(pid, None)
    unmatched = [pid for pid in wanted if pid not in items]
    prompts = []
    for pid in sorted((p for p in wanted if p in items),
                      key=lambda p: (rank[items[p].prompt["source_id"]], items[p].prompt["variant"],
                                     items[p].prompt["turn"])):
        it = items[pid]
        p = it.prompt
        gold = it.gold["calls"]
        entry: dict[str, Any] = {
            "id": pid, "row": p["row_id"], "turn": p["turn"], "source": p["source_id"], "variant": p["variant"],
            "families": p["families"], "transforms": p["transforms"], "kind": "call" if gold else "reply",
            "gold": [it.mapping.to_variant(g) for g in gold], "gold_canonical": gold,
            "gold_reply": (it.gold.get("content") or "")[:2000], "outcomes": []}
        if p.get("slot") is not None:
            entry["slot"] = p["slot"]
        for run in runs:
            result = run.results.get(pid)
            if result is None:
                entry["outcomes"].append(None)
                continue
            have = run.predictions is not None
            value = run.predictions.get(pid) if have else None
            entry["outcomes"].append(explain(it, value, result, fmt=str(run.options.get("format") or "auto"),
                                             string_match=str(run.options.get("string_match") or "exact"),
                                             canonical_schemas=canonical.get(p["source_id"]), has_prediction=have))
        prompts.append(entry)
    if wanted and not prompts:
        raise ReportInputError(
            f"the evaluation reports' prompts do not match the rows of the data: none of the {len(wanted)} prompt ids "
            f"of the sampled sources (e.g. {next(iter(wanted))!r}) is a turn of its rows (with --turns "
            f"{', '.join(by_turns)}); give the data the evaluation ran on")
    notes = []
    if unmatched:
        notes.append(f"{len(unmatched)} prompts of the sampled sources are no turn of the data's rows (ids that do "
                     f"not match, e.g. {', '.join(unmatched[:3])}); they are left out")
    return {"prompts": prompts, "notes": notes}


def _call_reply_split(run: EvalRun, seed: int) -> dict[str, dict]:
    """Call turns and reply turns as two groups, from the per-prompt results, unless the report has them already."""
    from hsa.evaluation.report import group

    have = groups_of(run.report)["harness"]
    if any("repl" in k for k in have):
        return {}
    results = list(run.results.values())
    reps = int(run.options.get("bootstrap") or 1000)
    calls = [r for r in results if r.get("name") is not None]
    replies = [r for r in results if r.get("no_call") is not None]
    out = {}
    if calls:
        out["call turns"] = group(calls, seed=seed, reps=reps, label="call turns")
    if replies:
        out["reply turns"] = group(replies, seed=seed, reps=reps, label="reply turns")
    return out


def _model_entry(run: EvalRun, first: EvalRun | None) -> dict:
    from hsa.evaluation.report import compare

    seed = int(run.options.get("seed") or 0)
    entry = {"name": run.name, "file": run.path, "predictions": run.predictions_path, "model": run.report.get("model"),
             "data": run.report.get("data"), "n_prompts": run.report.get("n_prompts", len(run.results)),
             "options": run.options, "groups": groups_of(run.report), "turn_kinds": _call_reply_split(run, seed),
             "problems": {k: v.get("n") for k, v in (run.report.get("problems") or {}).items()
                          if isinstance(v, dict) and v.get("n")},
             "instructions": run.report.get("instructions"), "notes": run.notes}
    if first is not None:
        entry["versus"] = {"other": first.name, **compare(list(run.results.values()), {"results": list(
            first.results.values())}, seed=seed, reps=int(run.options.get("bootstrap") or 1000), name=first.name)}
    return entry


# --------------------------------------------------------------------------- the whole page


def collect_page(data: str | Path, *, evals: Sequence[str | Path] = (), predictions: Sequence[str | Path] = (),
                 sample: int = DEFAULT_SAMPLE, seed: int = 0, tokenizer: str | None = None) -> dict:
    """Everything the page shows, as JSON-ready values (see :func:`hsa.report.write_report`)."""
    from hsa.stats import compute_stats

    if sample < 0:
        raise ReportInputError(f"--sample must be 0 or more (got {sample})")
    if len(predictions) > len(evals):
        raise ReportInputError(f"{len(predictions)} --predictions files for {len(evals)} --eval reports; give one "
                               "predictions file per report, in the same order")
    dataset, manifest = check_dataset(data)
    runs: list[EvalRun] = []
    for path in evals:
        runs.append(load_eval(path, [r.name for r in runs]))
    data_sources = _source_ids(dataset)
    for k, run in enumerate(runs):
        _check_sources(run, data_sources, dataset)
        run.read_predictions(predictions[k] if k < len(predictions) else None)
    if runs:
        scored = {str(r["source_id"]) for run in runs for r in run.results.values()}
        candidates = [s for s in data_sources if s in scored]
    else:
        candidates = list(data_sources)
    order = sample_sources(candidates, sample, seed)
    rows = _rows_of(dataset, set(order))
    sources, found_rows, sample_notes = _sources_entries(dataset, rows, order)
    stats = compute_stats(dataset, tokenizer=tokenizer)
    hist = stats.pop("_hist", {})
    page: dict[str, Any] = {
        "dataset": str(dataset), "manifest": manifest, "stats": stats, "rejects": _rejects(dataset),
        "lengths": {k: list(v) for k, v in hist.items()}, "tokenizer": tokenizer,
        "sample": {"sources": len(order), "of_sources": len(data_sources), "rows": len(rows),
                   "of_rows": sum(data_sources.values()), "seed": seed, "requested": sample,
                   "from": "the sources the evaluation scored" if runs else "all sources", "notes": sample_notes},
        "sources": sources,
    }
    if runs:
        section = _eval_section(runs, rows, found_rows, order)
        page["eval"] = {"models": [_model_entry(run, runs[0] if k else None) for k, run in enumerate(runs)],
                        **section}
    return page
