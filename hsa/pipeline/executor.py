"""What every engine runs: a process set up to augment (the recipe built once, its transforms imported), the work
of a batch of input lines, the whole work of one shard, and the progress line.

The local engine (:mod:`hsa.pipeline.local`) calls :func:`work` in this process or in its worker processes and writes
the rows shard by shard; the Ray engine (:mod:`hsa.pipeline.ray_engine`) calls :func:`work` in its actors and
:func:`assemble_shard` in a task. Both write what :func:`run_shard` gives, so they write the same bytes.
"""

from __future__ import annotations

import gc
import json
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from hsa.context import GC_THRESHOLDS, current
from hsa.io import InputLine
from hsa.pipeline.record import Result, Stats, augment_record
from hsa.pipeline.shards import ShardOutput, ShardWriter
from hsa.transform import import_modules

__all__ = ["GC_THRESHOLDS", "init_worker", "work", "batches", "run_shard", "assemble_shard", "Progress", "count_items"]


def init_worker(recipe_config: dict, options: dict, modules: tuple[str, ...] = ()) -> None:
    """Set up a process to run :func:`work`: this one, a worker of the local engine's
    :class:`~hsa.pipeline.workers.WorkerSet` (which also sets up its signals) or a Ray task's. ``modules``
    (:func:`hsa.transform.modules_of` the recipe) are imported first, so a worker started afresh (spawn, Ray) has
    every transform of the recipe registered, entry points or not. The recipe and options go into the process's
    :class:`hsa.context.WorkerContext`, beside the plans and caches it keeps from record to record."""
    from hsa.recipes import recipe_from_dict

    import_modules(modules)
    gc.set_threshold(*GC_THRESHOLDS)  # for the worker's life (hsa.context.GC_THRESHOLDS says why)
    options = dict(options)
    policy = options.pop("hook_sandbox", None)  # --hook-sandbox: this process's, not augment_record's
    ctx = current()
    ctx.recipe = recipe_from_dict(recipe_config)
    ctx.options = options  # exec_hooks among them: hsa.sandbox.execution_enabled reads it for this run
    if policy is not None:
        from hsa.sandbox import set_policy

        set_policy(policy)


def work(batch: list[InputLine]) -> list[tuple[int, Result, list[tuple]]]:
    from hsa.io import encode_row

    ctx = current()
    recipe, options = ctx.recipe, ctx.options
    out = []
    for item in batch:
        res = augment_record(item, recipe, **options)
        memo = res.encoded  # a value the rows share is encoded once (one shared with other records' rows, once a plan)
        out.append((item.pos, res, [encode_row(r, memo) for r in res.rows]))
        res.rows, res.encoded = [], {}
    return out


def batches(items: Iterable[InputLine], size: int) -> Iterator[list[InputLine]]:
    batch: list[InputLine] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def run_shard(k: int, items: Iterable[InputLine], seen_ids: set[int] | None = None, *,
              batch_size: int = 16) -> ShardOutput:
    """Shard ``k``'s whole work in this process (set up by :func:`init_worker`): its input items, in
    position order, through :func:`augment_record`, encoded as the local engine writes them; nothing is
    written. ``seen_ids`` holds the digests of the source ids written before this shard (a repeat becomes a
    'duplicate id' reject, as in a one-process run); the shard's own ids are added to it."""
    results = (r for batch in batches(items, batch_size) for r in work(batch))
    return assemble_shard(k, results, seen_ids, slot=current().options.get("harness_pool", 0) > 0)


def assemble_shard(k: int, results: Iterable[tuple[int, Result, list[tuple]]], seen_ids: set[int] | None = None, *,
                   slot: bool = False) -> ShardOutput:
    """Shard ``k`` from what :func:`work` gave for its items, taken in position order (results of several processes
    merged by position first, as :mod:`hsa.pipeline.ray_engine` does): the Arrow shard, its rejects and completion
    record (``seen_ids`` as for :func:`run_shard`); ``slot``: the run's rows carry their pool slot (``harness_pool``
    > 0)."""
    shard = ShardWriter(None, k, slot=slot)
    seen = set() if seen_ids is None else seen_ids
    for _, res, encoded in results:
        shard.add(res, encoded, seen)
    done, rejects = shard.close()
    return ShardOutput(k, shard.file.data, rejects, done)


class Progress:
    """The progress line on a terminal (silent otherwise): records done of the total, with the records of the shards
    a resumed run kept counted as done and named; rates; rejects; and an ETA once the run has warmed up.

    Rates and the ETA are measured from the first records that came back, not from the start (starting the
    workers and loading the transforms would otherwise read as a slow run), and the ETA is shown only after
    :attr:`WARMUP` seconds of that: before, one batch's time says little about the rest."""

    WARMUP = 5.0

    def __init__(self, enabled: bool, total: int | None = None, *, kept_records: int = 0, kept_shards: int = 0):
        self.enabled = enabled
        self.total = total
        self.kept_records = kept_records
        self.kept_shards = kept_shards
        self.start = time.monotonic()
        self.first: tuple[float, int, int] | None = None  # (time, records, rows) of the first update with records
        self.last = 0.0

    def line(self, stats: Stats, now: float) -> str:
        """The progress line for ``stats`` (this run's) at time ``now``."""
        n = stats.input_records
        if self.first is None and n:
            self.first = (now, n, stats.rows_written)
        done = self.kept_records + n
        parts = [f"{done}/{self.total} records" if self.total else f"{done} records"]
        if self.kept_shards:
            parts[0] += (f" ({self.kept_records} kept from {self.kept_shards} shard"
                         f"{'s' if self.kept_shards != 1 else ''} of the interrupted run)")
        t0, n0, r0 = self.first if self.first is not None else (now, n, stats.rows_written)
        dt = now - t0
        rate = (n - n0) / dt if dt > 0 else 0.0
        rows = f"{stats.rows_written} rows"
        if dt > 0:
            parts[0] += f" ({rate:.0f}/s)"
            rows += f" ({(stats.rows_written - r0) / dt:.0f}/s)"
        parts += [rows, f"{stats.rejected} rejected", f"{stats.variants_failed} variants failed"]
        if self.total and dt >= self.WARMUP and rate > 0:
            left = max(self.total - done, 0) / rate
            parts.append(f"ETA {int(left // 60)}m{int(left % 60):02d}s")
        elif self.total and done < self.total:
            parts.append("ETA after warm-up")
        return ", ".join(parts)

    def update(self, stats: Stats, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self.last < 0.5:
            return
        self.last = now
        sys.stderr.write(f"\r{self.line(stats, now)}   ")
        if force:
            sys.stderr.write("\n")
        sys.stderr.flush()


def count_items(sources) -> int | None:
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
