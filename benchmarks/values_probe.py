"""``tool.values``' draws on the harness against the record sampler it replaced, draw by draw.

    PYTHONPATH=. python benchmarks/values_probe.py [--commit 37cd96b] [--generated 400] [ROWS.jsonl ...]

The record sampler (``Values.sample(record, rng)`` as it was at ``--commit``, the last commit before it moved to
``sample_harness``) is read from git and run beside today's ``Values.sample`` (a draw on the record's harness through
:class:`hsa.transform.HarnessView` and :class:`hsa.transform.Facts`) with the same seed, on: every record of every
fixture file, the first 300 rows of each ROWS file, and ``--generated`` records drawn by :func:`hsa.testing.records`.
Each record is also tried with its user and tool texts naming the values of its schemas (plain words, numbers) and
with its calls dropped, under five configurations and four seeds. It prints the draws compared, how many differ
(with the first few) and how many were not a skip, and returns 1 when any differ. Nothing else is asserted.
"""

from __future__ import annotations

import argparse
import glob
import json
import random
import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def old_sampler(commit: str):
    """``Values.sample`` of ``transforms/tool.py`` at ``commit``, as a function ``(transform, record, rng)``, with the
    names it used in that module."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:transforms/tool.py"], check=True,
                            capture_output=True, text=True).stdout
    start = source.index("    def sample(self, record: Record, rng: random.Random) -> dict | Skip:\n"
                         "        if hooks_read_whole_input(record):")
    end = source.index("    @staticmethod\n    def _redraw", start)
    code = textwrap.dedent(source[start:end]).replace("def sample(self,", "def old_sample(self,", 1)
    import transforms.tool as T
    from hsa import _json
    from hsa.renames import hook_literals, record_words, text_fields
    from transforms import tool_functional as F
    from transforms._toolhooks import hooks_read_whole_input
    from transforms._toolschema import node_at, values_at

    scope = {"Record": dict, "random": random, "Skip": T.Skip, "_json": _json, "F": F, "hook_literals": hook_literals,
             "record_words": record_words, "text_fields": text_fields, "hooks_read_whole_input": hooks_read_whole_input,
             "node_at": node_at, "values_at": values_at, "_fresh": T._fresh, "_VALUE_TOKEN": T._VALUE_TOKEN,
             "RANDOM_STYLES": T.RANDOM_STYLES, "new_name": T.new_name, "_WHOLE_INPUT": T._WHOLE_INPUT}
    # this repository's own code at an earlier commit, run to compare with today's
    exec(compile("from __future__ import annotations\n" + code, f"{commit}:transforms/tool.py", "exec"), scope)  # noqa: S102
    return scope["old_sample"]


def trajectories(record: dict) -> list[dict]:
    """``record``, the same with its user and tool texts naming its schemas' values and some numbers, and the same
    without its calls."""
    from hsa.records import clone

    values = []
    for t in record["tools"]:
        values += re.findall(r'"([A-Za-z][A-Za-z0-9_\- ]{1,20})"', json.dumps(t["parameters"]))[:6]
    named = clone(record)
    for m in named["messages"]:
        if isinstance(m.get("content"), str) and m.get("role") in ("user", "tool"):
            m["content"] += " " + " ".join(values) + " 5 10 3.5 1.0"
    bare = clone(record)
    bare["messages"] = [m for m in bare["messages"] if not m.get("tool_calls")] or bare["messages"]
    return [record, named, bare]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("rows", nargs="*", help="JSONL files of rows in any layout hsa reads (their first 300 rows)")
    p.add_argument("--commit", default="37cd96b", help="the commit whose record sampler is the reference")
    p.add_argument("--generated", type=int, default=400, help="records drawn by hsa.testing.records")
    args = p.parse_args(argv)

    from hsa.records import RecordError, normalize
    from transforms.tool import Values

    old = old_sampler(args.commit)
    configs = [Values(), Values(p=1.0), Values(p=1.0, styles=("mask", "noun", "camel")),
               Values(modes=("default",), p=1.0), Values(modes=("enum",), p=0.7, styles=("mask",))]
    counts = {"draws": 0, "differ": 0, "not skipped": 0}

    def outcome(fn, *a):
        try:
            return repr(fn(*a))
        except Exception as exc:  # noqa: BLE001 - a raise is an outcome to compare like any other
            return f"raised {type(exc).__name__}: {exc}"

    def check(record: dict) -> None:
        for r in trajectories(record):
            for t in configs:
                for seed in range(4):
                    a = outcome(old, t, r, random.Random(seed))
                    b = outcome(t.sample, r, random.Random(seed))
                    counts["draws"] += 1
                    if a != b:
                        counts["differ"] += 1
                        if counts["differ"] <= 5:
                            print(f"differs: {r['id']} {t} seed {seed}\n  before {a[:300]}\n  now    {b[:300]}")
                    elif not a.startswith(("Skip(", "raised")):
                        counts["not skipped"] += 1

    def rows(path: str, limit: int | None = None):
        with open(path, encoding="utf-8") as fh:
            for i, line in enumerate(fh):
                if limit is not None and i >= limit:
                    return
                try:
                    yield normalize(json.loads(line))
                except (RecordError, ValueError):
                    continue

    for path in sorted(glob.glob(str(ROOT / "fixtures" / "**" / "*.jsonl"), recursive=True)):
        for record in rows(path):
            check(record)
    print(f"fixtures: {counts}")
    for path in args.rows:
        for record in rows(path, 300):
            check(record)
        print(f"{path}: {counts}")
    if args.generated:
        from hypothesis import HealthCheck, given, settings

        from hsa.testing import records

        @settings(max_examples=args.generated, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(records())
        def drawn(raw):
            try:
                record = normalize(raw)
            except RecordError:
                return
            check(record)

        drawn()
    print(f"all: {counts['draws']:,} draws, {counts['differ']} differ, {counts['not skipped']:,} not a skip")
    return 1 if counts["differ"] else 0


if __name__ == "__main__":
    sys.exit(main())
