"""Tests of the live-commerce fixture generator (fixtures/livestream)."""
from __future__ import annotations

import json
import pathlib

import jinja2
import jsonschema
import pytest

from fixtures.livestream.generate import dumps, generate

SAMPLE = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "livestream" / "trajectories.jsonl"
KEYS = ["id", "messages", "tools", "skills", "skill_tool", "prompt", "hooks", "hook_events", "meta"]


@pytest.fixture(scope="module")
def records():
    return generate(300, 0)


def _calls(record):
    for index, message in enumerate(record["messages"]):
        for call in message.get("tool_calls") or []:
            args = call["function"]["arguments"]
            yield index, call, json.loads(args) if isinstance(args, str) else args


def _run(hook, payload):
    namespace: dict = {}
    exec(compile(hook["source"], hook["name"], "exec"), namespace)
    return namespace[hook["entry"]](payload)


def test_same_seed_is_byte_identical():
    """The same n and seed give byte-identical serialised output."""
    assert dumps(generate(40, 7)) == dumps(generate(40, 7))


def test_different_seed_differs():
    """A different seed gives different output."""
    assert dumps(generate(40, 0)) != dumps(generate(40, 1))


def test_prefix_stable():
    """The first k records of generate(n) equal generate(k)."""
    assert dumps(generate(25, 3)) == dumps(generate(60, 3))[: len(dumps(generate(25, 3)))]


def test_committed_sample_matches_generator(records):
    """The committed trajectories.jsonl equals generate(300, 0) serialised."""
    assert SAMPLE.read_text(encoding="utf-8") == dumps(records)


def test_record_shape(records):
    """Records have the documented keys in order, unique ids, 8-15 tools, 6-10 skills, 3-5 hooks, 0-3 tool calls."""
    assert len({r["id"] for r in records}) == len(records)
    for r in records:
        assert list(r) == KEYS
        assert 8 <= len(r["tools"]) <= 15 and 6 <= len(r["skills"]) <= 10 and 3 <= len(r["hooks"]) <= 5
        assert r["skill_tool"] == {"name": "load_skill", "argument": "skill"}
        assert r["messages"][0]["role"] == "system" and r["messages"][1]["role"] == "user"
        work = [c for _, c, _ in _calls(r) if c["function"]["name"] != "load_skill"]
        assert (len(work) == 0) if r["meta"]["scenario"] == "chitchat" else (1 <= len(work) <= 3), r["id"]


def test_tool_calls_reference_defined_tools(records):
    """Every tool call names a tool defined in the record."""
    for r in records:
        names = {t["function"]["name"] for t in r["tools"]}
        assert "load_skill" in names
        for _, call, _ in _calls(r):
            assert call["function"]["name"] in names, (r["id"], call)


def test_tool_call_arguments_validate(records):
    """Every tool call's arguments validate (Draft 2020-12) against its tool's parameters schema."""
    for r in records:
        schemas = {t["function"]["name"]: t["function"]["parameters"] for t in r["tools"]}
        for _, call, args in _calls(r):
            schema = schemas[call["function"]["name"]]
            jsonschema.Draft202012Validator.check_schema(schema)
            jsonschema.Draft202012Validator(schema).validate(args)


def test_argument_dialects_mixed(records):
    """Arguments are JSON strings in most records and objects in about a fifth."""
    as_object = sum(isinstance(next(_calls(r))[1]["function"]["arguments"], dict) for r in records)
    assert 0.1 * len(records) < as_object < 0.3 * len(records)


def test_load_skill_calls_reference_defined_skills(records):
    """Every load_skill call names a skill of the record, and its result is that skill's content."""
    for r in records:
        skills = {s["name"]: s for s in r["skills"]}
        results = {m["tool_call_id"]: m for m in r["messages"] if m["role"] == "tool"}
        for _, call, args in _calls(r):
            if call["function"]["name"] == "load_skill":
                assert args["skill"] in skills, (r["id"], args)
                assert results[call["id"]]["content"] == skills[args["skill"]]["content"]


def test_reply_skill_loaded_before_final_reply(records):
    """A reply skill is loaded before the final assistant reply."""
    for r in records:
        kinds = {s["name"]: s["kind"] for s in r["skills"]}
        final = len(r["messages"]) - 1
        assert r["messages"][final]["role"] == "assistant" and "tool_calls" not in r["messages"][final]
        loaded = [args["skill"] for i, c, args in _calls(r) if c["function"]["name"] == "load_skill" and i < final]
        assert any(kinds[s] == "reply" for s in loaded), r["id"]


def test_tool_messages_follow_matching_calls(records):
    """Every tool message follows an assistant tool call with a matching tool_call_id and name."""
    for r in records:
        ids = [c["id"] for _, c, _ in _calls(r)]
        assert len(ids) == len(set(ids)), r["id"]
        pending: dict = {}
        for m in r["messages"]:
            if m["role"] == "assistant":
                assert not pending, (r["id"], pending)
                pending = {c["id"]: c["function"]["name"] for c in m.get("tool_calls") or []}
            elif m["role"] == "tool":
                assert pending.pop(m["tool_call_id"]) == m["name"], r["id"]
            else:
                assert not pending, (r["id"], m)
        assert not pending


def test_system_message_is_rendered_template(records):
    """The system message is exactly the prompt template rendered with its sections."""
    for r in records:
        rendered = jinja2.Template(r["prompt"]["template"]).render(sections=r["prompt"]["sections"])
        assert r["messages"][0]["content"] == rendered
        ids = [s["id"] for s in r["prompt"]["sections"]]
        assert ids == ["persona", "room", "products", "skills", "rules", "output"]
        catalogue = next(s["body"] for s in r["prompt"]["sections"] if s["id"] == "skills")
        assert catalogue.splitlines() == [f"- {s['name']}: {s['description']}" for s in r["skills"]]


def test_hooks_reproduce_recorded_decisions(records):
    """Every hook compiles, and on each recorded payload its entry returns exactly the recorded decision."""
    for r in records:
        hooks = {h["name"]: h for h in r["hooks"]}
        for h in r["hooks"]:
            compile(h["source"], h["name"], "exec")
        for event in r["hook_events"]:
            assert _run(hooks[event["hook"]], event["payload"]) == event["decision"], r["id"]
            injected = r["messages"][event["message_index"]]
            assert injected["role"] in ("user", "system")
            assert injected["content"] == event["decision"]["message"]


def test_hooks_allow_the_recorded_trajectory(records):
    """Hooks allow every tool call, first viewer message without an event, and the final reply."""
    for r in records:
        kinds = {s["name"] for s in r["skills"]}
        loaded = [a["skill"] for _, c, a in _calls(r) if c["function"]["name"] == "load_skill"]
        assert set(loaded) <= kinds
        for h in r["hooks"]:
            if h["event"] == "pre_tool_use":
                for _, call, args in _calls(r):
                    payload = {"tool_name": call["function"]["name"], "tool_input": args}
                    assert _run(h, payload) == {"decision": "allow"}, (r["id"], payload)
            elif h["event"] == "pre_reply":
                payload = {"reply": r["messages"][-1]["content"], "loaded_skills": loaded}
                assert _run(h, payload) == {"decision": "allow"}, r["id"]
            elif not any(e["hook"] == h["name"] for e in r["hook_events"]):
                assert _run(h, {"text": r["messages"][1]["content"]}) == {"decision": "allow"}


def test_retry_rate_and_syntax_coverage(records):
    """15-25% of records carry a hook-triggered retry; some hooks use match/case, some a local helper."""
    rate = sum(bool(r["hook_events"]) for r in records) / len(records)
    assert 0.15 <= rate <= 0.25
    sources = [h["source"] for r in records for h in r["hooks"]]
    assert any("    match " in s for s in sources) and any("    def " in s for s in sources)


def test_shared_harnesses_give_k_distinct_harnesses_and_valid_records():
    """generate(n, harnesses=K) draws every record from one of K harnesses, and each record still checks."""
    from hsa.records import normalize
    from hsa.invariants import check_record

    recs = generate(24, 3, harnesses=4)
    harness = lambda r: json.dumps([r["tools"], r["skills"], r["prompt"], r["hooks"]], sort_keys=True)  # noqa: E731
    assert len({harness(r) for r in recs}) == 4
    assert len({json.dumps(r["messages"]) for r in recs}) == 24
    for i, r in enumerate(recs):
        assert harness(r) == harness(recs[i % 4])
        assert check_record(normalize(r)) == []
    assert dumps(generate(24, 3, harnesses=4)) == dumps(recs)


def _leaves(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def test_compact_gold_actions_follow_from_the_prompt():
    """--compact: no coin decides the order of a turn or an optional argument and every value of a first call is
    shown, so a small model can learn the gold actions from the prompt (the first turn is the question's tools; a skill first only when no
    tool is needed; a return's policy after the order status has given the category)."""
    records = generate(400, 5, compact=True)
    scenarios = set()
    for rec in records:
        scenario = rec["meta"]["scenario"]
        scenarios.add(scenario)
        question = next(m["content"] for m in rec["messages"] if m["role"] == "user")
        turns = [[(c["function"]["name"], c["function"]["arguments"]) for c in m["tool_calls"]]
                 for m in rec["messages"] if m["role"] == "assistant" and m.get("tool_calls")]
        first = [name for name, _ in turns[0]]
        shown = (rec["messages"][0]["content"] + "\n" + question).casefold()
        for _, args in turns[0]:  # every value of a first call is in the prompt or the question
            for value in _leaves(json.loads(args) if isinstance(args, str) else args):
                assert str(value).casefold() in shown, (rec["id"], value, question)
        assert ("load_skill" in first) == (scenario == "chitchat"), (rec["id"], first)
        assert "get_return_policy" not in first and "get_live_room_info" not in first, (rec["id"], first)
        for name, args in (call for turn in turns for call in turn):
            args = json.loads(args) if isinstance(args, str) else args
            assert set(args) <= {"get_reviews_summary": {"product_id"}, "search_products": {"query", "price_range"},
                                 "check_inventory": {"product_id", "sku"},
                                 "compare_products": {"product_ids"}}.get(name, set(args)), (rec["id"], name, args)
            if name == "search_products":
                assert set(args["price_range"]) == {"max"}
            if name == "get_return_policy":
                assert args.get("opened", False) == ("opened" in question), (rec["id"], question, args)
    assert {"chitchat", "after_sales", "flash_sale", "search", "comparison", "item_qa", "inventory_size"} <= scenarios
