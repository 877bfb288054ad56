"""Benchmark of ``--engine ray`` against ``--engine local`` with the same worker count.

    python benchmarks/bench_ray.py --records 20000 --workers 2 --out bench-ray.json

Measures, in one run on this machine (every timed run is a child ``hsa augment`` process, so
interpreter start, imports and, for Ray, starting and stopping a local Ray count):
- the default recipe, ``--variants 4``, ``--shard-size 1000``: the local engine with ``--workers W``
  and the Ray engine on a local Ray of W CPUs, alternated ``--repeat`` times; seconds, records/s and
  the overhead ratio (ray / local, best against best, and per pair); the shards of both runs are
  compared byte for byte; the load average around each run is kept (a shared machine drifts);
- Ray's fixed cost (start, the actors' set-up, stop) and its overhead per shard (the actors' calls and
  the task that puts the shard together), from the identity recipe (almost no work per record) at two
  shard sizes: few large shards against many small ones;
- the model for N machines of W CPUs: (the records' CPU-seconds + shards x the per-shard overhead) /
  (N x W) + the fixed cost, with the records' CPU-seconds taken from the Ray run here (a shard's lines
  are spread over every CPU, by harness).
Inputs are made by the fixture generator (each record with its own full harness, about 22 KB).
Nothing is asserted: it prints and saves numbers.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def make_input(n: int, path: Path, layout: str = "full") -> Path:
    """n generated records with distinct ids (the fixture generator, in seeded chunks of 2,000); ``layout``
    "public" keeps messages (no system message) and tools only, the shape of public function-calling datasets
    (xLAM, Hermes, Glaive rows as they are read in)."""
    if path.exists():
        return path
    sys.path.insert(0, str(ROOT))
    from fixtures.livestream.generate import generate

    with open(path, "w", encoding="utf-8") as f:
        for start in range(0, n, 2000):
            for rec in generate(min(2000, n - start), seed=start // 2000):
                rec["id"] = f"{rec['id']}-{start // 2000}"
                if layout == "public":
                    rec = {"id": rec["id"], "tools": rec["tools"],
                           "messages": [m for m in rec["messages"] if m["role"] != "system"]}
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return path


def load() -> float:
    """The 1-minute load average (the machine is shared: it says how busy it was around a run)."""
    return round(os.getloadavg()[0], 1)


LOADS: list[tuple[str, float, float]] = []


def run(args: list[str], label: str = "") -> float:
    """Seconds for one ``hsa augment`` child process (the load average before and after is kept in LOADS)."""
    before = load()
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "hsa.cli", "augment", *args, "--quiet", "--overwrite"], check=True,
                   cwd=ROOT)
    dt = time.perf_counter() - t
    LOADS.append((label, before, load()))
    print(f"  {label}: {dt:.1f} s (load {before} -> {LOADS[-1][2]})", flush=True)
    return dt


def shard_digests(out: Path) -> list[str]:
    return [hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.glob("shard-*.arrow"))]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=20000)
    p.add_argument("--workers", type=int, default=2, help="local worker processes = CPUs of the local Ray")
    p.add_argument("--variants", type=int, default=4)
    p.add_argument("--shard-size", type=int, default=1000)
    p.add_argument("--overhead-records", type=int, default=2000,
                   help="records of the identity-recipe runs that measure Ray's fixed and per-task cost")
    p.add_argument("--small-shard", type=int, default=10, help="shard size of the many-tasks run")
    p.add_argument("--skip-main", action="store_true", help="only the overhead runs")
    p.add_argument("--layout", choices=["full", "public"], default="full",
                   help="records of the main runs: full harnesses (about 22 KB each) or messages + tools only")
    p.add_argument("--repeat", type=int, default=1,
                   help="local/ray pairs of the main runs, alternated (on a shared machine the load drifts)")
    p.add_argument("--work", default=None, help="folder for inputs and outputs (default: a temp folder)")
    p.add_argument("--out", default=None, help="write the numbers as JSON here")
    a = p.parse_args()
    work = Path(a.work or tempfile.mkdtemp(prefix="hsa-bench-ray-"))
    work.mkdir(parents=True, exist_ok=True)
    w = str(a.workers)
    res: dict = {"records": a.records, "workers": a.workers, "variants": a.variants, "shard_size": a.shard_size,
                 "cpu": os.cpu_count()}

    if a.skip_main and a.out and Path(a.out).exists():  # keep the main runs of an earlier call
        earlier = json.loads(Path(a.out).read_text(encoding="utf-8"))
        res.update({k: earlier[k] for k in ("layout", "input_mib", "default") if k in earlier})
        LOADS.extend((r["run"], r["before"], r["after"]) for r in earlier.get("load_average", ())
                     if not r["run"].startswith("identity"))
    if not a.skip_main:
        inp = make_input(a.records, work / f"in-{a.records}-{a.layout}.jsonl", a.layout)
        res["layout"] = a.layout
        res["input_mib"] = round(inp.stat().st_size / 2**20, 1)
        common = [str(inp), "--variants", str(a.variants), "--shard-size", str(a.shard_size), "--workers", w]
        locals_, rays = [], []
        for i in range(a.repeat):
            locals_.append(run([*common, "--out", str(work / "local")], f"local {i + 1}"))
            rays.append(run([*common, "--out", str(work / "ray"), "--engine", "ray"], f"ray {i + 1}"))
        t_local, t_ray = min(locals_), min(rays)
        same = shard_digests(work / "local") == shard_digests(work / "ray")
        res["default"] = {"local_s": [round(t, 1) for t in locals_], "ray_s": [round(t, 1) for t in rays],
                          "local_records_per_s": round(a.records / t_local, 1),
                          "ray_records_per_s": round(a.records / t_ray, 1),
                          "overhead_ratio": round(t_ray / t_local, 3),
                          "pair_ratios": [round(r / lo, 3) for lo, r in zip(locals_, rays)],
                          "shards_identical": same, "shards": len(shard_digests(work / "ray"))}
        print(f"default recipe, {a.records} records ({a.layout}) x {a.variants} variants, {a.workers} workers: "
              f"local {t_local:.1f} s, ray {t_ray:.1f} s (best of {a.repeat}), ratio {t_ray / t_local:.3f}, "
              f"shards identical: {same}", flush=True)

    n = a.overhead_records
    inp = make_input(n, work / f"in-{n}.jsonl")
    base = [str(inp), "--recipe", "identity", "--variants", "1", "--workers", w]
    big, small = -(-n // a.workers), a.small_shard  # few shards: one per CPU
    t_local_id = run([*base, "--shard-size", str(big), "--out", str(work / "id-local")], "identity, local")
    tasks_big = -(-n // big)
    t_ray_big = run([*base, "--shard-size", str(big), "--out", str(work / "id-ray-1"), "--engine", "ray"],
                    f"identity, ray, {tasks_big} shards")
    t_ray_small = run([*base, "--shard-size", str(small), "--out", str(work / "id-ray-n"), "--engine", "ray"],
                      f"identity, ray, {-(-n // small)} shards")
    tasks_small = -(-n // small)
    per_task = (t_ray_small - t_ray_big) * a.workers / (tasks_small - tasks_big)
    res["overhead"] = {"records": n, "recipe": "identity", "local_s": round(t_local_id, 2),
                       "ray_few_tasks_s": round(t_ray_big, 2), "few_tasks": tasks_big,
                       "ray_many_tasks_s": round(t_ray_small, 2), "many_tasks": tasks_small,
                       "fixed_s": round(t_ray_big - t_local_id, 2), "per_task_cpu_s": round(per_task, 4)}
    print(f"identity recipe, {n} records: local {t_local_id:.2f} s; ray with {tasks_big} shards {t_ray_big:.2f} s "
          f"(fixed cost {t_ray_big - t_local_id:.2f} s); ray with {tasks_small} shards {t_ray_small:.2f} s "
          f"-> {per_task * 1000:.1f} ms of CPU per shard", flush=True)

    if "default" in res:
        fixed = res["overhead"]["fixed_s"]
        shards = res["default"]["shards"]
        # CPU-seconds of the records' own work on Ray, the shards' overhead taken out
        work_cpu = (min(res["default"]["ray_s"]) - fixed) * a.workers - shards * per_task
        res["model"] = {"records_cpu_s": round(work_cpu, 2), "machines": {}}
        for machines in (1, 2, 4, 8, 16):
            cpus = machines * a.workers
            est = (work_cpu + shards * per_task) / cpus + fixed  # a shard's lines are spread over every CPU
            res["model"]["machines"][machines] = round(est, 1)
        print("model, seconds for this input on N machines of", a.workers, "CPUs:", res["model"]["machines"])
    res["load_average"] = [{"run": label, "before": b, "after": e} for label, b, e in LOADS]
    if a.out:
        Path(a.out).write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
