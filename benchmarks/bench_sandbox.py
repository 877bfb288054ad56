"""Cost of the hook sandbox's layers: a worker's start and a warm call, with each layer alone and all together.

    python benchmarks/bench_sandbox.py --starts 20 --calls 500 --out sandbox.json

For each configuration (``off``: the limits only; each layer of :mod:`hsa.sandbox.layers` added alone; ``best``:
every layer this machine gives) it starts ``--starts`` workers one after the other and times, per worker, the start
(spawn to the worker's ready line, layers applied) and then ``--calls`` warm calls of a small hook, one round trip
each. Medians are printed, with the CPU seconds of the children (user + system of the workers, bubblewrap
included) per start, which move less than wall seconds on a shared machine. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

HOOK = {"source": "def check(p):\n    return {'decision': 'allow' if p.get('reply') else 'retry'}\n",
        "entry": "check", "style": "function"}


def configurations() -> dict[str, tuple[str, set[str]]]:
    """name -> (policy, layers turned off)."""
    from hsa.sandbox import layers

    optional = ["files", "syscalls", "identity", "namespaces"]
    out = {"off (limits only)": ("off", set())}
    for layer in optional:
        out[f"+{layer}"] = ("best", set(optional) - {layer})
    out["best (all available)"] = ("best", set())
    layers.set_policy("best")
    return out


def measure(policy: str, off: set[str], starts: int, calls: int) -> dict:
    from hsa.sandbox import layers
    from hsa.sandbox.process import Sandbox

    layers.reset()
    layers.set_policy("off" if policy == "off" else "best")
    layers.reset()
    for name in off:
        layers.disable(name, "turned off by the benchmark")
    st = layers.status()
    on = [k for k, v in st.layers.items() if v["on"]]
    start_s, call_s, cpu = [], [], []
    for _ in range(starts):
        c0 = os.times()
        box = Sandbox(time_limit=5)
        t0 = time.perf_counter()
        box.run([{**HOOK, "payload": {"reply": "x"}}])
        t1 = time.perf_counter()
        for i in range(calls // starts or 1):
            t = time.perf_counter()
            box.run([{**HOOK, "payload": {"reply": str(i)}}])
            call_s.append(time.perf_counter() - t)
        box.close()
        c1 = os.times()
        start_s.append(t1 - t0)
        cpu.append((c1.children_user - c0.children_user) + (c1.children_system - c0.children_system))
    return {"on": on, "start_ms": 1000 * statistics.median(start_s), "warm_call_us": 1e6 * statistics.median(call_s),
            "child_cpu_ms_per_worker": 1000 * statistics.median(cpu)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--starts", type=int, default=20, help="workers started per configuration")
    p.add_argument("--calls", type=int, default=500, help="warm calls per configuration")
    p.add_argument("--out", help="write the numbers as JSON here")
    args = p.parse_args()
    results = {}
    for name, (policy, off) in configurations().items():
        r = measure(policy, off, args.starts, args.calls)
        results[name] = r
        print(f"{name:22s} start {r['start_ms']:7.1f} ms  warm call {r['warm_call_us']:7.0f} us  "
              f"worker CPU {r['child_cpu_ms_per_worker']:6.1f} ms  (on: {', '.join(r['on'])})", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f} (a shared machine: compare CPU, and configurations side by side)")
    if args.out:
        Path(args.out).write_text(json.dumps({"results": results, "loadavg": os.getloadavg()}, indent=2))


if __name__ == "__main__":
    main()
