"""The local engine: the run's input lines augmented in this process or in worker processes (each harness's records in one:
:mod:`hsa.pipeline.workers`), and their
rows written shard by shard in input order (so the bytes do not depend on the worker count)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from hsa.context import collecting_less
from hsa.context import current as current_context
from hsa.io import InputLine, JSONArrayError
from hsa.pipeline.executor import Progress, batches, init_worker, work
from hsa.pipeline.record import Result, Stats
from hsa.pipeline.shards import AugmentError, ShardWriter, strict_message
from hsa.pipeline.workers import WorkerError

__all__ = ["run_local"]


def _load_writer() -> None:
    """Import what writes the shards (pyarrow and its IPC writer: about 0.15 s) while the worker processes make the
    first rows; imported on the first row instead, it would wait for them and then hold the first shard back."""
    import pyarrow.ipc  # noqa: F401


def run_local(out: Path, items: Iterable[InputLine], *, shard_size: int, seen_ids: set[int], recipe_config: dict,
              options: dict, modules: tuple[str, ...], batch_size: int, workers: int, strict: bool,
              progress: Progress) -> Stats:
    """Augment ``items`` (this rank's, not yet done, in position order) with ``workers`` processes (1: this one);
    write and mark done each shard in ``out`` as its last row arrives; return the run's stats. ``seen_ids``
    (digests of the ids written by shards done before) grows with every shard written."""

    def results() -> Iterator[tuple[int, Result, list[tuple]]]:
        if workers <= 1:
            # this is the caller's process: its collection thresholds are back after (init_worker sets the run's),
            # and the run's settings leave its context (its plans and caches stay warm for the next run)
            ctx = current_context()
            settings = ctx.recipe, ctx.options
            try:
                with collecting_less():
                    init_worker(recipe_config, options, modules=modules)
                    for batch in batches(items, batch_size):
                        yield from work(batch)
            finally:
                ctx.recipe, ctx.options = settings
            return
        from hsa.pipeline.workers import AugmentJob, WorkerSet, process_context

        with WorkerSet(process_context(), workers, AugmentJob(recipe_config, options, modules), batch_size=batch_size) as pool:
            yield from pool.results(items, meanwhile=_load_writer)

    total = Stats()
    slot = options.get("harness_pool", 0) > 0
    current: ShardWriter | None = None
    try:
        for pos, res, encoded in results():
            k = pos // shard_size
            if current is None or current.k != k:
                if current is not None:
                    finished, current = current, None  # an interrupt from here on must not abort it
                    finished.finish(out)
                current = ShardWriter(out, k, slot=slot)
            res = current.add(res, encoded, seen_ids)
            if strict and res.stats.rejected:
                raise AugmentError(strict_message(res.rejects))
            total += res.stats
            progress.update(total)
        if current is not None:
            finished, current = current, None
            finished.finish(out)
    except WorkerError as exc:  # a worker died: what it was doing is lost, the shards finished before are kept
        raise AugmentError(str(exc)) from None
    except JSONArrayError as exc:  # an input that stops parsing part-way: the run cannot be completed
        raise AugmentError(f"{exc}. The shards finished before it are in {out}; fix the input and rerun with "
                           "--overwrite") from None
    finally:
        if current is not None:
            current.file.abort()
    progress.update(total, force=True)
    return total
