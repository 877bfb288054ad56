"""`hsa eval prompts` and `hsa eval score` on augmented fixture shards (no torch)."""

from __future__ import annotations

import json

import pytest

from hsa.cli import main
from tests.trainers_support import FIXTURES, shards  # noqa: F401


def _rows(folder):
    from hsa.io import read_records
    from hsa.records import normalize

    return {r["id"]: normalize(r) for r in read_records(folder)}


def _predictions(folder, prompts_file, path, *, canonical_names=False):
    """Write predictions for every prompt: the gold turn in the variant harness (or in canonical names)."""
    from hsa.evaluation import collect

    rows = _rows(folder)
    gold = {it.prompt["id"]: it.gold["calls"] for it in collect(str(folder))[0]}
    lines = []
    for line in prompts_file.read_text().splitlines():
        p = json.loads(line)
        msg = rows[p["row_id"]]["messages"][p["turn"]]
        calls = ([{"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                  for c in msg.get("tool_calls") or ()] if not canonical_names else gold[p["id"]])
        text = "".join(f"<tool_call>{json.dumps(c)}</tool_call>" for c in calls) or (msg.get("content") or "ok")
        lines.append(json.dumps({"id": p["id"], "completion": text}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_prompts_then_score_gold_predictions(shards, tmp_path, capsys):  # noqa: F811
    """Predictions equal to the gold turns under each variant score 100% everywhere; the report is byte-stable."""
    prompts = tmp_path / "prompts.jsonl"
    assert main(["eval", "prompts", str(shards), "--out", str(prompts)]) == 0
    rows = [json.loads(x) for x in prompts.read_text().splitlines()]
    assert rows and all(r["id"] == f"{r['row_id']}#{r['turn']}" and len(r["messages"]) == r["turn"] for r in rows)
    assert {r["variant"] for r in rows} == {0, 1}
    preds = _predictions(shards, prompts, tmp_path / "preds.jsonl")
    out1, out2 = tmp_path / "r1.json", tmp_path / "r2.json"
    for out in (out1, out2):
        assert main(["eval", "score", str(shards), "--predictions", str(preds), "--out", str(out),
                     "--md", str(out.with_suffix(".md")), "--plot", str(out.with_suffix(".png"))]) == 0
    assert out1.read_bytes() == out2.read_bytes()
    assert out1.with_suffix(".png").read_bytes() == out2.with_suffix(".png").read_bytes()
    report = json.loads(out1.read_text())
    assert report["canonical"]["call_accuracy"] == report["variants"]["call_accuracy"] == 1.0
    assert report["gap"]["call_accuracy"] == 0.0 and report["problems"]["missing"]["n"] == 0
    err = capsys.readouterr().err
    assert "call accuracy (tool-call turns): canonical 100.0%" in err
    assert "reply accuracy (reply turns, no call expected): canonical 100.0%" in err


def test_canonical_names_under_variants_open_a_gap(shards, tmp_path):  # noqa: F811
    """Calls written with the canonical harness's names are right on variant 0 and wrong where the variant
    renamed them: a positive gap with an interval, per-family rows, and --compare against the gold run."""
    prompts = tmp_path / "prompts.jsonl"
    assert main(["eval", "prompts", str(shards), "--out", str(prompts), "--turns", "calls"]) == 0
    gold = _predictions(shards, prompts, tmp_path / "gold.jsonl")
    canon = _predictions(shards, prompts, tmp_path / "canon.jsonl", canonical_names=True)
    gold_report = tmp_path / "gold.json"
    assert main(["eval", "score", str(shards), "--predictions", str(gold), "--out", str(gold_report),
                 "--turns", "calls"]) == 0
    out = tmp_path / "canon.json"
    assert main(["eval", "score", str(shards), "--predictions", str(canon), "--out", str(out), "--turns", "calls",
                 "--compare", str(gold_report), "--held-out", "tool"]) == 0
    report = json.loads(out.read_text())
    assert report["canonical"]["call_accuracy"] == 1.0
    assert report["variants"]["call_accuracy"] < 1.0
    gap = report["gap"]
    assert gap["call_accuracy"] > 0 and gap["ci95"][0] <= gap["call_accuracy"] <= gap["ci95"][1]
    assert report["by_family"]["tool"]["held_out"] is True and report["held_out"]["n"] > 0
    paired = report["paired"]
    assert paired["n"] == report["n_prompts"] and paired["call_accuracy"] < 0


def test_train_manifest_names_the_held_out_families(shards, tmp_path):  # noqa: F811
    """--train-manifest reads hold_out from the training run's manifest."""
    manifest = tmp_path / "train" / "manifest.json"
    manifest.parent.mkdir()
    manifest.write_text(json.dumps({"hold_out": ["skill"]}))
    out = tmp_path / "r.json"
    assert main(["eval", "score", str(shards), "--predictions", str(tmp_path / "none.jsonl"), "--out", str(out)]) \
        == 2  # no such predictions file
    (tmp_path / "none.jsonl").write_text("")
    assert main(["eval", "score", str(shards), "--predictions", str(tmp_path / "none.jsonl"), "--out", str(out),
                 "--train-manifest", str(manifest.parent)]) == 0
    report = json.loads(out.read_text())
    assert report["options"]["held_out"] == ["skill"] and "held_out" in report
    assert report["problems"]["missing"]["n"] == report["n_prompts"]
    assert report["all"]["format_validity"] == 0.0


def test_canonical_rows_come_from_the_manifest_inputs(tmp_path):
    """Without --keep-original, the canonical harness is read from the input files the manifest names."""
    import hsa
    from hsa.evaluation import make_prompts
    from hsa.pipeline import augment

    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(FIXTURES.read_text(encoding="utf-8").splitlines()[:2]) + "\n")
    augment([src], tmp_path / "out", hsa.load_recipe("default"), variants=1, workers=1, progress=False)
    prompts = make_prompts(str(tmp_path / "out"), turns="first")
    assert sorted(p["variant"] for p in prompts) == [0, 0, 1, 1]
    src.unlink()
    from hsa.evaluation import collect

    items, source = collect(str(tmp_path / "out"), turns="first")
    assert {it.prompt["variant"] for it in items} == {1}
    assert any("--keep-original" in n for n in source.notes)


def test_folder_without_mapping_and_missing_data_are_clear_errors(tmp_path, capsys):
    """A folder that is not hsa output, and a path that does not exist, are one-line errors (exit 2)."""
    (tmp_path / "folder").mkdir()
    assert main(["eval", "prompts", str(tmp_path / "folder"), "--out", str(tmp_path / "p.jsonl")]) == 2
    assert "not an hsa output folder" in capsys.readouterr().err
    assert main(["eval", "score", str(tmp_path / "nope.jsonl"), "--predictions", "x", "--out", "r.json"]) == 2
    assert "does not exist" in capsys.readouterr().err
    bad = tmp_path / "variants.jsonl"
    bad.write_text(json.dumps({"id": "a/1", "variant": 1, "messages": [{"role": "user", "content": "hi"}]}) + "\n")
    assert main(["eval", "prompts", str(bad), "--out", str(tmp_path / "p.jsonl")]) == 2
    assert "has no 'mapping'" in capsys.readouterr().err
    assert not (tmp_path / "p.jsonl").exists()


def test_plain_records_are_the_canonical_harness(tmp_path):
    """Records without mapping or variant (any function-calling dataset) are scored as the canonical harness."""
    from hsa.evaluation import score

    src = tmp_path / "plain.jsonl"
    src.write_text("\n".join(FIXTURES.read_text(encoding="utf-8").splitlines()[:1]) + "\n")
    report = score(str(src), {}, bootstrap=0, turns="first")
    assert report["canonical"]["n"] == 1 and report["variants"]["n"] == 0
    assert any("canonical harness" in n for n in report["notes"])


@pytest.mark.parametrize("flag, value", [("--turns", "sometimes"), ("--format", "xml"), ("--string-match", "fuzzy")])
def test_bad_options_are_refused(shards, flag, value, capsys):  # noqa: F811
    """Choices are checked by the parser."""
    with pytest.raises(SystemExit):
        main(["eval", "score", str(shards), "--predictions", "p", "--out", "r", flag, value])
    assert "invalid choice" in capsys.readouterr().err


def test_plain_rows_in_other_layouts_keep_their_calls(tmp_path):
    """A Hermes ShareGPT row (tools in <tools>, calls in <tool_call>) is converted before its gold turn is read
    (regression: the identity mapping added to plain rows made the layout readers skip them: no gold calls)."""
    from hsa.evaluation import collect

    row = {"conversations": [
        {"from": "system", "value": "Use tools. <tools>[{\"type\": \"function\", \"function\": {\"name\": \"get_time\", "
                                    "\"parameters\": {\"type\": \"object\", \"properties\": {\"tz\": {\"type\": "
                                    "\"string\"}}}}}]</tools>"},
        {"from": "human", "value": "time in UTC?"},
        {"from": "gpt", "value": "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"UTC\"}}\n</tool_call>"}]}
    src = tmp_path / "hermes.jsonl"
    src.write_text(json.dumps(row) + "\n")
    (item,), _ = collect(str(src))
    assert item.gold["calls"] == [{"name": "get_time", "arguments": {"tz": "UTC"}}]
    assert [t["function"]["name"] for t in item.prompt["tools"]] == ["get_time"]
    assert item.prompt["id"].startswith("sha-") and item.prompt["variant"] == 0


def test_scoring_imports_no_torch(shards):  # noqa: F811
    """hsa eval prompts / score are the data path: no torch, transformers, trl, datasets or matplotlib."""
    import subprocess
    import sys

    from tests.trainers_support import ROOT

    code = ("import sys\nfrom hsa.evaluation import score\nfrom hsa.cli import make_parser\nmake_parser()\n"
            f"score({str(shards)!r}, {{}}, bootstrap=5)\n"
            "heavy = [m for m in ('torch', 'transformers', 'trl', 'datasets', 'matplotlib') if m in sys.modules]\n"
            "assert not heavy, heavy\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr


# --------------------------------------------------------------------------- which prompts are scored

MY_DATA = FIXTURES.parents[2] / "examples" / "my-data.jsonl"  # 5 OpenAI-style and 3 Hermes records


@pytest.fixture(scope="module")
def own_shards(tmp_path_factory):
    """examples/my-data.jsonl augmented as the README's own-data path does (originals and 4 variants each)."""
    out = tmp_path_factory.mktemp("own") / "shards"
    assert main(["augment", str(MY_DATA), "--out", str(out), "--variants", "4", "--keep-original", "--seed", "0",
                 "--workers", "1", "--quiet"]) == 0
    return out


def _gold_lines(folder, prompts_file, path, *, completion=None):
    """Predictions for the prompts of ``prompts_file``: the gold turn (or ``completion`` for every prompt)."""
    if completion is None:
        return _predictions(folder, prompts_file, path)
    path.write_text("".join(json.dumps({"id": json.loads(x)["id"], "completion": completion}) + "\n"
                            for x in prompts_file.read_text().splitlines()))
    return path


def test_a_model_that_never_calls_scores_zero_on_call_turns(own_shards, tmp_path, capsys):
    """Blank completions: 0% on the tool-call turns (the headline), 100% on the reply turns, reported apart in
    the summary line, report.json, report.md and the plot (before: one 'call accuracy' of 50%)."""
    prompts = tmp_path / "prompts.jsonl"
    assert main(["eval", "prompts", str(own_shards), "--out", str(prompts)]) == 0
    preds = _gold_lines(own_shards, prompts, tmp_path / "blank.jsonl", completion="")
    out = tmp_path / "r.json"
    assert main(["eval", "score", str(own_shards), "--predictions", str(preds), "--out", str(out),
                 "--md", str(tmp_path / "r.md"), "--plot", str(tmp_path / "r.png")]) == 0
    report = json.loads(out.read_text())
    for key in ("canonical", "variants", "all"):
        g = report[key]
        assert (g["call_accuracy"], g["reply_accuracy"]) == (0.0, 1.0), key
        assert g["n"] > 0 and g["n_replies"] > 0 and g["n"] + g["n_replies"] == g["n_turns"]
    assert {r["expects"] for r in report["results"]} == {"call", "reply"}
    err = capsys.readouterr().err
    assert "call accuracy (tool-call turns): canonical 0.0%" in err
    assert "reply accuracy (reply turns, no call expected): canonical 100.0%" in err
    md = (tmp_path / "r.md").read_text()
    assert "| group | tool-call turns | 95% CI | n | reply turns | 95% CI | n |" in md
    assert f"| canonical | 0.0 | [0.0, 0.0] | {report['canonical']['n']} | 100.0 |" in md
    assert (tmp_path / "r.png").read_bytes()[:4] == b"\x89PNG"


def test_predictions_for_a_sample_say_the_missing_count_as_wrong(own_shards, tmp_path, capsys):
    """Predictions made with --max-prompts N, scored without it: every id is a prompt, the rest are missing and
    count as wrong; the summary says so and names --max-prompts (before: only 'problems: missing 60')."""
    prompts = tmp_path / "prompts.jsonl"
    assert main(["eval", "prompts", str(own_shards), "--out", str(prompts), "--max-prompts", "16"]) == 0
    preds = _gold_lines(own_shards, prompts, tmp_path / "p.jsonl", completion="")
    assert main(["eval", "score", str(own_shards), "--predictions", str(preds), "--out", str(tmp_path / "r.json")]) \
        == 0
    err = capsys.readouterr().err
    assert "hint: predictions for 16 of the" in err and "count as wrong" in err and "--max-prompts 16" in err
    assert main(["eval", "score", str(own_shards), "--predictions", str(preds), "--max-prompts", "16",
                 "--out", str(tmp_path / "r2.json")]) == 0
    assert "hint:" not in capsys.readouterr().err


def test_predictions_for_other_data_stop_with_an_example_from_each_side(own_shards, tmp_path, capsys):
    """When most prediction ids are no prompt of DATA, score stops (exit 2) and shows an id from each side."""
    preds = tmp_path / "other.jsonl"
    preds.write_text("".join(json.dumps({"id": f"ls-{i:06d}/1#2", "completion": ""}) + "\n" for i in range(40)))
    assert main(["eval", "score", str(own_shards), "--predictions", str(preds), "--out", str(tmp_path / "r.json")]) \
        == 2
    err = capsys.readouterr().err
    assert "made for other data" in err and "'ls-000000/1#2'" in err and "'own-001/0#2'" in err
    assert not (tmp_path / "r.json").exists()


def test_predictions_for_other_turns_of_the_same_rows_name_prompts(own_shards, tmp_path, capsys):
    """Predictions for the reply turns scored as --turns calls: most ids are turns of these rows that the
    options do not select; the error says to pass the prompts file."""
    prompts = tmp_path / "replies.jsonl"
    assert main(["eval", "prompts", str(own_shards), "--out", str(prompts), "--turns", "replies"]) == 0
    preds = _gold_lines(own_shards, prompts, tmp_path / "p.jsonl", completion="ok")
    assert main(["eval", "score", str(own_shards), "--predictions", str(preds), "--out", str(tmp_path / "r.json"),
                 "--turns", "calls"]) == 2
    assert "--prompts FILE" in capsys.readouterr().err


def test_score_scores_exactly_the_prompts_of_a_prompts_file(own_shards, tmp_path, capsys):
    """Prompts written with --turns calls and perfect predictions: without --prompts, score derives other prompts
    (reply turns missing) and says how; with --prompts it scores exactly the file's prompts, 100%, and notes
    that its own options would have chosen others (issue 30: 55.9% for perfect predictions)."""
    prompts = tmp_path / "calls.jsonl"
    assert main(["eval", "prompts", str(own_shards), "--out", str(prompts), "--turns", "calls"]) == 0
    n = len(prompts.read_text().splitlines())
    preds = _gold_lines(own_shards, prompts, tmp_path / "perfect.jsonl")
    capsys.readouterr()
    assert main(["eval", "score", str(own_shards), "--predictions", str(preds), "--out", str(tmp_path / "a.json")]) \
        == 0
    assert "all reply turns: were the prompts written with --turns calls?" in capsys.readouterr().err
    out = tmp_path / "b.json"
    assert main(["eval", "score", str(own_shards), "--predictions", str(preds), "--out", str(out),
                 "--prompts", str(prompts)]) == 0
    report = json.loads(out.read_text())
    assert report["n_prompts"] == n and report["problems"]["missing"]["n"] == 0
    assert report["all"]["call_accuracy"] == 1.0 and report["options"]["prompts"] == str(prompts)
    assert f"scored exactly the {n} prompts of --prompts {prompts}; --turns all would have chosen" in \
        capsys.readouterr().err
    other = tmp_path / "foreign.jsonl"
    other.write_text(json.dumps({"id": "ls-000001/0#2"}) + "\n")
    assert main(["eval", "score", str(own_shards), "--predictions", str(preds), "--out", str(out),
                 "--prompts", str(other)]) == 2
    assert "'ls-000001/0#2'" in capsys.readouterr().err


def test_max_prompts_samples_across_sources_layouts_and_variants(own_shards, tmp_path):
    """--max-prompts 40 covers all 8 sources, both input layouts, the canonical row and every variant, and calls
    and replies; the sample does not depend on the order of the input lines (before: the first 40 prompts, 3 of 8
    sources and no Hermes row)."""
    from hsa.evaluation import make_prompts

    prompts = make_prompts(str(own_shards), max_prompts=40)
    assert len(prompts) == 40
    assert {p["source_id"] for p in prompts} == {f"own-{i:03d}" for i in range(1, 9)}
    assert {p["variant"] for p in prompts} == {0, 1, 2, 3, 4}
    rows = _rows(own_shards)
    assert any(rows[p["row_id"]]["messages"][p["turn"]].get("tool_calls") for p in prompts)
    assert any(not rows[p["row_id"]]["messages"][p["turn"]].get("tool_calls") for p in prompts)
    ids = [p["id"] for p in prompts]
    assert ids == sorted(ids, key=[p["id"] for p in make_prompts(str(own_shards))].index)  # dataset order
    reordered = tmp_path / "reordered.jsonl"
    lines = MY_DATA.read_text().splitlines()
    reordered.write_text("\n".join(lines[::-1]) + "\n")
    assert main(["augment", str(reordered), "--out", str(tmp_path / "s2"), "--variants", "4", "--keep-original",
                 "--seed", "0", "--workers", "1", "--quiet"]) == 0
    assert sorted(p["id"] for p in make_prompts(str(tmp_path / "s2"), max_prompts=40)) == sorted(ids)
    few = make_prompts(str(own_shards), max_prompts=5)  # fewer than a source's rows: one source, canonical first
    assert len({p["source_id"] for p in few}) == 1 and {p["variant"] for p in few} == {0, 1, 2, 3, 4}


def test_max_prompts_help_says_how_it_samples(capsys):
    """`--help` of prompts, score and run says how --max-prompts chooses."""
    for step in ("prompts", "score", "run"):
        with pytest.raises(SystemExit):
            main(["eval", step, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert "spread over the source records" in text and "same data always gives the same sample" in text
