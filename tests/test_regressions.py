"""Failures the property suite found, shrunk to small records and pinned with the exact params.

Each case replays the params of the failure through :func:`hsa.testing.check_transform`
(``params=``), so it keeps failing the same way if the bug comes back, whatever the
transform's sampling does (a bug fixed in sampling is pinned by sampling instead, with
the old params kept to show that the checker still catches them). Cases marked ``xfail(strict=True)`` are known bugs not fixed
yet: when a fix lands they pass, the strict mark fails the run, and the mark is removed.
"""

from __future__ import annotations

import json

import pytest

from hsa.records import normalize
from hsa.testing import assert_task_preserving, check_transform
from hsa.testing.checks import hooks_checker
from transforms import skill, tool

GUARD = (
    'def check(payload: dict) -> dict:\n'
    '    if payload["tool_name"] == "get_item" and "item_id" not in payload["tool_input"]:\n'
    '        return {"decision": "retry", "message": "get_item needs item_id."}\n'
    '    return {"decision": "allow"}\n'
)
REPLY = (
    'def check_reply(payload: dict) -> dict:\n'
    '    if "Link" not in payload["reply"]:\n'
    '        return {"decision": "retry", "message": "Name the link of the product."}\n'
    '    return {"decision": "allow"}\n'
)


def _tool(name: str, props: dict, required: list[str] = ()) -> dict:
    return {"type": "function", "function": {"name": name, "parameters": {
        "type": "object", "properties": props, "required": list(required)}}}


def _call(cid: str, name: str, args: dict) -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _guarded_record() -> dict:
    """A retry injected by a pre_tool_use hook, recorded in hook_events (shrunk from fixture ls-000042)."""
    return {
        "id": "reg-hook-decision",
        "messages": [
            {"role": "user", "content": "show me that item"},
            {"role": "assistant", "content": "", "tool_calls": [_call("c1", "get_item", {})]},
            {"role": "tool", "tool_call_id": "c1", "name": "get_item", "content": "{\"error\": \"no id\"}"},
            {"role": "system", "content": "get_item needs item_id."},
            {"role": "assistant", "content": "", "tool_calls": [_call("c2", "find_item", {"q": "lamp"})]},
            {"role": "tool", "tool_call_id": "c2", "name": "find_item", "content": "{\"item_id\": 7}"},
            {"role": "assistant", "content": "Found it."},
        ],
        "tools": [_tool("get_item", {"item_id": {"type": "integer"}}), _tool("find_item", {"q": {"type": "string"}})],
        "hooks": [{"name": "guard", "event": "pre_tool_use", "entry": "check", "source": GUARD}],
        "hook_events": [{"hook": "guard", "message_index": 3,
                         "payload": {"tool_name": "get_item", "tool_input": {}},
                         "decision": {"decision": "retry", "message": "get_item needs item_id."}}],
    }


def test_hook_decision_message_follows_a_tool_rename():
    """A renamed tool is renamed in the recorded decision of the hook event too, as in the message it injected."""
    report = assert_task_preserving(tool.ToolRename(), _guarded_record(),
                                    params={"renames": {"get_item": "getItem"}})
    event = report.variant["hook_events"][0]
    assert event["decision"]["message"] == "getItem needs item_id." == report.variant["messages"][3]["content"]
    assert event["payload"]["tool_name"] == "getItem"


def test_swapped_tool_names_are_mapped_once_in_hook_decisions():
    """A swap (a -> b, b -> a) maps the decision message once: two passes over it would swap the name back."""
    report = assert_task_preserving(tool.SwapNames(), _guarded_record(),
                                    params={"tools": {"get_item": "find_item", "find_item": "get_item"}, "params": []})
    assert report.variant["hook_events"][0]["decision"]["message"] == "find_item needs item_id."


def test_judged_reply_in_a_hook_payload_follows_a_tool_rename():
    """The reply a pre_reply hook judged (its payload) keeps equal to the message it judged after a rename."""
    bad = "I checked get_item for you."
    raw = {
        "id": "reg-judged-reply",
        "messages": [
            {"role": "user", "content": "is it in stock?"},
            {"role": "assistant", "content": "", "tool_calls": [_call("c1", "get_item", {"item_id": 3})]},
            {"role": "tool", "tool_call_id": "c1", "content": "{\"stock\": 2}"},
            {"role": "assistant", "content": bad},
            {"role": "system", "content": "Name the link of the product."},
            {"role": "assistant", "content": "Link 3 has two left."},
        ],
        "tools": [_tool("get_item", {"item_id": {"type": "integer"}}, ["item_id"])],
        "hooks": [{"name": "reply_link", "event": "pre_reply", "entry": "check_reply", "source": REPLY}],
        "hook_events": [{"hook": "reply_link", "message_index": 4, "payload": {"reply": bad, "loaded_skills": []},
                         "decision": {"decision": "retry", "message": "Name the link of the product."}}],
    }
    report = assert_task_preserving(tool.ToolRename(), raw, params={"renames": {"get_item": "fetch_item"}})
    assert report.variant["hook_events"][0]["payload"]["reply"] == "I checked fetch_item for you."


def test_parameter_named_like_a_hook_protocol_key_keeps_the_hook_output():
    """Renaming a parameter called ``message`` leaves the hook's own ``"message"`` output key alone."""
    source = ('def check(payload):\n'
              '    if not payload["tool_input"].get("message"):\n'
              '        return {"decision": "retry", "message": "Say something."}\n'
              '    return {"decision": "allow"}\n')
    raw = {
        "id": "reg-message-key",
        "messages": [{"role": "user", "content": "tell them hi"},
                     {"role": "assistant", "content": "", "tool_calls": [_call("c1", "send", {"message": "hi"})]},
                     {"role": "tool", "tool_call_id": "c1", "content": "sent"},
                     {"role": "assistant", "content": "Done."}],
        "tools": [_tool("send", {"message": {"type": "string"}}, ["message"])],
        "hooks": [{"name": "non_empty", "event": "pre_tool_use", "entry": "check", "source": source}],
    }
    report = assert_task_preserving(tool.ParamRename(), raw,
                                    params={"renames": [{"tool": "send", "path": ["message"], "new": "text"}]})
    hook = report.variant["hooks"][0]["source"]
    assert '.get("text")' in hook and '"message": "Say something."' in hook


def test_skill_rename_renames_the_skill_tool_enum():
    """A skill tool whose argument is an enum of skill names gets the new names (else every load fails validation)."""
    raw = {
        "id": "reg-skill-enum",
        "messages": [{"role": "user", "content": "what is it made of?"},
                     {"role": "assistant", "content": "", "tool_calls": [_call("c1", "load_skill", {"skill": "v2_note"})]},
                     {"role": "tool", "tool_call_id": "c1", "content": "# V2 note\n\nAnswer briefly."},
                     {"role": "assistant", "content": "Cotton."}],
        "tools": [_tool("load_skill", {"skill": {"type": "string", "enum": ["v2_note", "promo_qa"]}}, ["skill"])],
        "skills": [{"name": "v2_note", "description": "Notes.", "content": "# V2 note\n\nAnswer briefly."},
                   {"name": "promo_qa", "description": "Coupons.", "content": "# Promo\n\nQuote coupons."}],
    }
    report = assert_task_preserving(skill.SkillRename(), raw, params={"renames": {"v2_note": "v2-note"}})
    tools = normalize(report.variant)["tools"]
    assert tools[0]["parameters"]["properties"]["skill"]["enum"] == ["v2-note", "promo_qa"]


def test_hook_decisions_follow_a_rename_when_the_hook_source_is_absent():
    """A record with hook_events but no hooks (source not shipped) still gets its decision messages renamed."""
    raw = _guarded_record()
    del raw["hooks"]
    report = assert_task_preserving(tool.ToolRename(), raw, params={"renames": {"get_item": "getItem"}})
    assert report.variant["hook_events"][0]["decision"]["message"] == "getItem needs item_id."


def test_injected_message_follows_a_parameter_rename_when_the_hook_source_is_absent():
    """Without hook source, a parameter rename still reaches the injected message and its recorded decision alike."""
    raw = _guarded_record()
    del raw["hooks"]
    report = assert_task_preserving(tool.ParamRename(), raw,
                                    params={"renames": [{"tool": "get_item", "path": ["item_id"], "new": "itemId"}]})
    assert report.variant["messages"][3]["content"] == "get_item needs itemId."
    assert report.variant["hook_events"][0]["decision"]["message"] == "get_item needs itemId."


def test_schema_less_tool_converted_to_mcp_keeps_an_input_schema():
    """tool.dialect to MCP writes inputSchema even for a tool that came without a schema (else it reads back flat)."""
    raw = {"id": "reg-no-schema",
           "messages": [{"role": "user", "content": "ping"}, {"role": "assistant", "content": "pong"}],
           "tools": [{"type": "function", "function": {"name": "ping", "description": "Check the service."}}]}
    for target, key in (("mcp", "inputSchema"), ("anthropic", "input_schema")):
        report = assert_task_preserving(tool.Dialect(), raw, params={"target": target})
        assert report.variant["tools"][0][key] == {"type": "object", "properties": {}}


# --------------------------------------------------------------------------- fixed in sampling: whole-argument hooks

ONE_ARG = (
    'def check(payload: dict) -> dict:\n'
    '    args = payload["tool_input"]\n'
    '    if len(args) > 1:\n'
    '        return {"decision": "retry", "message": "One argument at a time."}\n'
    '    return {"decision": "allow"}\n'
)


def _whole_argument_record() -> dict:
    """A hook that reads the argument object as a whole (``len(args)``), not key by key."""
    return {
        "id": "reg-whole-arguments",
        "messages": [{"role": "user", "content": "find red"},
                     {"role": "assistant", "content": "", "tool_calls": [_call("c1", "search", {"query": "red"})]},
                     {"role": "tool", "tool_call_id": "c1", "content": "[]"},
                     {"role": "assistant", "content": "Nothing found."}],
        "tools": [_tool("search", {"query": {"type": "string"}, "page": {"type": "integer"}}, ["query"])],
        "hooks": [{"name": "one_arg", "event": "pre_tool_use", "entry": "check", "source": ONE_ARG}],
    }


# Fixed: the structural tool transforms (nest, flatten, add_required, swapped parameter names,
# values) skip when a tool-event hook reads the argument object as a whole
# (transforms/_toolhooks.py). The params the sampler drew before the fix are kept: replayed,
# they still break invariant 7, which pins that the checker catches it.
ADD_REQUIRED_PARAMS = {"steps": [{"op": "params", "tool": "search", "kind": "require", "paths": [],
                                  "fill": [[["dry_run"], False]],
                                  "schema": {"type": "boolean", "enum": [False], "description": "Must be false"}}]}
NEST_PARAMS = {"steps": [{"op": "params", "tool": "search", "kind": "regroup",
                          "paths": [[["query"], ["params", "query"]], [["page"], ["params", "page"]]],
                          "container": {"path": ["params"], "schema": {"type": "object"}, "required": True}}]}


@pytest.mark.parametrize("transform", [tool.AddRequired(p=1.0), tool.Nest(p=1.0)], ids=lambda t: t.name)
def test_structural_tool_transforms_skip_a_hook_that_counts_arguments(transform):
    """tool.add_required / tool.nest on a tool whose hook counts its arguments skip, saying why (every seed)."""
    for seed in range(10):
        report = assert_task_preserving(transform, _whole_argument_record(), seed)
        assert not report.applied and any("as a whole" in why for _, why in report.skipped), report.format()


@pytest.mark.parametrize("transform,params", [(tool.AddRequired(p=1.0), ADD_REQUIRED_PARAMS),
                                              (tool.Nest(p=1.0), NEST_PARAMS)], ids=["add_required", "nest"])
def test_whole_argument_hook_failure_is_reported_as_invariant_7(transform, params):
    """The pre-fix params, replayed, break the hooks invariant and nothing else: the checker catches the bug."""
    if hooks_checker() is None:
        pytest.skip("invariant 7 needs hsa.sandbox.check_hooks")
    report = check_transform(transform, _whole_argument_record(), seed=0, params=params)
    assert report.applied and report.failed == ["hooks"], report.format()


def test_reworded_hook_message_reaches_an_injected_message_in_text_parts():
    """hook.message_format rewrites the injected message also when its content is a list of text parts."""
    from transforms import hook

    source = ('def check(payload: dict) -> dict:\n    name = payload["tool_name"]\n    args = payload["tool_input"]\n'
              '    if name == "get" and "search" not in args:\n'
              '        return {"decision": "retry", "message": "get needs search."}\n    return {"decision": "allow"}\n')
    raw = {"id": "r", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Get."}]},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
                                                             "function": {"name": "get", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "system", "content": [{"type": "text", "text": "get needs search."}]},
        {"role": "assistant", "content": "Done."}],
        "tools": [{"type": "function", "function": {"name": "get", "parameters": {
            "type": "object", "properties": {"search": {"type": "string", "default": ""}}}}}],
        "hooks": [{"name": "check_tool_params", "event": "pre_tool_use", "entry": "check", "source": source}],
        "hook_events": [{"hook": "check_tool_params", "message_index": 3, "payload": {"tool_name": "get", "tool_input": {}},
                         "decision": {"decision": "retry", "message": "get needs search."}}]}
    assert_task_preserving(hook.HookMessageFormat(p=0.8), raw, 0)


def test_injected_message_in_text_parts_follows_a_parameter_rename():
    """A parameter rename reaches the hook's injected message also when its content is a list of text parts."""
    source = ('def check(payload: dict) -> dict:\n    name = payload["tool_name"]\n    args = payload["tool_input"]\n'
              '    if name == "get" and "get_get" not in args:\n'
              '        return {"decision": "retry", "message": "get needs get_get."}\n    return {"decision": "allow"}\n')
    raw = {"id": "r", "messages": [
        {"role": "user", "content": "Get."},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
                                                             "function": {"name": "get", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "system", "content": [{"type": "text", "text": "get needs get_get."}]},
        {"role": "assistant", "content": "Done."}],
        "tools": [{"name": "get", "input_schema": {"type": "object", "properties": {
            "get_get": {"type": "string", "default": ""}}}}],
        "hooks": [{"name": "check_tool_params", "event": "pre_tool_use", "entry": "check", "source": source}],
        "hook_events": [{"hook": "check_tool_params", "message_index": 3, "payload": {"tool_name": "get", "tool_input": {}},
                         "decision": {"decision": "retry", "message": "get needs get_get."}}]}
    params = {"renames": [{"tool": "get", "path": ["get_get"], "new": "bIeTe"}]}
    report = check_transform(tool.ParamRename(), raw, 0, params=params)
    assert report.ok, report.format()
    out = tool.ParamRename().apply(normalize(raw), params)
    assert out["messages"][3]["content"] == [{"type": "text", "text": "get needs bIeTe."}]


def test_match_sequence_patterns_are_analysed():
    """A hook with ``case [first, *rest]:`` is analysed (it crashed with AttributeError) and its renames sync."""
    from hsa.codemods.analysis import analyze
    from hsa.codemods.sync import sync_source
    from hsa.codemods.sync import Harness

    source = ('def check(payload):\n'
              '    match payload.get("tool_name"), payload.get("tool_input"):\n'
              '        case ["lookup", *rest]:\n'
              '            return {"decision": "block", "message": "lookup is off"}\n'
              '        case [first, *rest]:\n'
              '            return {"decision": "allow"}\n'
              '    return {"decision": "allow"}\n')
    an = analyze(source, "check")
    assert an.error is None
    h = Harness(tools=("lookup", "other"), skills=(), skill_tool=("load_skill", "skill"))
    new, refusal = sync_source(source, "check", {"op": "tools", "map": {"lookup": "find_item", "other": "other"}}, h)
    # the tuple subject mixes the tool name with the input: refusing is the sound answer, crashing was not
    assert (refusal is None and '"find_item"' in new) or refusal.reason == "literal plays conflicting roles"


# --------------------------------------------------------------------------- a prompt body read where it is rendered

COLON_TEMPLATE = "{% for s in sections %}{{ s.title | upper }}: {{ s.body }}\n{% endfor %}"


def _colon_prompt_record(template: str = COLON_TEMPLATE) -> dict:
    """A prompt whose template writes "TOOLS: " right before a body that starts "(get)": in the system message
    "(get)" follows a tool noun and names the tool; the body alone does not say so (hypothesis found it,
    2026-12-03)."""
    from hsa.prompt_model import render

    sections = [{"id": "tools", "title": "Tools", "body": "(get) get."}, {"id": "persona", "title": "Persona",
                                                                       "body": "Get."}]
    return {"id": "reg-prompt-context",
            "messages": [{"role": "system", "content": render(template, sections)},
                         {"role": "user", "content": "Get."}, {"role": "assistant", "content": "Get."}],
            "tools": [_tool("get", {}), _tool("set", {})],
            "prompt": {"sections": sections, "template": template}}


def test_a_prompt_body_is_renamed_as_its_rendered_system_message_reads():
    """The rename reads each section body where the template writes it, so the renamed prompt renders the renamed
    system message (before: the message said "(Get)", the body "(get)", and the pipeline wrote the variant)."""
    from hsa.prompt_model import check_sync

    report = assert_task_preserving(tool.ToolRename(), _colon_prompt_record(),
                                    params={"renames": {"get": "Get", "set": "Set"}})
    variant = report.variant
    assert variant["messages"][0]["content"] == "TOOLS: (Get) get.\nPERSONA: Get.\n"
    assert [s["body"] for s in variant["prompt"]["sections"]] == ["(Get) get.", "Get."]
    assert check_sync(variant) is None


def test_a_body_the_template_filters_is_read_alone_and_the_check_catches_the_difference():
    """A template that does not write a body as it is (here: upper-cased) gives no regions; the body is read alone,
    and ``check_variant`` (what ``hsa augment`` runs on every variant) reports the system message the prompt no
    longer renders, instead of writing it."""
    from hsa.invariants import check_variant
    from hsa.prompt_model import body_regions, render
    from hsa.renames import rename_tools

    sections = [{"id": "tools", "title": "Tools", "body": "(get) get."}]
    assert body_regions(COLON_TEMPLATE, sections) == ("TOOLS: (get) get.\n", [(0, 7, 17)])
    assert body_regions("{% for s in sections %}{{ s.body | upper }}{% endfor %}", sections) is None
    assert body_regions("{% for s in sections %}{{ s.body }}|{{ s.body }}{% endfor %}", sections) == (
        "(get) get.|(get) get.", [(0, 0, 10), (0, 11, 21)])

    source = normalize(_colon_prompt_record())
    variant = rename_tools(source, {"get": "Get", "set": "Set"})
    assert check_variant(source, variant, closure=False) == []
    variant["prompt"]["sections"][0]["body"] = "(get) get."  # what the rename gave before
    problems = check_variant(source, variant, closure=False)
    assert [(v.invariant, v.reason) for v in problems] == [("consistency", "system message differs from the "
                                                                            "rendered prompt")]
    assert "TOOLS: (Get) get." in problems[0].detail


def test_the_prompt_check_leaves_a_source_whose_prompt_does_not_render_its_message():
    """A source whose system message is not its prompt rendered is no promise the variant could break."""
    from hsa.invariants import check_variant
    from hsa.renames import rename_tools

    raw = _colon_prompt_record()
    raw["messages"][0]["content"] = "Something else."
    source = normalize(raw)
    variant = rename_tools(source, {"set": "put"})
    assert check_variant(source, variant, closure=False) == []


def test_no_parameter_takes_a_name_that_is_a_hook_literal():
    """A hook tests ``"address" in args`` for tools whose parameter is ``Address``: renaming ``Address`` to
    ``address`` (the snake style) would make the hook read it, and the hook sync refuses (invariant 7). The sampler
    draws no new name that is a string literal of a hook (the property suite's thorough profile found it,
    2026-12-03)."""
    import random

    source = ('def check(payload: dict) -> dict:\n'
              '    args = payload["tool_input"]\n'
              '    if payload["tool_name"] in ("cart", "text") and "address" in args and args["address"] is None:\n'
              '        return {"decision": "retry", "message": "It needs a value."}\n'
              '    return {"decision": "allow"}\n')
    raw = {"id": "reg-hook-literal-name",
           "messages": [{"role": "user", "content": "hi"},
                        {"role": "assistant", "content": "", "tool_calls": [_call("c1", "ship", {"Address": "x"})]},
                        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
                        {"role": "assistant", "content": "Done."}],
           "tools": [_tool(n, {"Address": {"type": "string"}, "NoteText": {"type": "string"}})
                     for n in ("ship", "cart", "text")],
           "hooks": [{"name": "guard", "event": "pre_tool_use", "entry": "check", "source": source}]}
    bad = check_transform(tool.ParamRename(), raw, params={"renames": [
        {"tool": "cart", "path": ["Address"], "new": "address"}]})
    assert not bad.ok and "sync refused" in bad.format()  # what the draw must not give
    t = tool.ParamRename(styles=("snake",), p=1.0)
    record = normalize(raw)
    news = [r["new"] for seed in range(20) for r in t.sample(record, random.Random(seed))["renames"]]
    assert "address" not in news and "note_text" in news  # the other parameter still moves
    assert_task_preserving(t, raw, 0)
