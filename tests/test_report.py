"""``hsa report`` without a browser: the representation-free diff, the reasons a prompt is wrong, the sample, the
plots and every bad input (the page in a real browser: tests/test_report_page.py)."""

from __future__ import annotations

import copy
import json
import re

import pytest
from hypothesis import given, settings, strategies as st

from hsa.cli import main
from hsa.report import ReportInputError, build_report, write_report
from hsa.report.diff import apply_ops, diff_ops, mapping_rows, section_diffs, utf16_len
from tests.report_support import evaluated, memorised_predictions  # noqa: F401
from tests.trainers_support import FIXTURES

TEXT = st.text(alphabet=st.sampled_from(list("ab cd\n_-.😀é{}\":")), max_size=60)


@settings(max_examples=300, deadline=None)
@given(TEXT, TEXT)
def test_diff_ops_rebuild_the_new_text(old, new):
    """apply_ops(old, diff_ops(old, new)) == new, and the kept and deleted units cover old exactly (UTF-16 units)."""
    ops = diff_ops(old, new)
    assert apply_ops(old, ops) == new
    assert sum(abs(op) for op in ops if isinstance(op, int)) == utf16_len(old)
    assert all(op != 0 and op != "" for op in ops)


def test_diff_ops_are_small_for_a_renamed_word():
    """A word renamed in a long text is one deletion and one insertion; the rest is kept by length."""
    old = "Call get_size_chart first.\n" * 50 + "Then reply.\n"
    new = old.replace("get_size_chart", "fetchSizeChart", 1)
    ops = diff_ops(old, new)
    assert [op for op in ops if isinstance(op, str)] == ["fetchSizeChart "]
    assert len(ops) == 4


def _record(args):
    return {"id": "r1", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"},
                                     {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
                                      "function": {"name": "get_weather", "arguments": args}}]}],
            "tools": [{"type": "function", "function": {"name": "get_weather", "description": "The weather.",
                       "parameters": {"type": "object", "required": ["city"],
                                      "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}}}}]}


def test_representation_is_not_a_change():
    """Arguments as a JSON string vs an object, schema key order and the tool dialect give no changed part."""
    source = _record('{"city": "Paris", "unit": "C"}')
    variant = _record({"unit": "C", "city": "Paris"})
    t = variant["tools"][0]["function"]
    variant["tools"] = [{"name": t["name"], "description": t["description"],  # Anthropic dialect, keys reordered
                         "input_schema": {"properties": {"unit": {"type": "string"}, "city": {"type": "string"}},
                                          "required": ["city"], "type": "object"}}]
    _, items = section_diffs(source, variant)
    assert {it["status"] for it in items} <= {"same", "order"}, [it for it in items if it["status"] == "changed"]
    assert [it["status"] for it in items if it["section"] == "tools"] == ["order"]


def test_a_renamed_tool_is_one_part_with_both_names():
    """A tool renamed through the mapping pairs with its source tool: one changed part, old and new name."""
    from hsa.mapping import Mapping

    source = _record({"city": "Paris"})
    variant = copy.deepcopy(source)
    variant["tools"][0]["function"]["name"] = "fetchWeather"
    variant["messages"][2]["tool_calls"][0]["function"]["name"] = "fetchWeather"
    variant["mapping"] = Mapping([{"op": "tools", "map": {"get_weather": "fetchWeather"}}]).to_dict()
    fields, items = section_diffs(source, variant)
    tool = [it for it in items if it["section"] == "tools"]
    assert len(tool) == 1 and tool[0]["old"] == "get_weather" and tool[0]["new"] == "fetchWeather"
    assert tool[0]["status"] == "changed"
    assert apply_ops(fields[tool[0]["key"]], tool[0]["ops"]).startswith("name: fetchWeather\n")
    call = [it for it in items if it["section"] == "messages" and it["status"] == "changed"]
    assert len(call) == 1 and "fetchWeather" in apply_ops(fields[call[0]["key"]], call[0]["ops"])


def test_mapping_rows_list_every_kind_of_step():
    """Tools and skills composed over their steps; parameters, values and fixed arguments step by step."""
    rows = mapping_rows({"steps": [
        {"op": "tools", "map": {"a": "b"}}, {"op": "tools", "map": {"b": "c"}},
        {"op": "params", "tool": "c", "paths": [[["x"], ["y", "z"]]], "fill": [[["mode"], "fast"]]},
        {"op": "values", "tool": "c", "path": ["unit"], "map": [["C", "CELSIUS"]]},
        {"op": "skills", "tool": "load_skill", "argument": "skill", "map": {"qa": "faq"}},
        {"op": "restore", "patch": {}}]})
    assert {"kind": "tool", "where": "", "old": "a", "new": "c"} in rows
    assert {"kind": "skill", "where": "", "old": "qa", "new": "faq"} in rows
    assert {"kind": "parameter", "where": "c", "old": "x", "new": "y.z"} in rows
    assert {"kind": "value", "where": "c: unit", "old": '"C"', "new": '"CELSIUS"'} in rows
    assert {"kind": "fixed argument", "where": "c", "old": "(absent)", "new": 'mode = "fast"'} in rows
    assert len(rows) == 5  # the restore step is not a rename


def test_show_hides_the_arguments_representation(tmp_path, capsys):
    """hsa show of a variant that only writes its arguments as an object (its source, read from the input file: a
    JSON string) shows no diff.

    Fails before hsa show read both sides with hsa.report.diff.normal_form (denormalize kept each side's form)."""
    from hsa.pipeline import augment
    from hsa.recipes import load_recipe

    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(_record('{"city": "Paris"}')) + "\n")
    augment([src], tmp_path / "out", load_recipe("identity"), variants=1, call_arguments="object")
    assert main(["show", str(tmp_path / "out"), "--id", "r1/1", "--no-color"]) == 0
    out = capsys.readouterr().out
    assert "--- source" not in out and out.rstrip().endswith("(no differences)"), out


def test_show_says_no_differences_only_when_there_are_none(evaluated, capsys):  # noqa: F811
    """A variant that renames a tool shows the rename, and not "(no differences)" under it.

    Fails before: the diff lines went into the header list itself, so "(no differences)" was always appended."""
    assert main(["show", str(evaluated.data), "--id", evaluated.renamed_row, "--no-color", "--width", "400"]) == 0
    out = capsys.readouterr().out
    canon, new = evaluated.renamed
    # a name changed in place is one "~" line with its word changes marked ([-old-]{+new+}), or a -/+ pair
    import re

    name_lines = [line for line in out.splitlines() if '"name":' in line and line[:1] in "~-+"]
    olds = [re.sub(r"\[-(.*?)-\]", r"\1", re.sub(r"\{\+.*?\+\}", "", x)) for x in name_lines if x[0] in "~-"]
    news = [re.sub(r"\{\+(.*?)\+\}", r"\1", re.sub(r"\[-.*?-\]", "", x)) for x in name_lines if x[0] in "~+"]
    assert any(canon in x for x in olds) and any(new in x for x in news), out
    assert "(no differences)" not in out


# --------------------------------------------------------------------------- the page, read as text


def _client_data(html: str) -> dict:
    m = re.search(r'<script type="application/json" id="hsa-data">(.*?)</script>', html, re.S)
    return json.loads(m.group(1))


def test_page_holds_the_evaluation_and_its_reasons(evaluated):  # noqa: F811
    """The known wrong prompt is in the page's prompts with the renamed-away reason, its raw completion and calls."""
    html = build_report(evaluated.data, evals=[evaluated.report], predictions=[evaluated.predictions])
    data = _client_data(html)
    prompt = next(p for p in data["eval"]["prompts"] if p["id"] == evaluated.wrong_prompt)
    out = prompt["outcomes"][0]
    canon, new = evaluated.renamed
    assert out["ok"] == 0
    assert ["renamed-away name", f"called `{canon}`, the canonical name of a tool this variant renamed to `{new}`"] \
        in out["reasons"]
    assert canon in out["raw"] and any(c["name"] == canon for c in out["parsed"])
    assert None in out["back"]  # the canonical name does not map back under the variant
    assert any(c["name"] == new for c in prompt["gold"]) and any(c["name"] == canon for c in prompt["gold_canonical"])
    canonical = [p for p in data["eval"]["prompts"] if p["variant"] == 0]
    assert canonical and all(p["outcomes"][0]["ok"] == 1 and not p["outcomes"][0]["reasons"] for p in canonical)
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert not re.search(r'(?:src|href)=["\']https?:', html)  # nothing loaded from elsewhere
    assert "call turns" in html and "reply turns" in html  # turns of each kind, apart


def test_reasons_of_each_kind(evaluated):  # noqa: F811
    """Missing, unparseable, reply-instead-of-call, wrong name and argument differences are named as such."""
    from hsa.evaluation import collect
    from hsa.report.evalview import explain

    items = {it.prompt["id"]: it for it in collect(str(evaluated.data))[0]}
    it = items[evaluated.wrong_prompt]
    gold = it.gold["calls"][0]
    variant_call = it.mapping.to_variant(gold)
    wrong = {"call": 0, "status": "ok"}

    def reasons(value, **kw):
        return [r[0] for r in explain(it, value, {**wrong, **kw}, canonical_schemas=None)["reasons"]]

    assert reasons(None, status="missing") == ["missing"]
    assert reasons("<tool_call>{\"name\": ") == ["unparseable"]
    assert reasons("Sure, one moment.") == ["reply instead of call"]
    assert reasons(f"<tool_call>{json.dumps({'name': 'no_such_tool', 'arguments': {}})}</tool_call>")[0] == \
        "wrong name"
    args = dict(variant_call["arguments"])
    key = next(iter(args))
    args[key] = "something else"
    text = f"<tool_call>{json.dumps({'name': variant_call['name'], 'arguments': args})}</tool_call>"
    out = explain(it, text, wrong)
    assert out["reasons"] and out["reasons"][0][0] in ("argument", "renamed-away name"), out
    assert "something else" in out["reasons"][0][1] or out["reasons"][0][0] == "renamed-away name"


def test_sample_is_stated_deterministic_and_bounded(evaluated, tmp_path):  # noqa: F811
    """--sample N shows N source records (all their rows), the same ones each time, and says so on the page."""
    a = _client_data(build_report(evaluated.data, sample=2, seed=3))
    b = _client_data(build_report(evaluated.data, sample=2, seed=3))
    assert [s["id"] for s in a["sources"]] == [s["id"] for s in b["sources"]] and len(a["sources"]) == 2
    assert a["sample"]["of_sources"] == 6 and a["sample"]["rows"] == 6  # 2 sources x (original + 2 variants)
    assert all(len(s["variants"]) == 3 and s["variants"][0]["source"] for s in a["sources"])
    c = _client_data(build_report(evaluated.data, sample=2, seed=4))
    assert len(c["sources"]) == 2
    html = build_report(evaluated.data, sample=2, seed=3)
    assert "6 rows of 2 source records, a sample of 6" in html


def test_source_without_keep_original_comes_from_the_inputs(tmp_path):
    """Augmented without --keep-original: the sampled sources are read from the inputs the manifest names."""
    from hsa.pipeline import augment
    from hsa.recipes import load_recipe

    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(FIXTURES.read_text().splitlines()[:2]) + "\n")
    augment([src], tmp_path / "out", load_recipe("tools"), variants=1)
    data = _client_data(build_report(tmp_path / "out"))
    assert all(s["found"] and s["where"] == "the input file the manifest names" for s in data["sources"])
    assert all(v["items"] for s in data["sources"] for v in s["variants"])


# --------------------------------------------------------------------------- bad input


def test_not_an_augment_output_is_a_clear_error(tmp_path, capsys):
    """A JSONL file, a folder without state.json and a missing path: one line saying what to give instead."""
    (tmp_path / "rows.jsonl").write_text("{}\n")
    (tmp_path / "folder").mkdir()
    cases = {tmp_path / "rows.jsonl": "is a file, not an `hsa augment` output folder",
             tmp_path / "folder": "not an `hsa augment` output folder",
             tmp_path / "gone": "does not exist"}
    for path, words in cases.items():
        assert main(["report", str(path), "--out", str(tmp_path / "r.html")]) == 2
        err = capsys.readouterr().err
        assert words in err and err.startswith("hsa: error:"), err
    assert not (tmp_path / "r.html").exists()


def test_an_eval_of_another_dataset_is_refused(evaluated, tmp_path):  # noqa: F811
    """A report whose source ids are none of the data's is an error naming both id shapes."""
    other = json.loads(evaluated.report.read_text())
    for r in other["results"]:
        r["source_id"] = "other-" + r["source_id"]
        r["id"] = "other-" + r["id"]
    path = tmp_path / "other.json"
    path.write_text(json.dumps(other))
    with pytest.raises(ReportInputError, match="scores another dataset: none of its 6 source records"):
        build_report(evaluated.data, evals=[path])
    (tmp_path / "nores.json").write_text(json.dumps({"canonical": {}}))
    with pytest.raises(ReportInputError, match="no.*per-prompt 'results'|per-prompt 'results'"):
        build_report(evaluated.data, evals=[tmp_path / "nores.json"])
    with pytest.raises(ReportInputError, match="2 --predictions files for 1 --eval"):
        build_report(evaluated.data, evals=[evaluated.report], predictions=[evaluated.predictions] * 2)


def test_predictions_with_unknown_ids_are_counted_or_refused(evaluated, tmp_path):  # noqa: F811
    """Some unknown ids: a counted note on the page; none known: an error."""
    lines = evaluated.predictions.read_text().splitlines()
    some = tmp_path / "some.jsonl"
    some.write_text("\n".join(lines + [json.dumps({"id": f"nope/{k}#1", "completion": "x"}) for k in range(3)]) + "\n")
    html = build_report(evaluated.data, evals=[evaluated.report], predictions=[some])
    assert f"3 predictions in {some} have ids that are no prompt of the report" in html
    none = tmp_path / "none.jsonl"
    none.write_text(json.dumps({"id": "nope#1", "completion": "x"}) + "\n")
    with pytest.raises(ReportInputError, match="none of its 1 ids is a prompt of"):
        build_report(evaluated.data, evals=[evaluated.report], predictions=[none])


def test_cli_writes_the_page_and_stats_html_is_the_same_page(evaluated, tmp_path, capsys):  # noqa: F811
    """hsa report writes one file and says its size; hsa stats --html writes the page of the same code."""
    out = tmp_path / "r.html"
    assert main(["report", str(evaluated.data), "--out", str(out), "--eval", str(evaluated.report), "--predictions",
                 str(evaluated.predictions), "--sample", "3"]) == 0
    assert "report page written to" in capsys.readouterr().err
    html = out.read_text()
    assert 'id="eval"' in html and "--sample 3" in html and f"hsa report {evaluated.data}" in html
    assert main(["stats", str(evaluated.data), "--html", str(tmp_path / "s.html")]) == 0
    stats_page = (tmp_path / "s.html").read_text()
    assert 'id="variants"' in stats_page and 'id="eval"' not in stats_page
    assert main(["report", str(evaluated.data), "--out", str(tmp_path)]) == 2


def test_markdown_report_points_at_the_page(evaluated, tmp_path):  # noqa: F811
    """The Markdown evaluation report ends with the hsa report command for the same report."""
    from hsa.evaluation.report import write_report as write_eval

    report = json.loads(evaluated.report.read_text())
    write_eval(report, tmp_path / "r.json", md=tmp_path / "r.md")
    md = (tmp_path / "r.md").read_text()
    assert f"hsa report {evaluated.data} --eval {tmp_path / 'r.json'} --predictions {evaluated.predictions}" in md


def test_write_report_is_the_api_other_commands_use(evaluated, tmp_path):  # noqa: F811
    """write_report(data, out, notes=...) writes the page, its folder made, the caller's notes on top."""
    path = write_report(evaluated.data, tmp_path / "deep" / "page.html", notes=["bench: 3 runs"], sample=1)
    assert path.is_file() and "bench: 3 runs" in path.read_text()


def test_plots_have_axes_units_and_labels():
    """Histograms carry both axis labels, ticks from 0 and a title; bars carry whiskers for intervals."""
    from hsa.report.plots import Bar, bars, histogram, nice_ticks

    assert nice_ticks(87) == [0, 25, 50, 75, 100]
    assert nice_ticks(100) == [0, 25, 50, 75, 100]
    assert nice_ticks(3) == [0, 1, 2, 3]
    svg = histogram([1, 2, 2, 3, 40, 1000], title="Length", xlabel="characters per row", ylabel="rows")
    assert "characters per row" in svg and ">rows<" in svg and 'class="tick"' in svg and "<title>" in svg
    chart = bars([Bar("canonical", [90.0], [[85.0, 95.0]], [10])], title="acc", xlabel="call accuracy (%)", xmax=100)
    assert 'class="whisker"' in chart and "95% interval 85.0–95.0%" not in chart  # unit given explicitly only
    assert bars([Bar("x", [None])], title="t", xlabel="x") == ""


def test_overview_lists_rejects_sandbox_layers_and_hooks_not_replayed(tmp_path):
    """Rejected lines with their input line and reason; each hook-sandbox layer on or off with why (when the
    manifest says); hooks not replayed with their counts; no empty tables."""
    from hsa.pipeline import augment
    from hsa.recipes import load_recipe

    src = tmp_path / "in.jsonl"
    lines = FIXTURES.read_text().splitlines()[:2]
    src.write_text("\n".join([lines[0], "{not json", lines[1]]) + "\n")
    augment([src], tmp_path / "out", load_recipe("tools"), variants=1)
    html = build_report(tmp_path / "out")
    assert f"{src}:2" in html and "1 lines in rejects.jsonl" in html
    assert "No input record was rejected" not in html
    # the layers as this hsa records them (hsa.sandbox.Status.to_dict: policy, layers with how / why, open)
    recorded = json.loads((tmp_path / "out" / "manifest.json").read_text())["hook_sandbox"]
    assert f"policy {recorded['policy']}" in html
    for layer, st in recorded["layers"].items():
        assert f"<td>{layer}</td><td>{'on' if st['on'] else 'off'}</td>" in html
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    del manifest["hook_sandbox"]
    (tmp_path / "out" / "manifest.json").write_text(json.dumps(manifest))
    assert "does not say which sandbox layers" in build_report(tmp_path / "out")  # an hsa that did not record them
    manifest["hook_sandbox"] = {"network": {"on": True}, "seccomp": {"on": False, "why": "libseccomp missing"}}
    manifest["hooks_not_replayed"] = {"check_stock (imports shop_helpers)": 2}
    (tmp_path / "out" / "manifest.json").write_text(json.dumps(manifest))
    html = build_report(tmp_path / "out")
    assert "<td>seccomp</td><td>off</td><td>libseccomp missing</td>" in html
    assert "<td>network</td><td>on</td>" in html
    assert "<td>check_stock (imports shop_helpers)</td><td>2</td>" in html
    assert "<th>reason</th><th>records</th></tr></thead><tbody></tbody>" not in html


def test_compare_shows_two_models_on_the_same_prompts(evaluated, tmp_path):  # noqa: F811
    """--compare adds a second model: each prompt has both outcomes, and the difference has a paired interval."""
    from hsa.evaluation import collect, dumps, score

    rows = {}
    for it in collect(str(evaluated.data))[0]:  # a model that answers under the variant: the gold turn itself
        calls = [it.mapping.to_variant(c) for c in it.gold["calls"]]
        rows[it.prompt["id"]] = "".join(f"<tool_call>{json.dumps(c)}</tool_call>" for c in calls) or \
            (it.gold["content"] or "ok")
    preds = tmp_path / "gold.jsonl"
    preds.write_text("".join(json.dumps({"id": k, "completion": v}) + "\n" for k, v in rows.items()))
    other = tmp_path / "gold.json"
    other.write_text(dumps(score(str(evaluated.data), preds)))
    out = tmp_path / "page.html"
    assert main(["report", str(evaluated.data), "--eval", str(evaluated.report), "--compare", str(other),
                 "--out", str(out)]) == 0
    html = out.read_text()
    data = _client_data(html)
    assert data["eval"]["models"] == ["report", "gold"]  # named after their files; predictions: those they name
    prompt = next(p for p in data["eval"]["prompts"] if p["id"] == evaluated.wrong_prompt)
    assert [o["ok"] for o in prompt["outcomes"]] == [0, 1] and prompt["outcomes"][1]["raw"]
    assert "minus report (same prompts, paired)" in html


def test_rename_kinds_read_from_the_two_names(evaluated):  # noqa: F811
    """What a rename did: restyled (and how), prefixed, reworded or opaque; stats count every tool name of every row."""
    from hsa.io import iter_rows
    from hsa.stats import compute_stats, rename_kind

    assert rename_kind("get_size_chart", "getSizeChart") == "restyled camel"
    assert rename_kind("get_size_chart", "GET_SIZE_CHART") == "restyled screaming"
    assert rename_kind("get_size_chart", "mcp__server__get_size_chart") == "prefixed"
    assert rename_kind("get_size_chart", "fetch_size_chart") == "reworded"
    assert rename_kind("get_size_chart", "Pi1WNGDz") == "opaque"
    stats = compute_stats(evaluated.data)
    rows = list(iter_rows(evaluated.data))
    assert sum(stats["renames"]["tools"].values()) == sum(len(r["tools"]) for r in rows)
    assert stats["rows_per_source"] == {"3": 6}
    assert sum(stats["transforms_per_row"].values()) == len(rows) and stats["transforms_per_row"]["0"] == 6
