"""`hsa import codex`: Codex CLI rollouts (one ``{"timestamp", "type", "payload"}`` line per item) as one record per
conversation.

``fixtures/codex/rollout.jsonl`` is written by hand in the shape Codex CLI 0.6x writes to
``~/.codex/sessions/YYYY/MM/DD/``: session metadata with the base instructions, the AGENTS.md and environment
messages, shell calls with JSON-text arguments, a freeform ``apply_patch`` call, an encrypted reasoning item and the
UI's ``event_msg`` copies. The other rollouts here are built in the tests.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hsa.cli import main
from hsa.formats.codex import read_rollout

FIXTURES = Path(__file__).parent.parent / "fixtures" / "codex"
ROLLOUT = FIXTURES / "rollout.jsonl"
HARNESS = FIXTURES / "harness.json"


def _line(kind, payload):
    return {"timestamp": "2026-11-20T10:00:00.000Z", "type": kind, "payload": payload}


def _msg(role, text):
    return {"type": "message", "role": role,
            "content": [{"type": "output_text" if role == "assistant" else "input_text", "text": text}]}


def _write(path: Path, lines: list) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_a_rollout_becomes_one_conversation():
    """The items in order, the base instructions as the system prompt, the freeform apply_patch call as a call with
    {"input": patch} and its output as the result; reasoning and the UI's copies left out and counted."""
    records, rejects, left = read_rollout(ROLLOUT)
    assert rejects == [] and len(records) == 1
    rec = records[0]
    assert rec["id"] == "0199f3c2-7a41-7d30-9e52-3b8c1f0d2a77" and rec["meta"]["models"] == ["gpt-5-codex"]
    assert rec["instructions"].startswith("You are Codex")
    kinds = [i["type"] for i in rec["input"]]
    assert kinds == ["message"] * 3 + ["function_call", "function_call_output"] * 3 + ["message"]
    patch = rec["input"][5]
    assert patch["name"] == "apply_patch" and patch["arguments"]["input"].startswith("*** Begin Patch")
    assert rec["input"][6] == {"type": "function_call_output", "call_id": patch["call_id"],
                               "output": rec["input"][6]["output"]}
    assert left == {"event_msg lines (the UI's copies of the items)": 4, "reasoning items": 1}


def test_import_then_augment_with_the_tools(tmp_path, capsys):
    """End to end: the record reads as the Responses layout (three calls, each answered), validates with Codex's
    tools given to --tools, and its variants keep every call valid: a rename reaches the calls and the system
    prompt's mention, the patch text is untouched; canonicalized, every variant gives back the source."""
    from hsa.records import normalize, read_harness_file

    out = tmp_path / "sessions.jsonl"
    assert main(["import", "codex", str(ROLLOUT), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "1 conversation written to" in err and "4 event_msg lines" in err and "--tools" in err
    source = normalize(json.loads(out.read_text()), harness=read_harness_file(HARNESS))
    assert source["messages"][0]["role"] == "system"
    calls = [c for m in source["messages"] for c in m.get("tool_calls") or ()]
    assert [c["function"]["name"] for c in calls] == ["shell", "apply_patch", "shell"]
    assert [m["tool_call_id"] for m in source["messages"] if m["role"] == "tool"] == [c["id"] for c in calls]
    assert main(["validate", str(out), "--tools", str(HARNESS), "--no-exec-hooks"]) == 0
    assert main(["augment", str(out), "--tools", str(HARNESS), "--out", str(tmp_path / "aug"), "--variants", "6",
                 "--recipe", "tools", "--quiet", "--no-exec-hooks"]) == 0
    assert main(["export", str(tmp_path / "aug"), "--out", str(tmp_path / "rows.jsonl")]) == 0
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    patch = calls[1]["function"]["arguments"]["input"]
    assert len(rows) == 6 and any(
        "apply_patch" not in {t["function"]["name"] for t in r["tools"]} for r in rows)
    for row in rows:
        row_calls = [c for m in row["messages"] for c in m.get("tool_calls") or ()]
        assert len(row_calls) == 3 and patch in json.dumps([c["function"]["arguments"] for c in row_calls],
                                                           ensure_ascii=False).replace("\\n", "\n")
        renamed = {t["function"]["name"] for t in row["tools"]} - {"shell", "apply_patch", "update_plan"}
        if "apply_patch" not in {t["function"]["name"] for t in row["tools"]}:
            assert "apply_patch" not in row["messages"][0]["content"] and renamed
    assert main(["validate", str(tmp_path / "rows.jsonl"), "--no-exec-hooks"]) == 0
    assert main(["canonicalize", str(tmp_path / "aug"), "--out", str(tmp_path / "canon.jsonl")]) == 0
    canon = [normalize(json.loads(line)) for line in (tmp_path / "canon.jsonl").read_text().splitlines()]
    assert len(canon) == 6 and all(c["messages"] == source["messages"] for c in canon)


def test_a_compaction_starts_a_new_record(tmp_path):
    """After a compaction the model saw the summary, not the history: each part is a record, the second starting
    from the line's replacement history (or from its summary, as a user message, where it has none)."""
    lines = [_line("session_meta", {"id": "s-2"}), _line("response_item", _msg("user", "first task")),
             _line("response_item", _msg("assistant", "done 1")),
             _line("compacted", {"message": "Summary: the first task is done.",
                                 "replacement_history": [_msg("user", "Summary: the first task is done.")]}),
             _line("response_item", _msg("user", "second task")),
             _line("response_item", _msg("assistant", "done 2"))]
    records, rejects, _ = read_rollout(_write(tmp_path / "r.jsonl", lines))
    assert [r["id"] for r in records] == ["s-2#1", "s-2#2"] and rejects == []
    assert [i["content"][0]["text"] for i in records[1]["input"]] == [
        "Summary: the first task is done.", "second task", "done 2"]
    lines[3] = _line("compacted", {"message": "Summary only."})
    records, _, _ = read_rollout(_write(tmp_path / "r.jsonl", lines))
    assert records[1]["input"][0] == {"type": "message", "role": "user",
                                      "content": [{"type": "input_text", "text": "Summary only."}]}


def test_an_older_rollout_and_a_local_shell_call(tmp_path):
    """Older rollouts hold the metadata on the first line and bare items after it; a local_shell_call becomes a call
    of local_shell with its action's fields, answered by its output."""
    lines = [{"id": "old-1", "timestamp": "2025-05-01T10:00:00Z", "instructions": "Be careful."},
             _msg("user", "list the files"),
             {"type": "local_shell_call", "id": "ls_1", "call_id": "call_1", "status": "completed",
              "action": {"type": "exec", "command": ["ls"], "working_directory": None, "timeout_ms": 1000}},
             {"type": "local_shell_call_output", "call_id": "call_1", "output": "a.py\n"},
             _msg("assistant", "One file: a.py.")]
    records, rejects, _ = read_rollout(_write(tmp_path / "old.jsonl", lines))
    assert rejects == [] and records[0]["id"] == "old-1" and records[0]["instructions"] == "Be careful."
    call = records[0]["input"][1]
    assert call == {"type": "function_call", "call_id": "call_1", "name": "local_shell",
                    "arguments": {"command": ["ls"], "timeout_ms": 1000}}
    assert records[0]["input"][2]["output"] == "a.py\n"


def test_bad_rollouts_are_listed_not_lost(tmp_path, capsys):
    """A line that is not JSON names its file and line; a rollout with no item is not a conversation; the others
    are written (a folder is searched at any depth, as Codex dates them), and the exit code says something was not
    imported."""
    day = tmp_path / "sessions" / "2026" / "11" / "20"
    day.mkdir(parents=True)
    (day / "a.jsonl").write_text(ROLLOUT.read_text(encoding="utf-8"), encoding="utf-8")
    (day / "b.jsonl").write_text(json.dumps(_line("session_meta", {"id": "b"})) + "\n{not json\n", encoding="utf-8")
    _write(day / "c.jsonl", [_line("session_meta", {"id": "c"}), _line("event_msg", {"type": "token_count"})])
    out = tmp_path / "sessions.jsonl"
    assert main(["import", "codex", str(tmp_path / "sessions"), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert len(out.read_text().splitlines()) == 1 and "from 3 rollouts" in err
    assert "b.jsonl:2: not JSON" in err and "c.jsonl: not imported: no response item" in err


@pytest.mark.parametrize("line", [_line("session_meta", {"id": "s"}), _line("response_item", _msg("user", "hi")),
                                  _line("event_msg", {"type": "token_count"})])
def test_a_rollouts_lines_given_to_augment_say_what_to_do(line):
    """Each line of a rollout read as a record is a reject that names hsa import codex (before: the generic
    'missing messages', listing layouts that do not apply)."""
    from hsa.records import RecordError, normalize

    with pytest.raises(RecordError) as info:
        normalize(dict(line))
    assert info.value.reason == "codex rollout line" and "hsa import codex" in info.value.detail
