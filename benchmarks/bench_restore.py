"""What the restore step of invariant 8 costs: time per variant and row size, with and without it.

    PYTHONPATH=. python benchmarks/bench_restore.py [fixtures/livestream/trajectories.jsonl] [N]

Runs ``augment_record`` (default recipe, 2 variants, the source kept) on the first N records twice
(the second run is timed, caches warm), then again with the restore step and its check switched off.
"""

from __future__ import annotations

import json
import sys
import time

import hsa.transform as T
import hsa.invariants as V
from hsa.io import InputLine
from hsa.pipeline import augment_record
from hsa.recipes import load_recipe


def _run(items, recipe) -> tuple[float, int, int]:
    t = time.perf_counter()
    size = n = 0
    for it in items:
        for row in augment_record(it, recipe, seed=0, variants=2, keep_original=True).rows:
            if row["variant"]:
                size += len(json.dumps(row, ensure_ascii=False))
                n += 1
    return time.perf_counter() - t, size, n


def main(path: str = "fixtures/livestream/trajectories.jsonl", n: int = 60) -> None:
    recipe = load_recipe("default")
    with open(path, encoding="utf-8") as fh:
        items = [InputLine(path, i + 1, line.encode(), i) for i, line in zip(range(n), fh)]
    _run(items, recipe)
    with_t, with_size, rows = _run(items, recipe)
    T.restorable = lambda source, variant: variant
    V._check_inversion = lambda source, variant, k: []
    without_t, without_size, _ = _run(items, recipe)
    print(f"{rows} variant rows: with restore {with_t:.2f} s, {with_size} bytes; without {without_t:.2f} s, "
          f"{without_size} bytes; time x{with_t / without_t:.2f}, size x{with_size / without_size:.3f}")


if __name__ == "__main__":
    main(*(sys.argv[1:2] or []), *(int(a) for a in sys.argv[2:3]))
