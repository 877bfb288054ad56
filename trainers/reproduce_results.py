"""What ``make reproduce`` writes: results.md (the tables and what the numbers say, computed), results.png, and
the helpers that read a finished run's results.json (``python -m trainers.reproduce --render``). Nothing here
trains or evaluates; :mod:`trainers.reproduce` runs the stages."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["METRICS", "GROUPS", "PAPER", "summarise", "write_results", "findings"]

METRICS = ("canonical", "seen_variants", "held_out", "general")
GROUPS = ("canonical", "seen_variants", "held_out")
# The paper's numbers (HAT, arXiv:2608.15763) for reference beside the miniature's.
PAPER = {"harness_variant_qa": {"fixed_sft": 75.4, "hat": 94.6}, "live_stream_qa": {"fixed_sft": 80.3, "hat": 94.8},
         "ifeval_drop_fixed_sft": -7.7}


def summarise(values: Sequence[float | None]) -> dict[str, float | None]:
    """Mean, sample standard deviation, min and max of the non-missing values."""
    kept = [v for v in values if v is not None]
    if not kept:
        return {"mean": None, "sd": None, "min": None, "max": None}
    return {"mean": statistics.fmean(kept), "sd": statistics.stdev(kept) if len(kept) > 1 else 0.0,
            "min": min(kept), "max": max(kept)}


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def _bars(ax, names: list[str], groups: list[tuple[str, str]], values) -> None:
    """Grouped bars: for each (key, label) of ``groups`` one bar per name, at the mean of ``values(name, key)``
    with whiskers to its min and max."""
    width = 0.8 / len(groups)
    for k, (key, label) in enumerate(groups):
        means, lo, hi = [], [], []
        for name in names:
            s = summarise(values(name, key))
            m = 100 * (s["mean"] or 0.0)
            means.append(m)
            lo.append(m - 100 * (s["min"] if s["min"] is not None else 0.0))
            hi.append(100 * (s["max"] if s["max"] is not None else 0.0) - m)
        xs = [i + (k - (len(groups) - 1) / 2) * width for i in range(len(names))]
        ax.bar(xs, means, width, yerr=[lo, hi], capsize=2, label=label)
    ax.set_xticks(range(len(names)), names, fontsize=8)
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 100)
    ax.legend(fontsize=7, loc="upper left", ncol=2)


def _plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = {"canonical": "canonical harness", "seen_variants": "seen-family variants",
              "held_out": "held-out-family variants", "general": "general instructions"}
    bfcl = results.get("bfcl")
    fig, axes = plt.subplots(1, 2 if bfcl else 1, figsize=(14 if bfcl else 9, 4.2),
                             gridspec_kw={"width_ratios": [5, 2]} if bfcl else None, squeeze=False)
    ax = axes[0][0]
    _bars(ax, list(results["models"]), [(m, labels[m]) for m in METRICS],
          lambda name, metric: results["models"][name][metric])
    ax.set_title(f"{results['base_model']}, live-commerce: mean over seeds {results['seeds']} (bars: min-max)",
                 fontsize=9)
    if bfcl:
        reports = bfcl["reports"]
        _bars(axes[0][1], list(reports), [("canonical", "canonical harness"), ("variants", "variants")],
              lambda name, group: [s["accuracy"].get(group) for s in reports[name].values()])
        axes[0][1].set_title("BFCL, test functions unseen in training", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_results(results: dict[str, Any], docs: Path, *, json_too: bool = True) -> dict[str, Path]:
    """NAME.json, NAME.md and NAME.png in ``docs``, NAME being ``results["results_name"]`` (default results;
    ``json_too=False``: only the last two)."""
    docs.mkdir(parents=True, exist_ok=True)
    name = results.get("results_name") or "results"
    paths = {"json": docs / f"{name}.json", "md": docs / f"{name}.md", "png": docs / f"{name}.png"}
    if json_too:
        paths["json"].write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    _plot(results, paths["png"])
    paths["md"].write_text(_markdown(results), encoding="utf-8")
    return paths


def _markdown(r: dict[str, Any]) -> str:
    plan = r["plan"]
    lines = ["# Results: the HAT table in miniature", "",
             "Written by `" + r["command"] + "` (no number in this file or in results.json is typed by hand)."
             + (f" This text was rendered again from that run's results.json by `{r['rendered_by']}` (same numbers, "
                "the wording of a later commit)." if r.get("rendered_by") else ""), "",
             f"- base model: {r['base_model']}",
             f"- commit: {r['commit']}" + (" (of the first invocation; each invocation's commit is listed with the "
                                           "wall time)" if len(r.get("invocations") or ()) > 1 else ""),
             f"- wall time: {r['wall_seconds'] / 60:.1f} minutes ({r['wall_seconds']:.0f} s), "
             f"started {r['started']} UTC" + _invocations_note(r.get("invocations")),
             f"- machine: {r['machine'].get('platform')}, {r['machine'].get('cpus')} CPUs, torch "
             f"{r['machine'].get('torch')} on {r['machine'].get('device')} with {r['machine'].get('torch_threads')} "
             + (f"threads; load average {r['machine'].get('load_average_start')} at the start, "
                f"{r['machine'].get('load_average_end')} at the end" if len(r.get("invocations") or ()) < 2 else
                "threads (the load average of each invocation is listed with the wall time)"),
             f"- training seeds: {r['seeds']} (the eval set is fixed: eval seed {plan['eval_seed']})", "",
             "Accuracy in % (mean over training seeds ± sample standard deviation; per-seed values in results.json). "
             "`canonical`: call accuracy under the harness the records were written in (the Live-Stream QA "
             "analogue); `seen variants`: under harness variants drawn from the families training saw (the "
             "Harness-Variant QA analogue); `held-out`: under variants that also carry changes of the held-out "
             f"families ({', '.join(plan['held_out'])}), which no training row had; `general`: prompt-level strict "
             "accuracy on verifiable general instructions (the IFEval analogue).", "",
             "| model | canonical | seen variants | held-out | general |", "|---|---|---|---|---|"]
    for name, m in r["models"].items():
        cells = []
        for metric in METRICS:
            s = summarise(m[metric])
            cells.append("–" if s["mean"] is None else f"{_pct(s['mean'])} ± {_pct(s['sd'])}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    n = r.get("eval_n") or {}
    lines += ["", f"Eval prompts per group: canonical {n.get('canonical')}, seen variants {n.get('seen_variants')}, "
                  f"held-out {n.get('held_out')}, general instructions {n.get('general')} (per model and seed). "
                  "The 95% intervals of each group and seed are in results.json (`ci95`, from `hsa eval`); those "
                  "pooled over the seeds, and the paired differences, are in the next section." +
                  (f" Distillation and RL ran for seed(s) {plan.get('post_seeds')} only: their own smaller table."
                   if plan.get("post_seeds") and list(plan["post_seeds"]) != list(r["seeds"]) else ""), "",
              f"![results]({r.get('results_name') or 'results'}.png)", ""]
    lines += ["## What the run did", ""]
    lines += [f"- data: {plan['train_records']} train and {plan['eval_records']} eval records of the compact "
              "live-commerce harness (`python -m fixtures.livestream.generate --compact`: 3-4 tools, short "
              "descriptions and skills, a three-section prompt; gold actions that follow from what the prompt "
              "shows)" + (f", and {plan['val_records']} validation records for the sweep and the precision check"
                          if plan.get("val_records") else "") + ", disjoint by record; "
              f"{plan['train_variants']} variants per train record (default recipe without the families "
              f"{', '.join(plan['held_out'])}) plus the original, {plan['eval_variants']} per eval record plus the "
              "original (each variant draws the training recipe or the full default one).",
              f"- base: {r['base_note']}",
              *_cut_line(r.get("layer_cut")),
              *_sft_data_line(r.get("sft_data"), plan),
              f"- SFT (`fixed_sft`, `hsa_sft`): full fine-tuning, {plan['sft_steps']} steps x batch "
              f"{plan['sft_batch']}, learning rate {r.get('sft_lr') or plan['sft_lr']}"
              + (" (chosen by the sweep below)" if (r.get("sweep") or {}).get("swept") else "") +
              f", bf16 autocast {'on' if r.get('bf16') else 'off'}, conversations truncated to "
              f"{plan['sft_max_length']} tokens: the same steps and sequences for both "
              f"({plan['sft_steps'] * plan['sft_batch']} conversations); `fixed_sft` draws them from the canonical "
              "records only, `hsa_sft` from the originals and their variants.",
              f"- on-policy distillation (`hsa_sft_opd`): {plan['opd_steps']} steps x {plan['opd_batch']} general "
              f"prompts (half of the bundled instructions; the other half is the eval), {plan['opd_completion']} "
              f"sampled tokens, reverse KL to the base, learning rate {plan['opd_lr']}"
              + (f"; on top of `hsa_sft` of seed(s) {plan['post_seeds']}" if plan.get("post_seeds") else "") + ".",
              _rl_line(plan),
              f"- eval: `hsa eval run --turns {plan['eval_turns']}` (the first assistant turn of every eval row"
              + (f", at most {plan['eval_prompts']} prompts" if plan['eval_prompts'] else "") +
              f"), {plan['eval_new_tokens']} new tokens, greedy"
              + (", bf16 weights" if r.get("bf16") else "") + ". The base model is not trained, so it is evaluated "
              "once.", ""]
    lines += _target_lines(r)
    lines += _sweep_lines(r.get("sweep"))
    lines += _precision_lines(r.get("precision_check"), plan)
    lines += _bfcl_lines(r.get("bfcl"), plan)
    lines += _curve_lines(r.get("learning_curves"))
    stages = r.get("stage_seconds") or {}
    lines += _budget_lines(r, stages)
    if stages:
        lines += ["Time per stage (s; from `OUT/commands.jsonl`, so a stage another process ran in the folder "
                  "counts, and stages that ran side by side overlap in the wall time): "
                  + ", ".join(f"{k} {v:.0f}" for k, v in stages.items()), ""]
    lines += ["## Against the paper", "",
              "The paper (HAT, arXiv:2608.15763) reports, for a fixed-harness SFT model against HAT: Harness-Variant "
              f"QA {PAPER['harness_variant_qa']['fixed_sft']} -> {PAPER['harness_variant_qa']['hat']}, Live-Stream QA "
              f"{PAPER['live_stream_qa']['fixed_sft']} -> {PAPER['live_stream_qa']['hat']}, and IFEval "
              f"{PAPER['ifeval_drop_fixed_sft']} after fixed-harness SFT, recovered by on-policy distillation. The "
              "miniature differs: a 135M model instead of a production model, a few "
              "dozen synthetic records instead of real logs, scoring by mapping calls back and comparing them with "
              "the gold turn instead of a judge, and minutes of CPU instead of GPU days; its numbers are not "
              "comparable in size, only in direction.", ""]
    findings = r.get("findings") or []
    if findings:
        lines += ["## What the numbers say", ""] + [f"- {f}" for f in findings] + [""]
    lines += ["## On a GPU", "",
              "This budget is sized for a 2-core CPU (the wall time is above). The GPU plan (`--plan gpu`, about 10 "
              "minutes on one GPU) scales what limits it here: 8x the SFT conversations per model, windows of 1024 "
              "tokens so later turns train too, twice the eval records, three BFCL seeds, and distillation and RL "
              "long enough to move something. One prepared script runs it, after a dry run of the same plan at tiny "
              "sizes on the CPU (every stage and flag, in minutes), and writes results-gpu.{md,json,png} here:", "",
              "```bash", "scripts/reproduce_gpu.sh --dry-run   # on the CPU first: the GPU plan's stages at tiny sizes",
              "scripts/reproduce_gpu.sh             # on the GPU machine", "```", ""]
    lines += ["## Run it yourself", "", "```bash", "make reproduce                      # this table (docs/results.*)",
              "python -m trainers.reproduce --out runs/repro --quick     # a smoke run in minutes",
              "python -m trainers.reproduce --out runs/repro --model YOUR_MODEL_DIR --keep-layers 0 --device cuda",
              "```", "", "The commands each stage ran are in `OUT/commands.jsonl`."
              + (f" `{r['page']}`, beside this file, shows the evaluation data and every model's answer to each "
                 "prompt with why it was scored wrong (`hsa report`, docs/report.md)." if r.get("page") else ""), ""]
    return "\n".join(lines)


#: The parts of the run's time, by the stage names of ``commands.jsonl`` (first match wins).
BUDGET_PARTS = (("learning-rate sweep", ("sweep ", "eval sweep-")),
                ("bf16 against fp32 check", ("precision ", "eval precision-")),
                ("BFCL table", ("bfcl ", "eval bfcl-")),
                ("SFT of fixed_sft and hsa_sft", ("fixed_sft seed", "hsa_sft seed")),
                ("eval of base, fixed_sft and hsa_sft", ("eval base", "eval fixed_sft", "eval hsa_sft seed")),
                ("distillation and RL, and their eval", ("hsa_sft_opd", "eval hsa_sft_opd")),
                ("data", ("augment ", "layer cut")))
#: The budget of the design: ``make reproduce`` within two hours on the project's 2-core CPU.
BUDGET_SECONDS = 2 * 3600


def _budget_lines(r: dict[str, Any], stages: dict[str, float]) -> list[str]:
    """Where the time went, against the two-hour budget (computed from the stage times)."""
    if not stages:
        return []
    parts: dict[str, float] = {}
    for stage, seconds in stages.items():
        part = next((name for name, prefixes in BUDGET_PARTS if stage.startswith(prefixes)), "other")
        parts[part] = parts.get(part, 0.0) + seconds
    total = sum(parts.values())
    wall = r.get("wall_seconds") or total
    plan = r["plan"]
    sft = [v for k, v in stages.items() if k.startswith(("fixed_sft seed", "hsa_sft seed"))]
    evals = [v for k, v in stages.items() if k.startswith(("eval fixed_sft", "eval hsa_sft seed"))]
    lines = ["## Time against the budget", "",
             f"The design's budget is {BUDGET_SECONDS / 3600:.0f} hours on this machine. This run took "
             f"{wall / 60:.0f} minutes of wall time ({wall / BUDGET_SECONDS:.2f}x the budget"
             + (f", over by {(wall - BUDGET_SECONDS) / 60:.0f} minutes" if wall > BUDGET_SECONDS else "") + "):", "",
             "| part | minutes | share |", "|---|---|---|"]
    for name, _ in (*BUDGET_PARTS, ("other", ())):
        if name in parts:
            lines.append(f"| {name} | {parts[name] / 60:.1f} | {parts[name] / total:.0%} |")
    if sft and evals:
        lines += ["", f"The floors of the design alone (every SFT model sees {plan['sft_steps'] * plan['sft_batch']} "
                      f"conversations; at least 100 eval prompts per group and seed) cost {statistics.fmean(sft) / 60:.1f} "
                      f"minutes per SFT model and {statistics.fmean(evals) / 60:.1f} minutes per evaluation here: "
                      f"{len(sft)} SFT models and {len(evals) + 1} evaluations of the comparison are "
                      f"{(sum(sft) + statistics.fmean(evals) * (len(evals) + 1)) / 60:.0f} minutes before any sweep, "
                      "check or second table. What was cut to spend the rest on the comparison: distillation and RL "
                      f"run on seed(s) {plan.get('post_seeds')} only, the BFCL table on seed(s) "
                      f"{plan.get('bfcl_seeds')}, the sweep at {r.get('sweep', {}).get('steps', '–')} steps, the "
                      f"precision check at {plan.get('precision_steps')} steps"
                      + ("; the eval sizes and the SFT conversations were not cut." if plan["eval_records"] >= 100 and
                         plan["sft_steps"] * plan["sft_batch"] >= 500 else
                         "; this plan is below the design's floors (at least 100 eval records and 500 SFT "
                         "conversations per model), so its numbers are a smoke test, not the comparison.")]
    return lines + [""]


def _ci_text(ci: Any) -> str:
    return f"[{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]" if isinstance(ci, (list, tuple)) and len(ci) == 2 else "[–]"


def _target_lines(r: dict[str, Any]) -> list[str]:
    """The design's targets against what the run measured, pooled over the training seeds (computed)."""
    pooled = r.get("pooled")
    if not pooled:
        return []
    m, p = pooled["models"], pooled["paired"]

    def acc(name, g):
        return (m.get(name) or {}).get(g, {}).get("accuracy")

    lines = ["## Pooled over the seeds, and the targets", "",
             "Each model's call accuracy over every training seed at once, with the 95% interval of a cluster "
             "bootstrap over (seed, record); the paired differences resample the same (seed, record) clusters on "
             "both sides.", "", "| model | canonical | seen variants | held-out |", "|---|---|---|---|"]
    for name, groups in m.items():
        lines.append(f"| {name} | " + " | ".join(
            "–" if groups[g]["accuracy"] is None else
            f"{_pct(groups[g]['accuracy'])} {_ci_text(groups[g]['ci95']).replace('+', '')} (n={groups[g]['n']})"
            for g in GROUPS) + " |")
    lines += ["", "| paired difference | points | 95% interval |", "|---|---|---|"]
    for key, d in p.items():
        if d:
            lines.append(f"| {key} | {100 * d['diff']:+.1f} | {_ci_text(d['ci95'])} |")
    targets = []
    h_c, h_s, f_c = acc("hsa_sft", "canonical"), acc("hsa_sft", "seen_variants"), acc("fixed_sft", "canonical")
    if None not in (h_c, h_s):
        d = 100 * (h_c - h_s)
        targets.append(f"HSA-SFT under seen-family variants within 5 points of its own canonical accuracy: "
                       f"{_pct(h_s)} against {_pct(h_c)}, {abs(d):.1f} points apart: "
                       + ("met." if abs(d) <= 5 else f"missed by {abs(d) - 5:.1f} points."))
    if None not in (h_c, f_c):
        d = 100 * (h_c - f_c)
        targets.append(f"HSA-SFT canonical within 5 points of fixed SFT: {_pct(h_c)} against {_pct(f_c)} "
                       f"({d:+.1f}): " + ("met." if d >= -5 else f"missed by {-d - 5:.1f} points."))
    gap = p.get("hsa_sft - fixed_sft, seen_variants")
    if gap:
        lo = gap["ci95"][0] if gap.get("ci95") else None
        ok = 100 * gap["diff"] >= 20 and lo is not None and lo > 0
        targets.append(f"the gap under seen-family variants at least 20 points with a paired 95% interval that "
                       f"excludes 0: {100 * gap['diff']:+.1f} {_ci_text(gap.get('ci95'))}: "
                       + ("met." if ok else "missed" + (f" by {20 - 100 * gap['diff']:.1f} points" if
                                                        100 * gap["diff"] < 20 else " (the interval reaches 0)") + "."))
    g = {n: summarise((r["models"].get(n) or {}).get("general", []))["mean"] for n in ("base", "hsa_sft",
                                                                                        "hsa_sft_opd")}
    if None not in g.values():
        lost, back = g["base"] - g["hsa_sft"], g["hsa_sft_opd"] - g["hsa_sft"]
        if lost > 0:
            targets.append(f"on-policy distillation recovering at least half of the general-instruction accuracy SFT "
                           f"lost: SFT lost {100 * lost:.1f} points (base {_pct(g['base'])}, hsa_sft "
                           f"{_pct(g['hsa_sft'])}), distillation gave back {100 * back:+.1f} ({back / lost:.0%}): "
                           + ("met." if back >= lost / 2 else "missed."))
        else:
            targets.append(f"on-policy distillation: hsa_sft lost no general-instruction accuracy against the base "
                           f"({_pct(g['hsa_sft'])} against {_pct(g['base'])}), so there was nothing to recover "
                           f"(after distillation: {_pct(g['hsa_sft_opd'])}).")
    return lines + ["", "Targets of the design:", ""] + [f"- {t}" for t in targets] + [""]


def _acc_n(scores: dict[str, Any], group: str) -> str:
    acc, n = (scores.get("accuracy") or {}).get(group), (scores.get("n") or {}).get(group)
    ci = (scores.get("ci95") or {}).get(group)
    span = f" [{_pct(ci[0])}, {_pct(ci[1])}]" if isinstance(ci, (list, tuple)) and len(ci) == 2 else ""
    return "–" if acc is None else f"{_pct(acc)}{span} (n={n})"


def _sweep_lines(sweep: dict[str, Any] | None) -> list[str]:
    if not sweep:
        return []
    if not sweep.get("swept"):
        return ["## Learning rate", "", f"Set by the plan ({sweep['chosen']}), not swept.", ""]
    lines = ["## Learning rate: a sweep on the validation records", "",
             f"`hsa_sft`, seed {sweep['seed']}, {sweep['steps']} steps x batch {sweep['batch']} at each rate, scored on "
             "the first turns of the validation records (their own records, augmented like the eval set; never the "
             f"eval set). The rate with the best call accuracy over every group trains every SFT model: "
             f"**{sweep['chosen']}**.", "", "| learning rate | validation call accuracy | canonical | seen | held-out "
             "| last logged train loss |", "|---|---|---|---|---|---|"]
    for run in sweep["runs"]:
        v = run["val"]
        lines.append(f"| {run['lr']} | {_acc_n(v, 'all')} | {_acc_n(v, 'canonical')} | {_acc_n(v, 'seen')} | "
                     f"{_acc_n(v, 'held_out')} | {run['final_loss'] if run['final_loss'] is not None else '–'} |")
    return lines + [""]


def _precision_lines(check: dict[str, Any] | None, plan: dict[str, Any]) -> list[str]:
    if not check:
        return ["## bf16 against fp32", "", "Not run: bf16 is off in this run (`bf16` in the plan, or hardware "
                "without bf16), or `precision_steps` is 0.", ""]
    b, f = check["bf16"], check["fp32"]
    speed = (f" Training took {b['seconds']:.0f} s in bf16 and {f['seconds']:.0f} s in fp32 "
             f"({f['seconds'] / b['seconds']:.2f}x)." if b.get("seconds") and f.get("seconds") else "")
    return ["## bf16 against fp32 (seed 0)", "",
            f"`hsa_sft` trained {check['steps']} steps both ways (bf16 autocast with fp32 master weights, and fp32) "
            f"from the same base, data order and learning rate {check['lr']}, the loss logged every step; each "
            "scored on the validation records in its own precision (bf16 weights, fp32 weights). The mean absolute "
            f"difference of the per-step training losses is {check.get('mean_abs_loss_diff')} (largest "
            f"{check.get('max_abs_loss_diff')}).{speed}", "",
            "| precision | validation call accuracy | canonical | seen | held-out | last logged loss |",
            "|---|---|---|---|---|---|",
            *[f"| {name} | {_acc_n(c['val'], 'all')} | {_acc_n(c['val'], 'canonical')} | {_acc_n(c['val'], 'seen')} | "
              f"{_acc_n(c['val'], 'held_out')} | {c['losses'][-1][1] if c['losses'] else '–'} |"
              for name, c in (("bf16", b), ("fp32", f))], ""]


def _bfcl_lines(bfcl: dict[str, Any] | None, plan: dict[str, Any]) -> list[str]:
    if not bfcl:
        return []
    c = bfcl["counts"]
    lines = ["## Second table: BFCL, split by function", "",
             f"Public data no one here wrote: the BFCL categories {', '.join(c['categories'])} of `bfcl-eval`, through "
             f"`hsa bench build` (every item's canonical row and its variants of the pool's families). {c['items']} "
             f"items split by function (items that share a tool name stay together): {c['train_items']} train items "
             f"({c['train_tools']} tools) and {c['test_items']} test items ({c['test_tools']} tools, none in any "
             f"training row). `fixed_sft` trains on the {c['train_rows_fixed']} canonical train rows, `hsa_sft` on "
             f"the {c['train_rows_hsa']} canonical and variant train rows: the same {plan['bfcl_steps']} steps x batch "
             f"{plan['bfcl_batch']} at {plan['bfcl_max_length']} tokens and learning rate {bfcl['lr']} for both. Scored "
             f"by `hsa eval run` on the test items' canonical rows and {plan['bfcl_eval_variants']} variant rows each "
             f"(distinct families, {c['eval_variant_rows']} in all); a call counts when it maps back to BFCL's first "
             "accepted answer, stricter than BFCL's checker (which accepts any listed value), the same rule for every "
             "model.", "", "| model | seed | canonical | variants | gap (canonical - variants, paired, 95% CI) |",
             "|---|---|---|---|---|"]
    for name, per in bfcl["reports"].items():
        for seed, scores in per.items():
            gap = (scores.get("gap") or {}).get("gap") or {}
            ci = gap.get("ci95")
            gap_text = (f"{100 * gap['call_accuracy']:+.1f} [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]"
                        if gap.get("call_accuracy") is not None and isinstance(ci, (list, tuple)) else "–")
            lines.append(f"| {name} | {seed} | {_acc_n(scores, 'canonical')} | {_acc_n(scores, 'variants')} | "
                         f"{gap_text} |")

    def mean(name, group):
        return summarise([s["accuracy"].get(group) for s in (bfcl["reports"].get(name) or {}).values()])["mean"]

    f_c, f_v, h_c, h_v = mean("fixed_sft", "canonical"), mean("fixed_sft", "variants"), mean("hsa_sft", "canonical"), \
        mean("hsa_sft", "variants")
    if None not in (f_c, f_v, h_c, h_v):
        lines += ["", f"On functions no training row had (mean over the seeds): fixed_sft {_pct(f_c)} canonical and "
                      f"{_pct(f_v)} under variants, hsa_sft {_pct(h_c)} and {_pct(h_v)}: hsa_sft is "
                      f"{100 * (h_v - f_v):+.1f} points against fixed_sft under variants and {100 * (h_c - f_c):+.1f} "
                      "on the canonical harness."]
    return lines + [""]


def _curve_lines(curves: dict[str, dict[str, list]] | None) -> list[str]:
    rl = (curves or {}).get("hsa_sft_opd_rl") or {}
    rows = [(seed, [p["reward"] for p in points if "reward" in p]) for seed, points in rl.items()]
    rows = [(seed, rewards) for seed, rewards in rows if rewards]
    if not rows:
        return []
    return ["## RL learning curve", "", "Mean episode reward per logged step of `hsa_sft_opd_rl` (from each model's "
            "`log_history.json`):", "",
            *[f"- seed {seed}: " + ", ".join(f"{x:.3f}" for x in rewards) for seed, rewards in rows], ""]


def _invocations_note(invocations: list[dict[str, Any]] | None) -> str:
    if not invocations or len(invocations) < 2:
        return ""
    parts = ", ".join(f"{i['started']} UTC {i['seconds']:.0f} s" + (f" at {i['commit']}" if i.get("commit") else "")
                      + (f" (load average {i['load_average'][0]} -> {i['load_average'][1]})"
                         if i.get("load_average") else "") for i in invocations)
    return (f", over {len(invocations)} invocations of the command (a resumed run skips the stages it finished; "
            f"the gaps between them are not counted): {parts}")


def _sft_data_line(data: dict[str, Any] | None, plan: dict[str, Any]) -> list[str]:
    if not data:
        return []
    parts = [f"`{name}` {d['rows']} conversations -> {d['rows_out']} training rows, {100 * d['lost_fraction']:.0f}% "
             f"of the assistant tokens left out" for name, d in data.items()]
    return [f"- what SFT trained on at {plan['sft_max_length']} tokens (`--long_rows split`: every window keeps the "
            "system prompt and tools, so a later turn whose tool results do not fit beside them is left out, and "
            "training is mostly the first assistant turns, the turns the eval scores): " + "; ".join(parts) + "."]


def _rl_line(plan: dict[str, Any]) -> str:
    if plan.get("rl_turns"):  # multi-turn episodes inside the augmented harness (trainers.rl --hat_defaults)
        return (f"- HSA-RL (`hsa_sft_opd_rl`): `trainers.rl --hat_defaults` (multi-turn episodes played inside each "
                "row's harness, original or variant, hooks live; GSPO; rewards episode_calls, episode_skill, "
                f"episode_hooks, episode_format, episode_turns), {plan['rl_steps']} steps x 1 episode x "
                f"{plan['rl_generations']} rollouts of at most {plan['rl_turns']} assistant turns and "
                f"{plan['rl_completion']} tokens, from the first {plan['rl_prompts']} episodes of the train shards, "
                f"learning rate {plan['rl_lr']}.")
    return (f"- HSA-RL (`hsa_sft_opd_rl`): GRPO, {plan['rl_steps']} steps x 1 prompt x {plan['rl_generations']} "
            f"completions of {plan['rl_completion']} tokens, rewards tool_call + format, learning rate "
            f"{plan['rl_lr']}. Rollouts are single-turn, so RL here is a light single-turn polish, not the paper's "
            "multi-turn stage.")


def _cut_line(cut: dict[str, Any] | None) -> list[str]:
    if not cut:
        return []
    keys = sorted((k for k in cut if k.startswith("loss_")), key=lambda k: -int(k.split("_")[1]))
    if len(keys) < 2:
        return []
    full, kept = keys
    return [f"- layer cut, measured before relying on it: the base model's mean loss on the assistant tokens of "
            f"{cut['conversations']} eval conversations is {cut[full]} with all {full.split('_')[1]} layers and "
            f"{cut[kept]} with only the first {kept.split('_')[1]} (a uniform guess over the vocabulary is about "
            "10.8): the cut model has lost the language it would build on, so every model here keeps all layers."]


def findings(models: dict[str, dict[str, list]], plan: dict[str, Any] | None = None) -> list[str]:
    """Plain statements of what the means show (computed, not typed)."""
    def mean(name, metric):
        return summarise(models.get(name, {}).get(metric, []))["mean"]

    out = []
    f_c, f_s, h_c, h_s = (mean("fixed_sft", "canonical"), mean("fixed_sft", "seen_variants"),
                          mean("hsa_sft", "canonical"), mean("hsa_sft", "seen_variants"))
    if None not in (f_c, f_s):
        out.append(f"fixed_sft: {_pct(f_c)} under the canonical harness, {_pct(f_s)} under seen-family variants "
                   f"({'a drop' if f_s < f_c else 'no drop'} of {_pct(abs(f_c - f_s))} points).")
    if None not in (h_c, h_s, f_s):
        out.append(f"hsa_sft: {_pct(h_c)} canonical, {_pct(h_s)} under seen-family variants, "
                   f"{_pct(abs(h_s - f_s))} points {'above' if h_s >= f_s else 'below'} fixed_sft there.")
    f_h, h_h = mean("fixed_sft", "held_out"), mean("hsa_sft", "held_out")
    if None not in (f_h, h_h):
        out.append(f"held-out families: fixed_sft {_pct(f_h)}, hsa_sft {_pct(h_h)}.")
    b_g, f_g, h_g, o_g = (mean("base", "general"), mean("fixed_sft", "general"), mean("hsa_sft", "general"),
                          mean("hsa_sft_opd", "general"))
    if None not in (b_g, f_g, h_g, o_g):
        out.append(f"general instructions: base {_pct(b_g)}, fixed_sft {_pct(f_g)}, hsa_sft {_pct(h_g)}, after "
                   f"distillation {_pct(o_g)} ({'+' if o_g >= h_g else ''}{_pct(o_g - h_g)} points against hsa_sft).")
    if plan and None not in (h_c, f_c, h_s, f_s) and h_s <= f_s:
        out.append(f"HSA-SFT does not hold here: each SFT model saw {plan['sft_steps'] * plan['sft_batch']} "
                   f"conversations; drawn from {1 + plan['train_variants']} harnesses per record, they taught "
                   f"hsa_sft the call format less well than fixed_sft's canonical rows taught it ({_pct(h_c)} against "
                   f"{_pct(f_c)} canonical). This run does not say whether it would hold with more training; "
                   "`--set sft_steps=N` (with `--device cuda`) is the test of that.")
    same = [n for n in ("hsa_sft_opd", "hsa_sft_opd_rl")
            if all(models.get(n, {}).get(m) == models.get("hsa_sft", {}).get(m)
                   for m in ("canonical", "seen_variants", "held_out"))]
    if plan and same:
        out.append(f"{' and '.join(same)} score exactly as hsa_sft on every harness group: "
                   f"{plan['opd_steps']} distillation and {plan['rl_steps']} RL steps changed no greedy call.")
    return out
