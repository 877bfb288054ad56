"""Issue 16 item 13: trajectory dumps that keep a ``traj`` list, with the tools in a separate file (--tools FILE)."""

from __future__ import annotations

import copy
import json

import pytest

from hsa.cli import main
from hsa.records import RecordError, normalize, read_harness_file
from hsa.invariants import check_record
from tests.harness_cases import AIRLINE


def _dump_row(k: int = 0, system: bool = True) -> dict:
    """A tau-bench-style result row: task id, reward, info and the message list under ``traj``, no tools."""
    msgs = copy.deepcopy(AIRLINE["messages"])
    for m in msgs:
        if m["role"] == "assistant":
            m.update({"function_call": None, "refusal": None})
    if not system:
        msgs = msgs[1:]
    return {"task_id": k, "reward": 1.0, "info": {"trial": 0}, "traj": msgs}


@pytest.fixture
def files(tmp_path):
    dump = tmp_path / "dump.jsonl"
    dump.write_text("".join(json.dumps(_dump_row(k)) + "\n" for k in range(3)), encoding="utf-8")
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(AIRLINE["tools"]), encoding="utf-8")
    return dump, tools


def test_traj_is_read_as_the_message_list():
    """A row whose turns are under ``traj`` reads as its messages (calls included), noted."""
    rec = normalize(_dump_row())
    assert [m["role"] for m in rec["messages"]] == [m["role"] for m in AIRLINE["messages"]]
    assert rec["messages"][2]["tool_calls"][0]["function"]["name"] == "search_direct_flight"
    assert "'traj' read as messages" in rec["notes"]
    assert rec["extra"]["task_id"] == 0


def test_harness_file_supplies_tools_only_to_rows_without_them(tmp_path, files):
    """--tools fills rows without tools (missing, null or []); a row with its own tools keeps them."""
    _, tools = files
    harness = read_harness_file(tools)
    rec = normalize(_dump_row(), harness=harness)
    assert [t["name"] for t in rec["tools"]] == [t["function"]["name"] for t in AIRLINE["tools"]]
    assert check_record(rec) == []
    assert any(n.startswith("converted with the harness of --tools tools.json: 4 tools") for n in rec["notes"])
    assert check_record(normalize({**_dump_row(), "tools": None}, harness=harness)) == []
    own = normalize({"messages": [{"role": "user", "content": "hi"}], "tools": [AIRLINE["tools"][3]]},
                    harness=harness)
    assert [t["name"] for t in own["tools"]] == ["think"]
    assert check_record(normalize(_dump_row())) != []  # without the file: calls to tools the row does not declare


def test_harness_file_forms_and_errors(tmp_path):
    """A list, an object with tools and a system text, and JSONL are read; bad files fail with where and what."""
    obj = tmp_path / "harness.json"
    obj.write_text(json.dumps({"tools": AIRLINE["tools"], "system": "You are an airline agent."}))
    rec = normalize(_dump_row(system=False), harness=read_harness_file(obj))
    assert rec["messages"][0] == {"role": "system", "content": "You are an airline agent."}
    rec = normalize(_dump_row(system=True), harness=read_harness_file(obj))
    assert rec["messages"][0]["content"].startswith("# Airline Agent Policy")  # a row's own system message stays
    lines = tmp_path / "tools.jsonl"
    lines.write_text("".join(json.dumps(t) + "\n" for t in AIRLINE["tools"]))
    assert len(read_harness_file(lines)["tools"]) == 4
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"tool": []}))
    with pytest.raises(RecordError, match="'tools' list"):
        read_harness_file(bad)
    bad.write_text(json.dumps([{"description": "no name"}]))
    with pytest.raises(RecordError, match=r"tools\[0\]"):
        read_harness_file(bad)
    with pytest.raises(RecordError, match="does not exist"):
        read_harness_file(tmp_path / "missing.json")


def test_augment_and_validate_take_tools(tmp_path, files, capsys):
    """hsa augment / validate --tools FILE read a traj dump without tools; without the file its rows are rejected."""
    import datasets

    dump, tools = files
    assert main(["validate", str(dump)]) == 1
    assert main(["validate", str(dump), "--tools", str(tools)]) == 0
    out = tmp_path / "out"
    assert main(["augment", str(dump), "--out", str(out), "--variants", "2", "--quiet", "--tools", str(tools)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["sources_written"] == 3 and manifest["counts"]["rejected"] == 0
    assert manifest["tools_file"]["sha256"]
    rows = list(datasets.load_from_disk(str(out)))
    assert len(rows) == 6 and all(len(r["tools"]) >= 4 for r in rows)  # distractors may add some
    assert main(["validate", str(out)]) == 0
    bare = tmp_path / "bare"
    assert main(["augment", str(dump), "--out", str(bare), "--variants", "1", "--quiet"]) == 0
    assert json.loads((bare / "manifest.json").read_text())["counts"]["rejected"] == 3
    assert main(["augment", str(dump), "--out", str(tmp_path / "x"), "--tools", str(tmp_path / "nope.json")]) == 2
    assert "--tools" in capsys.readouterr().err


def test_trainers_dataset_loading_takes_tools(files):
    """trainers.common.iter_rows(..., tools=FILE) gives rows that to_chat renders with their tools."""
    from trainers.common import iter_rows, to_chat

    dump, tools = files
    chats = [to_chat(r) for r in iter_rows(str(dump), tools=str(tools))]
    assert len(chats) == 3 and all(len(c["tools"]) == 4 for c in chats)
    assert chats[0]["messages"][2]["tool_calls"][0]["function"]["arguments"] == {
        "origin": "JFK", "destination": "SEA", "date": "2024-05-20"}
