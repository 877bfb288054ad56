"""Capture every (tool schema, call arguments) pair that invariant 1 checks while some tests run: a pytest plugin.

    HSA_CAPTURE_PAIRS=/tmp/pairs.jsonl .venv/bin/python -m pytest -q -p no:randomly -n 0 \
        -p benchmarks.capture_validation_pairs tests/test_records_layouts.py tests/test_records.py ...
    python benchmarks/capture_validation_pairs.py /tmp/pairs.jsonl --out tests/data/validation_pairs.jsonl

The per-record call check (:func:`hsa.invariants.check_record`, on every source and every variant) asks
:func:`hsa.invariants.quick_valid` first and jsonschema after it; this plugin wraps the module's ``quick_valid``
and appends each top-level ``(schema, arguments)`` it is asked, as one JSON line, to ``$HSA_CAPTURE_PAIRS``.
Run over the tests that read the public layouts and the transforms' tests, it collects the schemas and calls of
the test corpus as the data path sees them (after normalisation and after each transform), which
``tests/test_validators_differential.py`` and ``benchmarks/bench_validators.py`` read. The second form dedupes
the lines (exact JSON: key order, ``1`` / ``1.0``) and keeps at most ``--limit`` of them, spread over the file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

_DEPTH = [0]


def _install() -> None:
    path = os.environ.get("HSA_CAPTURE_PAIRS")
    if not path:
        return
    from hsa import invariants

    inner = invariants.quick_valid
    out = open(path, "a", encoding="utf-8")  # noqa: SIM115 - kept open for the whole session

    def quick_valid(schema, instance):
        if _DEPTH[0] == 0:  # a top-level call of check_record; the walk's own recursion is not a pair
            try:
                out.write(json.dumps([schema, instance], ensure_ascii=False) + "\n")
            except (TypeError, ValueError):  # not JSON (a set in a record built in code): not a data-path pair
                pass
        _DEPTH[0] += 1
        try:
            return inner(schema, instance)
        finally:
            _DEPTH[0] -= 1

    invariants.quick_valid = quick_valid


_install()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("captured")
    p.add_argument("--out", required=True)
    p.add_argument("--limit", type=int, default=4000)
    a = p.parse_args()
    seen: dict[str, None] = {}
    with open(a.captured, encoding="utf-8") as fh:
        for line in fh:
            seen.setdefault(line.rstrip("\n"), None)
    lines = list(seen)
    if len(lines) > a.limit:  # every k-th: the tests' order keeps each file's pairs together
        step = len(lines) / a.limit
        lines = [lines[int(i * step)] for i in range(a.limit)]
    with open(a.out, "w", encoding="utf-8") as fh:
        fh.writelines(line + "\n" for line in lines)
    print(f"{len(seen)} distinct pairs, {len(lines)} written to {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
