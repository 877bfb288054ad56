"""Where a record's time goes, without a profiler: the phases of ``augment_record`` timed in one process.

    PYTHONPATH=. python benchmarks/phases.py INPUT.jsonl [--records 300] [--recipe default] [--variants 4] \
        [--pool 8] [--repeats 3] [--no-exec-hooks]

INPUT is a benchmark input (``bench_augment.py --work DIR`` leaves them there). cProfile inflates many small
Python calls, so its shares mislead; this wraps the phases of :func:`hsa.pipeline.augment_record` in
``time.process_time`` counters instead (a few thousand wrapped calls, so the overhead is small) and prints CPU
milliseconds per record and per variant for each phase:

- ``read``: parse the line and normalise it (:func:`hsa.records.normalize`), ``check source``: invariants on the
  source (:func:`hsa.invariants.check_record`, and the hook check of the source);
- ``transforms``: sampling and applying the recipe (:func:`hsa.transform.run` less its restore step);
- ``restore``: the ``restore`` step (:func:`hsa.transform.restorable`), and under it its parts: the variant read
  back as its row reads, its steps undone, the patch to the source;
- ``check variant``: :func:`hsa.invariants.check_variant` (invariants 1, 2, 6, 7, 8 on each variant), and under it
  ``calls``: its :func:`hsa.invariants.check_record` (invariant 1, the call check);
- ``rows``: :func:`hsa.pipeline.record.source_row`; ``encode``: :func:`hsa.io.encode_row`; ``write``: the Arrow
  shard (in memory);

and, on the same records in the same process, the work of the I/O floor of ``bench_augment.py`` (parse each line,
encode ``variants`` rows of it, write them to an Arrow shard in memory), which is what every ratio of
docs/performance.md divides by, without the interpreter's start-up that a child process adds to both. Each figure is
the fastest of ``--repeats`` passes (caches emptied before each pass). It asserts nothing.
"""

from __future__ import annotations

import argparse
import time

from profile_record import input_arguments, load_inputs, timed_phases  # this folder: the script's own


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    input_arguments(p, records=300)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()

    from hsa import _json, cache, io
    from hsa.io import ShardFile
    from hsa.pipeline import record as rec

    recipe, items = load_inputs(args)
    spent, timed, encode = timed_phases()
    write = timed("write", lambda shard, row: shard.add(row) if row is not None else shard.close())
    from hsa import renames  # inside the restore step (reported under it, not added to the total)

    renames._as_written = timed("restore: read back", renames._as_written)
    renames._undo_from = timed("restore: undo", renames._undo_from)
    renames._content_patch = timed("restore: patch", renames._content_patch)
    from hsa import invariants  # invariant 1 (the call check) inside check_variant, not a transform's own use of it

    inside = []
    plain_check_record, plain_check_variant = invariants.check_record, rec.check_variant
    calls = timed("check variant: calls", plain_check_record)

    def check_record(*a, **kw):
        return (calls if inside else plain_check_record)(*a, **kw)

    def check_variant(*a, **kw):
        inside.append(1)
        try:
            return plain_check_variant(*a, **kw)
        finally:
            inside.pop()

    invariants.check_record, rec.check_variant = check_record, check_variant

    def one_pass() -> tuple[dict, float, float, int]:
        cache.clear()
        spent.clear()
        rows = 0
        t = time.process_time()
        shard = ShardFile(None, slot=bool(args.pool))
        for it in items:
            res = rec.augment_record(it, recipe, seed=0, variants=args.variants, keep_original=True,
                                     exec_hooks=not args.no_exec_hooks, harness_pool=args.pool)
            memo: dict = {}
            for r in res.rows:
                write(shard, encode(r, memo))
                rows += 1
        write(shard, None)
        total = time.process_time() - t
        t = time.process_time()
        shard = ShardFile(None)
        for it in items:  # the floor's work: bench_augment._floor_run, its shard in memory
            raw = _json.loads(it.data)
            for v in range(1, args.variants + 1):
                shard.add(io.encode_row({"id": f"{raw['id']}/{v}", "source_id": raw["id"], "variant": v, **raw,
                                         "transforms": [], "mapping": {"version": 1, "steps": []}, "notes": []}))
        shard.close()
        floor = time.process_time() - t
        out = dict(spent)
        out["transforms"] = out.pop("run", 0.0) - out.get("restore", 0.0)
        return out, total, floor, rows

    best = None
    for _ in range(args.repeats):
        got = one_pass()
        if best is None or got[1] < best[1]:
            best = got
    parts, total, floor, rows = best
    n, nv = len(items), len(items) * args.variants
    inner = {k: parts.pop(k) for k in list(parts) if ":" in k}
    parts["other"] = total - sum(parts.values())
    print(f"{n} records, {rows} rows, recipe {args.recipe}, pool {args.pool}: {total:.3f} CPU s "
          f"({1000 * total / n:.2f} ms a record); the floor's work on the same records {floor:.3f} s "
          f"({1000 * floor / n:.2f} ms a record)")
    print(f"{'phase':<15} {'ms/record':>10} {'ms/variant':>11} {'share':>6} {'x floor':>8}")
    order = ["read", "check source", "transforms", "restore", "check variant", "rows", "encode", "write", "other"]
    for k in order + sorted(set(parts) - set(order)):
        v = parts.get(k, 0.0)
        print(f"{k:<15} {1000 * v / n:>10.3f} {1000 * v / nv:>11.3f} {v / total:>6.1%} {v / floor:>8.2f}")
        for sub, v in sorted(inner.items()):
            if sub.startswith(k + ":"):
                print(f"  {sub[len(k) + 2:]:<13} {1000 * v / n:>10.3f} {1000 * v / nv:>11.3f} {v / total:>6.1%} "
                      f"{v / floor:>8.2f}")


if __name__ == "__main__":
    main()
