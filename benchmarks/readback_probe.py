"""Which parts of a variant change when it is read back through its row (``hsa.renames._as_written``), per transform.

    python benchmarks/readback_probe.py [--per-file 40] [--generated 100] [--seeds 2]

Runs every registered leaf of the tool, skill, prompt, hook and trajectory families, and the ``default``,
``hammer``, ``skills``, ``hooks`` and ``prompt`` recipes, on the first records of every fixture file and on
records drawn by ``hsa.testing.strategies.records``; for each variant that applied something, compares the
variant with its read-back key by key (:data:`hsa.renames.CONTENT_KEYS`, exact reprs) and in how it is written
(``_fmt`` but the source id). The input for step 5 of docs/design-slot-plans.md: which half of the restore's
read-back a slot plan could do once (the harness's) and which it could skip (a trajectory that never changes).
It asserts nothing.
"""

from __future__ import annotations

import argparse
import glob
import json
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _records(per_file: int, generated: int) -> list[tuple[str, dict]]:
    from hypothesis import HealthCheck, given, settings

    from hsa.invariants import check_record
    from hsa.records import RecordError, normalize
    from hsa.testing.strategies import records

    out = []
    for f in sorted(glob.glob(str(ROOT / "fixtures" / "**" / "*.jsonl"), recursive=True)):
        with open(f, encoding="utf-8") as fh:
            for i, line in enumerate(fh):
                if i >= per_file:
                    break
                try:
                    r = normalize(json.loads(line))
                except (RecordError, ValueError):
                    continue
                if not check_record(r):
                    out.append((str(Path(f).relative_to(ROOT)), r))

    @settings(max_examples=generated, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(records(max_tools=3, hooks=True))
    def draw(raw):
        try:
            r = normalize(raw)
        except RecordError:
            return
        if not check_record(r):
            out.append(("generated", r))

    if generated:
        draw()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--per-file", type=int, default=40, help="records read from each fixture file")
    p.add_argument("--generated", type=int, default=100, help="records drawn by hsa.testing.strategies.records")
    p.add_argument("--seeds", type=int, default=2)
    a = p.parse_args(argv)
    warnings.filterwarnings("ignore")

    import transforms  # noqa: F401 - registers the built-in families
    from hsa.pipeline.record import rng_for
    from hsa.recipes import load_recipe
    from hsa.renames import CONTENT_KEYS, _as_written, content_of
    from hsa.transform import Combinator, registry, run

    recs = _records(a.per_file, a.generated)
    leaves = [cls() for name, cls in registry().items()
              if not issubclass(cls, Combinator) and name.split(".")[0] in ("tool", "skill", "prompt", "hook",
                                                                             "trajectory")]
    recipes = [(n, load_recipe(n)) for n in ("default", "hammer", "skills", "hooks", "prompt")]
    seen: Counter = Counter()
    diffs: Counter = Counter()
    example: dict = {}
    t0 = time.perf_counter()
    for where, r in recs:
        for name, t in [(leaf.name, leaf) for leaf in leaves] + recipes:
            for seed in range(a.seeds):
                try:
                    v, applied, _ = run(t, r, rng_for(seed, r["id"], 1))
                except Exception:  # noqa: BLE001 - a leaf that raises is the property suite's business
                    continue
                if not applied:
                    continue
                seen[name] += 1
                back = _as_written(v)
                mine, theirs = content_of(v), content_of(back)
                keys = [k for k in CONTENT_KEYS if repr(mine.get(k)) != repr(theirs.get(k))]
                fmt = {k: x for k, x in v["_fmt"].items() if k != "source_id"}
                fmt_back = {k: x for k, x in back["_fmt"].items() if k != "source_id"}
                if fmt != fmt_back:
                    keys.append(f"_fmt {sorted(set(fmt.items()) ^ set(fmt_back.items()))}")
                for k in keys:
                    diffs[(name, k)] += 1
                    example.setdefault((name, k), f"{where} {r['id']}")
    n_gen = sum(w == "generated" for w, _ in recs)
    print(f"{len(recs)} records ({len(recs) - n_gen} of the fixtures, {n_gen} generated), {sum(seen.values())} "
          f"variants of {len(seen)} transforms and recipes, {time.perf_counter() - t0:.0f} s")
    for (name, k), n in sorted(diffs.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {name:24s} {n:5d} of {seen[name]:5d}  {k}  (e.g. {example[(name, k)]})")
    print("no variant changed on reading back" if not diffs else f"{sum(diffs.values())} differences")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
