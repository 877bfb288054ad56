"""Benchmark of ``hsa eval score``: 100,000 predictions scored, in seconds (measured, nothing asserted).

    python benchmarks/bench_eval.py --predictions 100000 --out bench_eval.json

Data: ``--records`` fixture records augmented once with the default recipe (4 variants and the
original each), their rows repeated under new ids until the prompts reach ``--predictions``
(scoring cost does not depend on whether two rows are copies). Predictions: a mix in several
formats — the gold turn in the variant harness (Hermes ``<tool_call>``, bare JSON, pythonic,
Mistral ``[TOOL_CALLS]``, an OpenAI ``message``), the canonical names under the variant (wrong),
replies, broken calls, and 1% left out. Timed, each in a child process on one core
(``taskset`` where it exists; interpreter start and imports included): ``hsa eval prompts``,
``hsa eval score`` (reading the data, parsing, scoring, 1000 bootstrap resamples for every
group, writing report.json), and the same with ``--bootstrap 0``. In process: the parse + score
step alone and the grouping alone.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build_data(records: int, target: int, work: Path) -> tuple[Path, int]:
    """A JSONL of rows with at least ``target`` prompts (see the module docstring) and its prompt count."""
    import hsa
    from hsa.evaluation import make_prompts
    from hsa.io import iter_rows
    from hsa.pipeline import augment

    src = work / "in.jsonl"
    lines = (ROOT / "fixtures" / "livestream" / "trajectories.jsonl").read_text(encoding="utf-8").splitlines()
    src.write_text("\n".join(lines[:records]) + "\n", encoding="utf-8")
    augment([src], work / "shards", hsa.load_recipe("default"), variants=4, keep_original=True, workers=1,
            progress=False)
    rows = list(iter_rows(work / "shards"))
    per_copy = len(make_prompts(rows))
    copies = -(-target // per_copy)
    out = work / "rows.jsonl"
    with out.open("w", encoding="utf-8") as f:
        for k in range(copies):
            for r in rows:
                sid = f"{r['source_id']}-r{k}"
                f.write(json.dumps({**r, "id": f"{sid}/{r['variant']}", "source_id": sid}, ensure_ascii=False)
                        + "\n")
    return out, per_copy * copies


def _hermes(calls):
    return "".join(f"<tool_call>{json.dumps({'name': c['name'], 'arguments': c['arguments']})}</tool_call>"
                   for c in calls)


def _pythonic(calls):
    def lit(v):
        return json.dumps(v) if not isinstance(v, bool) else str(v)

    return "[" + ", ".join(f"{c['name']}(" + ", ".join(f"{k}={lit(v)}" for k, v in c["arguments"].items()) + ")"
                           for c in calls) + "]"


def build_predictions(data: Path, n: int, out: Path, seed: int = 0) -> dict:
    """Predictions for the first ``n`` prompts of ``data`` (the mix of the module docstring); counts by kind."""
    from hsa.evaluation import collect
    from hsa.records import normalize

    from hsa.io import iter_rows

    items, _ = collect(str(data), max_prompts=n, messages=False)
    base = {r["id"]: normalize(r)["messages"] for r in iter_rows(data.parent / "shards")}
    rng = random.Random(seed)
    kinds: dict[str, int] = {}
    with out.open("w", encoding="utf-8") as f:
        for it in items:
            p = it.prompt
            sid, _, variant = p["row_id"].rpartition("/")
            msg = base[f"{sid.rpartition('-r')[0]}/{variant}"][p["turn"]]
            calls = [{"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                     for c in msg.get("tool_calls") or ()]
            x = rng.random()
            if x < 0.01:
                kind = "left out"
            elif not calls:
                kind, line = ("reply", {"completion": msg.get("content") or "ok"}) if x < 0.9 else \
                    ("reply with a call", {"completion": _hermes([{"name": "x", "arguments": {}}])})
            elif x < 0.40:
                kind, line = "hermes", {"completion": _hermes(calls)}
            elif x < 0.50:
                kind, line = "json", {"completion": json.dumps(calls if len(calls) > 1 else calls[0])}
            elif x < 0.58:
                kind, line = "pythonic", {"completion": _pythonic(calls)}
            elif x < 0.66:
                kind, line = "mistral", {"completion": "[TOOL_CALLS] " + json.dumps(calls)}
            elif x < 0.76:
                kind, line = "message", {"message": {"role": "assistant", "content": None, "tool_calls": [
                    {"id": f"c{i}", "type": "function", "function": {"name": c["name"],
                                                                      "arguments": json.dumps(c["arguments"])}}
                    for i, c in enumerate(calls)]}}
            elif x < 0.92:
                kind, line = "canonical names", {"completion": _hermes(it.gold["calls"])}
            else:
                kind, line = "broken", {"completion": _hermes(calls)[:-5]}
            kinds[kind] = kinds.get(kind, 0) + 1
            if kind != "left out":
                f.write(json.dumps({"id": p["id"], **line}, ensure_ascii=False) + "\n")
    return dict(sorted(kinds.items()))


def timed_child(args: list[str], env: dict) -> float:
    cmd = [sys.executable, "-m", "hsa.cli", *args]
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", "0", *cmd]
    t = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    elapsed = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{proc.stderr}")
    return elapsed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--predictions", type=int, default=100_000)
    ap.add_argument("--records", type=int, default=100, help="fixture records augmented (then repeated)")
    ap.add_argument("--out", help="write the numbers as JSON here")
    ap.add_argument("--work", help="keep the data here (default: a temporary folder)")
    args = ap.parse_args(argv)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="bench-eval-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    t = time.perf_counter()
    data, n_prompts = build_data(args.records, args.predictions, work)
    preds = work / "preds.jsonl"
    kinds = build_predictions(data, args.predictions, preds)
    setup = time.perf_counter() - t
    res: dict = {"predictions": args.predictions, "prompts_in_data": n_prompts, "kinds": kinds,
                 "setup_seconds": round(setup, 1)}
    n = str(args.predictions)
    res["hsa eval prompts (s)"] = timed_child(["eval", "prompts", str(data), "--out", str(work / "p.jsonl"),
                                               "--max-prompts", n], env)
    res["hsa eval score (s)"] = timed_child(["eval", "score", str(data), "--predictions", str(preds), "--out",
                                             str(work / "report.json"), "--max-prompts", n], env)
    res["hsa eval score --bootstrap 0 (s)"] = timed_child(
        ["eval", "score", str(data), "--predictions", str(preds), "--out", str(work / "report0.json"),
         "--max-prompts", n, "--bootstrap", "0"], env)

    from hsa.evaluation import collect, read_predictions
    from hsa.evaluation.report import score_items, summarize

    t = time.perf_counter()
    items, _ = collect(str(data), max_prompts=args.predictions)
    res["in process: read data + prompts (s)"] = time.perf_counter() - t
    p, _, _ = read_predictions(preds)
    t = time.perf_counter()
    results, problems = score_items(items, p)
    res["in process: parse + score (s)"] = time.perf_counter() - t
    t = time.perf_counter()
    summary = summarize(results, seed=0, reps=1000)
    res["in process: groups + 1000-resample bootstrap (s)"] = time.perf_counter() - t
    res["groups"] = 4 + len(summary["by_family"]) + len(summary["by_transform"])
    res["report"] = {k: summary[k]["call_accuracy"] for k in ("canonical", "variants")}
    res["problems"] = {k: v["n"] for k, v in problems.items() if isinstance(v, dict) and "n" in v}
    res["formats"] = problems["formats"]
    res = {k: round(v, 2) if isinstance(v, float) else v for k, v in res.items()}
    text = json.dumps(res, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
