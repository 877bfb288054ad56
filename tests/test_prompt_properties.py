"""Property tests of invariants 1, 2, 5 and 6 for the skill and prompt families, alone and with the tool family.

Each drawn recipe is run one leaf at a time so that every step is checked: calls
validate and map back (1, 2), renamed skills and tools are left nowhere (6), the
system message is the prompt rendered, the canonical prompt survives every prompt
transform, and skill/prompt transforms touch no tool call but the skill tool's
argument. Records: the fixtures as they are, without their ``prompt`` (imported from
the system message), and with the tools rendered into the prompt.
"""

from __future__ import annotations

import json
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from hsa.mapping import Mapping
from hsa.names import find_tokens, is_identifier_like
from hsa.prompt_model import check_sync, render, system_sections
from hsa.recipes import hold_out, load_recipe
from hsa.records import normalize
from hsa.renames import hook_literals, text_fields
from hsa.skills_dir import is_legal_skill_name, skill_dialect
from hsa.testing import assert_task_preserving
from hsa.transform import Sequence, run
from hsa.invariants import check_record, check_variant
from tests.conftest import FIXTURES
from transforms import prompt as P
from transforms import skill as S
from transforms import tool as T

RAW = [json.loads(line) for line in FIXTURES.read_text(encoding="utf-8").splitlines()]

SKILL_LEAVES = {
    "skill.rename": lambda: S.SkillRename(),
    "skill.describe": lambda: S.SkillDescribe(p=0.8),
    "skill.restructure": lambda: S.SkillRestructure(p=0.8),
    "skill.catalog": lambda: S.SkillCatalog(distractors=(0, 2)),
}
PROMPT_LEAVES = {
    "prompt.reorder": lambda: P.PromptReorder(),
    "prompt.delimiters": lambda: P.PromptDelimiters(),
    "prompt.titles": lambda: P.PromptTitles(p=0.8),
    "prompt.paraphrase": lambda: P.PromptParaphrase(p=0.6),
    "prompt.tool_format": lambda: P.PromptToolFormat(),
    "prompt.placement": lambda: P.PromptPlacement(),
}
TOOL_LEAVES = {
    "tool.rename": lambda: T.ToolRename(),
    "tool.param_rename": lambda: T.ParamRename(p=0.6),
}
OURS = {**SKILL_LEAVES, **PROMPT_LEAVES}
ALL = {**OURS, **TOOL_LEAVES}


def _variant_of(raw: dict, kind: str) -> dict:
    rec = normalize(json.loads(json.dumps(raw)))
    if kind == "no-prompt":
        del rec["prompt"]
    elif kind == "tools-in-prompt":
        body = P.render_tools(rec["tools"], "json")
        rec["prompt"]["sections"].insert(2, {"id": "tools", "title": "Tools", "body": body, "movable": True})
        rec["messages"][0]["content"] = render(rec["prompt"]["template"], system_sections(rec["prompt"]))
    return rec


records = st.builds(_variant_of, st.sampled_from(RAW), st.sampled_from(["as-is", "no-prompt", "tools-in-prompt"]))


def _note(text: str) -> None:
    from hypothesis import note
    from hypothesis.errors import InvalidArgument

    try:
        note(text)
    except InvalidArgument:  # called outside a hypothesis test (a plain loop)
        pass


def _tool_calls(rec: dict, skip_tool: str | None) -> list:
    return [c for m in rec["messages"] for c in m.get("tool_calls") or () if c["function"]["name"] != skip_tool]


def _check_step(name: str, before: dict, after: dict) -> None:
    """Everything one leaf must keep, checked between its input and its output."""
    assert check_variant(before, after) == [], name  # invariants 1, 2, 3 and 6 (names in texts)
    assert check_record(after) == []
    dialect = skill_dialect(s["name"] for s in before.get("skills") or ())
    for s in after.get("skills") or ():
        assert is_legal_skill_name(s["name"], dialect), (name, s["name"])
    if check_sync(before) is None:
        assert check_sync(after) is None, (name, check_sync(after))
    step = Mapping(after["mapping"][len(before["mapping"]):])
    renamed = {**step.skill_names(), **step.tool_names()}
    current = {s["name"] for s in after.get("skills") or ()} | {t["name"] for t in after["tools"]}
    stale = [old for old in renamed if old not in current and is_identifier_like(old)]
    if stale:
        for text in text_fields(after):
            assert not find_tokens(text, stale), (name, stale, text[:100])
        assert not set(stale) & hook_literals(after), name
    family = name.split(".")[0]
    if family in ("skill", "prompt"):
        # tool calls untouched, except the skill tool's argument (through the mapping)
        st_before, st_after = before["skill_tool"]["name"], after["skill_tool"]["name"]
        assert _tool_calls(after, st_after) == _tool_calls(before, st_before), name
        if family == "prompt":
            # no renaming step (a restore step puts the prompt and the system message back: invariant 8)
            assert [s for s in after["mapping"] if s["op"] != "restore"] == \
                [s for s in before["mapping"] if s["op"] != "restore"]
            assert P.canonical_prompt(after) == P.canonical_prompt(before), name


def _run_steps(leaves: list[str], rec: dict, seed: int) -> dict:
    rng = random.Random(seed)
    cur = rec
    for name in leaves:
        nxt, applied, skipped = run(ALL[name](), cur, rng)
        _note(f"{name}: {json.dumps([a.params for a in applied])[:400]} skipped={skipped}")
        _check_step(name, cur, nxt)
        if not applied:
            assert nxt == cur, f"{name} skipped but changed the record"  # invariant 5 for a skipping leaf
        cur = nxt
    assert check_variant(rec, cur) == []  # the whole chain maps back to the source
    return cur


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(sorted(OURS)), min_size=1, max_size=5), records, st.integers(0, 2**32 - 1))
def test_skill_and_prompt_chains_keep_the_invariants(leaves, rec, seed):
    """Chains of skill and prompt transforms keep invariants 1, 2, 6, prompt sync and the canonical prompt at every step."""
    _run_steps(leaves, rec, seed)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(sorted(ALL)), min_size=2, max_size=6), records, st.integers(0, 2**32 - 1))
def test_chains_with_tool_renames_keep_the_invariants(leaves, rec, seed):
    """Mixed with tool.rename and tool.param_rename, every step still keeps invariants 1, 2 and 6."""
    _run_steps(leaves, rec, seed)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(sorted(OURS)), st.sampled_from(range(0, 300, 7)), st.integers(0, 2**32 - 1))
def test_each_transform_passes_the_shared_checker(name, i, seed):
    """hsa.testing.assert_task_preserving (invariants 1-7, replay, determinism) holds for each leaf on the fixtures."""
    assert_task_preserving(ALL[name](), RAW[i], seed)


@settings(max_examples=20, deadline=None)
@given(records, st.integers(0, 2**32 - 1))
def test_presets_keep_the_invariants(rec, seed):
    """The skills and prompt presets, in sequence with the tool renames, map back and stay in sync."""
    recipe = Sequence((load_recipe("skills"), load_recipe("prompt"), T.ToolRename(), T.ParamRename()))
    out, applied, _ = run(recipe, rec, random.Random(seed))
    assert check_variant(rec, out) == []
    assert check_sync(out) is None


@settings(max_examples=25, deadline=None)
@given(records, st.integers(0, 2**32 - 1))
def test_empty_and_held_out_recipes_are_identity(rec, seed):
    """Invariant 5: the empty recipe, the presets with both families held out, and p=0 leaves copy the record."""
    rng = random.Random(seed)
    for recipe in (Sequence(()), hold_out(Sequence((load_recipe("skills"), load_recipe("prompt"))), ["skill", "prompt"]),
                   S.SkillRename(p=0.0), S.SkillDescribe(p=0.0), S.SkillRestructure(p=0.0), P.PromptTitles(p=0.0),
                   P.PromptParaphrase(p=0.0)):
        out, applied, _ = run(recipe, rec, rng)
        assert applied == [] and out == rec


def test_a_skip_reason_for_every_unstructured_record():
    """A record whose system message has no structure (one sentence: an untitled paragraph section) passes through
    every structural prompt and catalogue transform unchanged, with a reason; only its wording may change."""
    rec = normalize({"id": "plain", "tools": [], "skills": [{"name": "a_b", "description": "d", "content": "c"}],
                     "messages": [{"role": "system", "content": "You are a helpful assistant."},
                                  {"role": "user", "content": "hi"}]})
    for name in [*PROMPT_LEAVES, "skill.catalog"]:
        t = P.PromptParaphrase(p=1.0) if name == "prompt.paraphrase" else ALL[name]()
        out, applied, skipped = run(t, rec, random.Random(0))
        if name == "prompt.paraphrase":
            assert applied and out["messages"][0]["content"] != rec["messages"][0]["content"]
            assert P.canonical_prompt(out) == P.canonical_prompt(rec)
            continue
        assert out == rec and not applied and skipped and skipped[0][1], name
