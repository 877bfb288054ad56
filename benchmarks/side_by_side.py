"""Two checkouts of hsa timed side by side on one input: the comparison to trust on a machine whose speed drifts.

    python benchmarks/side_by_side.py BEFORE_TREE AFTER_TREE INPUT.jsonl [--pairs 4] [-- EXTRA AUGMENT ARGS]

A shared machine's speed can move by a third from one minute to the next, so two runs one after the other compare
the minutes as much as the code (docs/performance-history.md has examples of single runs 40% apart). This runs
``hsa augment INPUT --workers 1 --variants 4`` of each tree at the same time, one per CPU (pinned, the CPUs swapped
from one pair to the next), ``--pairs`` times, and prints each pair's CPU seconds (user + system of that run, from
its own resource usage), the means, in how many pairs the second tree was lower, and whether the two trees wrote
the same bytes (every shard, ``rejects.jsonl`` and ``state.json`` of the last pair: the manifest holds the command
line, so it is not compared). Each tree is run from its own folder with ``python -m hsa.cli``, so its own ``hsa``
and ``transforms`` are imported; their modules are byte-compiled first (``--no-compile``: not), so that neither
side pays for compiling. It asserts nothing about time; ``--json FILE`` writes the figures.

``--instructions``: count instructions instead (each run under ``valgrind --tool=callgrind``, every process it
starts included but the hook workers inside the sandbox, which bubblewrap starts natively, ``PYTHONHASHSEED=0`` on
both sides), a figure that the machine's load cannot move: two runs of one
tree differ by well under 0.1% (against 10-20% for CPU seconds on a shared machine), so one pair is enough and a
change of 1% is visible. It runs about 50 times slower: keep the input to a hundred records or so. Python
functions are not told apart by callgrind (they all run in the interpreter loop): use
``benchmarks/profile_record.py`` to find where the time goes, this to measure what a change did.

Example (the tree of a commit beside the working tree)::

    git worktree add /tmp/before HEAD~3
    python benchmarks/side_by_side.py /tmp/before . /tmp/bench/in-200-full-h8.jsonl --pairs 4
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run_pair(trees: list[Path], input_path: Path, outs: list[Path], cpus: list[int | None], python: str,
             extra: list[str], counts: list[Path] | None = None) -> list[dict]:
    """One run of each tree at once (tree k pinned to ``cpus[k]`` where given); each run's CPU and wall seconds,
    and with ``counts`` (a folder per tree) the instructions of the run and every process it started."""
    procs = []
    for k, (tree, out, cpu) in enumerate(zip(trees, outs, cpus)):
        cmd = [python, "-m", "hsa.cli", "augment", str(input_path), "--out", str(out), "--overwrite", "--quiet",
               "--workers", "1", "--variants", "4", *extra]
        env = None
        if counts is not None:
            counts[k].mkdir(parents=True, exist_ok=True)
            cmd = [*callgrind(counts[k]), *cmd]
            env = {**os.environ, "PYTHONHASHSEED": "0"}
        pin = (lambda c=cpu: os.sched_setaffinity(0, {c})) if cpu is not None else None
        procs.append((subprocess.Popen(cmd, cwd=tree, preexec_fn=pin, env=env), time.perf_counter()))
    results: dict[int, dict] = {}
    while len(results) < len(procs):
        pid, status, usage = os.wait4(-1, 0)
        for k, (p, t0) in enumerate(procs):
            if p.pid == pid:
                p.returncode = os.waitstatus_to_exitcode(status)
                results[k] = {"cpu": usage.ru_utime + usage.ru_stime, "wall": time.perf_counter() - t0,
                              "rc": p.returncode}
    for k, r in sorted(results.items()):
        if r["rc"] != 0:
            raise SystemExit(f"side_by_side: hsa augment in {trees[k]} exited with {r['rc']}")
    if counts is not None:
        for k in results:
            results[k]["instructions"] = callgrind_total(counts[k])
    return [results[k] for k in range(len(procs))]


def callgrind(folder: Path) -> list[str]:
    """The valgrind command line that counts a program's instructions and those of every process it starts, one
    callgrind file a process in ``folder`` (:func:`callgrind_total` adds them up). bubblewrap, the hook sandbox's
    outer layer, does not start under valgrind: it and the hook workers inside it run natively and are not
    counted."""
    return ["valgrind", "--tool=callgrind", "--trace-children=yes", "--trace-children-skip=*bwrap*", "-q",
            f"--callgrind-out-file={folder}/cg.%p"]


def callgrind_total(folder: Path) -> int:
    """The instructions of every callgrind output file in ``folder`` (one a process), added up; the files go."""
    total = 0
    for f in sorted(folder.glob("cg.*")):
        with open(f, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith(("summary:", "totals:")):  # the process's whole count, once a file
                    total += int(line.split()[1])
                    break
        f.unlink()
    return total


def same_output(a: Path, b: Path) -> tuple[bool, list[str]]:
    """Whether two output folders hold the same shards, rejects and state (the manifest names the command line);
    the files that differ or are missing on one side."""
    names = sorted({p.name for d in (a, b) for p in d.iterdir()
                    if p.suffix == ".arrow" or p.name in ("rejects.jsonl", "state.json")})
    differ = [n for n in names if not ((a / n).exists() and (b / n).exists() and filecmp.cmp(a / n, b / n, shallow=False))]
    return not differ, differ


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        k = argv.index("--")
        argv, extra = argv[:k], argv[k + 1:]
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("before", type=Path, help="the first tree (a checkout of hsa)")
    p.add_argument("after", type=Path, help="the second tree")
    p.add_argument("input", type=Path, help="the JSONL input both augment")
    p.add_argument("--pairs", type=int, default=4)
    p.add_argument("--python", default=sys.executable, help="the interpreter of both runs (default: this one)")
    p.add_argument("--no-compile", action="store_true", help="do not byte-compile the trees' modules first")
    p.add_argument("--json", type=Path, help="also write the figures to this file")
    p.add_argument("--instructions", action="store_true",
                   help="count instructions under callgrind instead of timing (load-free; about 50x slower)")
    args = p.parse_args(argv)
    if args.instructions and shutil.which("valgrind") is None:
        p.error("--instructions needs valgrind on the PATH (Debian: apt-get install valgrind)")
    trees = [args.before.resolve(), args.after.resolve()]
    for t in trees:
        if not (t / "hsa" / "__init__.py").is_file():
            p.error(f"{t} is not a checkout of hsa (no hsa/__init__.py)")
    if not args.input.is_file():
        p.error(f"{args.input} does not exist")
    if args.pairs < 1:
        p.error("--pairs must be at least 1")
    if not args.no_compile:
        for t in trees:
            subprocess.run([args.python, "-m", "compileall", "-q", "hsa", "transforms"], cwd=t, check=True,
                           stdout=subprocess.DEVNULL)
    allowed = sorted(os.sched_getaffinity(0))
    work = Path(tempfile.mkdtemp(prefix="hsa-side-by-side-"))
    outs = [work / "before", work / "after"]
    rows = []
    for i in range(args.pairs):
        cpus = [allowed[0], allowed[1]] if len(allowed) >= 2 else [None, None]
        if i % 2:
            cpus.reverse()
        a, b = run_pair(trees, args.input.resolve(), outs, cpus, args.python, extra,
                        [work / "count-before", work / "count-after"] if args.instructions else None)
        rows.append({"before": a, "after": b, "cpus": cpus})
        if args.instructions:
            print(f"pair {i + 1}: before {a['instructions'] / 1e9:.4f} G instructions   after "
                  f"{b['instructions'] / 1e9:.4f} G ({b['instructions'] / a['instructions'] - 1:+.2%})", flush=True)
        else:
            print(f"pair {i + 1}: before {a['cpu']:.2f} s CPU ({a['wall']:.2f} wall)   after {b['cpu']:.2f} s CPU "
                  f"({b['wall']:.2f} wall)", flush=True)
    same, differ = same_output(*outs)
    unit, scale, fmt = ("G instructions", 1e9, ".4f") if args.instructions else ("s CPU", 1.0, ".2f")
    before = [r["before"]["instructions" if args.instructions else "cpu"] / scale for r in rows]
    after = [r["after"]["instructions" if args.instructions else "cpu"] / scale for r in rows]
    lower = sum(y < x for x, y in zip(before, after))
    print(f"before: {min(before):{fmt}}-{max(before):{fmt}} {unit}, mean {statistics.mean(before):{fmt}}")
    print(f"after:  {min(after):{fmt}}-{max(after):{fmt}} {unit}, mean {statistics.mean(after):{fmt}} "
          f"({statistics.mean(after) / statistics.mean(before) - 1:+.2%}); lower in {lower} of {len(rows)} pairs")
    print("output: the same bytes" if same else f"output: DIFFERENT ({', '.join(differ)})")
    if args.json:
        args.json.write_text(json.dumps({"trees": [str(t) for t in trees], "input": str(args.input), "extra": extra,
                                         "pairs": rows, "same_output": same, "differ": differ}, indent=1) + "\n",
                             encoding="utf-8")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
