"""Where the transforms' time goes, leaf by leaf, and how often a leaf that samples on the harness takes a kept draw.

    PYTHONPATH=. python benchmarks/leaves.py INPUT.jsonl [--records 3000] [--warm 2000] [--recipe default] \
        [--variants 4] [--pool 8]

Runs :func:`hsa.pipeline.augment_record` on the first ``--records`` records of INPUT in one process, and counts
only the records after the first ``--warm``: a slot plan's leaf runs keep their draws as records arrive, so the
first records of a shared-harness input mostly draw, and the steady state is what a long input sees. For each leaf
that ran it prints:

- ``sampler``: ``harness`` for a leaf that samples on the harness (:meth:`hsa.transform.Transform.sample_harness`),
  ``record`` for one that samples the record;
- ``runs``: how many times it ran, and ``ms/record``, the CPU milliseconds (``time.process_time``) of its runs,
  sampling and applying, per counted record;
- ``kept``: for a harness sampler under a pool, the runs that took a kept draw, out of the runs that looked for one
  (:func:`hsa.transform._on_harness_branch`); a record sampler draws every time.

The counters wrap a few thousand calls, so their cost is small against the leaves'. Nothing is asserted: it prints
the figures and ``main`` returns them. Which questions sent a run to a new draw is for the reader to find with these
figures in hand (docs/design-slot-plans.md, "Record samplers moved to the harness").
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from profile_record import input_arguments, load_inputs  # noqa: E402


def measure(args: argparse.Namespace) -> dict:
    from hsa import transform
    from hsa.pipeline import augment_record

    recipe, items = load_inputs(args)
    warm = min(args.warm, max(len(items) - 1, 0))
    spent: dict[str, float] = defaultdict(float)
    runs: dict[str, int] = defaultdict(int)
    kept: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # [kept draws taken, lookups]
    counting = [False]
    run_leaf, branch = transform._run_leaf, transform._on_harness_branch

    def timed_leaf(t, record, rng, applied, skipped):
        if not counting[0]:
            return run_leaf(t, record, rng, applied, skipped)
        start = time.process_time()
        try:
            return run_leaf(t, record, rng, applied, skipped)
        finally:
            spent[t.name] += time.process_time() - start
            runs[t.name] += 1

    def counted_branch(t, *a, **kw):
        out = branch(t, *a, **kw)
        if counting[0]:
            kept[t.name][0] += out[1]
            kept[t.name][1] += 1
        return out

    transform._run_leaf, transform._on_harness_branch = timed_leaf, counted_branch
    try:
        start = 0.0
        for i, it in enumerate(items):
            if i == warm:
                counting[0], start = True, time.process_time()
            augment_record(it, recipe, seed=0, variants=args.variants, keep_original=True,
                           exec_hooks=not args.no_exec_hooks, harness_pool=args.pool)
        total = time.process_time() - start
    finally:
        transform._run_leaf, transform._on_harness_branch = run_leaf, branch
    counted = len(items) - warm
    samplers = {t.name: "harness" if transform.on_harness(t) else "record" for t in recipe.leaves()}
    leaves = {}
    for name in sorted(spent, key=lambda n: -spent[n]):
        leaves[name] = {"sampler": samplers.get(name, "record"), "runs": runs[name],
                        "ms_per_record": 1000 * spent[name] / counted,
                        "kept": tuple(kept[name]) if name in kept else None}
    return {"records": counted, "warm": warm, "ms_per_record": 1000 * total / counted,
            "leaves_ms_per_record": 1000 * sum(spent.values()) / counted, "leaves": leaves}


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    input_arguments(p, records=3000)
    p.add_argument("--warm", type=int, default=2000, help="records run first and not counted")
    args = p.parse_args(argv)
    figures = measure(args)
    print(f"{figures['records']} records counted after {figures['warm']}: {figures['ms_per_record']:.2f} CPU ms a "
          f"record in all, {figures['leaves_ms_per_record']:.2f} in the leaves")
    print(f"{'leaf':28s} {'sampler':8s} {'runs':>7s} {'ms/record':>10s}  kept draws taken")
    for name, leaf in figures["leaves"].items():
        kept = "" if leaf["kept"] is None else f"{leaf['kept'][0]} of {leaf['kept'][1]}"
        print(f"{name:28s} {leaf['sampler']:8s} {leaf['runs']:7d} {leaf['ms_per_record']:10.3f}  {kept}")
    return figures


if __name__ == "__main__":
    main()
