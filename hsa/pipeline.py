"""The augmentation pipeline: read -> validate -> sample -> apply -> verify -> write.

The rng of a variant derives from (seed, record id, variant index) alone, and rows
are written in input order, so the output is byte-identical whatever the worker
count or shard size. Every input line either produces rows or is listed in
``rejects.jsonl`` with its line number and reason.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from hsa import _json
from hsa.io import InputLine, ShardWriter, iter_lines, parse_line, sha256_file, write_dataset_metadata
from hsa.mapping import Mapping
from hsa.records import Record, RecordError, denormalize, normalize
from hsa.recipes import recipe_to_dict
from hsa.transform import Transform, run
from hsa.verify import check_record, check_variant

__all__ = ["rng_for", "augment_record", "augment", "Stats", "Result", "AugmentError", "source_row"]


class AugmentError(RuntimeError):
    """A run that cannot start or must stop (missing input, non-empty output, --strict reject)."""


def rng_for(seed: int, record_id: str, variant: int) -> random.Random:
    """The rng of one variant: a function of (seed, record id, variant index) only."""
    digest = hashlib.sha256(f"hsa\x00{seed}\x00{record_id}\x00{variant}".encode()).digest()
    return random.Random(int.from_bytes(digest[:16], "big"))


@dataclasses.dataclass
class Stats:
    """Counters of one run, mergeable with ``+`` (datatrove style)."""

    input_records: int = 0
    sources_written: int = 0
    rejected: int = 0
    rows_written: int = 0
    variants_failed: int = 0
    unchanged_variants: int = 0
    reject_reasons: Counter = dataclasses.field(default_factory=Counter)
    variant_failures: Counter = dataclasses.field(default_factory=Counter)
    applied: Counter = dataclasses.field(default_factory=Counter)
    skipped: Counter = dataclasses.field(default_factory=Counter)  # (transform, reason) -> n

    def __add__(self, other: Stats) -> Stats:
        out = Stats()
        for f in dataclasses.fields(self):
            setattr(out, f.name, getattr(self, f.name) + getattr(other, f.name))
        return out

    def to_dict(self) -> dict:
        per_transform: dict[str, dict] = {}
        for name, n in sorted(self.applied.items()):
            per_transform.setdefault(name, {"applied": 0, "skipped": {}})["applied"] = n
        for (name, reason), n in sorted(self.skipped.items()):
            per_transform.setdefault(name, {"applied": 0, "skipped": {}})["skipped"][reason] = n
        return {
            "counts": {"input_records": self.input_records, "sources_written": self.sources_written,
                       "rejected": self.rejected, "rows_written": self.rows_written,
                       "variants_failed": self.variants_failed, "unchanged_variants": self.unchanged_variants},
            "reject_reasons": dict(sorted(self.reject_reasons.items())),
            "variant_failures": dict(sorted(self.variant_failures.items())),
            "transforms": per_transform,
        }


@dataclasses.dataclass
class Result:
    """What one input line produced: rows in order, rejects, and the line's stats."""

    rows: list[dict]
    rejects: list[dict]
    stats: Stats
    source_id: str | None = None


def source_row(record: Record, variant: int, applied: list[dict]) -> dict:
    """The output row of ``record`` (a source or a variant)."""
    row = denormalize(record)
    source_id = record["_fmt"].get("source_id", record["id"]) if variant == 0 and record["transforms"] else record["id"]
    row["id"] = f"{record['id']}/{variant}"
    row = {"id": row.pop("id"), "source_id": source_id, "variant": variant, **row}
    row["transforms"] = list(record["transforms"]) + applied
    row["mapping"] = Mapping(record["mapping"]).to_dict()
    row["notes"] = list(record["notes"])
    extra = {k: v for k, v in row.items() if k not in _KNOWN}
    for k in extra:
        del row[k]
    row["extra"] = extra or None
    return row


_KNOWN = {"id", "source_id", "variant", "messages", "tools", "skills", "skill_tool", "prompt", "hooks",
          "hook_events", "meta", "transforms", "mapping", "notes"}


def _reject(item: InputLine, reason: str, detail: str, record_id: str | None = None, variant: int | None = None) -> dict:
    out: dict[str, Any] = {"input": item.path, "line": item.line}
    if record_id is not None:
        out["id"] = record_id
    if variant is not None:
        out["variant"] = variant
    out["reason"] = reason
    out["detail"] = detail
    return out


def augment_record(item: InputLine, recipe: Transform, *, seed: int, variants: int,
                   keep_original: bool) -> Result:
    """Everything that happens to one input line; pure, so any worker may run it."""
    stats = Stats(input_records=1)
    try:
        raw = parse_line(item)
        source = normalize(raw)
    except RecordError as exc:
        stats.rejected = 1
        stats.reject_reasons[exc.reason] += 1
        return Result([], [_reject(item, exc.reason, exc.detail)], stats)
    violations = check_record(source)
    if violations:
        stats.rejected = 1
        stats.reject_reasons[violations[0].reason] += 1
        detail = "; ".join(v.detail for v in violations[:3])
        return Result([], [_reject(item, violations[0].reason, detail, source["id"])], stats)
    rows: list[dict] = []
    rejects: list[dict] = []
    if keep_original:
        rows.append(source_row(source, 0, []))
    for k in range(1, variants + 1):
        rng = rng_for(seed, source["id"], k)
        try:
            variant, applied, skipped = run(recipe, source, rng)
        except Exception as exc:  # a transform bug must not take the run down: count it
            reason = f"transform error: {type(exc).__name__}"
            stats.variants_failed += 1
            stats.variant_failures[reason] += 1
            rejects.append(_reject(item, reason, str(exc)[:500], source["id"], k))
            continue
        for name, why in skipped:
            stats.skipped[(name, why)] += 1
        problems = check_variant(source, variant)
        if problems:
            stats.variants_failed += 1
            key = f"{problems[0].invariant}: {problems[0].reason}"
            stats.variant_failures[key] += 1
            rejects.append(_reject(item, key, "; ".join(p.detail for p in problems[:3])[:1000], source["id"], k))
            continue
        for a in applied:
            stats.applied[a.name] += 1
        if not applied:
            stats.unchanged_variants += 1
        rows.append(source_row(variant, k, [a.to_json() for a in applied]))
    if rows:
        stats.sources_written = 1
        stats.rows_written = len(rows)
    else:
        stats.rejected = 1
        stats.reject_reasons["every variant failed verification"] += 1
        rejects.append(_reject(item, "every variant failed verification",
                               f"{variants} variant(s) failed; see the variant rejects above", source["id"]))
    return Result(rows, rejects, stats, source["id"])


# --------------------------------------------------------------------------- the run

_WORKER: dict[str, Any] = {}


def _init_worker(recipe_config: dict, options: dict) -> None:
    from hsa.recipes import recipe_from_dict

    _WORKER["recipe"] = recipe_from_dict(recipe_config)
    _WORKER["options"] = options


def _work(batch: list[InputLine]) -> list[Result]:
    recipe, options = _WORKER["recipe"], _WORKER["options"]
    return [augment_record(item, recipe, **options) for item in batch]


def _batches(items: Iterable[InputLine], size: int) -> Iterator[list[InputLine]]:
    batch: list[InputLine] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


class _Progress:
    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.start = time.monotonic()
        self.last = 0.0

    def update(self, stats: Stats, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self.last < 0.5:
            return
        self.last = now
        dt = max(now - self.start, 1e-9)
        sys.stderr.write(f"\r{stats.input_records} records ({stats.input_records / dt:.0f}/s), "
                         f"{stats.rows_written} rows ({stats.rows_written / dt:.0f}/s), "
                         f"{stats.rejected} rejected, {stats.variants_failed} variants failed")
        if force:
            sys.stderr.write("\n")
        sys.stderr.flush()


def augment(inputs: list[str | Path], out: str | Path, recipe: Transform, *, seed: int = 0, variants: int = 4,
            keep_original: bool = False, workers: int = 1, shard_size: int = 10_000, batch_size: int = 64,
            strict: bool = False, overwrite: bool = False, progress: bool | None = None,
            hold_out: list[str] | None = None, command: str | None = None) -> dict:
    """Augment ``inputs`` into the dataset folder ``out``; returns the manifest.

    Raises :class:`AugmentError` for a missing input, an output folder that is not
    empty (unless ``overwrite``) and, with ``strict``, the first rejected line.
    """
    from hsa import __version__

    out = Path(out)
    paths = [Path(p) for p in inputs]
    for p in paths:
        if not p.exists():
            raise AugmentError(f"input file {p} does not exist")
        if p.is_dir():
            raise AugmentError(f"input {p} is a folder; give JSONL files (use 'hsa export' to turn a dataset folder into JSONL)")
    if out.exists() and any(out.iterdir()):
        if not overwrite:
            raise AugmentError(f"output folder {out} is not empty; pass --overwrite to replace it")
        import shutil

        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    if variants < 0:
        raise AugmentError(f"--variants must be >= 0 (got {variants})")
    if variants == 0 and not keep_original:
        raise AugmentError("--variants 0 without --keep-original would write nothing")
    if progress is None:
        progress = sys.stderr.isatty()

    options = {"seed": seed, "variants": variants, "keep_original": keep_original}
    recipe_config = recipe_to_dict(recipe)
    items = (item for p in paths for item in iter_lines(p))
    writer = ShardWriter(out, shard_size)
    total = Stats()
    bar = _Progress(progress)
    seen_ids: set[str] = set()
    reject_file = open(out / "rejects.jsonl", "w", encoding="utf-8")

    def results() -> Iterator[Result]:
        if workers <= 1:
            _init_worker(recipe_config, options)
            for batch in _batches(items, batch_size):
                yield from _work(batch)
        else:
            import multiprocessing as mp

            ctx = mp.get_context("spawn" if sys.platform == "darwin" else "fork")
            with ctx.Pool(workers, initializer=_init_worker, initargs=(recipe_config, options)) as pool:
                for batch_results in pool.imap(_work, _batches(items, batch_size), chunksize=1):
                    yield from batch_results

    try:
        for res in results():
            if res.source_id is not None and res.rows:
                if res.source_id in seen_ids:
                    line = res.rows[0]
                    res = Result([], [{"reason": "duplicate id", "detail":
                                       f"record id {res.source_id!r} occurs earlier in the input; ids must be unique",
                                       "id": res.source_id}], Stats(input_records=1, rejected=1))
                    res.stats.reject_reasons["duplicate id"] += 1
                    del line
                seen_ids.add(res.source_id)
            for rej in res.rejects:
                reject_file.write(json.dumps(rej, ensure_ascii=False) + "\n")
            if strict and res.stats.rejected:
                first = res.rejects[-1]
                raise AugmentError(f"--strict: {first.get('input')}:{first.get('line')}: "
                                   f"{first['reason']}: {first['detail']}")
            for row in res.rows:
                writer.add(row)
            total = total + res.stats
            bar.update(total)
        writer.flush()
    finally:
        reject_file.close()
    bar.update(total, force=True)

    files = [s["file"] for s in writer.shards]
    fingerprint = hashlib.sha256("".join(s["sha256"] for s in writer.shards).encode()).hexdigest()
    write_dataset_metadata(out, files, fingerprint)
    if total.input_records != total.sources_written + total.rejected:  # accounting: nothing lost
        raise AugmentError(f"accounting failed: {total.input_records} records in, {total.sources_written} written "
                           f"+ {total.rejected} rejected")
    manifest = {
        "hsa_version": __version__,
        "command": command,
        "inputs": [{"path": str(p), "sha256": sha256_file(p)} for p in paths],
        "seed": seed,
        "variants": variants,
        "keep_original": keep_original,
        "hold_out": sorted(hold_out or []),
        "recipe": recipe_config,
        **total.to_dict(),
        "shards": writer.shards or [{"file": "shard-00000.arrow", "rows": 0,
                                     "sha256": sha256_file(out / "shard-00000.arrow")}],
        "rejects_file": "rejects.jsonl",
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return manifest


def load_manifest(out: str | Path) -> dict:
    return json.loads((Path(out) / "manifest.json").read_text(encoding="utf-8"))


def canonicalize_record(raw: dict) -> dict:
    """An output row (or any record with a ``mapping``) mapped back to its source harness, as a record.

    Tool, parameter and skill names, argument paths and values return to the source
    harness everywhere (schemas, calls, texts, hooks); surface changes that the
    mapping does not track (order, descriptions, layout) stay as in the variant.
    """
    from hsa.rewrite import canonicalize

    rec = canonicalize(normalize(raw))
    rec["transforms"] = []
    out = denormalize(rec)
    if raw.get("source_id") is not None:
        out["id"] = raw["source_id"]
    return out


__all__ += ["load_manifest", "canonicalize_record"]
_ = _json
