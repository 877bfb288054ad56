"""Agent frameworks' logs met on 2026-12-06 (SWE-agent, mini-swe-agent, tau2-bench, OpenHands): what hsa reads of
them and what it refuses, with what to do. The shapes are those of the real files (SWE-agent's
trajectories/demonstrations/*.traj, mini-swe-agent 2.x's eval/example_trajectories, tau2-bench's
data/simulations results, OpenHands' tests/runtime/trajs); the contents are cut to a few turns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hsa.invariants import check_record
from hsa.records import RecordError, normalize

BASH = {"type": "function", "function": {"name": "bash", "description": "Run a command.", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}


def _call(cid: str, command: str) -> dict:
    return {"id": cid, "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": command})}}


def _swe_agent_row() -> dict:
    return {"history": [
        {"role": "system", "content": "SETTING: You are an autonomous programmer.", "message_type": "system_prompt"},
        {"role": "user", "content": "Fix the bug.", "message_type": "observation"},
        {"role": "assistant", "content": "Look first.", "action": "ls", "message_type": "action",
         "tool_calls": [_call("call_A", "ls"), _call("call_B", "pwd")]},
        {"role": "tool", "content": "/repo", "tool_call_ids": ["call_B"], "message_type": "observation"},
        {"role": "tool", "content": "a.py", "tool_call_ids": ["call_A"], "message_type": "observation"},
        {"role": "assistant", "content": "Done.", "message_type": "action"}], "tools": [BASH], "id": "swe-1"}


def test_swe_agent_results_name_their_call_in_tool_call_ids():
    """SWE-agent writes a result's call id as ``tool_call_ids`` (a list of one); it was ignored, so results were
    paired by position and exported with ``tool_call_id: None``. Two calls answered out of order show it."""
    rec = normalize(_swe_agent_row())
    assert [m.get("tool_call_id") for m in rec["messages"] if m["role"] == "tool"] == ["call_B", "call_A"]
    assert any("'tool_call_ids' (2 messages)" in n for n in rec["notes"])
    assert not check_record(rec)


def test_tau2_results_name_their_call_in_id():
    """tau2-bench's tool messages carry the call's id as ``id``; it is read as ``tool_call_id`` when a call made
    before has that id (any other ``id`` stays what it is)."""
    raw = {"id": "sim-1", "messages": [
        {"role": "assistant", "content": "Hi! How can I help you today?", "tool_calls": None, "turn_idx": 0},
        {"role": "user", "content": "Is a suite free on May 10?", "turn_idx": 1},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_50ce91d7", "name": "bash", "arguments": {"command": "avail suite"}, "requestor": "assistant"}],
         "turn_idx": 2},
        {"id": "call_50ce91d7", "role": "tool", "content": "{\"available\": true}", "requestor": "assistant",
         "turn_idx": 3},
        {"role": "assistant", "content": "Yes, it is.", "turn_idx": 4}], "tools": [BASH]}
    rec = normalize(raw)
    tool = next(m for m in rec["messages"] if m["role"] == "tool")
    assert tool["tool_call_id"] == "call_50ce91d7" and not check_record(rec)


def test_mini_swe_agent_exit_message_leaves_the_conversation():
    """mini-swe-agent ends its messages with one of role ``exit`` (the submitted patch): the whole record was an
    ``unknown role`` reject. It moves to the ``exit_message`` key, noted; a run without ``--tools`` says to pass
    them (the log holds none)."""
    raw = {"trajectory_format": "mini-swe-agent-1.1", "instance_id": "astropy-12907", "messages": [
        {"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
        {"role": "user", "content": "Fix separability_matrix."},
        {"role": "assistant", "content": "Look.", "tool_calls": [_call("c1", "ls")]},
        {"role": "tool", "tool_call_id": "c1", "content": "setup.py"},
        {"role": "exit", "content": "diff --git a/x b/x", "extra": {"exit_status": "Submitted"}}]}
    rec = normalize({**raw, "tools": [BASH]})
    assert [m["role"] for m in rec["messages"]] == ["system", "user", "assistant", "tool"]
    assert rec["extra"]["exit_message"]["extra"] == {"exit_status": "Submitted"}
    assert not check_record(rec)
    bare = normalize(raw)
    (v,) = check_record(bare)
    assert v.reason == "undefined tool" and "pass them with --tools FILE" in v.detail


@pytest.mark.parametrize("raw, reason, says", [
    ({"role": "user", "content": "Fix the bug."}, "a message, not a record", "one {\"messages\": [...]} object"),
    ({"id": 3, "source": "agent", "action": "run", "args": {"command": "ls"}, "timestamp": "t"}, "openhands event",
     "tool_call_metadata.model_response"),
    ({"instance_id": "x", "history": [{"content": "Fix it", "action": "message", "wait_for_response": False},
                                      {"observation": "run", "content": "ok"}]}, "openhands event",
     "its 'history' holds OpenHands events"),
    ({"timestamp": "t", "info": {"environment_info": {"policy": "Be kind."}}, "tasks": [], "simulations": [
        {"id": "s1", "messages": []}]}, "tau2-bench results file", "hsa import tau2 RESULTS.json"),
])
def test_pieces_of_agent_logs_are_refused_with_what_to_do(raw, reason, says):
    """A line that is one message, an OpenHands event (or a record whose history is events) or a whole tau2-bench
    results file was a generic 'missing messages' reject naming its keys; each now says what it is and what to
    write instead."""
    with pytest.raises(RecordError) as e:
        normalize(raw)
    assert e.value.reason == reason and says in e.value.detail


def _inputs(tmp_path, name: str) -> tuple[Path, list[str]]:
    """One input of the new readers as a user gives it to ``hsa augment``: (JSONL file, extra options)."""
    from hsa.cli import main

    data = Path(__file__).parent / "data"
    root = Path(__file__).resolve().parents[1]
    src = tmp_path / f"{name}.jsonl"
    if name == "tau2":
        assert main(["import", "tau2", str(root / "fixtures" / "tau2" / "results.json"), "--out", str(src)]) == 0
        return src, ["--tools", str(root / "fixtures" / "tau2" / "tools.json")]
    raw = {"toolbench": lambda: json.loads((data / "toolbench_answer_G1.json").read_text(encoding="utf-8")),
           "toolace-sharegpt": lambda: json.loads((data / "toolace_sharegpt_row.json").read_text(encoding="utf-8")),
           "swe-agent": _swe_agent_row}[name]()
    src.write_text(json.dumps(raw) + "\n", encoding="utf-8")
    return src, []


@pytest.mark.parametrize("name", ["tau2", "toolbench", "toolace-sharegpt", "swe-agent"])
def test_the_new_readers_rows_keep_closure_and_inversion(tmp_path, name):
    """Invariants 3 (closure: the exported variants are valid input) and 8 (inversion: canonicalized, each variant
    gives back its source as hsa reads it) on the rows of the readers added on 2026-12-06: tau2-bench results (via
    ``hsa import tau2``), ToolBench answer files, ToolACE rows converted by LLaMA-Factory (tools in the system text),
    SWE-agent results naming their calls in ``tool_call_ids``."""
    from hsa.cli import main
    from hsa.records import read_harness_file

    src, extra = _inputs(tmp_path, name)
    harness = read_harness_file(Path(extra[1])) if extra else None
    source = normalize(json.loads(src.read_text(encoding="utf-8").splitlines()[0]), harness=harness)
    out = tmp_path / "out"
    assert main(["augment", str(src), "--out", str(out), "--variants", "3", "--workers", "1", "--quiet",
                 "--no-exec-hooks", *extra]) == 0
    assert json.loads((out / "manifest.json").read_text())["counts"]["rejected"] == 0
    assert main(["export", str(out), "--out", str(tmp_path / "rows.jsonl")]) == 0
    assert main(["validate", str(tmp_path / "rows.jsonl"), "--no-exec-hooks"]) == 0
    assert main(["canonicalize", str(out), "--out", str(tmp_path / "canon.jsonl")]) == 0
    canon = [normalize(json.loads(line)) for line in (tmp_path / "canon.jsonl").read_text().splitlines()]
    assert len(canon) == 3 and all(c["messages"] == source["messages"] for c in canon)


def test_a_tool_listing_of_a_converted_layout_is_noted_once():
    """The system-text reader runs once per row: a ToolBench answer (a layout converted inside the dispatch) whose
    system text lists its functions as JSON got the 'kept as prompt text' note twice, the reader having run in the
    messages step and again at the end."""
    from hsa.formats import to_messages_layout

    fn = {"name": "get_x", "description": "Get x.", "parameters": {"type": "object", "properties": {}}}
    raw = {"answer_generation": {"function": [fn], "valid_data": True, "train_messages": [[
        {"role": "system", "content": "Tools: " + json.dumps([fn])}, {"role": "user", "content": "x?"},
        {"role": "assistant", "content": None, "function_call": {"name": "get_x", "arguments": "{}"}}]]}}
    notes = to_messages_layout(raw)["notes"]
    assert sum("lists tools as JSON" in n for n in notes) == 1
