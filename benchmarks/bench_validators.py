"""The per-record call check (invariant 1): jsonschema against compiled validators, same verdicts, how fast.

    PYTHONPATH=. python benchmarks/bench_validators.py [--repeats 5] [--out validators.json]

On the corpus of ``tests/validator_cases.py`` (the test corpus's captured (schema, arguments) pairs, the public MCP
servers' schemas with example calls, and mutants of each), prints for each validator:

- how many verdicts differ from jsonschema's (the authority: :func:`hsa.invariants.validator_for`), with a few
  of the differing pairs;
- microseconds per call checked (over all pairs, and over the valid ones alone: the data path's calls validate,
  and a quick walk that leaves every "invalid" to jsonschema pays jsonschema's price there), validators made
  beforehand (what a slot plan pays per record: its validators
  are compiled once per harness variant), and per call with a validator made for each distinct schema (what a
  record with its own tools pays: the public layout);
- microseconds to make one validator (compile), per distinct schema.

CPU time (``time.process_time``), the fastest of ``--repeats`` passes: on a shared machine that moves less than
wall time, but still with the load (say which it was). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.validator_cases import VALIDATORS, corpus_pairs, verdicts, with_mutants  # noqa: E402


def _same(a, b) -> bool:
    """Verdicts agree: both valid, both invalid, or both unusable (an exception of any type)."""
    return (isinstance(a, str) and isinstance(b, str)) or a == b


def timings(name: str, pairs: list, repeats: int) -> dict:
    make, check = VALIDATORS[name]()
    schemas: dict[str, object] = {}
    for schema, _ in pairs:
        schemas.setdefault(json.dumps(schema), schema)
    best_make = float("inf")
    compiled: dict[str, object] = {}
    for _ in range(repeats):
        t = time.process_time()
        for key, schema in schemas.items():
            try:
                compiled[key] = make(schema)
            except Exception:  # noqa: BLE001 - an unusable schema: no validator, its calls are skipped below
                compiled[key] = None
        best_make = min(best_make, time.process_time() - t)
    work = [(compiled[json.dumps(s)], x) for s, x in pairs if compiled[json.dumps(s)] is not None]
    work = [(v, copy.deepcopy(x)) for v, x in work]
    best = float("inf")
    for _ in range(repeats):
        t = time.process_time()
        for v, x in work:
            try:
                check(v, x)
            except Exception:  # noqa: BLE001
                pass
        best = min(best, time.process_time() - t)
    return {"calls": len(work), "schemas": len(schemas), "us_per_call": round(1e6 * best / max(1, len(work)), 2),
            "us_per_compile": round(1e6 * best_make / max(1, len(schemas)), 1),
            "us_per_call_compiling_each_schema": round(1e6 * (best + best_make) / max(1, len(work)), 2)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--show", type=int, default=3, help="differing pairs shown per validator")
    p.add_argument("--out", default=None)
    a = p.parse_args()
    pairs = with_mutants(corpus_pairs())
    authority = verdicts("jsonschema", pairs)
    valid_pairs = [pair for pair, v in zip(pairs, authority) if v is True]  # the data path: calls that validate
    valid = sum(v is True for v in authority)
    print(f"{len(pairs)} pairs ({valid} valid, {sum(v is False for v in authority)} invalid, "
          f"{sum(isinstance(v, str) for v in authority)} unusable per jsonschema); load average "
          f"{os.getloadavg()[0]:.1f}")
    results: dict = {"pairs": len(pairs), "load_average": round(os.getloadavg()[0], 2), "validators": {}}
    for name in VALIDATORS:
        got = verdicts(name, pairs) if name != "jsonschema" else authority
        diff = [i for i, (x, y) in enumerate(zip(authority, got)) if not _same(x, y)]
        t = timings(name, pairs, a.repeats)
        tv = timings(name, valid_pairs, a.repeats)
        results["validators"][name] = {**t, "valid_only": tv, "differing_verdicts": len(diff),
                                       "examples": [{"schema": pairs[i][0], "arguments": pairs[i][1],
                                                     "jsonschema": authority[i], name: got[i]}
                                                    for i in diff[:a.show]]}
        print(f"{name:15s} {len(diff):5d} verdicts differ   {t['us_per_call']:8.2f} us a call "
              f"({tv['us_per_call']:.2f} on the valid ones)   {t['us_per_compile']:9.1f} us to make a validator   "
              f"{t['us_per_call_compiling_each_schema']:8.2f} us a call, making each "
              f"({tv['us_per_call_compiling_each_schema']:.2f} on the valid ones)", flush=True)
        for i in diff[:a.show]:
            print(f"    jsonschema {authority[i]!r:>8} {name} {got[i]!r:>8}: {json.dumps(pairs[i][0])[:160]} "
                  f"<- {json.dumps(pairs[i][1], default=repr)[:100]}")
    if a.out:
        Path(a.out).write_text(json.dumps(results, indent=1, default=repr) + "\n")


if __name__ == "__main__":
    main()
