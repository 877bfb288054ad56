"""The CLI the way users get it wrong: one clear line and exit status 2 (or 1 with file:line), never a traceback."""

from __future__ import annotations

import json

from hsa.cli import main


def test_augment_into_a_file_says_to_give_a_folder(tmp_path, small_jsonl, capsys):
    """--out naming an existing file is an error that says the output is a folder."""
    target = tmp_path / "variants.jsonl"
    target.write_text("")
    assert main(["augment", str(small_jsonl), "--out", str(target), "--quiet"]) == 2
    assert "is a file; give a folder" in capsys.readouterr().err


def test_a_strict_abort_leaves_a_folder_the_next_run_may_use(tmp_path, small_jsonl, capsys):
    """After --strict stops at a bad line before any shard, rerunning with a fixed input needs no --overwrite."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text(small_jsonl.read_text(encoding="utf-8") + '{"broken\n', encoding="utf-8")
    out = tmp_path / "out"
    assert main(["augment", str(bad), "--out", str(out), "--strict", "--quiet"]) == 2
    assert "bad.jsonl:21: malformed JSON" in capsys.readouterr().err
    assert main(["augment", str(small_jsonl), "--out", str(out), "--strict", "--quiet"]) == 0
    assert json.loads((out / "manifest.json").read_text())["counts"]["input_records"] == 20
    # a folder with finished work is still protected
    assert main(["augment", str(small_jsonl), "--out", str(out), "--quiet"]) == 2
    assert "is not empty" in capsys.readouterr().err


def test_export_names_what_is_wrong_with_its_paths(tmp_path, small_jsonl, capsys):
    """export on a file, on a missing path, into a folder; and into a new nested path, which it creates."""
    assert main(["export", str(small_jsonl), "--out", str(tmp_path / "x.jsonl")]) == 2
    assert "is a file, not an hsa output folder" in capsys.readouterr().err
    assert main(["export", str(tmp_path / "nope"), "--out", str(tmp_path / "x.jsonl")]) == 2
    assert "does not exist" in capsys.readouterr().err
    out = tmp_path / "out"
    assert main(["augment", str(small_jsonl), "--out", str(out), "--variants", "1", "--quiet"]) == 0
    assert main(["export", str(out), "--out", str(out)]) == 2
    assert "is a folder; give the JSONL file" in capsys.readouterr().err
    assert main(["export", str(out), "--out", str(tmp_path / "new" / "sub" / "x.jsonl")]) == 0
    assert len((tmp_path / "new" / "sub" / "x.jsonl").read_text().splitlines()) == 20


def test_canonicalize_reports_a_malformed_line_and_goes_on(tmp_path, small_jsonl, capsys):
    """A line that is not JSON is file:line and a failure; the other lines are still mapped back."""
    lines = small_jsonl.read_text(encoding="utf-8").splitlines()
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(lines[:3] + ['{"broken'] + lines[3:5]) + "\n", encoding="utf-8")
    assert main(["canonicalize", str(src), "--out", str(tmp_path / "back.jsonl")]) == 1
    err = capsys.readouterr().err
    assert "in.jsonl:4: cannot canonicalize: malformed JSON" in err and "1 failed" in err
    assert len((tmp_path / "back.jsonl").read_text().splitlines()) == 5


def test_canonicalize_and_validate_catch_a_mapping_that_is_not_the_records(tmp_path, small_jsonl, capsys):
    """A row whose mapping renames a tool to a name the row does not have fails both commands; so does a call
    of an undefined tool for canonicalize."""
    out = tmp_path / "out"
    assert main(["augment", str(small_jsonl), "--out", str(out), "--variants", "1", "--recipe", "tools",
                 "--quiet"]) == 0
    assert main(["export", str(out), "--out", str(tmp_path / "v.jsonl")]) == 0
    rows = [json.loads(x) for x in (tmp_path / "v.jsonl").read_text().splitlines()]
    k, row = next((i, r) for i, r in enumerate(rows) if any(s["op"] == "tools" for s in r["mapping"]["steps"]))
    step = next(s for s in row["mapping"]["steps"] if s["op"] == "tools")
    old = next(iter(step["map"]))
    step["map"][old] = "zz_not_a_tool"
    bad_call = json.loads(json.dumps(rows[k + 1]))
    next(m for m in bad_call["messages"] if m.get("tool_calls"))["tool_calls"][0]["function"]["name"] = "no_such_tool"
    (tmp_path / "bad.jsonl").write_text(json.dumps(row) + "\n" + json.dumps(bad_call) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["canonicalize", str(tmp_path / "bad.jsonl"), "--out", str(tmp_path / "back.jsonl")]) == 1
    err = capsys.readouterr().err
    assert f"bad.jsonl:1: cannot canonicalize: the mapping renames tool {old!r} to 'zz_not_a_tool'" in err
    assert "bad.jsonl:2: cannot canonicalize: the record mapped back breaks invariant 1: undefined tool" in err
    assert main(["validate", str(tmp_path / "bad.jsonl")]) == 1
    assert "does not belong to this record" in capsys.readouterr().out


def test_an_empty_input_is_a_warning(tmp_path, capsys):
    """An input with no records still makes a valid (empty) dataset, and says so on stderr."""
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert main(["augment", str(empty), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    assert "holds no records; nothing was augmented" in capsys.readouterr().err


def _broken_record(n_calls: int) -> dict:
    """A record whose ``n_calls`` calls each break their schema twice (a wrong type and a value not in the enum)."""
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
        "required": ["city"]}}}
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": "get_weather",
                                                             "arguments": {"city": i, "unit": "kelvin"}}}
             for i in range(n_calls)]
    return {"id": "bad", "tools": [tool], "messages": [
        {"role": "user", "content": "weather?"}, {"role": "assistant", "content": "", "tool_calls": calls},
        *({"role": "tool", "tool_call_id": c["id"], "content": "sunny"} for c in calls),
        {"role": "assistant", "content": "Sunny."}]}


def test_every_violation_of_a_record_is_reported_and_the_rest_counted(tmp_path, capsys):
    """A record breaking its schema in two calls, twice in each, reports all four violations (hsa validate, and
    the reject's detail in rejects.jsonl); past ten, the detail names ten and counts the rest (before: one error
    per call, and at most three per reject, the rest dropped without a count)."""
    src = tmp_path / "bad.jsonl"
    src.write_text(json.dumps(_broken_record(2)) + "\n" + json.dumps({**_broken_record(7), "id": "worse"}) + "\n")
    assert main(["validate", str(src)]) == 1
    out, err = capsys.readouterr()
    first = [line for line in out.splitlines() if line.startswith(f"{src}:1:")]
    assert len(first) == 4 and sum("tool_calls[1]" in line for line in first) == 2
    assert "18 violations" in err  # 2 x 2 + 7 x 2
    assert main(["augment", str(src), "--out", str(tmp_path / "out"), "--quiet", "--workers", "1"]) == 0
    rejects = [json.loads(x) for x in (tmp_path / "out" / "rejects.jsonl").read_text().splitlines()]
    two, seven = (r["detail"] for r in rejects)
    assert two.count("; ") == 3 and "is not of type 'string'" in two and "'kelvin' is not one of" in two
    assert seven.count("tool_calls[") == 10 and seven.endswith("; and 4 more violations")


def test_one_commands_parser_is_the_whole_parsers_part():
    """``make_parser(only=CMD)`` (what ``main`` builds when the command line names CMD) lists every command of the
    whole parser in ``COMMANDS`` and gives CMD the same options, defaults and help as the whole parser does."""
    import argparse

    from hsa.cli import COMMANDS, make_parser

    def commands(parser):
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return action.choices

    whole = commands(make_parser())
    assert tuple(whole) == COMMANDS
    for name in COMMANDS:
        alone = commands(make_parser(only=name))
        assert list(alone) == [name]
        assert alone[name].format_help() == whole[name].format_help(), name
        defaults = [[(a.dest, a.default, a.required, list(a.choices or ())) for a in p._actions]
                    for p in (alone[name], whole[name])]
        assert defaults[0] == defaults[1], name
