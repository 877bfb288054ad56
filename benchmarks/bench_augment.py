"""Benchmark of the data path: the I/O floor, the rows of issue 18's table, worker scaling, peak memory.

    python benchmarks/bench_augment.py --records 1000 --repeats 3 --out bench.json

Measures, in one run on this machine (every number is the median of ``--repeats`` runs):
- the I/O floor of each input: read the JSONL and write the same number of rows (records x variants)
  to Arrow shards with the same encoder, no transform and no verification;
- ``hsa augment`` (``--variants 4``, ``--workers 1`` like the floor) on each row of the table:

  ============  ====================================================================
  row           input and recipe
  ============  ====================================================================
  identity_tool_shared   tool-only records (messages + tools) from --harnesses shared harnesses, identity recipe
  default_tool_shared    the same input, default recipe
  default_full_shared    full-harness records (tools, skills, prompt, hooks) from --harnesses shared harnesses
  default_public         tool-only records, each with its own tools (the public function-calling layout)
  default_full_own       full-harness records, each with its own harness
  ============  ====================================================================

  and the ratio of each to its own input's floor, measured in the same run, in wall seconds and in CPU seconds
  (user + system of the child and every process it waited for: the sandbox, the workers), which move much
  less than wall seconds on a machine shared with other work; the load average is saved with each row;
- with ``--scale-records N``, every row and floor again at N records, and from the two sizes the start-up and
  per-record CPU of each: a ratio at a few hundred records is mostly interpreter start and imports on both
  sides, the per-record ratio is what the ratio tends to on a long input;
- 1 vs 2 workers with the default recipe on the full-harness shared input;
- peak memory (max RSS of the largest process) at each of --memory-sizes records;
- beside each row, the peer: the CPU per record of Hammer's own function masking on the same records and variants
  (``benchmarks/peers/hammer.py``: its code as its authors wrote it, in this process, prompts included, not
  verified; ``--no-peer`` to skip), so the distance to the peer is in the same table.

Inputs are made by the fixture generator; every timed run, the floor included, is a child
process, so interpreter start and imports count on both sides. The checkout's packages are byte-compiled
first (``compileall``), as ``pip install`` does: a checkout run with ``PYTHONDONTWRITEBYTECODE`` set (this
project's machines set it) would otherwise compile every hsa module from source at each start, about 0.1 s
that no installed hsa pays (``--no-compile`` keeps that cost). ``--augment-args`` passes
extra options to every ``hsa augment`` (e.g. ``--harness-pool 0``). Nothing is asserted:
it prints and saves numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import statistics
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
    """n generated records: each with its own harness, or drawn from ``harnesses`` shared ones (the same
    ones in every chunk of 2,000); ``shape`` (e.g. :func:`public_layout`) rewrites each record."""
    if path.exists():
        return path
    from fixtures.livestream.generate import generate

    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        chunk = 2000
        for start in range(0, n, chunk):  # distinct ids: generate in seeded chunks
            seed = start // chunk
            recs = generate(min(chunk, n - start), seed=seed, harnesses=harnesses) if not harnesses else \
                _shared_chunk(min(chunk, n - start), seed, harnesses)
            for rec in recs:
                rec["id"] = f"{rec['id']}-{seed}"
                f.write(json.dumps(shape(rec) if shape else rec, ensure_ascii=False) + "\n")
    os.replace(tmp, path)
    return path


def _shared_chunk(n: int, seed: int, harnesses: int) -> list[dict]:
    """n records of the ``harnesses`` harnesses of seed 0 (so a long input keeps a few harnesses), with the
    conversations of ``seed``."""
    import random

    from fixtures.livestream.generate import make_harness, make_record

    shared = [make_harness(random.Random(f"0-harness-{k}")) for k in range(harnesses)]
    rng = random.Random(seed)
    return [json.loads(json.dumps(make_record(rng, i, seed, shared[i % harnesses]))) for i in range(1, n + 1)]


#: CPU seconds (user + system) of the last child run (:func:`io_floor`, :func:`run_cli`) and of every process it
#: waited for: on a machine shared with other work the wall time moves with the load, the CPU time much less.
LAST_CPU = [0.0]


def _child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def io_floor(inp: Path, out: Path, variants: int) -> float:
    """Seconds for a child process (interpreter start and imports included, as for ``hsa augment``) to read,
    parse and write records x variants rows with the pipeline's encoder."""
    t, c = time.perf_counter(), _child_cpu()
    subprocess.run([sys.executable, __file__, "--floor-only", str(inp), str(out), str(variants)], check=True, cwd=ROOT)
    LAST_CPU[0] = _child_cpu() - c
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


#: Run in the child: ``hsa`` with the arguments, then the peak RSS (KiB) of its largest process written to the file
#: ``HSA_BENCH_RSS`` names. The child's own peak is its memory map's high-water mark (``VmHWM``), not
#: ``RUSAGE_SELF``: a child starts as a copy of this process (fork or vfork, then exec), and Linux keeps the
#: high-water mark of the memory it had before its exec, this benchmark's own, in its ``ru_maxrss`` (this benchmark,
#: grown by the inputs it generated, read 328 MiB for a run whose own peak was 253). With several workers the largest
#: worker's is ``RUSAGE_CHILDREN`` of the child (forked, they share its pages: their peak is their own).
_RUN_CODE = """\
import resource, runpy, sys
sys.argv = ['hsa'] + sys.argv[1:]
try:
    runpy.run_module('hsa.cli', run_name='__main__')
finally:
    try:
        own = next(int(line.split()[1]) for line in open('/proc/self/status') if line.startswith('VmHWM:'))
    except (OSError, StopIteration):  # not Linux
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    r = max(own, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    open(__import__('os').environ['HSA_BENCH_RSS'], 'w').write(str(r))
"""


def run_cli(args: list[str]) -> tuple[float, int]:
    """Run ``hsa`` in a child process; (seconds, peak RSS in MiB of its largest process: the child itself or,
    with several workers, the largest worker; see :data:`_RUN_CODE`)."""
    code = _RUN_CODE
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        t, c = time.perf_counter(), _child_cpu()
        subprocess.run([sys.executable, "-c", code, *args, "--quiet", "--overwrite"], check=True, cwd=ROOT,
                       env={**os.environ, "HSA_BENCH_RSS": rss.name})
        dt = time.perf_counter() - t
        LAST_CPU[0] = _child_cpu() - c
        peak = int(open(rss.name).read() or 0) // 1024
    return dt, peak


def median_of(n: int, fn, cpu: list | None = None) -> tuple[float, list[float]]:
    """The median of ``n`` runs of ``fn`` (seconds) and the runs; ``cpu`` collects each run's :data:`LAST_CPU`."""
    times = []
    for _ in range(n):
        times.append(fn())
        if cpu is not None:
            cpu.append(LAST_CPU[0])
    return statistics.median(times), times


def _scale_row(a, big: Path, cpu_small: float, floor_small: float, augment_args, recipe: str,
               name: str, work: Path) -> dict:
    """A row timed again at ``--scale-records`` (one run each, CPU seconds): with the ``--records`` run, the
    start-up and per-record CPU of ``hsa augment`` and of its floor, and their per-record ratio."""
    n0, n1 = a.records, a.scale_records
    floor_big = (io_floor(big, work / f"floor-scale-{name}", a.variants), LAST_CPU[0])[1]
    run_cli(augment_args(big, recipe, f"out-scale-{name}"))
    cpu_big = LAST_CPU[0]
    per, fper = (cpu_big - cpu_small) / (n1 - n0), (floor_big - floor_small) / (n1 - n0)
    return {"records": n1, "cpu_seconds": round(cpu_big, 3), "floor_cpu_seconds": round(floor_big, 3),
            "ms_per_record": round(1000 * per, 4), "floor_ms_per_record": round(1000 * fper, 4),
            "x_floor_per_record": round(per / fper, 2) if fper > 0 else None,
            "start_s": round(cpu_small - n0 * per, 3), "floor_start_s": round(floor_small - n0 * fper, 3),
            "load_average": round(_load(), 2)}


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


ROWS = {  # row -> (input, recipe)
    "identity_tool_shared": ("tool_shared", "identity"),
    "default_tool_shared": ("tool_shared", "default"),
    "default_full_shared": ("full_shared", "default"),
    "default_public": ("public_own", "default"),
    "default_full_own": ("full_own", "default"),
}


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--floor-only":
        sys.path.insert(0, str(ROOT))
        _floor_run(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=1000, help="records for the throughput runs")
    p.add_argument("--scale-records", type=int, default=0,
                   help="also time every row and floor at this many records (once each) and report, from the two "
                        "sizes, the start-up and per-record CPU of each and the per-record ratio: what the ratio "
                        "tends to on a long input, where start-up no longer counts (0: skip)")
    p.add_argument("--variants", type=int, default=4)
    p.add_argument("--repeats", type=int, default=3, help="runs of each measurement; the median is reported")
    p.add_argument("--harnesses", type=int, default=8, help="shared harnesses of the shared inputs")
    p.add_argument("--rows", default=",".join(ROWS), help=f"rows to time (of {', '.join(ROWS)})")
    p.add_argument("--workers-row", default="default_full_shared",
                   help="the row timed with 1 and 2 workers ('' to skip)")
    p.add_argument("--memory-sizes", default="10000,100000", help="record counts for the peak-memory runs ('' to skip)")
    p.add_argument("--memory-row", default="default_tool_shared",
                   help="the row (input and recipe) of the peak-memory runs")
    p.add_argument("--memory-workers", type=int, default=1)
    p.add_argument("--augment-args", default="", help="extra options for every hsa augment, e.g. '--harness-pool 0'")
    p.add_argument("--work", default=None, help="folder for inputs and outputs (default: a temp folder)")
    p.add_argument("--out", default=None, help="write the numbers as JSON here")
    p.add_argument("--no-peer", action="store_true", help="do not time Hammer's masking beside each row")
    p.add_argument("--no-compile", action="store_true",
                   help="do not byte-compile the checkout's packages first (each child then compiles what it imports)")
    a = p.parse_args()
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks" / "peers"))
    import hammer as peer_hammer

    extra = shlex.split(a.augment_args)

    work = Path(a.work or tempfile.mkdtemp(prefix="hsa-bench-"))
    work.mkdir(parents=True, exist_ok=True)

    def input_of(kind: str, n: int) -> Path:
        if kind == "tool_shared":
            return make_input(n, work / f"in-{n}-tool-h{a.harnesses}.jsonl", a.harnesses, public_layout)
        if kind == "full_shared":
            return make_input(n, work / f"in-{n}-full-h{a.harnesses}.jsonl", a.harnesses)
        if kind == "public_own":
            return make_input(n, work / f"in-{n}-public.jsonl", shape=public_layout)
        return make_input(n, work / f"in-{n}-full.jsonl")

    def augment_args(inp: Path, recipe: str, out: str, workers: int = 1) -> list[str]:
        return ["augment", str(inp), "--out", str(work / out), "--variants", str(a.variants), "--recipe", recipe,
                "--workers", str(workers), *extra]

    if not a.no_compile:  # what pip install does; PYTHONDONTWRITEBYTECODE only stops the import system writing them
        import compileall

        for pkg in ("hsa", "transforms"):
            compileall.compile_dir(str(ROOT / pkg), quiet=1)
    rows = a.records * a.variants
    results: dict = {"records": a.records, "variants": a.variants, "repeats": a.repeats, "cpu": os.cpu_count(),
                     "augment_args": a.augment_args, "load_average_start": round(_load(), 2),
                     "byte_compiled": not a.no_compile, "floors": {}, "rows": {}}
    floors: dict[str, float] = {}
    floor_cpu: dict[str, float] = {}
    peers: dict[str, dict] = {}  # input kind -> Hammer's masking on its records (benchmarks/peers/hammer.py)
    for name in [r for r in a.rows.split(",") if r]:
        kind, recipe = ROWS[name]
        inp = input_of(kind, a.records)
        if kind not in floors:
            cpu: list[float] = []
            floors[kind], times = median_of(a.repeats, lambda: io_floor(inp, work / f"floor-{kind}", a.variants), cpu)
            floor_cpu[kind] = statistics.median(cpu)
            results["floors"][kind] = {"seconds": round(floors[kind], 3), "runs": [round(t, 3) for t in times],
                                       "cpu_seconds": round(floor_cpu[kind], 3),
                                       "input_mib": round(inp.stat().st_size / 2**20, 1)}
            print(f"I/O floor {kind:12s} {floors[kind]:7.2f}s  cpu {floor_cpu[kind]:6.2f}s  "
                  f"runs {[round(t, 2) for t in times]}", flush=True)
        cpu = []
        dt, times = median_of(a.repeats, lambda: run_cli(augment_args(inp, recipe, f"out-{name}"))[0], cpu)
        c = statistics.median(cpu)
        results["rows"][name] = {"input": kind, "recipe": recipe, "seconds": round(dt, 3),
                                 "runs": [round(t, 3) for t in times], "variants_per_s": round(rows / dt, 1),
                                 "x_floor": round(dt / floors[kind], 2), "cpu_seconds": round(c, 3),
                                 "x_floor_cpu": round(c / floor_cpu[kind], 2), "load_average": round(_load(), 2)}
        print(f"{name:22s} {dt:7.2f}s  {rows / dt:7.0f} variants/s  {dt / floors[kind]:5.2f}x floor  "
              f"cpu {c:6.2f}s {c / floor_cpu[kind]:5.2f}x  runs {[round(t, 2) for t in times]}  "
              f"load {_load():.1f}", flush=True)
        if a.scale_records and a.scale_records != a.records:
            results["rows"][name]["scale"] = scale = _scale_row(a, input_of(kind, a.scale_records), c,
                                                               floor_cpu[kind], augment_args, recipe, name, work)
            print(f"{'':22s} at {a.scale_records} records: cpu {scale['cpu_seconds']:.2f}s (floor "
                  f"{scale['floor_cpu_seconds']:.2f}s); per record {scale['ms_per_record']:.3f} ms (floor "
                  f"{scale['floor_ms_per_record']:.3f} ms): {scale['x_floor_per_record']:.1f}x; start-up "
                  f"{scale['start_s']:.2f}s (floor {scale['floor_start_s']:.2f}s)", flush=True)
        if not a.no_peer:
            if kind not in peers:
                peers[kind] = peer_hammer.ms_per_record(peer_hammer.read_rows(inp, a.records), a.variants, a.repeats)
            row = results["rows"][name]
            row["peer_hammer"] = peers[kind]
            ours = row["scale"]["ms_per_record"] if "scale" in row else 1000 * c / a.records
            print(f"{'':22s} peer: Hammer's masking {peers[kind]['ms_per_record']:.3f} ms per record (same records "
                  f"and variants, not verified); hsa {ours:.3f} ms per record "
                  f"({'marginal' if 'scale' in row else 'start-up included'}): "
                  f"{ours / peers[kind]['ms_per_record']:.1f}x", flush=True)
    if a.workers_row:
        kind, recipe = ROWS[a.workers_row]
        inp = input_of(kind, a.records)
        results["workers"] = {"row": a.workers_row}
        for w in (1, 2):
            dt, times = median_of(a.repeats, lambda: run_cli(augment_args(inp, recipe, f"out-w{w}", w))[0])
            results["workers"][w] = {"seconds": round(dt, 3), "runs": [round(t, 3) for t in times],
                                     "variants_per_s": round(rows / dt, 1), "load_average": round(_load(), 2)}
            print(f"workers {w}: {dt:.2f}s  {rows / dt:.0f} variants/s  runs {[round(t, 2) for t in times]}", flush=True)
        results["speedup_2_workers"] = round(results["workers"][1]["seconds"] / results["workers"][2]["seconds"], 2)
        print(f"2 workers / 1 worker speed-up: {results['speedup_2_workers']}x", flush=True)
    results["peak_rss_mib"] = {"row": a.memory_row, "workers": a.memory_workers}
    for n in [int(x) for x in a.memory_sizes.split(",") if x]:
        kind, recipe = ROWS[a.memory_row]
        big = input_of(kind, n)
        dt, mib = run_cli(augment_args(big, recipe, f"out-mem-{n}", a.memory_workers))
        results["peak_rss_mib"][n] = {"mib": mib, "seconds": round(dt, 1)}
        print(f"peak RSS at {n} records ({a.memory_row}, {a.memory_workers} worker(s)): {mib} MiB in {dt:.1f}s",
              flush=True)
    if a.out:
        Path(a.out).write_text(json.dumps(results, indent=2) + "\n")
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
