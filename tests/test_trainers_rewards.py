"""Reward functions, the tool-call parser, the hook runner and the instruction checkers, on hand-written completions."""

from __future__ import annotations

import json

import pytest

from trainers import ifcheck
from trainers.rewards import (
    REWARDS,
    MissingColumnError,
    format_reward,
    get_reward,
    instruction_reward,
    parse_completion,
    parse_hermes,
    reply_reward,
    skill_reward,
    tool_call_reward,
)

# A variant harness: two tools renamed, a parameter renamed, a skill renamed.
MAPPING = {"version": 1, "steps": [
    {"op": "tools", "map": {"get_product_info_by_link_id": "fetchItem", "load_skill": "useSkill"}},
    {"op": "params", "tool": "fetchItem", "paths": [[["link_id"], ["linkNo"]]]},
    {"op": "skills", "map": {"item_qa": "product_answers"}, "tool": "useSkill", "argument": "skill"},
]}
TOOLS = [
    {"type": "function", "function": {"name": "fetchItem", "parameters": {
        "type": "object", "properties": {"linkNo": {"type": "integer"}}, "required": ["linkNo"]}}},
    {"type": "function", "function": {"name": "useSkill", "parameters": {
        "type": "object", "properties": {"skill": {"type": "string"}}, "required": ["skill"]}}},
    {"type": "function", "function": {"name": "compare_products", "parameters": {
        "type": "object", "properties": {"product_ids": {"type": "array", "items": {"type": "string"}}}}}},
]
SKILL_TOOL = {"name": "useSkill", "argument": "skill"}


def call(name: str, **arguments) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def ref(*calls: tuple[str, dict], content: str = "") -> str:
    return json.dumps({"content": content, "tool_calls": [{"name": n, "arguments": a} for n, a in calls]})


def columns(n: int, reference: str, **extra) -> dict:
    cols = {"reference": [reference] * n, "mapping": [json.dumps(MAPPING)] * n, "tools": [json.dumps(TOOLS)] * n,
            "skill_tool": [json.dumps(SKILL_TOOL)] * n}
    cols.update({k: [v] * n for k, v in extra.items()})
    return cols


LINK3 = ref(("get_product_info_by_link_id", {"link_id": 3}))


# --------------------------------------------------------------------------- parsing


def test_parse_hermes_reads_calls_and_content():
    """Tool-call blocks become calls (string arguments decoded), the rest is content, end tokens are dropped."""
    text = 'Let me check.\n<tool_call>{"name": "a", "arguments": "{\\"x\\": 1}"}</tool_call>\n' \
           '<tool_call>{"name": "b", "arguments": {}}</tool_call><|im_end|>'
    parsed = parse_hermes(text)
    assert parsed.ok and parsed.content == "Let me check."
    assert parsed.calls == ({"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}})


@pytest.mark.parametrize("text", ['<tool_call>{"name": "a", "arguments": {}}', '<tool_call>{"name": </tool_call>',
                                  '<tool_call>{"arguments": {}}</tool_call>', '<tool_call>[1]</tool_call>',
                                  '<tool_call>{"name": "a", "arguments": [1]}</tool_call>'])
def test_parse_hermes_rejects_malformed_calls(text):
    """Unclosed blocks, non-JSON, nameless calls and non-object arguments do not parse."""
    assert not parse_hermes(text).ok


def test_parse_completion_accepts_trl_parsed_messages():
    """A conversational completion whose tool_calls trl already parsed is read without re-parsing text."""
    msg = [{"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "fetchItem", "arguments": {"linkNo": 3}}}]}]
    assert parse_completion(msg).calls == ({"name": "fetchItem", "arguments": {"linkNo": 3}},)


# --------------------------------------------------------------------------- tool_call


def test_tool_call_right_only_after_mapping_back():
    """A call in the variant's names scores 1 against the canonical reference, though its names differ from it."""
    completion = call("fetchItem", linkNo=3)
    assert parse_hermes(completion).calls[0] != json.loads(LINK3)["tool_calls"][0]  # naive comparison fails
    assert tool_call_reward([completion], **columns(1, LINK3)) == [1.0]


def test_tool_call_canonical_names_under_a_variant_are_wrong():
    """Using the source harness's tool or parameter name under the variant scores 0 (invalid there)."""
    completions = [call("get_product_info_by_link_id", link_id=3), call("fetchItem", link_id=3)]
    assert tool_call_reward(completions, **columns(2, LINK3)) == [0.0, 0.5]
    assert tool_call_reward(completions, partial_credit=False, **columns(2, LINK3)) == [0.0, 0.0]


def test_tool_call_types_matter():
    """An argument of the wrong JSON type ("3" for 3, 3.0 for 3) earns only the name credit."""
    completions = [call("fetchItem", linkNo="3"), call("fetchItem", linkNo=3.0), call("fetchItem", linkNo=4)]
    assert tool_call_reward(completions, **columns(3, LINK3)) == [0.5, 0.5, 0.5]
    assert tool_call_reward(completions, name_weight=0.2, **columns(3, LINK3)) == [0.2, 0.2, 0.2]


def test_tool_call_parallel_calls_are_order_free_and_count_extras():
    """Parallel calls match in any order; a missing or an extra call lowers the score; strict mode is 0/1."""
    reference = ref(("get_product_info_by_link_id", {"link_id": 5}), ("get_product_info_by_link_id", {"link_id": 3}))
    completions = [call("fetchItem", linkNo=3) + call("fetchItem", linkNo=5),
                   call("fetchItem", linkNo=5),
                   call("fetchItem", linkNo=3) + call("fetchItem", linkNo=5) + call("fetchItem", linkNo=7)]
    scores = tool_call_reward(completions, **columns(3, reference))
    assert scores[0] == 1.0 and scores[1] == 0.5 and scores[2] == pytest.approx(2 / 3)
    assert tool_call_reward(completions, partial_credit=False, **columns(3, reference)) == [1.0, 0.0, 0.0]


def test_tool_call_nested_arguments_get_partial_credit():
    """Argument credit is per leaf: one of two list items right gives half the argument share."""
    reference = ref(("compare_products", {"product_ids": ["P1", "P2"]}))
    completions = [call("compare_products", product_ids=["P1", "P2"]),
                   call("compare_products", product_ids=["P1", "P9"])]
    assert tool_call_reward(completions, **columns(2, reference)) == [1.0, 0.75]


def test_tool_call_reply_turn_wants_no_call():
    """When the reference is a reply, a completion without calls scores 1 and one with a call 0."""
    reference = ref(content="Link 3 is 139.")
    scores = tool_call_reward(["Link 3 costs 139 yuan.", call("fetchItem", linkNo=3)], **columns(2, reference))
    assert scores == [1.0, 0.0]


def test_tool_call_unparsable_completion_scores_zero():
    """A completion whose tool call does not parse scores 0."""
    assert tool_call_reward(['<tool_call>{"name": "fetchItem"'], **columns(1, LINK3)) == [0.0]


def test_tool_call_needs_a_mapping():
    """Rows without a mapping column, or with a null mapping, are a clear error; an empty mapping is identity."""
    cols = columns(1, LINK3)
    del cols["mapping"]
    with pytest.raises(MissingColumnError, match="'mapping' column"):
        tool_call_reward([call("fetchItem", linkNo=3)], **cols)
    cols["mapping"] = [None]
    with pytest.raises(MissingColumnError, match="no mapping"):
        tool_call_reward([call("fetchItem", linkNo=3)], **cols)
    cols["mapping"], cols["tools"] = [{}], [None]
    assert tool_call_reward([call("get_product_info_by_link_id", link_id=3)], **cols) == [1.0]


# --------------------------------------------------------------------------- skill


def test_skill_reward_wants_the_variant_skill_name():
    """The right skill under its variant name, through the variant's skill tool, scores 1; canonical names 0."""
    reference = ref(("load_skill", {"skill": "item_qa"}))
    completions = [call("useSkill", skill="product_answers"), call("useSkill", skill="item_qa"),
                   call("load_skill", skill="product_answers"), call("useSkill", skill="promo_qa"),
                   call("useSkill", skill="product_answers") + call("useSkill", skill="promo_qa")]
    assert skill_reward(completions, **columns(5, reference)) == [1.0, 0.0, 0.0, 0.0, 0.5]


def test_skill_reward_does_not_apply_without_a_skill_load():
    """Turns whose reference loads no skill get None (left out by trl)."""
    assert skill_reward([call("fetchItem", linkNo=3)], **columns(1, LINK3)) == [None]


def test_skill_reward_follows_a_renamed_skill_argument():
    """When the skill tool's argument is renamed too, the variant's argument name is the one that counts."""
    mapping = {"steps": MAPPING["steps"][:1] + [
        {"op": "params", "tool": "useSkill", "paths": [[["skill"], ["skillName"]]]},
        {"op": "skills", "map": {"item_qa": "product_answers"}, "tool": "useSkill", "argument": "skillName"}]}
    cols = columns(2, ref(("load_skill", {"skill": "item_qa"})))
    cols["mapping"] = [mapping] * 2
    cols["skill_tool"] = [{"name": "useSkill", "argument": "skillName"}] * 2
    cols["tools"] = [None] * 2
    completions = [call("useSkill", skillName="product_answers"), call("useSkill", skill="product_answers")]
    assert skill_reward(completions, **cols) == [1.0, 0.0]


# --------------------------------------------------------------------------- format


def test_format_reward_parses_and_checks_schemas():
    """1 for parsable calls valid under the variant's schemas (or plain text), 0.5 for invalid calls, 0 unparsable."""
    completions = [call("fetchItem", linkNo=3), "Just text.", call("fetchItem", linkNo="three"),
                   call("get_product_info_by_link_id", link_id=3), '<tool_call>{"name": "fetchItem", </tool_call>']
    assert format_reward(completions, **columns(5, LINK3)) == [1.0, 1.0, 0.5, 0.5, 0.0]
    assert format_reward(completions) == [1.0, 1.0, 1.0, 1.0, 0.0]  # no tools column: parsing only


# --------------------------------------------------------------------------- reply


@pytest.fixture(scope="module")
def reply_harness(fixture_records):
    """A fixture record with the three reply-side hooks, and a variant of it with item_qa renamed."""
    from hsa.records import normalize
    from hsa.renames import rename_skills

    source = next(r for r in fixture_records if {h["name"] for h in r["hooks"]} >=
                  {"require_reply_skill", "reply_format"})
    record = normalize(source)
    hooks = [h for h in fixture_records[0]["hooks"] if h["name"] == "forbidden_claims"] + record["hooks"]
    record["hooks"] = hooks
    variant = rename_skills(record, {"item_qa": "product_answers"})
    return record["hooks"], variant["hooks"]


def test_reply_reward_runs_the_harness_hooks(reply_harness):
    """The share of pre_reply hooks that allow the reply: format, forbidden claims and the loaded reply skill."""
    hooks, _ = reply_harness
    n_reply = sum(h["event"] == "pre_reply" for h in hooks)
    good = "Link 3 is 139 yuan, a light serum that absorbs fast."
    completions = [good, good + " " + "Really great value. " * 12, good + " Lowest price ever!",
                   "- link 3\n- 139 yuan", call("fetchItem", linkNo=3)]
    cols = {"reference": [ref(content="Link 3 is 139.")] * 5, "hooks": [json.dumps(hooks)] * 5,
            "hook_context": [json.dumps({"loaded_skills": ["item_qa"]})] * 5}
    scores = reply_reward(completions, **cols)
    assert scores[0] == 1.0
    assert scores[1] == scores[2] == scores[3] == pytest.approx((n_reply - 1) / n_reply)
    assert scores[4] == 0.0
    cols["hook_context"] = [{"loaded_skills": []}] * 5
    assert reply_reward([good], **{k: v[:1] for k, v in cols.items()}) == [pytest.approx((n_reply - 1) / n_reply)]


def test_reply_reward_under_a_variant_uses_variant_skill_names(reply_harness):
    """Under a variant whose hooks were rewritten, the renamed reply skill satisfies them and the old name does not."""
    _, variant_hooks = reply_harness
    good = "Link 3 is 139 yuan, a light serum that absorbs fast."
    cols = {"reference": [ref(content="x")] * 2, "hooks": [variant_hooks] * 2,
            "hook_context": [{"loaded_skills": ["product_answers"]}, {"loaded_skills": ["item_qa"]}]}
    scores = reply_reward([good, good], **cols)
    assert scores[0] == 1.0 and scores[1] < 1.0


def test_reply_reward_applies_to_replies_only():
    """Tool-call turns get None; without reply hooks any non-empty reply scores 1 and an empty one 0."""
    cols = {"reference": [LINK3, ref(content="hi"), ref(content="hi")], "hooks": [None] * 3}
    assert reply_reward(["Hello!", "Hello!", ""], **cols) == [None, 1.0, 0.0]


# --------------------------------------------------------------------------- hooks, instructions, registry


def test_reply_reward_counts_failing_hooks_as_not_allowing():
    """A reply hook that raises or loops forever runs in the sandbox, warns, and does not allow the reply."""
    ok = {"name": "ok", "event": "pre_reply", "entry": "f", "source": "def f(p):\n    return {'decision': 'allow'}\n"}
    bad = {"name": "bad", "event": "pre_reply", "entry": "f", "source": "def f(p):\n    raise KeyError('k')\n"}
    cols = {"reference": [ref(content="x")], "hooks": [[ok, bad]]}
    with pytest.warns(UserWarning, match="reply hook 'bad' failed"):
        assert reply_reward(["Hello there."], **cols) == [0.5]


def test_instruction_reward_scores_checks():
    """The share of verifiable instructions followed; rows without checks get None."""
    checks = [{"type": "lowercase"}, {"type": "max_words", "n": 3}]
    scores = instruction_reward(["all good here", "All good here", "all good here and more"],
                                checks=[json.dumps(checks)] * 3)
    assert scores == [1.0, 0.5, 0.5]
    assert instruction_reward(["x"], checks=[None]) == [None]


def test_bundled_general_instructions_examples_pass_their_checks():
    """Every bundled instruction has known checks and a hand-written example that passes them all."""
    from trainers.common import bundled_path

    rows = [json.loads(line) for line in bundled_path("general_instructions.jsonl").read_text().splitlines()]
    assert len(rows) >= 40
    used = set()
    for row in rows:
        assert row["prompt"][0]["role"] == "user"
        assert all(ifcheck.check(row["example"], row["checks"])), row["id"]
        used |= {c["type"] for c in row["checks"]}
    assert used == set(ifcheck.CHECKS)


@pytest.mark.parametrize("check,bad", [
    ({"type": "max_words", "n": 3}, "one two three four"), ({"type": "min_words", "n": 3}, "one two"),
    ({"type": "max_chars", "n": 5}, "toolong"), ({"type": "max_sentences", "n": 1}, "One. Two."),
    ({"type": "keywords", "words": ["cat"]}, "a catalogue"), ({"type": "forbidden", "words": ["dog"]}, "a Dog!"),
    ({"type": "keyword_count", "word": "go", "n": 2}, "go gone"), ({"type": "lowercase"}, "Hi"),
    ({"type": "uppercase"}, "HI there"), ({"type": "starts_with", "text": "Yes"}, "No, yes"),
    ({"type": "ends_with", "text": "!"}, "Hi."), ({"type": "json"}, "{'a': 1}"),
    ({"type": "bullets", "n": 2}, "- a\n- b\n- c"), ({"type": "paragraphs", "n": 2}, "a\nb"),
    ({"type": "no_commas"}, "a, b"), ({"type": "title"}, "<title>"), ({"type": "quoted"}, '"half'),
    ({"type": "placeholders", "n": 2}, "[one] only"), ({"type": "highlights", "n": 2}, "*one* only"),
    ({"type": "postscript", "marker": "P.S."}, "PS no"), ({"type": "sections", "n": 2}, "SECTION 1\nonly"),
])
def test_every_check_rejects_a_violation(check, bad):
    """Each instruction checker fails a response that breaks it."""
    assert ifcheck.check(bad, [check]) == [False]


def test_check_validation_errors():
    """Unknown check types and missing or unexpected parameters are reported."""
    with pytest.raises(ifcheck.CheckError, match="unknown check type"):
        ifcheck.check("x", [{"type": "nope"}])
    with pytest.raises(ifcheck.CheckError, match="missing \\['n'\\]"):
        ifcheck.check("x", [{"type": "max_words"}])


def test_reward_registry_and_dotted_paths():
    """Rewards resolve by name or dotted path; unknown names say what is accepted."""
    assert get_reward("tool_call") is tool_call_reward
    assert set(REWARDS) >= {"tool_call", "skill", "format", "reply", "instruction"}
    assert get_reward("trainers.rewards.format_reward") is format_reward
    with pytest.raises(ValueError, match="unknown reward"):
        get_reward("accuracy")


# --------------------------------------------------------------------------- episode rewards (multi-turn)


def _played(steps, **options) -> dict:
    """The summary of an episode played on the hand-written variant row of tests/test_environment.py."""
    from hsa.environment import Environment
    from tests.test_environment import variant_row

    env = Environment.from_row(variant_row(), **options)
    for s in steps:
        env.step(s)
    return env.summary()


def _call(name: str, **arguments) -> dict:
    return {"content": "", "tool_calls": [{"name": name, "arguments": arguments}]}


GOOD_EPISODE = [_call("useSkill", skill="product_answers"), _call("fetchItem", linkNo=3),
                {"content": "Link 3 is 139 yuan, 100% guaranteed."}, {"content": "Link 3 is 139 yuan."}]


def test_episode_rewards_score_a_good_episode():
    """The recorded calls under the variant's names, an accepted reply within the recorded turns: calls, skill,
    format and turns score 1; the hook pass rate counts the one refused reply."""
    from trainers.rewards import (episode_calls_reward, episode_format_reward, episode_hooks_reward,
                                  episode_skill_reward, episode_turns_reward)

    ep = _played(GOOD_EPISODE)
    cols = {"episode": [json.dumps(ep)]}  # a JSON string works as well as the object
    assert episode_calls_reward(["x"], **cols) == [1.0]
    assert episode_skill_reward(["x"], **cols) == [1.0]
    assert episode_format_reward(["x"], **cols) == [1.0]
    assert episode_turns_reward(["x"], **cols) == [1.0]
    assert episode_hooks_reward(["x"], **cols) == [pytest.approx(5 / 6)]  # 2 call checks + 2 x 2 reply checks


def test_episode_rewards_score_a_poor_episode():
    """A source-harness name (unknown under the variant), a wrong skill, and no accepted reply within max_turns."""
    from trainers.rewards import (episode_calls_reward, episode_format_reward, episode_skill_reward,
                                  episode_turns_reward)

    ep = _played([_call("get_product_info_by_link_id", link_id=3), _call("fetchItem", linkNo=3),
                  _call("useSkill", skill="product_answers"), {"content": "<tool_call>{", "error": "not JSON"}],
                 max_turns=4)
    cols = {"episode": [ep]}
    # expected: load_skill + fetch; predicted: invalid, fetch (1.0), skill (1.0) -> 2 of max(2, 3)
    assert episode_calls_reward(["x"], **cols) == [pytest.approx(2 / 3)]
    assert REWARDS["episode_calls_strict"](["x"], **cols) == [0.0]
    assert episode_skill_reward(["x"], **cols) == [1.0]
    assert episode_format_reward(["x"], **cols) == [pytest.approx((4 - 1 - 0.5) / 4)]
    assert episode_turns_reward(["x"], **cols) == [0.0] and ep["end"] == "max_turns"
    late = _played([_call("fetchItem", linkNo=3)] * 5 + GOOD_EPISODE, max_turns=10)
    assert episode_turns_reward(["x"], episode=[late]) == [pytest.approx(1 - 5 / 6)]


def test_episode_skill_and_hooks_do_not_apply_without_skills_or_hooks():
    """Episodes whose turn loads no skill, or that ran no hook, get None from those rewards."""
    from trainers.rewards import episode_hooks_reward, episode_skill_reward

    ep = _played([{"content": "hello"}], run_hooks=False)
    ep["recorded_calls"] = [c for c in ep["recorded_calls"] if c["name"] != "load_skill"]
    assert episode_skill_reward(["x"], episode=[ep]) == [None]
    assert episode_hooks_reward(["x"], episode=[ep]) == [None]


def test_reasoning_length_penalty():
    """Reasoning (<think> blocks, text beside calls) within the budget costs nothing, then up to -1 at twice it."""
    from trainers.rewards import reasoning_length_penalty

    think = "<think>" + "x" * 150 + "</think>Link 3 is 139 yuan."
    assert reasoning_length_penalty([think], budget=200) == [0.0]
    assert reasoning_length_penalty([think], budget=100) == [pytest.approx(-0.5)]
    assert reasoning_length_penalty(["y" * 500 + call("fetchItem", linkNo=3)], budget=100) == [-1.0]
    ep = _played([{"content": "z" * 300, "tool_calls": [{"name": "fetchItem", "arguments": {"linkNo": 3}}]},
                  {"content": "a plain reply of any length " * 20}], run_hooks=False)
    assert reasoning_length_penalty(["ignored"], episode=[ep], budget=200) == [pytest.approx(-0.5)]


def test_episode_rewards_need_the_episode_column():
    """Without the episode column the error says where it comes from."""
    from trainers.rewards import EPISODE_ALIASES, episode_calls_reward, reward_segment

    with pytest.raises(MissingColumnError, match="--rollout multi_turn"):
        episode_calls_reward(["x"], reference=[LINK3])
    assert EPISODE_ALIASES["tool_call"] == "episode_calls"
    assert [reward_segment(get_reward(n)) for n in ("episode_calls", "episode_calls_strict", "reply",
                                                    "episode_turns")] == ["calls", "calls", "reply", "episode"]
    assert reward_segment(lambda completions, **kw: []) == "episode"
