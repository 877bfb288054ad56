"""Benchmark of ``hsa report``: page size, build time and render time in Chromium, and the screenshots of docs/report.md.

    python benchmarks/bench_report.py --records 20000 --work runs/bench-report --out runs/bench-report.json
    python benchmarks/bench_report.py --shots docs --work runs/report-shots      # the screenshots only

Measures, on this machine, for a dataset of ``--records`` x (``--variants`` + 1) rows (public-layout records
from the fixture generator, ``--keep-original``, the default recipe):

- ``hsa augment`` once, to make the data (its time is printed, not the subject);
- ``hsa eval score`` of a memorised model (the gold calls in canonical names) on the first
  ``--eval-prompts`` prompts, so that the page has an evaluation view;
- ``hsa report DATA --eval ... --predictions ... --out page.html`` (``--repeats`` runs): wall and CPU seconds
  (user + system of the child), and the page's size;
- the page opened ``--repeats`` times in a headless Chromium (:mod:`hsa.report.browser`): seconds from
  navigation to the page's ready mark (``window.hsaReadyMs``, from navigation start), and the time to draw the
  variant browser and the per-prompt table the first time;
- with ``--shots DIR``: the views of the page of 30 full-harness fixture records (tools, skills, prompt,
  hooks), photographed by the same browser as 1200 x 760 PNGs, quantised to 64 colours.

Nothing is asserted: it prints and saves numbers.
"""

from __future__ import annotations

import argparse
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


def run(args: list[str]) -> tuple[float, float]:
    """Run ``args``; (wall seconds, CPU seconds of the child and what it waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(args, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def hsa(*args: str) -> list[str]:
    return [sys.executable, "-m", "hsa.cli", *args]


def memorised(data: Path, path: Path, max_prompts: int | None) -> Path:
    """Predictions that always use the canonical names (what a fixed-harness model writes)."""
    from hsa.evaluation import collect

    items, _ = collect(str(data), max_prompts=max_prompts, messages=False)
    with open(path, "w", encoding="utf-8") as f:
        for it in items:
            calls = it.gold["calls"]
            text = "".join(f"<tool_call>{json.dumps(c)}</tool_call>" for c in calls) or (it.gold["content"] or "ok")
            f.write(json.dumps({"id": it.prompt["id"], "completion": text}) + "\n")
    return path


def render_times(page: Path, repeats: int) -> dict:
    from hsa.report.browser import Chromium

    out: dict = {"load_s": [], "ready_ms": [], "variants_ms": [], "prompts_ms": []}
    with Chromium() as browser:
        out["chromium"] = browser.version
        for _ in range(repeats):
            p = browser.open(page)
            out["load_s"].append(round(p.load_seconds, 3))
            out["ready_ms"].append(round(p.evaluate("window.hsaReadyMs"), 1))
            for view, key, mark in (("variants", "variants_ms", "#variant-title"), ("eval", "prompts_ms", "#prompt-table tr")):
                ms = p.evaluate(f"(() => {{ const t = performance.now(); location.hash = '{view}'; "
                                f"window.dispatchEvent(new HashChangeEvent('hashchange')); "
                                f"return document.querySelector('{mark}') ? performance.now() - t : -1; }})()")
                out[key].append(round(ms, 1))
            out["console_errors"] = p.console_errors
            out["requests"] = len(p.requests)
            p.close()
    return out


def shots(folder: Path, work: Path) -> dict:
    """The four views of the page of 30 full-harness records, as PNGs in ``folder``."""
    from hsa.report.browser import Chromium

    work.mkdir(parents=True, exist_ok=True)
    src = work / "in30.jsonl"
    src.write_text("\n".join((ROOT / "fixtures/livestream/trajectories.jsonl").read_text().splitlines()[:30]) + "\n")
    data = work / "shards30"
    if not (data / "manifest.json").exists():
        run(hsa("augment", str(src), "--out", str(data), "--variants", "4", "--keep-original", "--seed", "0",
                "--workers", "2", "--quiet", "--overwrite"))
    preds = memorised(data, work / "memorised.jsonl", None)
    report = work / "report.json"
    run(hsa("eval", "score", str(data), "--predictions", str(preds), "--held-out", "skill", "--out", str(report)))
    page = work / "report.html"
    run(hsa("report", str(data), "--eval", str(report), "--predictions", str(preds), "--out", str(page)))
    folder.mkdir(parents=True, exist_ok=True)
    made = {}
    with Chromium() as browser:
        views = [("overview", "overview", None, "light"), ("plots", "plots", None, "light"),
                 ("variants", "variant=ls-000003%2F1", None, "light"),
                 ("eval-groups", "eval", None, "light"),
                 ("eval", "prompt=ls-000003%2F1%234", "tr.row.active", "light"),
                 ("variants-dark", "variant=ls-000003%2F1", "[data-section=tools]", "dark")]
        for name, fragment, anchor, scheme in views:
            p = browser.open(page, fragment=fragment, width=1200, height=760, color_scheme=scheme)
            p.wait_until("document.readyState === 'complete'")
            time.sleep(0.2)  # a link to a view scrolls back to the top once loaded
            if anchor:  # below the sticky tabs
                p.evaluate(f"document.querySelector('{anchor}').scrollIntoView(); "
                           "scrollBy(0, -document.getElementById('tabs').offsetHeight - 8)")
            path = folder / f"report-{name}.png"
            p.screenshot(path)
            _quantise(path)
            made[name] = {"file": str(path), "bytes": path.stat().st_size, "console_errors": p.console_errors}
            p.close()
    return made


def _quantise(path: Path) -> None:
    """64 colours (text and flat plots lose nothing visible; the file shrinks about 3x)."""
    from PIL import Image

    Image.open(path).convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=20000, help="source records (rows: records x (variants + 1))")
    ap.add_argument("--variants", type=int, default=4)
    ap.add_argument("--eval-prompts", type=int, default=2000, help="prompts the evaluation scores")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sample", type=int, default=None, help="--sample of hsa report (default: its default)")
    ap.add_argument("--work", default="runs/bench-report", help="work folder (inputs and shards are reused)")
    ap.add_argument("--out", default=None, help="write the numbers as JSON here")
    ap.add_argument("--shots", default=None, metavar="DIR", help="only take the screenshots, into DIR")
    a = ap.parse_args()
    work = Path(a.work)
    if a.shots:
        print(json.dumps(shots(Path(a.shots), work), indent=1))
        return
    from bench_augment import make_input, public_layout

    work.mkdir(parents=True, exist_ok=True)
    inp = make_input(a.records, work / f"in-{a.records}-public.jsonl", shape=public_layout)
    data = work / f"shards-{a.records}"
    result: dict = {"records": a.records, "variants": a.variants, "load_average_start": os.getloadavg()}
    if not (data / "manifest.json").exists():
        result["augment_s"] = run(hsa("augment", str(inp), "--out", str(data), "--variants", str(a.variants),
                                      "--keep-original", "--seed", "0", "--quiet", "--overwrite"))[0]
    result["rows"] = json.loads((data / "manifest.json").read_text())["counts"]["rows_written"]
    result["data_mb"] = round(sum(f.stat().st_size for f in data.glob("*.arrow")) / 1e6, 1)
    preds = memorised(data, work / "memorised.jsonl", a.eval_prompts)
    report = work / "report.json"
    result["score_s"] = run(hsa("eval", "score", str(data), "--predictions", str(preds), "--max-prompts",
                                str(a.eval_prompts), "--out", str(report)))[0]
    page = work / "report.html"
    extra = ["--sample", str(a.sample)] if a.sample is not None else []
    builds = [run(hsa("report", str(data), "--eval", str(report), "--predictions", str(preds), "--out", str(page),
                      *extra)) for _ in range(a.repeats)]
    result["build_wall_s"] = [round(w, 2) for w, _ in builds]
    result["build_cpu_s"] = [round(c, 2) for _, c in builds]
    result["page_mb"] = round(page.stat().st_size / 1e6, 2)
    result["render"] = render_times(page, a.repeats)
    result["load_average_end"] = os.getloadavg()
    print(json.dumps(result, indent=1))
    if a.out:
        Path(a.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    shutil.rmtree(work / "tmp", ignore_errors=True)


if __name__ == "__main__":
    main()
