"""Per-record cost of ``hsa augment`` in instructions (callgrind), which the machine's load cannot move.

    python benchmarks/bench_instructions.py --rows default_tool_shared,default_full_shared --sizes 100,300 \
        --work /tmp/hsa-instr --out instr.json

CPU seconds on a shared machine move by 20-100% with the load (docs/performance.md); an instruction count does
not. For each row of ``bench_augment.py`` (same inputs, made by the fixture generator, same recipe and options:
``--variants 4 --workers 1``) this runs ``hsa augment`` under ``valgrind --tool=callgrind --trace-children=yes`` on
the first N records of the row's input for each of two sizes, adds up the instructions of every process (the
augmenting process and what it starts, but the hook workers inside the sandbox: bubblewrap does not start under
valgrind, so it and its children run natively and are not counted), and reports from the two sizes the instructions per record
(the marginal cost, start-up excluded) and the start-up (the intercept: interpreter, imports, first caches).

Callgrind runs the program about 50 times slower, so keep the sizes small (the shared-harness rows need a
hundred records or so before every harness and pool slot has been seen: take the smaller size past that).
Nothing is asserted: it prints and saves numbers. Needs ``valgrind`` on the PATH (Debian: ``apt-get install
valgrind``).

``--tree DIR`` counts another checkout of hsa (an older commit: ``git worktree add DIR COMMIT``) on the inputs this
checkout's generator makes, so two trees are compared on the same records; since the count does not depend on the
load, the two can run at the same time, one per core::

    python benchmarks/bench_instructions.py --tree /tmp/before --work /tmp/instr --out before.json &
    python benchmarks/bench_instructions.py --work /tmp/instr --out after.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_augment import ROWS, make_input, public_layout  # noqa: E402
from side_by_side import callgrind, callgrind_total  # noqa: E402  (this folder: the script's own)


def input_of(kind: str, n: int, work: Path, harnesses: int) -> Path:
    """The first ``n`` records of ``bench_augment.py``'s input of ``kind`` (made as it makes them)."""
    if kind == "tool_shared":
        return make_input(n, work / f"in-{n}-tool-h{harnesses}.jsonl", harnesses, public_layout)
    if kind == "full_shared":
        return make_input(n, work / f"in-{n}-full-h{harnesses}.jsonl", harnesses)
    if kind == "public_own":
        return make_input(n, work / f"in-{n}-public.jsonl", shape=public_layout)
    return make_input(n, work / f"in-{n}-full.jsonl")


def instructions(args: list[str], work: Path, tree: Path = ROOT) -> int:
    """Instructions executed by ``hsa ARGS`` (the ``hsa`` of the checkout ``tree``) and every process it starts
    but the hook workers (:func:`side_by_side.callgrind`), added up."""
    out = Path(tempfile.mkdtemp(prefix="cg-", dir=work))
    code = "import runpy, sys; sys.argv = ['hsa'] + sys.argv[1:]; runpy.run_module('hsa.cli', run_name='__main__')"
    subprocess.run([*callgrind(out), sys.executable, "-c", code, *args],
                   check=True, cwd=tree, env={**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"})
    total = callgrind_total(out)
    shutil.rmtree(out, ignore_errors=True)
    return total


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", default=",".join(ROWS), help=f"rows to count (of {', '.join(ROWS)})")
    p.add_argument("--sizes", default="100,300", help="two record counts (the per-record cost is their slope)")
    p.add_argument("--row-sizes", default="", help="per-row sizes overriding --sizes, e.g. 'default_full_own=20,60'")
    p.add_argument("--variants", type=int, default=4)
    p.add_argument("--harnesses", type=int, default=8)
    p.add_argument("--augment-args", default="", help="extra options for every hsa augment")
    p.add_argument("--work", default=None)
    p.add_argument("--tree", type=Path, default=ROOT,
                   help="the checkout of hsa to count (default: this one); inputs are made by this one's generator")
    p.add_argument("--out", default=None)
    a = p.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not on the PATH: apt-get install valgrind")
    work = Path(a.work or tempfile.mkdtemp(prefix="hsa-instr-"))
    work.mkdir(parents=True, exist_ok=True)
    import compileall

    tree = a.tree.resolve()
    if not (tree / "hsa" / "__init__.py").is_file():
        raise SystemExit(f"{tree} is not a checkout of hsa (no hsa/__init__.py)")
    for pkg in ("hsa", "transforms"):  # as pip install does (bench_augment.py says why)
        compileall.compile_dir(str(tree / pkg), quiet=1)
    per_row = dict(kv.split("=", 1) for kv in a.row_sizes.split(";") if kv)
    results: dict = {"tree": str(tree), "variants": a.variants, "augment_args": a.augment_args, "rows": {}}
    for name in [r for r in a.rows.split(",") if r]:
        kind, recipe = ROWS[name]
        n0, n1 = (int(x) for x in per_row.get(name, a.sizes).split(","))
        counts = {}
        for n in (n0, n1):
            inp = input_of(kind, n, work, a.harnesses)
            out = work / f"out-{name}-{n}-{os.getpid()}"  # two trees counted at once write apart
            counts[n] = instructions(["augment", str(inp), "--out", str(out), "--variants",
                                      str(a.variants), "--recipe", recipe, "--workers", "1", "--quiet",
                                      "--overwrite", *a.augment_args.split()], work, tree)
            shutil.rmtree(out, ignore_errors=True)
        per = (counts[n1] - counts[n0]) / (n1 - n0)
        results["rows"][name] = {"sizes": [n0, n1], "instructions": [counts[n0], counts[n1]],
                                 "per_record": round(per), "start_up": round(counts[n0] - n0 * per)}
        print(f"{name:22s} {per / 1e6:9.2f} M instructions per record, start-up {(counts[n0] - n0 * per) / 1e9:6.2f} G "
              f"(sizes {n0}, {n1}: {counts[n0] / 1e9:.2f} G, {counts[n1] / 1e9:.2f} G)", flush=True)
    if a.out:
        Path(a.out).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
