"""The hsa-bench pool, built twice here and once from a fresh clone: the same sha256? and how long, how big.

    python benchmarks/bench_pool.py --out runs/bench-pool --docs docs/benchmark.md [--fresh-clone] [--workers N]

Builds the full pool (``hsa bench build``, the defaults: hsa-bench v1) into ``OUT/a`` and ``OUT/b`` in child
processes, timed as wall clock and peak memory (the machine is shared: times are upper bounds); with
``--fresh-clone``, also from ``git clone`` of this checkout's HEAD into ``OUT/clone`` run with the same interpreter
and installed dependencies (the clone's own code first on the path). Prints the sha256 of each build; with
``--docs``, writes the pool card (the ``pool`` block) and these measurements (the ``speed`` block) into that file.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def build(cwd: Path, out: Path, workers: int) -> dict:
    """One `hsa bench build` in a child process: its sha256, seconds, peak memory of the children (MiB)."""
    if out.exists():
        shutil.rmtree(out)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "hsa.cli", "bench", "build", "--out", str(out), "--quiet",
                           "--workers", str(workers)], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(cwd)})
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        raise SystemExit(f"build in {cwd} failed: {proc.stderr[-2000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"sha256": proc.stdout.split()[-1], "seconds": round(seconds, 1), "peak_mib": round(max(peak, before) / 1024),
            "where": str(cwd)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="runs/bench-pool")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--fresh-clone", action="store_true")
    p.add_argument("--docs")
    args = p.parse_args(argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    runs = [build(ROOT, out / "a", args.workers), build(ROOT, out / "b", args.workers)]
    if args.fresh_clone:
        clone = out / "clone"
        if clone.exists():
            shutil.rmtree(clone)
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        subprocess.run(["git", "checkout", "-q", head], cwd=clone, check=True)
        runs.append({**build(clone, out / "c", args.workers), "commit": head})
    card = json.loads((out / "a" / "bench.json").read_text())
    raw = 0
    with gzip.open(out / "a" / "rows.jsonl.gz", "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            raw += len(block)
    sizes = {n: (out / "a" / n).stat().st_size for n in ("bench.json", "items.jsonl", "rows.jsonl.gz", "rejects.jsonl")}
    for r in runs:
        print(f"{r['sha256']}  {r['seconds']:>7.1f} s  peak {r['peak_mib']} MiB  {r['where']}")
    same = len({r["sha256"] for r in runs}) == 1
    print("identical" if same else "DIFFERENT")
    if args.docs:
        from hsa.bench.docs import pool_markdown, write_block

        write_block(args.docs, "pool", pool_markdown(card))
        labels = ["build 1", "build 2"] + (["fresh clone"] if args.fresh_clone else [])
        lines = [f"Written by `python benchmarks/bench_pool.py --docs docs/benchmark.md"
                 f"{' --fresh-clone' if args.fresh_clone else ''}` on a shared 2-core machine (times are upper "
                 f"bounds), {args.workers} worker(s):", "",
                 "| build | sha256 | wall time | peak memory |", "|---|---|---:|---:|"]
        lines += [f"| {lab} | `{r['sha256'][:16]}…` | {r['seconds'] / 60:.1f} min | {r['peak_mib']} MiB |"
                  for lab, r in zip(labels, runs)]
        lines += ["", f"The {len(runs)} builds give {'the same sha256' if same else 'DIFFERENT sha256s'}. Pool size: "
                  f"rows.jsonl.gz {sizes['rows.jsonl.gz'] / 2**20:.1f} MiB ({raw / 2**20:.0f} MiB uncompressed), "
                  f"items.jsonl {sizes['items.jsonl'] / 2**20:.1f} MiB, {card['counts']['rows']:,} rows."]
        write_block(args.docs, "speed", "\n".join(lines) + "\n")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
