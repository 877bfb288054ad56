"""The local engine: the run's input lines augmented in this process or in a pool of worker processes, and their
rows written shard by shard in input order (so the bytes do not depend on the worker count)."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from hsa.io import InputLine, JSONArrayError
from hsa.pipeline.executor import Progress, batches, init_worker, work
from hsa.pipeline.record import Result, Stats
from hsa.pipeline.shards import AugmentError, ShardWriter, strict_message

__all__ = ["run_local"]


def run_local(out: Path, items: Iterable[InputLine], *, shard_size: int, seen_ids: set[int], recipe_config: dict,
              options: dict, modules: tuple[str, ...], batch_size: int, workers: int, strict: bool,
              progress: Progress) -> Stats:
    """Augment ``items`` (this rank's, not yet done, in position order) with ``workers`` processes (1: this one);
    write and mark done each shard in ``out`` as its last row arrives; return the run's stats. ``seen_ids``
    (digests of the ids written by shards done before) grows with every shard written."""

    def results() -> Iterator[tuple[int, Result, list[tuple]]]:
        if workers <= 1:
            thresholds = gc.get_threshold()  # this is the caller's process: put them back after
            try:
                init_worker(recipe_config, options, modules=modules)
                for batch in batches(items, batch_size):
                    yield from work(batch)
            finally:
                gc.set_threshold(*thresholds)
            return
        import multiprocessing as mp
        from collections import deque

        ctx = mp.get_context("spawn" if sys.platform == "darwin" else "fork")
        try:
            with ctx.Pool(workers, initializer=init_worker, initargs=(recipe_config, options, True, modules)) as pool:
                pending: deque = deque()
                for batch in batches(items, batch_size):
                    pending.append(pool.apply_async(work, (batch,)))
                    while len(pending) > 2 * workers:  # bounded read-ahead: memory does not grow with the input
                        yield from pending.popleft().get()
                while pending:
                    yield from pending.popleft().get()
                # every result is in: the workers end by their own exit, which stops their hook workers and removes
                # their folders; the with's terminate() (SIGTERM, which ends a worker at once) is for a run stopped
                # before its end (an error, Ctrl-C, a kill)
                pool.close()
                pool.join()
        finally:
            if "hsa.sandbox" in sys.modules:  # a terminated worker's hook workers died with it; their folders stay
                from hsa.sandbox.process import sweep_stale_homes

                sweep_stale_homes(again=True)

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
    except JSONArrayError as exc:  # an input that stops parsing part-way: the run cannot be completed
        raise AugmentError(f"{exc}. The shards finished before it are in {out}; fix the input and rerun with "
                           "--overwrite") from None
    finally:
        if current is not None:
            current.file.abort()
    progress.update(total, force=True)
    return total
