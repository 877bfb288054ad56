"""Regressions of the three test_tool_properties failures fixed on fix-props (docs/audits/names.md, "Open"): each
case is the one hypothesis found, pinned so that it runs in every suite."""

from __future__ import annotations

import json

from hsa.records import normalize
from hsa.renames import rename_tools
from hsa.testing import assert_task_preserving
from hsa.transform import Sequence
from tests.conftest import FIXTURES
from tests.test_tool_transforms import CONFIGS
from transforms import tool as T
from transforms._toolschema import is_strict, strict_problems


def _fixture(rid: str) -> dict:
    return next(r for r in map(json.loads, FIXTURES.read_text(encoding="utf-8").splitlines()) if r["id"] == rid)


def test_distractor_beside_one_strict_tool_and_the_skill_tool_is_strict_and_valid():
    """load_skill (loose) and one strict tool: the distractors are written like the strict neighbour (strict form),
    never a loose schema marked strict (it used to copy the neighbour's "strict": true onto a loose schema)."""
    raw = {"id": "0", "source": "synthetic", "skill_tool": {"name": "load_skill", "argument": "skill"},
           "messages": [{"role": "user", "content": "Get."}, {"role": "assistant", "content": "Get."}],
           "tools": [{"type": "function", "function": {"name": "load_skill", "parameters": {
                         "type": "object", "properties": {"skill": {"type": "string"}}, "required": ["skill"]}}},
                     {"type": "function", "function": {"name": "get", "strict": True, "parameters": {
                         "type": "object", "properties": {}, "required": [], "additionalProperties": False}}}]}
    for seed in range(6):
        variant = assert_task_preserving(T.Distractors(n=(1, 3)), raw, seed).variant
        added = [t for t in normalize(variant)["tools"] if t["name"] not in ("load_skill", "get")]
        assert added
        for t in added:
            assert is_strict(t) and not strict_problems(t["parameters"]), t


def test_decision_of_a_plain_word_tool_follows_the_rename_like_the_injected_message():
    """A swap of plain-word tools get/Get: the recorded decision message reads as the message the hook injected."""
    raw = {"id": "0", "source": "synthetic", "skill_tool": {"name": "load_skill", "argument": "skill"},
           "messages": [{"role": "user", "content": "Get it."},
                        {"role": "assistant", "content": "", "tool_calls": [
                            {"id": "c1", "type": "function", "function": {"name": "get", "arguments": "{}"}}]},
                        {"role": "user", "content": "get needs arguments."}],
           "tools": [{"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {}}}}
                     for n in ("load_skill", "get", "Get")],
           "hook_events": [{"hook": "args", "message_index": 2, "payload": {"tool_name": "get", "tool_input": {}},
                            "decision": {"decision": "retry", "message": "get needs arguments."}}]}
    out = rename_tools(normalize(raw), {"get": "Get", "Get": "get"})
    injected = out["messages"][2]["content"]
    injected = injected if isinstance(injected, str) else injected[0]["text"]
    assert out["hook_events"][0]["decision"]["message"] == injected


def test_flatten_after_a_parameter_swap_leaves_no_stale_mention():
    """swap_names swaps two parameters (their mentions follow), flatten then moves one of them: the check must not
    call the mention of the parameter as it now is stale (it judged 'Departure channel, YYYY-MM-DD' so)."""
    order = ["distractors", "describe", "dialect", "values", "reorder", "param_rename", "drop_descriptions",
             "add_required", "swap_names", "nest", "rename", "flatten"]
    assert_task_preserving(Sequence(tuple(CONFIGS[n] for n in order)), _fixture("ls-000001"), 0)


def test_a_judged_reply_follows_a_parameter_rename_as_its_message_does():
    """A hook payload's reply is the text of the message the hook judged: a parameter mention renamed in the
    message ("search" beside the identifier-like "v2" reads as a list of names) is renamed in the reply too
    (before, the reply kept "search": invariant 6, "hook payload and judged message disagree"; hypothesis)."""
    from hsa.records import normalize
    from hsa.renames import rename_params

    text = "Set list search and v2 a room."
    rec = normalize({"messages": [{"role": "user", "content": "Hi."}, {"role": "assistant", "content": text},
                                  {"role": "system", "content": "Keep it short."},
                                  {"role": "assistant", "content": "Ok."}],
                     "tools": [{"name": "link", "inputSchema": {"type": "object",
                                                                "properties": {"search": {"type": "string"}}}}],
                     "hook_events": [{"hook": "reply_format", "message_index": 1, "payload": {"reply": text},
                                      "decision": {"decision": "retry", "message": "Keep it short."}}]})
    out = rename_params(rec, "link", {("search",): "uarch"})
    message = out["messages"][1]["content"]
    message = message if isinstance(message, str) else message[0]["text"]
    assert message == "Set list uarch and v2 a room."
    assert out["hook_events"][0]["payload"]["reply"] == message
