"""End to end: `hsa eval run` and `python -m trainers.eval` with the tiny model on a handful of rows."""

from __future__ import annotations

import json

from tests.trainers_support import mini_shards, tiny_model  # noqa: F401
from hsa.cli import main as hsa_main
from trainers.eval import main


def test_hsa_eval_run_writes_the_report_and_predictions(tiny_model, mini_shards, tmp_path):  # noqa: F811
    """A run on the mini shards writes report.json (contract fields), report.md, report.png and predictions that
    `hsa eval score` scores to the same numbers."""
    out = tmp_path / "report.json"
    preds = tmp_path / "preds.jsonl"
    rc = hsa_main(["eval", "run", str(mini_shards), "--model", str(tiny_model), "--out", str(out),
                   "--md", str(tmp_path / "report.md"), "--plot", str(tmp_path / "report.png"),
                   "--predictions-out", str(preds), "--held-out", "skill", "--max-prompts", "6",
                   "--max-new-tokens", "4", "--batch-size", "4", "--instructions", "--max-instructions", "2",
                   "--device", "cpu"])
    assert rc == 0
    report = json.loads(out.read_text())
    for key in ("canonical", "variants", "seen", "held_out"):
        g = report[key]
        assert {"call_accuracy", "ci95", "n"} <= set(g)
    assert report["canonical"]["n_turns"] + report["variants"]["n_turns"] == report["n_prompts"] == 6
    assert report["all"]["n"] + report["all"]["n_replies"] == 6  # tool-call turns and reply turns apart
    assert report["seen"]["n"] + report["held_out"]["n"] == report["variants"]["n"]
    assert {"call_accuracy", "ci95"} <= set(report["gap"]) and isinstance(report["by_family"], dict)
    inst = report["instructions"]
    assert inst["n"] == 2 and 0.0 <= inst["prompt_strict"] <= inst["prompt_loose"] <= 1.0
    assert report["model"] == str(tiny_model) and report["generation"]["greedy"] is True
    lines = [json.loads(x) for x in preds.read_text().splitlines()]
    assert [x["id"] for x in lines] == [r["id"] for r in report["results"]]
    assert (tmp_path / "report.png").read_bytes()[:4] == b"\x89PNG"
    assert "| canonical |" in (tmp_path / "report.md").read_text()

    rescored = tmp_path / "rescored.json"
    assert hsa_main(["eval", "score", str(mini_shards), "--predictions", str(preds), "--out", str(rescored),
                     "--held-out", "skill", "--max-prompts", "6"]) == 0
    again = json.loads(rescored.read_text())
    for key in ("canonical", "variants", "held_out", "gap", "by_family", "results"):
        assert again[key] == report[key]


def test_python_m_trainers_eval_takes_the_same_options(tiny_model, mini_shards, tmp_path):  # noqa: F811
    """python -m trainers.eval DATA --model M --out F runs the same evaluation, options also from --config;
    a second run writes the same bytes."""
    cfg = tmp_path / "eval.yaml"
    cfg.write_text("max-prompts: 2\nmax_new_tokens: 2\nturns: replies\nformat: hermes\n")
    outs = [tmp_path / "r1.json", tmp_path / "r2.json"]
    for out in outs:
        assert main([str(mini_shards), "--model", str(tiny_model), "--out", str(out), "--config", str(cfg),
                     "--turns", "calls"]) == 0
    report = json.loads(outs[0].read_text())
    assert report["n_prompts"] == 2 and report["options"]["turns"] == "calls"  # the flag wins over the file
    assert report["options"]["format"] == "hermes" and report["generation"]["max_new_tokens"] == 2
    assert outs[0].read_bytes() == outs[1].read_bytes()


def test_eval_run_bad_model_is_one_line(mini_shards, tmp_path, capsys):  # noqa: F811
    """A model path that does not exist is a clear error, exit status 2."""
    assert main([str(mini_shards), "--model", str(tmp_path / "nope"), "--out", str(tmp_path / "r.json")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_eval_run_errors_name_its_own_options(tiny_model, mini_shards, tmp_path, capsys):  # noqa: F811
    """`hsa eval run` names its own options in errors (--chat-template, --model), not the trainers'
    (--chat_template_path, --model_name_or_path): here a template that renders no tools (SmolLM2-Instruct's)."""
    from tests.trainers_support import ROOT

    smollm2 = ROOT / "tests" / "data" / "smollm2_instruct.jinja"
    rc = hsa_main(["eval", "run", str(mini_shards), "--model", str(tiny_model), "--chat-template", str(smollm2),
                   "--out", str(tmp_path / "r.json"), "--max-new-tokens", "2"])
    err = capsys.readouterr().err
    assert rc == 2 and "does not render the 'tools' list" in err
    assert "Pass --chat-template with a template" in err and "hsa_chatml_tools.jinja" in err
    assert "--chat_template_path" not in err
    assert hsa_main(["eval", "run", str(mini_shards), "--model", str(tiny_model), "--chat-template",
                     str(tmp_path / "none.jinja"), "--out", str(tmp_path / "r.json")]) == 2
    err = capsys.readouterr().err
    assert "--chat-template " in err and "--chat_template_path" not in err
    assert hsa_main(["eval", "run", str(mini_shards), "--model", str(tmp_path / "nope"), "--out",
                     str(tmp_path / "r.json")]) == 2
    err = capsys.readouterr().err
    assert "--model " in err and "--model_name_or_path" not in err


def test_eval_prompts_get_the_rewrites_the_template_needs(tiny_model, capsys):  # noqa: F811
    """hsa eval run renders prompts through the rewrites the template's probes find, as the trainers do: a
    Mistral-style template (9-character ids) renders a history with ``call_1`` ids without --chat-compat
    (before: "the chat template cannot render it"), its ids rewritten in the calls and their results alike."""
    import re
    from pathlib import Path

    from transformers import AutoTokenizer

    from trainers.eval import render_prompts

    tok = AutoTokenizer.from_pretrained(str(tiny_model))
    tok.chat_template = (Path(__file__).parent / "data" / "mistral_like_tools.jinja").read_text(encoding="utf-8")
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city.",
                                               "parameters": {"type": "object", "properties": {
                                                   "city": {"type": "string", "description": "The city."}},
                                                   "required": ["city"]}}}]
    prompt = {"id": "p1", "tools": tools, "messages": [
        {"role": "user", "content": "Weather in Oslo, then Bergen?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]},
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "3 degrees"}]}
    text = render_prompts(tok, [prompt])[0]
    assert "needs alnum9_call_ids" in capsys.readouterr().err
    ids = re.findall(r'"id": "([^"]+)"', text)
    assert ids and all(re.fullmatch(r"[A-Za-z0-9]{9}", i) for i in ids)
    assert f'"call_id": "{ids[0]}"' in text and "3 degrees" in text
