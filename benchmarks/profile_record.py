"""Where one record's time goes: ``augment_record`` + row encoding in one process, under cProfile.

    PYTHONPATH=. python benchmarks/profile_record.py INPUT.jsonl [--records 200] [--recipe default] \
        [--variants 4] [--pool 8] [--top 40] [--sort tottime] [--grep PATTERN]

INPUT is a benchmark input (``bench_augment.py --work DIR`` leaves them there: ``in-300-tool-h8.jsonl`` and the
like). Prints the total function calls (a count the machine's load cannot move), the seconds under the
profiler and the top functions. ``--grep`` keeps the rows whose function matches (e.g. ``normalize``).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import time
from collections import defaultdict
from collections.abc import Callable


def input_arguments(p: argparse.ArgumentParser, records: int) -> None:
    """The options of a benchmark that runs ``augment_record`` on the first records of a benchmark input."""
    p.add_argument("input")
    p.add_argument("--records", type=int, default=records)
    p.add_argument("--recipe", default="default")
    p.add_argument("--variants", type=int, default=4)
    p.add_argument("--pool", type=int, default=8)
    p.add_argument("--no-exec-hooks", action="store_true")


def load_inputs(args: argparse.Namespace) -> tuple:
    """(recipe, input lines) for :func:`input_arguments`' options, the recipe's modules imported and the garbage
    collector set as a worker sets it."""
    from hsa.io import InputLine
    from hsa.context import GC_THRESHOLDS
    from hsa.recipes import load_recipe
    from hsa.transform import import_modules, modules_of

    recipe = load_recipe(args.recipe)
    import_modules(modules_of(recipe))
    with open(args.input, "rb") as fh:
        items = [InputLine(args.input, i + 1, line, i) for i, line in zip(range(args.records), fh)]
    gc.set_threshold(*GC_THRESHOLDS)
    return recipe, items


def timed_phases(run: Callable | None = None) -> tuple[dict[str, float], Callable, Callable]:
    """Wrap the phases of :func:`hsa.pipeline.augment_record` in CPU-time counters (``time.process_time``): ``read``,
    ``check source``, ``run`` (``run`` given: that function in place of :func:`hsa.transform.run`), ``restore``,
    ``check variant``, ``rows``. Returns (seconds spent by phase, ``timed(name, fn)`` to wrap more, and the row
    encoder wrapped as ``encode``)."""
    from hsa import transform
    from hsa.io import encode_row
    from hsa.pipeline import record as rec

    spent: dict[str, float] = defaultdict(float)

    def timed(name: str, fn: Callable) -> Callable:
        def wrapper(*a, **kw):
            t = time.process_time()
            try:
                return fn(*a, **kw)
            finally:
                spent[name] += time.process_time() - t
        return wrapper

    rec.parse_line = timed("read", rec.parse_line)
    rec.normalize = timed("read", rec.normalize)
    rec.check_record = timed("check source", rec.check_record)
    rec.run = timed("run", run or rec.run)
    transform.restorable = timed("restore", transform.restorable)
    rec.check_variant = timed("check variant", rec.check_variant)
    rec.source_row = timed("rows", rec.source_row)
    return spent, timed, timed("encode", encode_row)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    input_arguments(p, records=200)
    p.add_argument("--top", type=int, default=40)
    p.add_argument("--sort", default="tottime")
    p.add_argument("--grep", default=None)
    args = p.parse_args()

    from hsa.io import encode_row
    from hsa.pipeline import augment_record

    recipe, items = load_inputs(args)

    def run() -> int:
        rows = 0
        for it in items:
            res = augment_record(it, recipe, seed=0, variants=args.variants, keep_original=True,
                                 exec_hooks=not args.no_exec_hooks, harness_pool=args.pool)
            memo: dict = {}
            rows += len([encode_row(r, memo) for r in res.rows])
        return rows

    prof = cProfile.Profile()
    dump = os.environ.get("HSA_PROFILE_OUT")
    t, c = time.perf_counter(), time.process_time()
    prof.enable()
    rows = run()
    prof.disable()
    t, c = time.perf_counter() - t, time.process_time() - c
    if dump:
        prof.dump_stats(dump)
    st = pstats.Stats(prof)
    print(f"{len(items)} records, {rows} rows: {st.total_calls:,} function calls, {t:.2f} s wall, {c:.2f} s CPU "
          "(this process; under the profiler)")
    import resource

    from hsa import cache, sandbox

    replay = sandbox.stats()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    sandbox.close_all()  # the hook workers end and are reaped (bubblewrap reaps its own): their CPU is counted below
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    worker = (child.ru_utime + child.ru_stime) - (before.ru_utime + before.ru_stime)
    print(f"hook replay: {replay}; hook workers' CPU {worker:.2f} s (the ones still running at the end), ended "
          f"children {child.ru_utime + child.ru_stime:.2f} s")
    print("caches:", {k: (v["hits"], v["misses"]) for k, v in cache.stats().items()})
    try:
        from hsa.context import current
    except ImportError:  # a tree from before the worker context (issue 29, step 9)
        pass
    else:
        print("slot plans:", current().plans.stats())
    st.sort_stats(args.sort)
    if args.grep:
        st.print_stats(args.grep, args.top)
    else:
        st.print_stats(args.top)


if __name__ == "__main__":
    main()
