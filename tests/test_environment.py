"""The HSA-RL environment (hsa.environment) on hand-written rows and on augmented fixture rows."""

from __future__ import annotations

import json

import pytest

from hsa.environment import Environment, EnvironmentOptions, episode_starts, read_record

# A variant row as `hsa augment` writes one: tools, parameter, skill and skill tool renamed; the mapping undoes it.
MAPPING = {"version": 1, "steps": [
    {"op": "tools", "map": {"get_product_info_by_link_id": "fetchItem", "load_skill": "useSkill"}},
    {"op": "params", "tool": "fetchItem", "paths": [[["link_id"], ["linkNo"]]]},
    {"op": "skills", "map": {"item_qa": "product_answers"}, "tool": "useSkill", "argument": "skill"},
]}
CHECK_PARAMS = '''def check(payload):
    if payload["tool_name"] == "fetchItem" and payload["tool_input"].get("linkNo", 0) > 20:
        return {"decision": "retry", "message": "Link numbers go up to 20; check the link."}
    return {"decision": "allow"}
'''
NO_CLAIMS = '''def check(payload):
    if "guaranteed" in payload["reply"]:
        return {"decision": "retry", "message": "Remove the claim: absolute claims break advertising rules."}
    return {"decision": "allow"}
'''
NEEDS_SKILL = '''def check(payload):
    if "product_answers" not in payload["loaded_skills"]:
        return {"decision": "retry", "message": "Load product_answers before you reply."}
    return {"decision": "allow"}
'''
SKILL_TEXT = "# Product answers\nAnswer with the price a tool returned."
RESULT = '{"price": 139, "linkNo": 3}'


def variant_row(**changes) -> dict:
    row = {
        "id": "mini/1", "source_id": "mini", "variant": 1, "mapping": MAPPING,
        "messages": [
            {"role": "system", "content": "You are a shop assistant."},
            {"role": "user", "content": "price of link 3?"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {
                "name": "useSkill", "arguments": {"skill": "product_answers"}}}]},
            {"role": "tool", "tool_call_id": "c1", "name": "useSkill", "content": SKILL_TEXT},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c2", "type": "function", "function": {
                "name": "fetchItem", "arguments": "{\"linkNo\": 3}"}}]},
            {"role": "tool", "tool_call_id": "c2", "name": "fetchItem", "content": RESULT},
            {"role": "assistant", "content": "Link 3 is 139 yuan, 100% guaranteed."},
            {"role": "system", "content": "Remove the claim: absolute claims break advertising rules."},
            {"role": "assistant", "content": "Link 3 is 139 yuan."},
        ],
        "tools": [
            {"type": "function", "function": {"name": "fetchItem", "description": "Product by link number.",
                                              "parameters": {"type": "object", "properties": {
                                                  "linkNo": {"type": "integer", "minimum": 1}},
                                                  "required": ["linkNo"]}}},
            {"type": "function", "function": {"name": "useSkill", "parameters": {
                "type": "object", "properties": {"skill": {"type": "string"}}, "required": ["skill"]}}},
        ],
        "skills": [{"name": "product_answers", "description": "Answer product questions.", "content": SKILL_TEXT}],
        "skill_tool": {"name": "useSkill", "argument": "skill"},
        "hooks": [{"name": "check_params", "event": "pre_tool_use", "entry": "check", "source": CHECK_PARAMS},
                  {"name": "no_claims", "event": "pre_reply", "entry": "check", "source": NO_CLAIMS},
                  {"name": "needs_skill", "event": "pre_reply", "entry": "check", "source": NEEDS_SKILL}],
        "hook_events": [{"hook": "no_claims", "message_index": 7,
                         "payload": {"reply": "Link 3 is 139 yuan, 100% guaranteed.",
                                     "loaded_skills": ["product_answers"]},
                         "decision": {"decision": "retry", "message": "Remove the claim: absolute claims break "
                                                                     "advertising rules."}}],
    }
    row.update(changes)
    return row


def call(name: str, **arguments) -> dict:
    return {"content": "", "tool_calls": [{"name": name, "arguments": arguments}]}


def test_episode_starts_after_each_user_turn_not_after_hook_messages():
    """An episode starts at the first assistant message after a user turn; hook-injected user messages are not
    user turns, and the prompt is the conversation before the start."""
    row = variant_row()
    row["messages"][7]["role"] = "user"  # the hook message as a user-role message
    record = read_record(row)
    assert episode_starts(record) == [2]
    env = Environment.from_row(row)
    assert [m["role"] for m in env.prompt()] == ["system", "user"]
    assert env.hook_role == "user" and env.recorded_turns() == 4
    assert env.recorded_calls() == [{"name": "load_skill", "arguments": {"skill": "item_qa"}},
                                    {"name": "get_product_info_by_link_id", "arguments": {"link_id": 3}}]


def test_matching_call_under_the_variant_gets_the_recorded_result():
    """A call made under the variant's names that maps back to a recorded call gets that call's recorded result."""
    env = Environment.from_row(variant_row())
    step = env.step(call("fetchItem", linkNo=3))
    assert not step.done
    assert step.messages[0]["tool_calls"][0]["function"] == {"name": "fetchItem", "arguments": {"linkNo": 3}}
    assert step.messages[1] == {"role": "tool", "tool_call_id": "c00010001", "name": "fetchItem", "content": RESULT}
    assert env.calls[0]["status"] == "result"
    assert env.calls[0]["canonical"] == {"name": "get_product_info_by_link_id", "arguments": {"link_id": 3}}


def test_unknown_tool_and_unrecorded_call():
    """A tool the variant does not have (here: the source harness's name) gets the harness error in the row's
    result style (JSON); a valid call that was never recorded gets the configurable no-result message."""
    env = Environment.from_row(variant_row(), no_result="nothing recorded for {name}")
    out = env.step({"content": "", "tool_calls": [
        {"name": "get_product_info_by_link_id", "arguments": {"link_id": 3}},
        {"name": "fetchItem", "arguments": {"linkNo": 4}}]}).messages
    error = json.loads(out[1]["content"])
    assert error == {"error": "unknown tool 'get_product_info_by_link_id'; the available tools are: fetchItem, "
                              "useSkill"}
    assert out[2]["content"] == "nothing recorded for fetchItem"
    assert [c["status"] for c in env.calls] == ["unknown_tool", "no_result"]


def test_invalid_argument_gets_the_schema_error():
    """Arguments that break the variant's schema get the validation error, with the argument's path; plain-text
    results give plain-text errors."""
    env = Environment.from_row(variant_row())
    out = env.step(call("fetchItem", linkNo="3")).messages
    assert json.loads(out[1]["content"]) == {
        "error": "invalid arguments for fetchItem: '3' is not of type 'integer' (at linkNo)"}
    text = Environment.from_row(variant_row(), error_style="text")
    out = text.step(call("fetchItem")).messages
    assert out[1]["content"] == "Error: invalid arguments for fetchItem: 'linkNo' is a required property"
    assert text.calls[0]["status"] == "invalid"


def test_tool_hook_blocks_a_call_and_its_message_is_injected():
    """A pre_tool_use hook that objects stops the call (no result) and its message is injected in the role of the
    row's recorded hook messages, with a hook event in the record format."""
    env = Environment.from_row(variant_row())
    out = env.step(call("fetchItem", linkNo=30)).messages
    assert out[1]["content"] == "The call was not run: the harness blocked it (check_params)."
    assert out[2] == {"role": "system", "content": "Link numbers go up to 20; check the link."}
    assert env.calls[0]["status"] == "blocked"
    assert env.events == [{"hook": "check_params", "message_index": 2 + 2, "payload": {
        "tool_name": "fetchItem", "tool_input": {"linkNo": 30}}, "decision": {
        "decision": "retry", "message": "Link numbers go up to 20; check the link."}}]
    assert env.hook_checks[0]["decision"] == "retry"


def test_reply_hooks_block_and_ask_to_retry_then_accept():
    """A final reply a pre_reply hook refuses injects the hook's message and the episode goes on; a reply every
    hook allows ends it."""
    env = Environment.from_row(variant_row(), hook_role="user")
    env.step(call("useSkill", skill="product_answers"))
    step = env.step({"content": "Link 3 is 139 yuan, 100% guaranteed."})
    assert not step.done
    assert step.messages[-1] == {"role": "user", "content": "Remove the claim: absolute claims break advertising "
                                                            "rules."}
    step = env.step({"content": "Link 3 is 139 yuan."})
    assert step.done and step.end == "reply" and env.reply == "Link 3 is 139 yuan."
    summary = env.summary()
    assert summary["turns"] == 3 and summary["end"] == "reply"
    assert [(c["hook"], c["decision"]) for c in summary["hook_checks"]] == [
        ("check_params", "allow"), ("no_claims", "retry"), ("needs_skill", "allow"),
        ("no_claims", "allow"), ("needs_skill", "allow")]


def test_skill_load_returns_the_skill():
    """A skill-tool call with a variant skill name returns the skill's content; the source name is unknown."""
    env = Environment.from_row(variant_row())
    out = env.step({"content": "", "tool_calls": [{"name": "useSkill", "arguments": {"skill": "product_answers"}},
                                                  {"name": "useSkill", "arguments": {"skill": "item_qa"}}]}).messages
    assert out[1]["content"] == SKILL_TEXT
    assert json.loads(out[2]["content"])["error"].startswith("unknown skill 'item_qa'")
    assert env.loaded_skills == ["product_answers"]
    assert [c["status"] for c in env.calls] == ["skill", "invalid"]


def test_episode_ends_at_max_turns_and_not_before_an_accepted_reply():
    """The episode runs until a reply the hooks allow or max_turns assistant messages; a step after the end is an
    error; a message that did not parse is answered and counts as a turn."""
    env = Environment.from_row(variant_row(), max_turns=3)
    assert not env.step({"content": "Link 3 is 139 yuan."}).done  # needs_skill refuses: no skill loaded
    step = env.step({"content": "<tool_call>{oops", "error": "tool call is not JSON"})
    assert not step.done and "could not be read: tool call is not JSON" in step.messages[-1]["content"]
    step = env.step(call("fetchItem", linkNo=3))
    assert step.done and step.end == "max_turns" and env.reply is None
    with pytest.raises(RuntimeError, match="episode has ended"):
        env.step({"content": "hi"})
    assert env.summary()["malformed"] == 1


def test_hooks_off_lets_every_reply_pass():
    """run_hooks=False (or hsa's --no-exec-hooks) runs no hook: the first reply ends the episode."""
    env = Environment.from_row(variant_row(), run_hooks=False)
    assert env.step({"content": "100% guaranteed."}).end == "reply"
    assert env.hook_checks == []


def test_options_are_checked():
    """Bad options fail when the environment is built, saying what was expected."""
    with pytest.raises(ValueError, match="max_turns must be an integer >= 1"):
        EnvironmentOptions(max_turns=0)
    with pytest.raises(ValueError, match="error_style must be one of"):
        EnvironmentOptions(error_style="xml")
    with pytest.raises(ValueError, match="episodes can start at \\[2\\]"):
        Environment.from_row(variant_row(), start=4)


@pytest.fixture(scope="module")
def hooked_shards(tmp_path_factory):
    """The first 6 fixture records (the 5th has a reply hook's retry), originals and one variant each."""
    from tests.trainers_support import augment_first

    return augment_first(6, tmp_path_factory.mktemp("env") / "out")


def test_replaying_the_recorded_turns_reproduces_augmented_rows(hooked_shards):
    """On every augmented fixture row (originals and variants), replaying the recorded assistant turns gets the
    recorded tool results and the recorded hook messages back, and the last recorded reply ends the episode."""
    from trainers.common import iter_rows

    rows = list(iter_rows(str(hooked_shards)))
    assert any(r["variant"] for r in rows)
    hooked = 0
    for row in rows:
        env = Environment.from_row(row, max_turns=32)
        record = env.record
        lo, hi = env.segment
        expected = record["messages"][lo:hi]
        for m in expected:
            if m["role"] == "assistant":
                env.step({"content": m.get("content") or "", "tool_calls": [
                    {"id": c.get("id"), "name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                    for c in m.get("tool_calls") or ()]})
        assert env.end == "reply", row["id"]
        got = [(m["role"], m.get("content") or "") for m in env.messages if m["role"] != "assistant"]
        want = [(m["role"], m.get("content") or "") for m in expected if m["role"] != "assistant"]
        assert got == want, row["id"]
        hooked += bool(env.events)
        assert len(env.events) == sum(lo <= ev["message_index"] < hi for ev in record.get("hook_events") or ())
        assert all(c["status"] in ("result", "skill") for c in env.calls), row["id"]
    assert hooked >= 1  # the 5th record's retry (its variant may have dropped it: trajectory.strip_retries)


def _replay(env: Environment) -> list[dict]:
    """Play the recorded assistant messages of the episode's user turn; return the recorded turn."""
    lo, hi = env.segment
    segment = env.record["messages"][lo:hi]
    for m in segment:
        if m["role"] == "assistant" and not env.done:
            env.step({"content": m.get("content"), "tool_calls": [
                {"id": c.get("id"), "name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                for c in m.get("tool_calls") or ()]})
    return segment


def test_replay_property_over_generated_records():
    """Over generated records of every dialect (hsa.testing), replaying each user turn's recorded messages gets
    every recorded tool result back, in order, and the last recorded reply ends the episode (hooks off: the
    generator checks a replacement reply against the first refusing hook only)."""
    from hypothesis import HealthCheck, given, note, settings

    from hsa.environment import content_text as _text
    from hsa.testing import records

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(records())
    def check(raw):
        record = read_record(raw)
        for start in episode_starts(record):
            env = Environment.from_row(record, start=start, max_turns=64, run_hooks=False)
            segment = _replay(env)
            note(f"start {start}: {[c['status'] for c in env.calls]}")
            assert env.end == "reply"
            assert [m["content"] for m in env.messages if m["role"] == "tool"] == \
                [_text(m.get("content")) for m in segment if m["role"] == "tool"]
            assert all(c["status"] in ("result", "skill") for c in env.calls)

    check()
