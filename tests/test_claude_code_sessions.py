"""`hsa import claude-code`: Claude Code session logs (one event per line) as one record per conversation.

The logs here are written in the shape Claude Code 1.0.x writes them (``~/.claude/projects/<project>/*.jsonl``):
an assistant message split over events of one ``message.id``, tool results as user events, a summary line,
a subagent's events (``isSidechain``), an edited turn that leaves a branch, a compaction, and an API error
Claude Code writes itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hsa.cli import main
from hsa.formats.claude_code import read_session

HARNESS = Path(__file__).parent.parent / "fixtures" / "harnesses" / "claude_code.jsonl"


def _event(uuid, parent, kind, message=None, **extra):
    e = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/u/proj",
         "sessionId": "s-1", "version": "1.0.61", "gitBranch": "main", "type": kind, "uuid": uuid,
         "timestamp": "2025-07-30T10:00:00.000Z"}
    if message is not None:
        e["message"] = message
    return {**e, **extra}


def _assistant(mid, *blocks, model="claude-sonnet-4-20250514"):
    return {"id": mid, "type": "message", "role": "assistant", "model": model, "content": list(blocks),
            "stop_reason": None, "usage": {"input_tokens": 4, "output_tokens": 9}}


def _user(content):
    return {"role": "user", "content": content}


def _result(tid, text, error=False):
    return _user([{"tool_use_id": tid, "type": "tool_result", "content": text, "is_error": error}])


def _bash(tid, command):
    return {"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": command}}


def _write(path: Path, events) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


SESSION = [
    _event("u1", None, "user", _user("count the python files")),
    _event("a1", "u1", "assistant", _assistant("m1", {"type": "thinking", "thinking": "wc will do",
                                                      "signature": "sig"})),
    _event("a2", "a1", "assistant", _assistant("m1", {"type": "text", "text": "Counting."})),
    _event("a3", "a2", "assistant", _assistant("m1", _bash("t1", "ls *.py | wc -l"))),
    # a subagent's turns, in the same file
    _event("s1", "a3", "user", _user("subagent task"), isSidechain=True),
    _event("s2", "s1", "assistant", _assistant("ms", {"type": "text", "text": "sub answer"}), isSidechain=True),
    _event("u2", "a3", "user", _result("t1", "7")),
    _event("x1", "u2", "system", content="PostToolUse:Bash [hook.py] completed successfully", level="info"),
    # the first answer, then the user edits the question after it: a branch from u2
    _event("a4", "x1", "assistant", _assistant("m2", {"type": "text", "text": "Seven, I think."})),
    _event("a5", "x1", "assistant", _assistant("m3", {"type": "text", "text": "There are 7 Python files."})),
    _event("e1", "a5", "assistant", _assistant("m4", {"type": "text", "text": "API Error: overloaded"}),
           isApiErrorMessage=True),
    {"type": "summary", "summary": "Count Python files", "leafUuid": "e1"},
]


def test_a_session_becomes_one_conversation(tmp_path):
    """The chain ending at the last turn: one assistant message per message.id (thinking kept for the reader),
    the tool result, the kept branch's answer; the rest left out and counted."""
    records, rejects, left = read_session(_write(tmp_path / "s.jsonl", SESSION))
    assert rejects == [] and len(records) == 1
    r = records[0]
    assert r["id"] == "s-1" and r["meta"]["models"] == ["claude-sonnet-4-20250514"] and r["meta"]["cwd"]
    roles = [m["role"] for m in r["messages"]]
    assert roles == ["user", "assistant", "user", "assistant"]
    assert [b["type"] for b in r["messages"][1]["content"]] == ["thinking", "text", "tool_use"]
    assert r["messages"][-1]["content"] == [{"type": "text", "text": "There are 7 Python files."}]
    assert left == {"subagent (sidechain) events": 2, "turns on branches the session left": 1,
                    "summary events": 1, "system events": 1,
                    "messages Claude Code wrote itself (API errors, <synthetic>)": 1}


def test_import_then_augment_with_the_harness(tmp_path, capsys):
    """End to end: the record reads as the Anthropic layout, calls and results paired, and augments with Claude
    Code's tools given to hsa augment --tools; a rename reaches the call."""
    tools = json.loads(HARNESS.read_text(encoding="utf-8").splitlines()[0])["tools"]
    harness = tmp_path / "harness.json"
    harness.write_text(json.dumps({"tools": tools}), encoding="utf-8")
    out = tmp_path / "sessions.jsonl"
    assert main(["import", "claude-code", str(_write(tmp_path / "s.jsonl", SESSION)), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "1 conversation written to" in err and "left out: " in err and "--tools" in err
    assert main(["validate", str(out), "--tools", str(harness), "--no-exec-hooks"]) == 0
    assert main(["augment", str(out), "--tools", str(harness), "--out", str(tmp_path / "aug"), "--variants", "6",
                 "--quiet", "--no-exec-hooks"]) == 0
    capsys.readouterr()
    assert main(["export", str(tmp_path / "aug"), "--out", str(tmp_path / "rows.jsonl")]) == 0
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert len(rows) == 6
    for row in rows:
        names = {(t.get("function") or t)["name"] for t in row["tools"]}
        calls = [c for m in row["messages"] for c in m.get("tool_calls") or ()]
        results = [m for m in row["messages"] if m["role"] == "tool"]
        assert len(calls) == 1 and calls[0]["function"]["name"] in names
        assert [m["tool_call_id"] for m in results] == [calls[0]["id"]] and results[0]["content"] == "7"
    # invariant 3 (closure): the rows read back as input; invariant 8 (inversion): canonicalized, every variant
    # gives back the imported conversation with its harness
    from hsa.records import normalize, read_harness_file

    assert main(["validate", str(tmp_path / "rows.jsonl"), "--no-exec-hooks"]) == 0
    assert main(["canonicalize", str(tmp_path / "aug"), "--out", str(tmp_path / "canon.jsonl")]) == 0
    source = normalize(json.loads(out.read_text()), harness=read_harness_file(harness))
    canon = [normalize(json.loads(line)) for line in (tmp_path / "canon.jsonl").read_text().splitlines()]
    assert len(canon) == 6 and all(c["messages"] == source["messages"] and c["tools"] == source["tools"]
                                   for c in canon)


def test_a_compaction_starts_a_new_record(tmp_path):
    """After a compaction the model saw the summary, not the history: each part is a record of its own."""
    events = [
        _event("u1", None, "user", _user("first task")),
        _event("a1", "u1", "assistant", _assistant("m1", {"type": "text", "text": "done 1"})),
        _event("c1", None, "system", content="Conversation compacted", subtype="compact_boundary",
               logicalParentUuid="a1"),
        _event("u2", "c1", "user", _user("This session is being continued from a previous conversation..."),
               isCompactSummary=True),
        _event("a2", "u2", "assistant", _assistant("m2", {"type": "text", "text": "done 2"})),
    ]
    records, rejects, left = read_session(_write(tmp_path / "s.jsonl", events))
    assert [r["id"] for r in records] == ["s-1#1", "s-1#2"] and rejects == []
    assert records[0]["messages"][-1]["content"][0]["text"] == "done 1"
    assert records[1]["messages"][0]["content"].startswith("This session is being continued")
    assert left == {"system events": 1}


def test_bad_logs_are_listed_not_lost(tmp_path, capsys):
    """A line that is not JSON names its file and line; a log of summaries only is not a conversation; the
    others are written, and the exit code says something was not imported."""
    logs = tmp_path / "project"
    logs.mkdir()
    _write(logs / "a.jsonl", SESSION)
    (logs / "b.jsonl").write_text(json.dumps(SESSION[0]) + "\n{not json\n", encoding="utf-8")
    _write(logs / "c.jsonl", [{"type": "summary", "summary": "x", "leafUuid": "y"}])
    out = tmp_path / "sessions.jsonl"
    assert main(["import", "claude-code", str(logs), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert len(out.read_text().splitlines()) == 1 and "from 3 session logs" in err
    assert "b.jsonl:2: not JSON" in err and "c.jsonl: not imported: no user or assistant event" in err
    assert main(["import", "claude-code", str(tmp_path / "missing"), "--out", str(out)]) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.parametrize("events, why", [
    ([_event("u1", None, "user", _user("hello?"))], "has no assistant message"),
])
def test_a_conversation_without_an_answer_is_a_reject(tmp_path, events, why):
    records, rejects, _ = read_session(_write(tmp_path / "s.jsonl", events))
    assert records == [] and why in rejects[0]["reason"]


def test_a_logs_lines_given_to_augment_say_what_to_do(tmp_path):
    """Each line of a session log read as a record is a reject that names hsa import claude-code (before: the
    generic 'missing messages', listing layouts that do not apply)."""
    from hsa.records import RecordError, normalize

    for event in (SESSION[0], SESSION[1], SESSION[-1]):
        with pytest.raises(RecordError) as info:
            normalize(dict(event))
        assert info.value.reason == "claude code session event" and "hsa import claude-code" in info.value.detail


def test_a_subagents_own_log_is_its_conversation(tmp_path):
    """Newer Claude Code writes a subagent's run to a file of its own, every event a sidechain: that is the
    subagent's conversation, a record (before: 'no user or assistant event'); in a session's log the subagent's
    events stay left out."""
    events = [_event("s1", None, "user", _user("Find where prices are filtered."), isSidechain=True),
              _event("s2", "s1", "assistant", _assistant("m1", _bash("t1", "grep -rn price .")), isSidechain=True),
              _event("s3", "s2", "user", _result("t1", "search.py:2: price <= max_price"), isSidechain=True),
              _event("s4", "s3", "assistant", _assistant("m2", {"type": "text", "text": "In search.py, line 2."}),
                     isSidechain=True)]
    records, rejects, left = read_session(_write(tmp_path / "agent-1.jsonl", events))
    assert rejects == [] and [m["role"] for m in records[0]["messages"]] == ["user", "assistant", "user",
                                                                              "assistant"]
    assert left == {}
