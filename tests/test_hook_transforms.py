"""Hook transforms on the fixtures, importers, the pipeline wiring and the hooks recipe."""

from __future__ import annotations

import json
import random

import pytest

from hsa import _json
from hsa import sandbox as sb
from hsa.hooks_model import (decision_of, generated_payloads, import_agents_hooks, import_claude_code,
                             import_claude_settings, infer_entry, map_output, map_payload)
from hsa.records import normalize
from hsa.recipes import load_recipe
from hsa.renames import rename_tools
from hsa.transform import run
from hsa.invariants import check_variant
from tests.conftest import FIXTURES
from transforms.hook import (HookMessageFormat, HookRenameLocals, HookRestyle, HookSync, StripRetries,
                             _retry_events, reword)

LINES = FIXTURES.read_text(encoding="utf-8").splitlines()


def rec(i: int) -> dict:
    return normalize(json.loads(LINES[i]))


def with_events(n: int = 6) -> list[dict]:
    out = []
    for line in LINES:
        r = normalize(json.loads(line))
        if r.get("hook_events"):
            out.append(r)
        if len(out) == n:
            break
    return out


def checked(t, record, seed=0):
    variant, applied, _ = run(t, record, random.Random(seed))
    assert applied, f"{t.name} did not apply to {record['id']}"
    assert check_variant(record, variant) == []
    assert sb.check_hooks(record, variant) == []
    return variant, applied


@pytest.mark.parametrize("i", [0, 7, 21])
def test_rename_locals_changes_code_not_behaviour(i):
    """hook.rename_locals rewrites hook code; invariant 7 holds (replayed on recorded and generated payloads)."""
    r = rec(i)
    v, applied = checked(HookRenameLocals(p=1.0, p_hook=1.0), r)
    assert any(a["source"] != b["source"] for a, b in zip(r["hooks"], v["hooks"]))
    assert all(a["entry"] == b["entry"] for a, b in zip(r["hooks"], v["hooks"]))


@pytest.mark.parametrize("i", [0, 7, 21])
def test_restyle_changes_code_not_behaviour(i):
    """hook.restyle rewrites hook code; invariant 7 holds."""
    r = rec(i)
    v, _ = checked(HookRestyle(p=1.0), r)
    assert any(a["source"] != b["source"] for a, b in zip(r["hooks"], v["hooks"]))


def test_message_format_regenerates_injected_messages():
    """Reworded hooks: the injected messages and recorded decisions are what the new hooks return."""
    changed = 0
    for k, r in enumerate(with_events(8)):
        v, applied = checked(HookMessageFormat(p=1.0), r, seed=k)
        for ev_s, ev_v in zip(r["hook_events"], v["hook_events"]):
            hook = next(h for h in v["hooks"] if h["name"] == ev_v["hook"])
            out = sb.replay(hook, ev_v["payload"])
            assert ev_v["decision"] == out["value"]
            assert v["messages"][ev_v["message_index"]]["content"] == out["value"]["message"]
            changed += ev_v["decision"] != ev_s["decision"]
    assert changed >= 3


def test_message_format_skips_without_execution():
    """With hook execution off there is no way to regenerate messages: the transform skips with the reason."""
    sb.set_execution(False)
    try:
        _, applied, skipped = run(HookMessageFormat(p=1.0), with_events(1)[0], random.Random(0))
    finally:
        sb.set_execution(True)
    assert not applied and "execution is off" in skipped[0][1]


def test_reword_keeps_names_and_placeholders():
    """Rewording never drops an identifier-like name or adds quotes/braces."""
    rng = random.Random(3)
    for _ in range(50):
        text = "Look up the product_id first; check_inventory needs a sku."
        out = reword(text, rng, {"check_inventory"})
        assert "product_id" in out and "check_inventory" in out and not set("{}'\"") & set(out)


def test_hook_sync_repairs_stale_events():
    """hook.sync replays recorded payloads and restores decisions and injected messages that went stale."""
    r = with_events(1)[0]
    broken = _json.copy(r)
    ev = broken["hook_events"][0]
    ev["decision"] = {"decision": "retry", "message": "stale"}
    broken["messages"][ev["message_index"]]["content"] = "stale"
    v, applied, _ = run(HookSync(), broken, random.Random(0))
    assert applied and v["hook_events"][0]["decision"] == r["hook_events"][0]["decision"]
    assert v["messages"][ev["message_index"]]["content"] == r["messages"][ev["message_index"]]["content"]
    _, applied, skipped = run(HookSync(), r, random.Random(0))
    assert not applied and skipped[0][1] == "hook events already match their hooks"


def test_strip_retries_on_every_fixture_with_a_retry():
    """p=1 removes each failed attempt and its hook message; p=0 keeps them and marks the attempt train=false."""
    records = [normalize(json.loads(line)) for line in LINES]
    records = [r for r in records if _retry_events(r)]
    assert len(records) >= 40
    for r in records:
        events = _retry_events(r)
        v, applied, _ = run(StripRetries(p=1.0), r, random.Random(0))
        assert applied and len(v["messages"]) == len(r["messages"]) - 2 * len(events)
        assert check_variant(r, v) == []
        for ev in v.get("hook_events") or ():  # every remaining event still points at its message
            assert v["messages"][ev["message_index"]]["content"] == ev["decision"]["message"]
        k, _, _ = run(StripRetries(p=0.0), r, random.Random(0))
        assert len(k["messages"]) == len(r["messages"])
        flagged = [i for i, m in enumerate(k["messages"]) if m.get("train") is False]
        assert flagged == [r["hook_events"][e]["message_index"] - 1 for e in events]
        assert k["messages"][flagged[0]]["role"] == "assistant"


def test_strip_retries_leaves_its_input_as_it_was():
    """The variant shares what it leaves as it is with its input, and changes nothing of the input: not the
    messages it marks or drops, not the hook events whose indices it moves."""
    records = [normalize(json.loads(line)) for line in LINES]
    records = [r for r in records if _retry_events(r)]
    later = json.loads(json.dumps(records[0]))  # an event after the retry: its index moves when the retry goes
    later["hook_events"].append({**later["hook_events"][-1], "message_index": len(later["messages"]) - 1,
                                 "decision": {"decision": "allow"}})
    for r in [*records, later]:
        before = json.dumps(r)
        for p in (0.0, 0.5, 1.0):
            v, _, _ = run(StripRetries(p=p), r, random.Random(0))
            assert json.dumps(r) == before
            assert v["tools"] is r["tools"]  # the harness, shared
            marked = [m for m in v["messages"] if m.get("train") is False]
            assert all(not any(m is n for n in r["messages"]) for m in marked)


def test_claude_code_importer_and_matcher_follow_renames():
    """A Claude Code command hook imports with its matcher; a tool rename rewrites matcher and script alike."""
    script = ("import json, sys\nd = json.load(sys.stdin)\n"
              "if d['tool_input'].get('file_path', '').endswith('.env'):\n"
              "    print('Write may not touch .env', file=sys.stderr)\n    sys.exit(2)\n")
    hook = import_claude_code(script, name="guard_env", event="PreToolUse", matcher="Edit|Write")
    assert hook["event"] == "pre_tool_use" and hook["entry"] == "__main__" and hook["matcher"] == "Edit|Write"
    raw = {"id": "cc-1", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}],
           "tools": [{"type": "function", "function": {"name": n, "parameters": {
               "type": "object", "properties": {"file_path": {"type": "string"}}}}} for n in ("Edit", "Write", "Read")],
           "hooks": [hook]}
    r = normalize(raw)
    v = rename_tools(r, {"Write": "write_file", "Read": "read_file"})
    assert v["hooks"][0]["matcher"] == "Edit|write_file"
    assert "write_file may not touch" in v["hooks"][0]["source"]
    assert check_variant(r, v) == [] and sb.check_hooks(r, v) == []
    out = sb.replay(v["hooks"][0], {"tool_name": "write_file", "tool_input": {"file_path": "a/.env"},
                                    "hook_event_name": "PreToolUse"})
    assert decision_of(v["hooks"][0], out) == {"decision": "deny", "message": "write_file may not touch .env"}
    skipped = sb.replay(v["hooks"][0], {"tool_name": "read_file", "tool_input": {"file_path": ".env"}})
    assert skipped.get("matched") is False


def test_claude_settings_importer_skips_non_python_commands():
    """Settings import reads Python command scripts and says why others were skipped."""
    settings = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "python3 $CLAUDE_PROJECT_DIR/.claude/hooks/guard.py"},
        {"type": "command", "command": "npx prettier --check"}]}]}}
    hooks, skipped = import_claude_settings(settings, lambda path: "import sys\nsys.exit(0)\n")
    assert [h["name"] for h in hooks] == ["PreToolUse:guard.py"] and hooks[0]["matcher"] == "Bash"
    assert len(skipped) == 1 and "not a Python script" in skipped[0]


def test_agents_importer_one_hook_per_method():
    """An Agents SDK hooks class gives one hook per on_* method, each with its harness event."""
    src = ("from agents import AgentHooks\nclass H(AgentHooks):\n"
           "    async def on_tool_start(self, context, agent, tool):\n        pass\n"
           "    async def on_tool_end(self, context, agent, tool, result):\n        pass\n"
           "    def helper(self):\n        pass\n")
    hooks = import_agents_hooks(src)
    assert [(h["name"], h["event"]) for h in hooks] == [("H.on_tool_start", "pre_tool_use"),
                                                        ("H.on_tool_end", "post_tool_use")]
    assert infer_entry(src) == "H.on_tool_start"
    with pytest.raises(ValueError, match="no RunHooks/AgentHooks subclass"):
        import_agents_hooks("def f(): pass\n")


@pytest.mark.parametrize("src,entry", [("def check(p):\n    return {}\n", "check"),
                                       ("import json, sys\nd = json.load(sys.stdin)\nsys.exit(0)\n", "__main__"),
                                       ("def a(p): pass\ndef b(p): pass\n", None)])
def test_infer_entry(src, entry):
    """The entry is inferred only when unambiguous."""
    assert infer_entry(src) == entry


def test_payload_and_output_mapping():
    """Payloads and outputs map like calls and texts: tool input keys, updatedInput, names in messages."""
    step = {"op": "params", "tool": "t", "paths": [[["product_id"], ["productId"]]]}
    p = map_payload({"tool_name": "t", "tool_input": {"product_id": "P1"}}, step)
    assert p == {"tool_name": "t", "tool_input": {"productId": "P1"}}
    out = map_output({"decision": "allow", "message": "Need product_id.", "updatedInput": {"product_id": "P2"}},
                     step, "t")
    assert out == {"decision": "allow", "message": "Need productId.", "updatedInput": {"productId": "P2"}}


def test_generated_payloads_cover_tools_and_skills():
    """Generated payloads include every tool of a pre_tool_use hook and every skill of a pre_reply hook."""
    r = rec(0)
    tool_hook = next(h for h in r["hooks"] if h["event"] == "pre_tool_use")
    names = {p["tool_name"] for p in generated_payloads(r, tool_hook)}
    assert names == {t["name"] for t in r["tools"]}
    reply_hook = next(h for h in r["hooks"] if h["event"] == "pre_reply")
    loaded = {s for p in generated_payloads(r, reply_hook) for s in p.get("loaded_skills", [])}
    assert {s["name"] for s in r["skills"]} <= loaded


def test_static_refusal_is_counted_in_the_pipeline(tmp_path):
    """A hook that builds tool names at run time makes its record's rename variants fail with a counted reason."""
    from hsa.pipeline import augment

    raw = json.loads(LINES[0])
    raw["hooks"].append({"name": "dispatch", "event": "pre_tool_use", "entry": "check",
                         "source": "def check(payload):\n    if payload['tool_name'] == 'check_' + 'inventory':\n"
                                   "        return {'decision': 'deny'}\n    return {'decision': 'allow'}\n"})
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(raw) + "\n" + LINES[1] + "\n", encoding="utf-8")
    recipe = load_recipe("default")
    for exec_hooks in (True, False):
        m = augment([src], tmp_path / f"out{exec_hooks}", recipe, variants=4, exec_hooks=exec_hooks, progress=False)
        failures = m["variant_failures"]
        assert any(k.startswith("hooks: sync refused: name compared with") for k in failures), failures
        assert m["counts"]["input_records"] == 2 and m["counts"]["sources_written"] >= 1
        # each failed variant is counted against every transform applied in it, so tool.rename (which
        # renamed 'check_inventory') carries the refusal; the family totals add up the transforms'
        refused = {r: n for r, n in m["transforms"]["tool.rename"]["failed"].items() if "sync refused" in r}
        assert refused and sum(refused.values()) <= m["counts"]["variants_failed"]
        tool = [t for name, t in m["transforms"].items() if name.startswith("tool.")]
        assert m["families"]["tool"]["failed"] == sum(sum(t["failed"].values()) for t in tool) > 0
        assert m["families"]["tool"]["applied"] == sum(t["applied"] for t in tool)


def test_exec_check_in_the_pipeline_and_no_exec_flag(tmp_path):
    """The hooks recipe writes only variants that pass invariant 7; --no-exec-hooks runs nothing."""
    from hsa.cli import main

    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(LINES[:6]) + "\n", encoding="utf-8")
    sb.reset_stats()
    assert main(["augment", str(src), "--recipe", "hooks", "--out", str(tmp_path / "a"), "--variants", "2",
                 "--quiet", "--workers", "1"]) == 0  # one process: its sandbox counters see the replays
    assert sb.stats()["calls"] > 0
    m = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert m["counts"]["variants_failed"] == 0 and m["counts"]["rows_written"] == 12
    sb.reset_stats()
    assert main(["augment", str(src), "--recipe", "hooks", "--out", str(tmp_path / "b"), "--variants", "2",
                 "--quiet", "--no-exec-hooks", "--workers", "1"]) == 0
    sb.set_execution(True)
    assert sb.stats()["calls"] == 0


def test_hooks_recipe_loads_and_uses_every_hook_transform():
    """The hooks preset is a valid recipe naming each hook transform."""
    names = {leaf.name for leaf in load_recipe("hooks").leaves()}
    assert {"hook.rename_locals", "hook.restyle", "hook.message_format", "trajectory.strip_retries",
            "tool.rename"} <= names


def test_docs_examples_run():
    """Every Python example of docs/hooks.md runs as written."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "hooks.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 3
    for block in blocks:
        exec(compile(block, "docs/hooks.md", "exec"), {})  # noqa: S102 - our own documentation
