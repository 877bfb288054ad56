"""The augmentation pipeline: read -> validate -> sample -> apply -> verify -> write.

The rng of a variant derives from (seed, record id, variant index) alone, or, with a
harness-variant pool of K slots, its slot k from (seed, record id, variant index) and
its harness-level draws from (seed, digest of the record's harness, k); rows are
written in input order, so the output is byte-identical whatever the worker count or
shard size. Every input line either produces rows or is listed in
``rejects.jsonl`` with its line number and reason.
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import json
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from hsa import _json
from hsa.io import InputLine, JSONArrayError, parse_line
from hsa.mapping import Mapping
from hsa.records import UNREAD_CALL_NOTE, Record, RecordError, converted_layouts, denormalize, normalize
from hsa.recipes import recipe_to_dict
from hsa.transform import SlotRng, Transform, import_modules, modules_of, run
from hsa.verify import check_record, check_variant

__all__ = ["rng_for", "slot_for", "harness_digest", "slot_rng", "DEFAULT_HARNESS_POOL", "augment_record", "augment", "Stats", "Result", "AugmentError", "source_row"]


class AugmentError(RuntimeError):
    """A run that cannot start or must stop (missing input, non-empty output, --strict reject)."""


def rng_for(seed: int, record_id: str, variant: int) -> random.Random:
    """The rng of one variant: a function of (seed, record id, variant index) only."""
    digest = hashlib.sha256(f"hsa\x00{seed}\x00{record_id}\x00{variant}".encode()).digest()
    return random.Random(int.from_bytes(digest[:16], "big"))


#: ``--harness-pool`` when none is given: the harness variants each distinct harness gets (docs/performance.md
#: says why this many). 0 draws every variant's harness afresh, as before the pool.
DEFAULT_HARNESS_POOL = 8


def slot_for(seed: int, record_id: str, variant: int, pool: int) -> int:
    """The pool slot in [0, pool) of variant ``variant`` (1-based): a function of (seed, record id, variant index)
    only. A record's variants take the slots of one permutation of the pool drawn from (seed, record id), so its
    first ``pool`` variants are distinct harness variants (drawn independently, 4 variants of a pool of 8 would
    repeat a slot in 59% of the records) and later ones cycle through them again."""
    digest = hashlib.sha256(f"hsa-slot\x00{seed}\x00{record_id}".encode()).digest()
    order = list(range(pool))
    random.Random(int.from_bytes(digest[:16], "big")).shuffle(order)
    return order[(variant - 1) % pool]


def harness_digest(record: Record) -> str:
    """The digest of a record's harness part: tools, skills, the skill tool, hooks and the prompt's structure
    (its sections without their bodies, which are per-record content, and its template)."""
    prompt = record.get("prompt")
    if isinstance(prompt, dict):
        prompt = {**prompt, "sections": [{k: v for k, v in s.items() if k != "body"} if isinstance(s, dict) else s
                                         for s in prompt.get("sections") or ()]}
    part = [record["tools"], record.get("skills"), record["skill_tool"], record.get("hooks"), prompt]
    return hashlib.blake2b(_json.dumps(part).encode(), digest_size=16).hexdigest()


def slot_rng(seed: int, digest: str, slot: int, trajectory: random.Random) -> SlotRng:
    """The rng of pool slot ``slot`` of the harness with ``digest`` (:func:`harness_digest`); trajectory-level
    leaves draw from ``trajectory`` (:class:`hsa.transform.SlotRng`)."""
    key = hashlib.sha256(f"hsa-pool\x00{seed}\x00{digest}\x00{slot}".encode()).digest()
    return SlotRng(int.from_bytes(key[:16], "big"), trajectory)


@dataclasses.dataclass
class Stats:
    """Counters of one run, mergeable with ``+`` (datatrove style)."""

    input_records: int = 0
    sources_written: int = 0
    rejected: int = 0
    rows_written: int = 0
    variants_failed: int = 0
    unchanged_variants: int = 0
    task_changing_variants: int = 0  # written variants whose mapping has an opaque step (e.g. tool.irrelevance)
    reject_reasons: Counter = dataclasses.field(default_factory=Counter)
    variant_failures: Counter = dataclasses.field(default_factory=Counter)
    applied: Counter = dataclasses.field(default_factory=Counter)
    skipped: Counter = dataclasses.field(default_factory=Counter)  # (transform, reason) -> n
    failed: Counter = dataclasses.field(default_factory=Counter)  # (transform, failure) -> variants not written
    converted: Counter = dataclasses.field(default_factory=Counter)  # input layout converted on reading -> records
    unread_calls: int = 0  # records whose assistant text calls a tool in a layout the readers do not know
    hooks_not_replayed: Counter = dataclasses.field(default_factory=Counter)  # "hook: why" -> records

    def __add__(self, other: Stats) -> Stats:
        out = Stats()
        for f in dataclasses.fields(self):
            setattr(out, f.name, getattr(self, f.name) + getattr(other, f.name))
        return out

    def to_json(self) -> dict:
        """Every counter as JSON (a completion record); :meth:`from_json` reads it back."""
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name in ("skipped", "failed"):
                v = {f"{k[0]}\x00{k[1]}": n for k, n in v.items()}
            out[f.name] = dict(sorted(v.items())) if isinstance(v, dict) else v
        return out

    @classmethod
    def from_json(cls, data: dict) -> Stats:
        out = cls()
        for f in dataclasses.fields(cls):
            v = data.get(f.name, getattr(out, f.name))
            if f.name in ("skipped", "failed"):
                v = {tuple(k.split("\x00", 1)): n for k, n in v.items()}
            setattr(out, f.name, Counter(v) if isinstance(getattr(out, f.name), Counter) else v)
        return out

    def to_dict(self) -> dict:
        """The manifest's view: counts, reasons, and per transform and per family: applied, skipped and failed
        (variants not written because they failed verification with the transform applied, or because it
        raised), each with its reasons."""
        per_transform: dict[str, dict] = {}

        def entry(name: str) -> dict:
            return per_transform.setdefault(name, {"applied": 0, "skipped": {}, "failed": {}})

        for name, n in sorted(self.applied.items()):
            entry(name)["applied"] = n
        for (name, reason), n in sorted(self.skipped.items()):
            entry(name)["skipped"][reason] = n
        for (name, reason), n in sorted(self.failed.items()):
            entry(name)["failed"][reason] = n
        families: dict[str, dict] = {}
        for name, t in sorted(per_transform.items()):
            f = families.setdefault(_family_of(name), {"applied": 0, "skipped": 0, "failed": 0})
            f["applied"] += t["applied"]
            f["skipped"] += sum(t["skipped"].values())
            f["failed"] += sum(t["failed"].values())
        return {
            "counts": {"input_records": self.input_records, "sources_written": self.sources_written,
                       "rejected": self.rejected, "rows_written": self.rows_written,
                       "variants_failed": self.variants_failed, "unchanged_variants": self.unchanged_variants,
                       "task_changing_variants": self.task_changing_variants},
            "reject_reasons": dict(sorted(self.reject_reasons.items())),
            "variant_failures": dict(sorted(self.variant_failures.items())),
            "converted_layouts": dict(sorted(self.converted.items())),
            "records_with_unread_calls": self.unread_calls,
            "hooks_not_replayed": dict(sorted(self.hooks_not_replayed.items())),
            "families": dict(sorted(families.items())),
            "transforms": per_transform,
        }


def _family_of(name: str) -> str:
    """The family of the transform registered as ``name`` (a name no longer registered: its prefix)."""
    from hsa.transform import registry

    cls = registry().get(name)
    return getattr(cls, "family", None) or name.split(".", 1)[0]


@dataclasses.dataclass
class Result:
    """What one input line produced: rows in order, rejects, and the line's stats."""

    rows: list[dict]
    rejects: list[dict]
    stats: Stats
    source_id: str | None = None
    where: tuple[str, int] | None = None  # (input, line)


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


#: How tool-call arguments are written: as each record had them, or all as JSON objects or all as JSON strings.
CALL_ARGUMENTS = ("keep", "object", "string")


def augment_record(item: InputLine, recipe: Transform, *, seed: int, variants: int,
                   keep_original: bool, exec_hooks: bool = True, call_arguments: str = "object",
                   harness: dict | None = None, harness_pool: int = 0, strict_hooks: bool = False) -> Result:
    """Everything that happens to one input line; pure, so any worker may run it.

    ``exec_hooks`` runs invariant 7 (hooks replayed in the sandbox, :func:`hsa.sandbox.check_hooks`).
    A source hook that cannot run on its own payloads (:func:`hsa.sandbox.not_replayed`) is counted
    (``hooks_not_replayed``) and noted on each of the record's rows, or, with ``strict_hooks``, rejects
    the record. ``call_arguments`` (:data:`CALL_ARGUMENTS`) sets the form tool-call arguments are written in.
    ``harness`` (``--tools FILE``, :func:`hsa.records.read_harness_file`) supplies the harness of a row without one.
    ``harness_pool`` K > 0 draws each variant's harness-level params for its pool slot (:func:`slot_for`,
    :func:`slot_rng`) and writes the slot in a ``slot`` column (None on the source row); 0 draws them per record.
    """
    stats = Stats(input_records=1)
    try:
        raw = parse_line(item)
        source = normalize(raw, harness=harness)
        if call_arguments != "keep":
            source["_fmt"]["args"] = call_arguments
    except RecordError as exc:
        stats.rejected = 1
        stats.reject_reasons[exc.reason] += 1
        return Result([], [_reject(item, exc.reason, exc.detail)], stats)
    for layout in converted_layouts(source["notes"]):
        stats.converted[layout] += 1
    stats.unread_calls += any(n.startswith(UNREAD_CALL_NOTE) for n in source["notes"])
    violations = check_record(source)
    if violations:
        stats.rejected = 1
        stats.reject_reasons[violations[0].reason] += 1
        detail = "; ".join(v.detail for v in violations[:3])
        return Result([], [_reject(item, violations[0].reason, detail, source["id"])], stats)
    stuck: dict[str, str] = {}
    if exec_hooks and source.get("hooks"):
        from hsa.sandbox import NOT_REPLAYED_NOTE, not_replayed

        stuck = not_replayed(source)
        for name, why in stuck.items():
            stats.hooks_not_replayed[f"{name}: {why}"] += 1
        if stuck and strict_hooks:
            stats.rejected = 1
            stats.reject_reasons["hook not replayed"] += 1
            detail = "; ".join(f"{n!r}: {w}" for n, w in stuck.items())
            return Result([], [_reject(item, "hook not replayed", detail[:1000], source["id"])], stats)
    marks = [f"{NOT_REPLAYED_NOTE}{n!r}: {w}" for n, w in stuck.items()] if stuck else []
    rows: list[dict] = []
    rejects: list[dict] = []
    if keep_original:
        rows.append(_marked(source_row(source, 0, []), marks))
        if harness_pool:
            rows[-1]["slot"] = None
    digest = harness_digest(source) if harness_pool else None
    unchanged = None
    for k in range(1, variants + 1):
        rng = rng_for(seed, source["id"], k)
        if harness_pool:
            slot = slot_for(seed, source["id"], k, harness_pool)
            rng = slot_rng(seed, digest, slot, rng)
        try:
            variant, applied, skipped = run(recipe, source, rng)
        except Exception as exc:  # a transform bug must not take the run down: count it
            reason = f"transform error: {type(exc).__name__}"
            stats.variants_failed += 1
            stats.variant_failures[reason] += 1
            if getattr(exc, "hsa_transform", None):
                stats.failed[(exc.hsa_transform, reason)] += 1
            rejects.append(_reject(item, reason, str(exc)[:500], source["id"], k))
            continue
        for name, why in skipped:
            stats.skipped[(name, why)] += 1
        if variant is source:  # nothing applied: the source itself, checked above (invariant 5)
            problems = []
        else:  # the check hsa validate runs on every variant row (3 holds by construction; tested)
            problems = check_variant(source, variant, closure=False, exec_hooks=exec_hooks)
        if problems:
            stats.variants_failed += 1
            key = f"{problems[0].invariant}: {problems[0].reason}"
            stats.variant_failures[key] += 1
            for name in dict.fromkeys(a.name for a in applied):
                stats.failed[(name, key)] += 1
            rejects.append(_reject(item, key, "; ".join(p.detail for p in problems[:3])[:1000], source["id"], k))
            continue
        for a in applied:
            stats.applied[a.name] += 1
        if not applied:
            stats.unchanged_variants += 1
        if not Mapping(variant["mapping"][len(source["mapping"]):]).task_preserving:
            stats.task_changing_variants += 1
        if variant is source and not applied:  # the source's row under this variant's id: denormalised once
            if unchanged is None:
                unchanged = source_row(source, k, [])
            row = {**unchanged, "id": f"{source['id']}/{k}", "variant": k}
        else:
            row = source_row(variant, k, [a.to_json() for a in applied])
        rows.append(_marked(row, marks))
        if harness_pool:
            rows[-1]["slot"] = slot
    if rows:
        stats.sources_written = 1
        stats.rows_written = len(rows)
    else:
        stats.rejected = 1
        stats.reject_reasons["every variant failed verification"] += 1
        rejects.append(_reject(item, "every variant failed verification",
                               f"{variants} variant(s) failed; see the variant rejects above", source["id"]))
    return Result(rows, rejects, stats, source["id"], (item.path, item.line))


def _marked(row: dict, notes: list[str]) -> dict:
    """``row`` with ``notes`` added to its notes (the marks of hooks that were not replayed)."""
    if notes:
        row["notes"] = row["notes"] + notes
    return row


# --------------------------------------------------------------------------- the run
#
# Shard k holds the rows of input items [k * shard_size, (k + 1) * shard_size), so shard
# contents depend on the input alone: any worker count, any rank split, any resume point
# gives the same bytes. Each finished shard leaves three files, written atomically in
# this order: shard-K.arrow, .hsa/shard-K.rejects.jsonl, .hsa/shard-K.done.json.

_WORKER: dict[str, Any] = {}
STATE_DIR = ".hsa"


#: Garbage-collector thresholds while augmenting. The caches of analyses, parses and hook results
#: make a large, long-lived heap; with the default (700, 10, 10) full collections walk it about
#: every 70,000 allocations, which cost about 15% of the run. Records are freed by reference
#: counting, so collecting cycles less often changes what is kept only briefly.
GC_THRESHOLDS = (10_000, 10, 10)


def _init_worker(recipe_config: dict, options: dict, pool: bool = False, modules: tuple[str, ...] = ()) -> None:
    """Set up a process to run :func:`_work`: this one (``pool`` false) or a worker of the run's pool. ``modules``
    (:func:`hsa.transform.modules_of` the recipe) are imported first, so a worker started afresh (spawn, Ray) has
    every transform of the recipe registered, entry points or not."""
    from hsa.recipes import recipe_from_dict

    if pool:
        _pool_worker_signals()
    import_modules(modules)
    gc.set_threshold(*GC_THRESHOLDS)
    _WORKER["recipe"] = recipe_from_dict(recipe_config)
    _WORKER["options"] = options
    if "exec_hooks" in options:
        from hsa.sandbox import set_execution

        set_execution(options["exec_hooks"])


def _pool_worker_signals() -> None:
    """A pool worker leaves Ctrl-C to the parent (which stops the pool and keeps the finished shards), and on
    Linux ends quietly when the parent dies (a kill -9 or the OOM killer) instead of failing to send results."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        parent = os.getppid()
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            return
        if os.getppid() != parent:  # the parent died before the call
            os._exit(1)


def _work(batch: list[InputLine]) -> list[tuple[int, Result, list[tuple]]]:
    from hsa.io import encode_row

    recipe, options = _WORKER["recipe"], _WORKER["options"]
    out = []
    for item in batch:
        res = augment_record(item, recipe, **options)
        memo: dict = {}  # values shared by the record's rows are encoded once
        out.append((item.pos, res, [encode_row(r, memo) for r in res.rows]))
        res.rows = []
    return out


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
    """records/s, rows/s, rejects and ETA on a terminal; silent otherwise."""

    def __init__(self, enabled: bool, total: int | None = None):
        self.enabled = enabled
        self.total = total
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
        rate = stats.input_records / dt
        eta = ""
        if self.total and rate > 0:
            left = max(self.total - stats.input_records, 0) / rate
            eta = f", ETA {int(left // 60)}m{int(left % 60):02d}s"
        done = f"{stats.input_records}/{self.total}" if self.total else f"{stats.input_records}"
        sys.stderr.write(f"\r{done} records ({rate:.0f}/s), {stats.rows_written} rows ({stats.rows_written / dt:.0f}/s), "
                         f"{stats.rejected} rejected, {stats.variants_failed} variants failed{eta}   ")
        if force:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _id_digest(record_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(record_id.encode(), digest_size=8).digest(), "big")


def _shard_name(k: int) -> str:
    return f"shard-{k:05d}.arrow"


class _ShardState:
    """The shard being written: rows go to its Arrow file (``out`` None: to memory), rejects and stats are kept
    for its done marker."""

    def __init__(self, out: Path | None, k: int, slot: bool = False):
        from hsa.io import ShardFile

        self.k = k
        self.file = ShardFile(None if out is None else out / _shard_name(k), slot=slot)
        self.rejects: list[dict] = []
        self.stats = Stats()
        self.ids: list[str] = []

    def add(self, res: Result, encoded: list[tuple], seen_ids: set[int]) -> Result:
        """Take one input line's result, in input order; a source id seen before becomes a 'duplicate id' reject
        (the result returned is the one kept)."""
        if res.source_id is not None and encoded:
            digest = _id_digest(res.source_id)
            if digest in seen_ids:
                res = Result([], [{"input": res.where[0], "line": res.where[1],
                                   "reason": "duplicate id", "id": res.source_id,
                                   "detail": f"record id {res.source_id!r} occurs earlier in the input; ids must be unique"}],
                             Stats(input_records=1, rejected=1, reject_reasons=Counter({"duplicate id": 1})))
                encoded = []
            else:
                seen_ids.add(digest)
                self.ids.append(res.source_id)
        self.rejects.extend(res.rejects)
        for row in encoded:
            self.file.add(row)
        self.stats = self.stats + res.stats
        return res

    def close(self) -> tuple[dict, str]:
        """Close the Arrow file; return the completion record and the rejects (JSONL text)."""
        rows, digest = self.file.close()
        done = {"shard": _shard_name(self.k), "rows": rows, "sha256": digest, "stats": self.stats.to_json(),
                "ids": self.ids}
        return done, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.rejects)

    def finish(self, out: Path) -> dict:
        done, rejects = self.close()
        mark_done(out, self.k, done, rejects)
        return done


def mark_done(out: Path, k: int, done: dict, rejects: str) -> None:
    """Write shard ``k``'s rejects, then its completion record (what ``--resume`` and ``finalize`` read)."""
    state = out / STATE_DIR
    _write_atomic(state / f"shard-{k:05d}.rejects.jsonl", rejects)
    _write_atomic(state / f"shard-{k:05d}.done.json", json.dumps(done, ensure_ascii=False))


@dataclasses.dataclass
class ShardOutput:
    """One shard's work: the Arrow shard's bytes, its rejects (JSONL text) and its completion record."""

    k: int
    data: bytes
    rejects: str
    done: dict


def run_shard(k: int, items: Iterable[InputLine], seen_ids: set[int] | None = None, *,
              batch_size: int = 16) -> ShardOutput:
    """Shard ``k``'s whole work in this process (set up by :func:`_init_worker`): its input items, in
    position order, through :func:`augment_record`, encoded as the local engine writes them; nothing is
    written. ``seen_ids`` holds the digests of the source ids written before this shard (a repeat becomes a
    'duplicate id' reject, as in a one-process run); the shard's own ids are added to it."""
    shard = _ShardState(None, k, slot=_WORKER["options"].get("harness_pool", 0) > 0)
    seen = set() if seen_ids is None else seen_ids
    for batch in _batches(items, batch_size):
        for _, res, encoded in _work(batch):
            shard.add(res, encoded, seen)
    done, rejects = shard.close()
    return ShardOutput(k, shard.file.data, rejects, done)


def _strict_message(rejects: list[dict]) -> str:
    """``--strict``'s error: the first rejected record (not a failed variant) among ``rejects``."""
    first = next(r for r in rejects if "variant" not in r)
    return f"--strict: {first.get('input')}:{first.get('line')}: {first['reason']}: {first['detail']}"


def _run_config(sources, recipe_config, seed, variants, keep_original, shard_size, hold_out, extra) -> dict:
    from hsa._version import __version__

    return {"hsa_version": __version__,
            "inputs": [{"path": s.spec, "kind": s.kind, "sha256": s.fingerprint(),
                        **({"revision": s.revision} if s.kind == "hub" else {})} for s in sources],
            "seed": seed, "variants": variants, "keep_original": keep_original, "shard_size": shard_size,
            "hold_out": sorted(hold_out or []), "recipe": recipe_config, **extra}


def _recorded_revision(out: Path, source) -> str | None:
    """The hub revision that the run being resumed in ``out`` read for ``source``, if any."""
    if source.kind != "hub":
        return None
    try:
        before = json.loads((out / STATE_DIR / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return next((i.get("revision") for i in before.get("inputs", ())
                 if i.get("kind") == "hub" and i.get("path") == source.spec), None)


def _nothing_finished(out: Path) -> bool:
    """True when ``out`` holds only the state folder of a run that finished no shard (and no other file)."""
    entries = list(out.iterdir())
    if [e.name for e in entries] != [STATE_DIR]:
        return False
    state = out / STATE_DIR
    return (state / "run.json").exists() and not any(state.glob("shard-*.done.json")) \
        and all(f.name == "run.json" or f.name.endswith(".tmp") for f in state.iterdir())


def _prepare_out(out: Path, config: dict, *, resume: bool, overwrite: bool) -> set[int]:
    """Create or check the output folder; return the shards already done (with ``resume``)."""
    state = out / STATE_DIR
    if out.exists() and not out.is_dir():
        raise AugmentError(f"--out {out} is a file; give a folder (the output is a dataset folder of Arrow shards; "
                           "'hsa export DIR --out FILE.jsonl' writes JSONL from it)")
    if out.exists() and _nothing_finished(out):
        import shutil

        shutil.rmtree(out)  # a run stopped before its first shard (--strict, a kill): nothing to keep
    if out.exists() and any(out.iterdir()):
        if overwrite:
            import shutil

            shutil.rmtree(out)
        elif resume:
            run_file = state / "run.json"
            if not run_file.exists():
                raise AugmentError(f"--resume: {out} holds no hsa run to resume ({run_file} is missing)")
            before = json.loads(run_file.read_text(encoding="utf-8"))
            if _json.canonical(before) != _json.canonical(config):
                changed = sorted(k for k in set(before) | set(config) if before.get(k) != config.get(k))
                raise AugmentError(f"--resume: {out} was written by a different run (differs in: {', '.join(changed)}); "
                                   "rerun with the same inputs and options, or use --overwrite")
            done = set()
            for f in state.glob("shard-*.done.json"):
                done.add(int(f.name[6:11]))
            for f in list(out.glob("*.tmp")) + list(state.glob("*.tmp")):
                f.unlink()
            return done
        else:
            raise AugmentError(f"output folder {out} is not empty; pass --resume to finish an interrupted run "
                               "or --overwrite to replace it")
    state.mkdir(parents=True, exist_ok=True)
    _write_atomic(state / "run.json", json.dumps(config, indent=2, ensure_ascii=False))
    return set()


def augment(inputs: list[str | Path], out: str | Path, recipe: Transform, *, seed: int = 0, variants: int = 4,
            keep_original: bool = False, workers: int = 1, shard_size: int = 1000, batch_size: int = 16,
            strict: bool = False, overwrite: bool = False, resume: bool = False, rank: int = 0,
            world_size: int = 1, progress: bool | None = None, hold_out: list[str] | None = None,
            command: str | None = None, exec_hooks: bool = True, call_arguments: str = "object",
            tools_file: str | Path | None = None, engine: str = "local", ray_address: str | None = None,
            harness_pool: int = DEFAULT_HARNESS_POOL, strict_hooks: bool = False) -> dict:
    """Augment ``inputs`` into the dataset folder ``out``; returns the manifest (or, for one rank
    of several, that rank's summary: ``hsa merge`` writes the manifest).

    ``shard_size`` counts input records per shard. ``engine`` is ``"local"`` (a process pool of
    ``workers``) or ``"ray"`` (Ray Data, :mod:`hsa.ray_engine`: one task per shard on the cluster at
    ``ray_address``, or on a local Ray of ``workers`` CPUs); both write the same bytes.
    ``harness_pool`` is the number of harness variants of each distinct harness (0: every variant draws its
    own, as before the pool); it is recorded in the manifest and each row's slot is its ``slot`` column.
    ``strict_hooks`` rejects the records with a hook that cannot run on its own payloads (otherwise counted
    and noted on their rows). Raises :class:`AugmentError` for a missing input, an output folder that is not
    empty (unless ``resume`` or ``overwrite``), a missing Ray and, with ``strict``, the first rejected line.
    """
    from hsa.io import InputSource, iter_inputs

    if engine not in ENGINES:
        raise AugmentError(f"--engine must be one of {list(ENGINES)} (got {engine!r})")
    if engine == "ray":
        from hsa import ray_engine

        ray_engine.require_ray()
        if ray_engine.is_remote(out):
            return ray_engine.augment_remote(augment, inputs, out, recipe, seed=seed, variants=variants,
                                             keep_original=keep_original, workers=workers, shard_size=shard_size,
                                             batch_size=batch_size, strict=strict, overwrite=overwrite,
                                             resume=resume, rank=rank, world_size=world_size, progress=progress,
                                             hold_out=hold_out, command=command, exec_hooks=exec_hooks,
                                             call_arguments=call_arguments, tools_file=tools_file,
                                             harness_pool=harness_pool, strict_hooks=strict_hooks,
                                             ray_address=ray_address)
    elif "://" in str(out):
        raise AugmentError(f"--out {out}: the local engine writes a local folder; object storage (s3://, gs://, "
                           "file://) is written by --engine ray (on one machine too: it starts a local Ray)")
    out = Path(out)
    if variants < 0:
        raise AugmentError(f"--variants must be >= 0 (got {variants})")
    if variants == 0 and not keep_original:
        raise AugmentError("--variants 0 without --keep-original would write nothing")
    if call_arguments not in CALL_ARGUMENTS:
        raise AugmentError(f"--call-arguments must be one of {list(CALL_ARGUMENTS)} (got {call_arguments!r})")
    if isinstance(harness_pool, bool) or not isinstance(harness_pool, int) or harness_pool < 0:
        raise AugmentError(f"--harness-pool must be a whole number >= 0 (got {harness_pool!r}); 0 draws every "
                           "variant's harness afresh")
    if shard_size < 1 or batch_size < 1 or workers < 1:
        raise AugmentError("--shard-size, --batch-size and --workers must be at least 1")
    if not 0 <= rank < world_size:
        raise AugmentError(f"--rank must be within [0, --world-size) (got rank {rank}, world size {world_size})")
    try:
        sources = [InputSource.resolve(p) for p in inputs]
    except FileNotFoundError as exc:
        raise AugmentError(str(exc)) from None
    sources = [s.pinned(_recorded_revision(out, s) if resume else None) for s in sources]
    if progress is None:
        progress = sys.stderr.isatty()

    harness = None
    if tools_file is not None:
        from hsa.records import read_harness_file

        try:
            harness = read_harness_file(tools_file)
        except RecordError as exc:
            raise AugmentError(f"--tools {tools_file}: {exc.detail}") from None
    options = {"seed": seed, "variants": variants, "keep_original": keep_original, "exec_hooks": exec_hooks,
               "call_arguments": call_arguments, "harness_pool": harness_pool, "strict_hooks": strict_hooks,
               **({"harness": harness} if harness else {})}
    recipe_config = recipe_to_dict(recipe)
    modules = tuple(modules_of(recipe))
    tools_entry = ({"tools_file": {"path": str(tools_file),
                                   "sha256": hashlib.sha256(Path(tools_file).read_bytes()).hexdigest()}}
                   if harness else {})
    config = _run_config(sources, recipe_config, seed, variants, keep_original, shard_size, hold_out,
                         {"world_size": world_size, "exec_hooks": exec_hooks,
                          **({"call_arguments": call_arguments} if call_arguments != "keep" else {}),
                          **({"harness_pool": harness_pool} if harness_pool else {}),
                          **({"strict_hooks": True} if strict_hooks else {}),
                          **tools_entry})
    done = _prepare_out(out, config, resume=resume, overwrite=overwrite)

    seen_ids: set[int] = set()  # 64-bit digests of the ids seen: memory stays small on long inputs
    for k in sorted(done):  # ids of shards written before a resume
        ids = json.loads((out / STATE_DIR / f"shard-{k:05d}.done.json").read_text(encoding="utf-8"))["ids"]
        seen_ids.update(_id_digest(i) for i in ids)

    n_items = 0

    def mine() -> Iterator[InputLine]:
        nonlocal n_items
        for item in iter_inputs(sources):
            n_items = item.pos + 1
            k = item.pos // shard_size
            if k % world_size == rank and k not in done:
                yield item

    if engine == "ray":
        total = ray_engine.run_shards(out, mine(), shard_size=shard_size, seen_ids=seen_ids,
                                      recipe_config=recipe_config, options=options, modules=modules,
                                      batch_size=batch_size,
                                      workers=workers, address=ray_address, strict=strict,
                                      progress=_Progress(progress, _count_items(sources)
                                                         if progress and world_size == 1 else None))
        return _end_run(out, rank, world_size, n_items, shard_size, total, command, engine)

    def results() -> Iterator[tuple[int, Result, list[tuple]]]:
        if workers <= 1:
            thresholds = gc.get_threshold()  # this is the caller's process: put them back after
            try:
                _init_worker(recipe_config, options, modules=modules)
                for batch in _batches(mine(), batch_size):
                    yield from _work(batch)
            finally:
                gc.set_threshold(*thresholds)
            return
        import multiprocessing as mp
        from collections import deque

        ctx = mp.get_context("spawn" if sys.platform == "darwin" else "fork")
        with ctx.Pool(workers, initializer=_init_worker, initargs=(recipe_config, options, True, modules)) as pool:
            pending: deque = deque()
            for batch in _batches(mine(), batch_size):
                pending.append(pool.apply_async(_work, (batch,)))
                while len(pending) > 2 * workers:  # bounded read-ahead: memory does not grow with the input
                    yield from pending.popleft().get()
            while pending:
                yield from pending.popleft().get()

    total = Stats()
    bar = _Progress(progress, _count_items(sources) if progress and world_size == 1 else None)
    current: _ShardState | None = None
    try:
        for pos, res, encoded in results():
            k = pos // shard_size
            if current is None or current.k != k:
                if current is not None:
                    finished, current = current, None  # an interrupt from here on must not abort it
                    finished.finish(out)
                current = _ShardState(out, k, slot=harness_pool > 0)
            res = current.add(res, encoded, seen_ids)
            if strict and res.stats.rejected:
                raise AugmentError(_strict_message(res.rejects))
            total = total + res.stats
            bar.update(total)
        if current is not None:
            finished, current = current, None
            finished.finish(out)
    except JSONArrayError as exc:  # an input that stops parsing part-way: the run cannot be completed
        raise AugmentError(f"{exc}. The shards finished before it are in {out}; fix the input and rerun with "
                           "--overwrite") from None
    finally:
        if current is not None:
            current.file.abort()
    bar.update(total, force=True)
    return _end_run(out, rank, world_size, n_items, shard_size, total, command, engine)


#: The engines of ``hsa augment --engine``: they write the same bytes.
ENGINES = ("local", "ray")


def _end_run(out: Path, rank: int, world_size: int, n_items: int, shard_size: int, total: Stats,
             command: str | None, engine: str) -> dict:
    """Record this rank's part (its rank file) and, for a one-rank run, write the manifest."""
    n_shards = max(1, -(-n_items // shard_size))
    rank_info = {"rank": rank, "world_size": world_size, "input_items": n_items, "shards": n_shards,
                 "engine": engine}
    _write_atomic(out / STATE_DIR / f"rank-{rank:05d}-of-{world_size:05d}.json", json.dumps(rank_info))
    if world_size > 1:
        return {"rank": rank_info, **total.to_dict()}
    return finalize(out, command=command)


def _count_items(sources) -> int | None:
    """Input items for the progress line's ETA: JSONL lines counted, Parquet and ``datasets`` folders from their
    metadata (None for a hub dataset, which streams)."""
    from hsa.io import iter_lines

    total = 0
    for s in sources:
        if s.kind == "jsonl":
            total += sum(1 for _ in iter_lines(s.spec))
        elif s.kind == "json":  # counting the elements would parse the whole array once more
            return None
        elif s.kind == "parquet":
            from hsa.io import parquet_file

            total += parquet_file(s.spec).metadata.num_rows
        elif s.kind == "dataset":
            import pyarrow as pa

            try:
                state = json.loads((Path(s.spec) / "state.json").read_text(encoding="utf-8"))
                for f in state.get("_data_files", ()):
                    with pa.memory_map(str(Path(s.spec) / f["filename"])) as src:
                        total += sum(batch.num_rows for batch in pa.ipc.open_stream(src))
            except (OSError, ValueError, KeyError, pa.ArrowInvalid):  # a folder laid out otherwise: no ETA
                return None
        else:
            return None
    return total


def finalize(out: str | Path, *, command: str | None = None, parts: list[Path] | None = None) -> dict:
    """Join the done shards of ``out`` (and of ``parts``, for ``hsa merge``) into one dataset and manifest."""
    from hsa.io import write_dataset_metadata

    out = Path(out)
    state = out / STATE_DIR
    config = json.loads((state / "run.json").read_text(encoding="utf-8"))
    rank_files = sorted(state.glob("rank-*-of-*.json"))
    info = [json.loads(f.read_text(encoding="utf-8")) for f in rank_files]
    n_items = max((i["input_items"] for i in info), default=0)
    n_shards = max(1, -(-n_items // config["shard_size"]))
    missing = [k for k in range(n_shards) if not (state / f"shard-{k:05d}.done.json").exists()]
    slot = config.get("harness_pool", 0) > 0
    if n_items == 0 and missing == [0]:  # empty input: one empty shard
        _ShardState(out, 0, slot=slot).finish(out)
        missing = []
    if missing:
        raise AugmentError(f"{out}: shards {missing[:10]}{'...' if len(missing) > 10 else ''} are not done; "
                           "run the missing ranks (or --resume) before merging")
    total = Stats()
    shards, ids_seen, duplicates = [], set(), []
    with open(out / "rejects.jsonl.tmp", "w", encoding="utf-8") as rejects:
        for k in range(n_shards):
            done = json.loads((state / f"shard-{k:05d}.done.json").read_text(encoding="utf-8"))
            total = total + Stats.from_json(done["stats"])
            shards.append({"file": done["shard"], "rows": done["rows"], "sha256": done["sha256"]})
            for i in done["ids"]:
                if i in ids_seen:
                    duplicates.append(i)
                ids_seen.add(i)
            rejects.write((state / f"shard-{k:05d}.rejects.jsonl").read_text(encoding="utf-8"))
    os.replace(out / "rejects.jsonl.tmp", out / "rejects.jsonl")
    if duplicates:
        raise AugmentError(f"record ids occur in several shards: {duplicates[:10]}; ids must be unique "
                           "(rows were written; fix the input and rerun)")
    if total.input_records != n_items or total.input_records != total.sources_written + total.rejected:
        raise AugmentError(f"accounting failed: {n_items} items read, {total.input_records} processed, "
                           f"{total.sources_written} written + {total.rejected} rejected")
    fingerprint = hashlib.sha256("".join(s["sha256"] for s in shards).encode()).hexdigest()
    write_dataset_metadata(out, [s["file"] for s in shards], fingerprint, slot=slot)
    manifest = {
        "hsa_version": config["hsa_version"],
        "command": command,
        "engine": "+".join(sorted({i.get("engine", "local") for i in info})) or "local",
        "inputs": config["inputs"],
        "seed": config["seed"],
        "variants": config["variants"],
        "keep_original": config["keep_original"],
        "shard_size": config["shard_size"],
        "hold_out": config["hold_out"],
        "exec_hooks": config.get("exec_hooks", True),
        "call_arguments": config.get("call_arguments", "keep"),
        **({"tools_file": config["tools_file"]} if config.get("tools_file") else {}),
        "harness_pool": config.get("harness_pool", 0),
        "strict_hooks": config.get("strict_hooks", False),
        "recipe": config["recipe"],
        **total.to_dict(),
        "shards": shards,
        "rejects_file": "rejects.jsonl",
    }
    _write_atomic(out / "manifest.json", json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    return manifest


def merge(parts: list[str | Path], out: str | Path, *, command: str | None = None) -> dict:
    """Join the outputs of ``--rank R --world-size W`` runs into one dataset, identical to a single run."""
    import shutil

    parts = [Path(p) for p in parts]
    out = Path(out)
    configs = []
    for p in parts:
        f = p / STATE_DIR / "run.json"
        if not f.exists():
            raise AugmentError(f"{p} is not an hsa augment output (no {f})")
        configs.append(json.loads(f.read_text(encoding="utf-8")))
    if any(_json.canonical(c) != _json.canonical(configs[0]) for c in configs):
        raise AugmentError("the parts were made by different runs (inputs, seed, recipe or options differ); "
                           "merge only the ranks of one run")
    if out.exists() and any(out.iterdir()) and out not in parts:
        raise AugmentError(f"output folder {out} is not empty")
    (out / STATE_DIR).mkdir(parents=True, exist_ok=True)
    for p in parts:
        if p.resolve() == out.resolve():
            continue
        for f in sorted((p / STATE_DIR).iterdir()):
            if f.name == "run.json" or f.name.startswith(("shard-", "rank-")):
                shutil.copy2(f, out / STATE_DIR / f.name)
        for f in sorted(p.glob("shard-*.arrow")):
            shutil.copy2(f, out / f.name)
    (out / STATE_DIR / "run.json").write_text(json.dumps(configs[0], indent=2, ensure_ascii=False), encoding="utf-8")
    ranks = {json.loads(f.read_text())["rank"] for f in (out / STATE_DIR).glob("rank-*-of-*.json")}
    world = configs[0].get("world_size", 1)
    if ranks != set(range(world)):
        raise AugmentError(f"ranks {sorted(set(range(world)) - ranks)} of {world} are missing; run them and merge again")
    engines = sorted({json.loads(f.read_text()).get("engine", "local") for f in (out / STATE_DIR).glob("rank-*-of-*.json")})
    for f in (out / STATE_DIR).glob("rank-*-of-*.json"):  # keep one rank file: the merged run
        f.unlink()
    n = max(json.loads((p / STATE_DIR / f.name).read_text())["input_items"]
            for p in parts for f in (p / STATE_DIR).glob("rank-*-of-*.json"))
    config = dict(configs[0])
    config["world_size"] = 1
    (out / STATE_DIR / "run.json").write_text(json.dumps(config, indent=2, ensure_ascii=False), encoding="utf-8")
    _write_atomic(out / STATE_DIR / "rank-00000-of-00001.json",
                  json.dumps({"rank": 0, "world_size": 1, "input_items": n, "shards": max(1, -(-n // config["shard_size"])),
                              "engine": "+".join(engines)}))
    return finalize(out, command=command)


def canonicalize_record(raw: dict) -> dict:
    """An output row (or any record with a ``mapping``) mapped back to its source record.

    Tool, parameter and skill names, argument paths and values return to the source
    harness everywhere (schemas, calls, texts, hooks), and the mapping's ``restore`` step
    puts back what no inverse carries (descriptions, order, added tools and parameters,
    prompt, skills, hooks, messages): for a task-preserving variant the result is its
    source record. A task-changing variant (``tool.irrelevance``) gets its names back only.
    """
    from hsa.rewrite import canonicalize

    rec = canonicalize(normalize(raw))
    rec["transforms"] = []
    out = denormalize(rec)
    if raw.get("source_id") is not None:
        out["id"] = raw["source_id"]
    return out


__all__ += ["canonicalize_record", "finalize", "merge", "run_shard", "ShardOutput", "mark_done", "ENGINES"]
