"""Benchmark of the data path: I/O floor, recipes, worker scaling, peak memory.

    python benchmarks/bench_augment.py --records 2000 --memory-sizes 10000,100000 --out bench.json

Measures, in one run on this machine:
- the I/O floor: read the same JSONL and write the same number of rows (records x variants)
  to Arrow shards with the same encoder, no transform and no verification;
- ``hsa augment`` with the default recipe and with each family's preset alone
  (``--variants 4``, ``--workers 1`` like the floor): records/s, variants/s and the ratio to the floor;
- 1 vs 2 workers with the default recipe;
- the default recipe on records drawn from --harnesses shared harnesses (a log of a few
  deployments) against that input's own floor;
- the default recipe on the records reduced to messages + tools (the shape of public
  function-calling datasets such as xLAM or Hermes) against that input's own floor;
- peak memory (max RSS of the child process) at each of --memory-sizes records.
Inputs are made by the fixture generator; every timed run, the floor included, is a child
process, so interpreter start and imports count on both sides. Nothing is asserted: it prints and saves numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def public_layout(rec: dict) -> dict:
    """A generated record in the shape of a public function-calling dataset: messages (no system message)
    and tools only, the way xLAM, Hermes or Glaive rows read in."""
    return {"id": rec["id"], "tools": rec["tools"], "messages": [m for m in rec["messages"] if m["role"] != "system"]}


def make_input(n: int, path: Path, harnesses: int | None = None, shape=None) -> Path:
    """n generated records: each with its own harness, or drawn from ``harnesses`` shared ones; ``shape`` (e.g.
    :func:`public_layout`) rewrites each record."""
    if path.exists():
        return path
    from fixtures.livestream.generate import generate

    with open(path, "w", encoding="utf-8") as f:
        chunk = 2000
        for start in range(0, n, chunk):  # distinct ids: generate in seeded chunks
            for rec in generate(min(chunk, n - start), seed=start // chunk, harnesses=harnesses):
                rec["id"] = f"{rec['id']}-{start // chunk}"
                f.write(json.dumps(shape(rec) if shape else rec, ensure_ascii=False) + "\n")
    return path


def io_floor(inp: Path, out: Path, variants: int) -> float:
    """Seconds for a child process (interpreter start and imports included, as for ``hsa augment``) to read,
    parse and write records x variants rows with the pipeline's encoder."""
    t = time.perf_counter()
    subprocess.run([sys.executable, __file__, "--floor-only", str(inp), str(out), str(variants)], check=True, cwd=ROOT)
    return time.perf_counter() - t


def _floor_run(inp: Path, out: Path, variants: int) -> None:
    from hsa import _json
    from hsa.io import ShardFile, encode_row, iter_lines, write_dataset_metadata

    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    shard, k, n = None, 0, 0
    for item in iter_lines(inp):
        if n % 1000 == 0:
            if shard:
                shard.close()
            shard = ShardFile(out / f"shard-{k:05d}.arrow")
            k += 1
        raw = _json.loads(item.data)
        for v in range(1, variants + 1):
            row = {"id": f"{raw['id']}/{v}", "source_id": raw["id"], "variant": v, **raw,
                   "transforms": [], "mapping": {"version": 1, "steps": []}, "notes": []}
            shard.add(encode_row(row))
        n += 1
    if shard:
        shard.close()
    write_dataset_metadata(out, [f"shard-{i:05d}.arrow" for i in range(k)], "floor")


def run_cli(args: list[str]) -> tuple[float, int]:
    """Run ``hsa`` in a child process; (seconds, peak RSS of the child in MiB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "hsa.cli", *args, "--quiet", "--overwrite"], check=True, cwd=ROOT)
    dt = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return dt, max(peak, before) // 1024


def peak_rss(args: list[str]) -> int:
    """Peak RSS (MiB) of one ``hsa`` child, measured alone with /usr/bin/time semantics via wait4."""
    proc = subprocess.Popen([sys.executable, "-m", "hsa.cli", *args, "--quiet", "--overwrite"], cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"hsa {' '.join(args)} failed")
    return usage.ru_maxrss // 1024


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--floor-only":
        sys.path.insert(0, str(ROOT))
        _floor_run(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=2000, help="records for the throughput runs")
    p.add_argument("--variants", type=int, default=4)
    p.add_argument("--memory-sizes", default="10000,100000", help="record counts for the peak-memory runs ('' to skip)")
    p.add_argument("--memory-recipe", default="default",
                   help="recipe of the peak-memory runs (a cheaper one, e.g. identity, keeps 100k records short)")
    p.add_argument("--recipes", default="default,tools,skills,prompt,hooks",
                   help="recipes to time (missing ones are skipped)")
    p.add_argument("--harnesses", type=int, default=8,
                   help="also time the default recipe on records drawn from this many shared harnesses (0: skip)")
    p.add_argument("--public-layout", type=int, default=1,
                   help="also time the default recipe on the records reduced to messages + tools, the shape of "
                        "public function-calling datasets (0: skip)")
    p.add_argument("--work", default=None, help="folder for inputs and outputs (default: a temp folder)")
    p.add_argument("--out", default=None, help="write the numbers as JSON here")
    a = p.parse_args()
    sys.path.insert(0, str(ROOT))
    from hsa.recipes import builtin_recipes

    work = Path(a.work or tempfile.mkdtemp(prefix="hsa-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    inp = make_input(a.records, work / f"in-{a.records}.jsonl")
    results: dict = {"memory_recipe": a.memory_recipe, "records": a.records, "variants": a.variants, "cpu": os.cpu_count(),
                     "input_mib": round(inp.stat().st_size / 2**20, 1)}
    floor = io_floor(inp, work / "floor", a.variants)
    rows = a.records * a.variants
    results["io_floor"] = {"seconds": round(floor, 2), "records_per_s": round(a.records / floor, 1),
                           "rows_per_s": round(rows / floor, 1)}
    print(f"I/O floor: {floor:.2f}s  {a.records / floor:.0f} records/s  {rows / floor:.0f} rows/s")
    available = builtin_recipes()
    results["recipes"] = {}
    for name in a.recipes.split(","):
        if name not in available:
            print(f"recipe {name}: not built in, skipped")
            continue
        dt, _ = run_cli(["augment", str(inp), "--out", str(work / f"out-{name}"), "--variants", str(a.variants),
                         "--recipe", name, "--workers", "1"])
        results["recipes"][name] = {"seconds": round(dt, 2), "records_per_s": round(a.records / dt, 1),
                                    "variants_per_s": round(rows / dt, 1), "x_floor": round(dt / floor, 2)}
        print(f"recipe {name:10s} {dt:7.2f}s  {a.records / dt:7.0f} records/s  {rows / dt:7.0f} variants/s  "
              f"{dt / floor:5.2f}x floor")
    if a.harnesses:
        shared = make_input(a.records, work / f"in-{a.records}-h{a.harnesses}.jsonl", a.harnesses)
        sfloor = io_floor(shared, work / "floor-shared", a.variants)
        dt, _ = run_cli(["augment", str(shared), "--out", str(work / "out-shared"), "--variants", str(a.variants),
                         "--workers", "1"])
        results["shared_harnesses"] = {"harnesses": a.harnesses, "floor_seconds": round(sfloor, 2),
                                       "seconds": round(dt, 2), "records_per_s": round(a.records / dt, 1),
                                       "variants_per_s": round(rows / dt, 1), "x_floor": round(dt / sfloor, 2)}
        print(f"default recipe, {a.harnesses} shared harnesses: {dt:7.2f}s  {a.records / dt:7.0f} records/s  "
              f"{rows / dt:7.0f} variants/s  {dt / sfloor:5.2f}x its floor ({sfloor:.2f}s)")
    if a.public_layout:
        public = make_input(a.records, work / f"in-{a.records}-public.jsonl", shape=public_layout)
        pfloor = io_floor(public, work / "floor-public", a.variants)
        dt, _ = run_cli(["augment", str(public), "--out", str(work / "out-public"), "--variants", str(a.variants),
                         "--workers", "1"])
        results["public_layout"] = {"input_mib": round(public.stat().st_size / 2**20, 1),
                                    "floor_seconds": round(pfloor, 2), "seconds": round(dt, 2),
                                    "records_per_s": round(a.records / dt, 1), "variants_per_s": round(rows / dt, 1),
                                    "x_floor": round(dt / pfloor, 2)}
        print(f"default recipe, public layout (messages + tools): {dt:7.2f}s  {a.records / dt:7.0f} records/s  "
              f"{rows / dt:7.0f} variants/s  {dt / pfloor:5.2f}x its floor ({pfloor:.2f}s)")
    results["workers"] = {}
    for w in (1, 2):
        dt, _ = run_cli(["augment", str(inp), "--out", str(work / f"out-w{w}"), "--variants", str(a.variants),
                         "--workers", str(w)])
        results["workers"][w] = {"seconds": round(dt, 2), "variants_per_s": round(rows / dt, 1)}
        print(f"workers {w}: {dt:.2f}s  {rows / dt:.0f} variants/s")
    results["speedup_2_workers"] = round(results["workers"][1]["seconds"] / results["workers"][2]["seconds"], 2)
    print(f"2 workers / 1 worker speed-up: {results['speedup_2_workers']}x")
    results["peak_rss_mib"] = {}
    for n in [int(x) for x in a.memory_sizes.split(",") if x]:
        big = make_input(n, work / f"in-{n}.jsonl")
        mib = peak_rss(["augment", str(big), "--out", str(work / f"out-mem-{n}"), "--variants", str(a.variants),
                        "--workers", "2", "--recipe", a.memory_recipe])
        results["peak_rss_mib"][n] = mib
        print(f"peak RSS at {n} records ({a.memory_recipe} recipe, 2 workers): {mib} MiB")
    if a.out:
        Path(a.out).write_text(json.dumps(results, indent=2) + "\n")
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
