"""``hsa import tau2``: tau2-bench results files (``data/simulations/*.json``), one record per simulation.

The file below has the shape of the real results files met on 2026-12-06 (``{"timestamp", "info", "tasks",
"simulations"}``; flat calls ``{"id", "name", "arguments", "requestor"}``; tool messages answering by ``id``; per-message
``turn_idx``, ``timestamp``, ``cost``, ``usage``, ``raw_data``), cut to one short conversation, plus one
user-side tool call as tau2's telecom domain makes them. Before, such a file given to ``hsa augment`` was one
``missing messages`` reject (now a ``tau2-bench results file`` reject that names this command)."""

from __future__ import annotations

import json

import pytest

from hsa.formats.tau2 import Tau2Error, read_results

AVAIL = {"type": "function", "function": {"name": "check_room_availability", "description": "Rooms free on dates.",
                                          "parameters": {"type": "object", "properties": {
                                              "room_type_id": {"type": "string"}, "check_in": {"type": "string"}},
                                              "required": ["room_type_id", "check_in"]}}}


def _results(tool_defs=None) -> dict:
    book = {"turn_idx": 0, "timestamp": "2026-04-04T13:13:08", "cost": 0.0, "usage": None, "raw_data": None}
    return {"timestamp": "2026-04-04T13:13:08", "info": {
        "agent_info": {"implementation": "llm_agent", "llm": "gemini/gemma-3-27b-it"},
        "environment_info": {"domain_name": "hotel_calle", "policy": "# Hotel Calle Policy\nBe exact.",
                             "tool_defs": tool_defs}},
        "tasks": [{"id": "suite_may", "description": {"purpose": "availability"},
                   "evaluation_criteria": {"actions": [{"name": "check_room_availability"}]}}],
        "simulations": [{"id": "sim-1", "task_id": "suite_may", "trial": 0, "termination_reason": "user_stop",
                         "reward_info": {"reward": 1.0}, "messages": [
            {"role": "assistant", "content": "Hi! How can I help you today?", "tool_calls": None, **book},
            {"role": "user", "content": "Is a suite free on May 10?", "tool_calls": None, **book},
            {"role": "user", "content": None, "tool_calls": [
                {"id": "u1", "name": "toggle_airplane_mode", "arguments": {}, "requestor": "user"}], **book},
            {"id": "u1", "role": "tool", "content": "ok", "requestor": "user", "error": False, **book},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_50ce91d7", "name": "check_room_availability",
                 "arguments": {"room_type_id": "suite", "check_in": "2026-05-10"}, "requestor": "assistant"}],
             **book},
            {"id": "call_50ce91d7", "role": "tool", "content": "{\"available\": true}", "requestor": "assistant",
             "error": False, **book},
            {"role": "assistant", "content": "Yes, a suite is free.", "tool_calls": None, **book}]},
            {"id": "sim-empty", "task_id": "suite_may", "messages": []}]}


def test_a_results_file_becomes_a_record_per_simulation(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(_results()), encoding="utf-8")
    records, rejects, left = read_results(path)
    assert rejects == [{"file": str(path), "reason": "simulations[1] holds no messages"}]
    (rec,) = records
    assert rec["id"] == "sim-1" and "tools" not in rec
    assert [m["role"] for m in rec["messages"]] == ["system", "assistant", "user", "assistant", "tool", "assistant"]
    assert rec["messages"][0]["content"].startswith("# Hotel Calle Policy")
    tool = rec["messages"][4]
    assert tool == {"role": "tool", "content": "{\"available\": true}", "tool_call_id": "call_50ce91d7"}
    assert rec["messages"][3]["tool_calls"][0] == {"id": "call_50ce91d7", "name": "check_room_availability",
                                                   "arguments": {"room_type_id": "suite", "check_in": "2026-05-10"}}
    assert rec["task"]["id"] == "suite_may"
    assert rec["meta"] == {"source": "tau2-bench", "file": "results.json", "domain": "hotel_calle",
                           "task_id": "suite_may", "trial": 0, "reward": 1.0, "termination_reason": "user_stop",
                           "agent_llm": "gemini/gemma-3-27b-it"}
    assert left["user-side tool calls"] == 1 and left["user-side tool results"] == 1
    assert left["message bookkeeping fields"] > 0


def test_import_then_augment_with_the_domains_tools(tmp_path, capsys):
    """The CLI writes the records and says the tools are missing; with them (here in the file's tool_defs, else
    --tools) the records validate and augment."""
    from hsa.cli import main

    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(_results()), encoding="utf-8")
    assert main(["import", "tau2", str(bare), "--out", str(tmp_path / "bare.jsonl")]) == 1  # the empty simulation
    err = capsys.readouterr().err
    assert "1 conversation written" in err and "from 1 results file" in err and "--tools TOOLS.json" in err
    assert "simulations[1] holds no messages" in err
    full = tmp_path / "full.json"
    full.write_text(json.dumps(_results({"check_room_availability": AVAIL})), encoding="utf-8")
    main(["import", "tau2", str(full), "--out", str(tmp_path / "r.jsonl")])
    (rec,) = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert rec["tools"] == [AVAIL]
    assert main(["validate", str(tmp_path / "r.jsonl")]) == 0
    assert main(["augment", str(tmp_path / "r.jsonl"), "--out", str(tmp_path / "o"), "--variants", "2",
                 "--workers", "1"]) == 0
    manifest = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert manifest["counts"]["rows_written"] == 2 and manifest["counts"]["rejected"] == 0


def test_a_file_that_is_not_a_results_file_says_so(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"messages": []}), encoding="utf-8")
    with pytest.raises(Tau2Error, match="not a tau2-bench results file"):
        read_results(path)
