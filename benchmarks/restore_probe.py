"""Where the restore step's time goes, and whether reading a variant back (``_as_written``) changes its content.

    python benchmarks/restore_probe.py INPUT.jsonl [--variants 4]

Runs ``hsa augment`` in this process with :func:`hsa.renames.with_restore` and its three parts timed (read back,
undo, patch) and counts the variants whose read-back differs from the variant in a harness key or in its messages,
then prints the totals, the slot plans' kept restore results (undone harness parts and patches, by kind) and the
hits of ``patch.str_edits``. The input for step 5 of docs/design-slot-plans.md (restore from
the plan): how much of a record's time the restore is, and how often the read-back is needed at all. The timers
add their own overhead; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

HARNESS_KEYS = ("tools", "skills", "skill_tool", "hooks", "prompt")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("input")
    p.add_argument("--variants", type=int, default=4)
    a = p.parse_args(argv)

    import hsa.renames as renames
    from hsa import cache
    from hsa.context import current
    from hsa.cli import main as hsa_main

    seconds: Counter = Counter()
    counts: Counter = Counter()

    def timed(name, fn):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                seconds[name] += time.perf_counter() - start
                counts[name] += 1
        return wrapper

    read_back = renames._as_written

    def as_written(record, *args, **kwargs):
        out = read_back(record, *args, **kwargs)
        for k in HARNESS_KEYS:
            if (k in record) != (k in out) or (k in record and record[k] != out[k]):
                counts[f"read-back changes {k}"] += 1
        if record["messages"] != out["messages"]:
            counts["read-back changes messages"] += 1
        return out

    renames._as_written = timed("read back", as_written)
    renames._undo_from = timed("undo", renames._undo_from)
    renames._content_patch = timed("patch", renames._content_patch)
    renames.with_restore = timed("restore (all)", renames.with_restore)  # hsa.transform imports it at each call
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        rc = hsa_main(["augment", a.input, "--out", out, "--variants", str(a.variants), "--workers", "1", "--quiet"])
        total = time.perf_counter() - start
    kept = Counter(k[0] for plan in current().plans for k in plan.memo)
    print(json.dumps({"exit": rc, "run_s": round(total, 2), "seconds": {k: round(v, 2) for k, v in seconds.items()},
                      "counts": dict(counts), "kept in plans": dict(kept),
                      "caches": {k: v for k, v in cache.stats().items() if k == "patch.str_edits"}},
                     indent=1))
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
