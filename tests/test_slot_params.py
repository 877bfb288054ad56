"""A leaf that samples on the harness (``Transform.sample_harness``; issues 18 and 29) has its draws reused within a
pool slot (``hsa.transform.sample_reusing``), and the params reused are the params its sampler draws.

For records that share a harness but not a trajectory (texts that name the drawn names, other calls, other system
prompts), the params looked up after another record's draw equal a fresh draw with the same seed, exactly; the
answers recorded are the ones a draw needs; whole pipeline runs at a pool give the same rows with the caches on
and off.
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings

from hsa import cache
from hsa.records import clone, normalize
from hsa.recipes import load_recipe
from hsa.testing import records
from hsa.transform import Facts, HarnessView, NotHarnessError, Skip, on_harness, sample_reusing
from tests.conftest import FIXTURES, ROOT, normalized_fixtures, sample, without_hooks
from tests.exact_support import exact
from tests.test_prompt_transforms import with_tools_section

_ALL = normalized_fixtures(5)


FIXTURE = [without_hooks(r) for r in _ALL] + _ALL[:4]


def _leaves():
    out = []
    for name in ("default", "tools", "hammer"):
        out += [t for t in load_recipe(name).leaves() if on_harness(t)]
    assert {t.name for t in out} >= {"tool.rename", "tool.param_rename", "tool.distractors", "tool.values"}
    from transforms.tool import Distractors

    out.append(Distractors(params_p=0.8))  # parameter distractors ask the calls too (facts.ask)
    return out


def _names_in(params) -> list[str]:
    """The names a draw made: new tool and parameter names, distractor names."""
    if isinstance(params, Skip):
        return []
    out = list((params.get("renames") or {}).values()) if isinstance(params.get("renames"), dict) else []
    out += [e["new"] for e in params.get("renames") or () if isinstance(e, dict)]
    out += [e["tool"]["name"] for e in params.get("tools") or () if isinstance(e, dict)]
    out += [d["name"] for d in params.get("distractors") or () if isinstance(d, dict)]  # skill.catalog's skills
    for step in params.get("steps") or ():  # tool.nest's container, tool.flatten's joined names
        if isinstance(step, dict) and step.get("op") == "values":  # tool.values' new values
            out += [new for _, new in step["map"] if isinstance(new, str)]
        if isinstance(step, dict) and step.get("kind") == "regroup":
            out += [new[-1] for _, new in step["paths"] if isinstance(new[-1], str)]
            out.append(step["container"]["path"][-1])
    return list(dict.fromkeys(n for n in out if isinstance(n, str)))


def _trajectories(record, drawn, rng):
    """Other trajectories under ``record``'s harness: texts naming what was drawn (the answers change), texts
    naming nothing new (they do not), calls dropped, another system prompt."""
    out = []
    for extra in (" ".join(drawn), "nothing new here", " ".join(rng.sample(drawn, min(1, len(drawn))))):
        r = clone(record)
        for m in r["messages"]:
            if isinstance(m.get("content"), str) and m.get("role") in ("user", "tool", "system"):
                m["content"] = f"{m['content']} {extra}"
        out.append(r)
    r = clone(record)
    r["messages"] = [m for m in r["messages"] if not m.get("tool_calls")] or r["messages"]
    out.append(r)
    r = clone(record)
    for m in r["messages"]:
        if m.get("role") == "system":
            m["content"] = "You are a weather and travel booking agent for flights and hotels."
    out.append(r)
    for domain in ("coding", "finance", "airline"):  # another domain: other distractors first
        r = clone(record)
        r["meta"] = {**(r.get("meta") or {}), "domain": domain}
        out.append(r)
    return out


def _same(a, b):
    if isinstance(a, Skip) or isinstance(b, Skip):
        return isinstance(a, Skip) and isinstance(b, Skip) and a.reason == b.reason
    return exact(a, b)


def _check(t, record, seed, rng):
    drawn: list = []  # the leaf run's draws (a slot plan's LeafRun.drawn)
    first = sample_reusing(t, record, seed, drawn)
    assert _same(first, t.sample(record, random.Random(seed)))
    reused = 0
    for other in _trajectories(record, _names_in(first), rng):
        fresh = t.sample(other, random.Random(seed))
        kept = [d[3] for d in drawn]
        got = sample_reusing(t, other, seed, drawn)
        assert _same(got, fresh), (t.name, got, fresh)
        reused += any(got is k for k in kept)
    return reused


def test_reused_params_equal_a_fresh_draw():
    reused = seen = 0
    for i, rec in enumerate(sample(FIXTURE)):
        rng = random.Random(i)
        for k, t in enumerate(_leaves()):
            reused += _check(t, rec, rng.getrandbits(64), rng)
            seen += 1
    assert seen > 40
    assert reused > 20  # the draws kept are taken, not only fresh draws made


def test_every_harness_sampler_reads_the_harness_and_asks_the_rest():
    """A sampler on the harness that reads a key of the record outside the harness fails loudly (what it needs of
    the trajectory it must ask through facts, or its draws could be reused where they should not be)."""
    for rec in FIXTURE:
        for t in _leaves():
            harness = HarnessView(rec)
            t.sample_harness(harness, Facts(rec), random.Random(0))
            assert set(harness.read) <= {"tools", "skill_tool", "skills", "hooks", "prompt"}
    h = HarnessView(FIXTURE[0])
    with pytest.raises(NotHarnessError, match="facts.ask"):
        h["messages"]
    with pytest.raises(NotHarnessError):
        h.get("meta")
    with pytest.raises(NotHarnessError):
        "messages" in h  # noqa: B015
    assert "tools" in h and list(h.read) == ["tools"]


def test_a_transform_defines_sample_or_sample_harness_not_both():
    import dataclasses

    from hsa.transform import Transform, register

    @dataclasses.dataclass(frozen=True)
    class Both(Transform):
        name = "test.both"
        family = "tool"

        def sample(self, record, rng):
            return {}

        def sample_harness(self, harness, facts, rng):
            return {}

    with pytest.raises(TypeError, match="defines both sample and sample_harness"):
        register(Both)


def test_answers_that_change_force_a_draw():
    """A record whose texts hold a name the first draw picked does not get that draw (it is taken there)."""
    t = next(t for t in load_recipe("tools").leaves() if t.name == "tool.rename")
    rec = next(r for r in FIXTURE if not r.get("hooks") and len(r["tools"]) >= 2)
    for seed in range(30):
        drawn: list = []
        first = sample_reusing(t, rec, seed, drawn)
        if isinstance(first, Skip):
            continue
        other = clone(rec)
        other["messages"][0]["content"] = f"{other['messages'][0].get('content') or ''} " + " ".join(_names_in(first))
        got = sample_reusing(t, other, seed, drawn)
        assert got is not first and _same(got, t.sample(other, random.Random(seed)))
        assert not set(_names_in(got)) & set(_names_in(first))
        return
    pytest.fail("no draw renamed a tool")


def test_other_harness_parts_force_a_draw():
    """A record that reaches the leaf run with other tools (a leaf before it changed them) gets its own draw, not
    the one made on the first record's tools: the parts a draw read are kept with it and compared."""
    from hsa.renames import rename_tools

    differ = 0
    for t in _leaves():
        for rec in FIXTURE[:6]:
            if not rec["tools"]:
                continue
            other = rename_tools(rec, {rec["tools"][0]["name"]: "zq_fetch_thing"})
            for seed in range(4):
                drawn: list = []
                sample_reusing(t, rec, seed, drawn)
                got = sample_reusing(t, other, seed, drawn)
                fresh = t.sample(other, random.Random(seed))
                assert _same(got, fresh), (t.name, got, fresh)
                differ += not _same(fresh, t.sample(rec, random.Random(seed)))
    assert differ  # the tools change some draws: the test can tell


def test_a_word_use_forces_a_draw():
    """A plain-word tool name that one record's hook uses as data (ambiguous there, so kept) and another's does not."""
    from hsa.renames import rename_tools

    t = next(t for t in load_recipe("tools").leaves() if t.name == "tool.rename")
    rec = next(r for r in FIXTURE if not r.get("hooks") and len(r["tools"]) >= 2)
    rec = rename_tools(rec, {rec["tools"][0]["name"]: "Quokka"})
    worded = clone(rec)
    worded["hooks"] = [{"name": "note", "event": "pre_tool_use", "entry": "check",
                        "source": "def check(p):\n    mode = 'Quokka'\n    return {'decision': 'allow', 'mode': mode}\n"}]
    differ = 0
    for seed in range(40):
        for a, b in ((rec, worded), (worded, rec)):
            drawn: list = []
            sample_reusing(t, a, seed, drawn)
            got = sample_reusing(t, b, seed, drawn)
            fresh = t.sample(b, random.Random(seed))
            assert _same(got, fresh)
            differ += not _same(fresh, t.sample(a, random.Random(seed)))
    assert differ  # the word use changes some draws: the test can tell


def _object_record():
    """A record of one tool whose ``address`` object can be flattened and whose top level can be nested."""
    tool = {"name": "ship_parcel", "description": "Ship a parcel.", "parameters": {
        "type": "object", "properties": {
            "weight": {"type": "number"}, "express": {"type": "boolean"}, "note": {"type": "string"},
            "address": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "string"}}}},
        "required": ["weight", "address"]}}
    args = {"weight": 2, "express": False, "address": {"city": "Oslo", "zip": "0150"}}
    return normalize({"id": "ship", "tools": [tool], "messages": [
        {"role": "user", "content": "Ship it."},
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                                               "function": {"name": "ship_parcel", "arguments": args}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"}]})


@pytest.mark.parametrize("leaf", ["tool.nest", "tool.flatten"])
def test_what_the_calls_pass_forces_a_draw(leaf):
    """tool.nest and tool.flatten draw on the harness and ask the calls: a key a call passes beside the drawn names
    (the container word, a joined name), or an object passed empty, sends the record to a draw of its own."""
    from hsa.transform import get_transform

    t = get_transform(leaf)(p=1.0)
    rec = _object_record()
    differ = 0
    for seed in range(12):
        drawn: list = []
        first = sample_reusing(t, rec, seed, drawn)
        assert not isinstance(first, Skip)
        names = [n for n in _names_in(first) if n not in ("weight", "express", "note", "address", "city", "zip")]
        assert names  # the new names: tool.nest's container, tool.flatten's joined names
        others = []
        for name in names:  # a call that passes a new name as a key of its own, at the top level
            other = clone(rec)
            other["messages"][1]["tool_calls"][0]["function"]["arguments"][name] = "x"
            others.append((name, other))
        other = clone(rec)  # the object passed empty: it cannot be flattened
        other["messages"][1]["tool_calls"][0]["function"]["arguments"]["address"] = {}
        others.append(("address" if leaf == "tool.flatten" else None, other))
        for name, other in others:
            got = sample_reusing(t, other, seed, drawn)
            fresh = t.sample(other, random.Random(seed))
            assert _same(got, fresh), (leaf, seed, got, fresh)
            assert name not in _names_in(got), (leaf, name, got)  # the name a call passes is not drawn again
            differ += not _same(fresh, first)
        assert sample_reusing(t, clone(rec), seed, drawn) is first  # the same calls: the draw is taken
    assert differ  # the calls change draws: the test can tell


def test_prompt_reorder_asks_where_its_sections_come_from():
    """prompt.reorder draws on the harness's prompt once the record's system message is known to render it, and on
    the system message split when the record has no prompt: a record whose system message no longer renders the
    prompt, or whose split sections differ, gets a draw of its own, never the kept one."""
    from transforms.prompt import PromptReorder

    t = PromptReorder()
    rec = next(r for r in FIXTURE if r.get("prompt"))
    with open(ROOT / "fixtures" / "prompts" / "records.jsonl", encoding="utf-8") as fh:
        split = next(r for r in map(normalize, map(json.loads, fh)) if r["id"] == "prompt-tau-airline")
    assert not split.get("prompt")
    differ = 0
    for seed in range(8):
        drawn: list = []
        first = sample_reusing(t, rec, seed, drawn)
        assert not isinstance(first, Skip)
        assert sample_reusing(t, clone(rec), seed, drawn) is first  # the same system message: the draw is taken
        stale = clone(rec)
        stale["messages"][0]["content"] += "\nAn added line."  # no longer the prompt rendered
        got = sample_reusing(t, stale, seed, drawn)
        assert isinstance(got, Skip) and "not the prompt template rendered" in got.reason
        drawn = []
        first = sample_reusing(t, split, seed, drawn)
        other = clone(split)  # other sections: the first two swapped in the system message
        secs = t.sample(split, random.Random(seed))
        assert not isinstance(first, Skip) and _same(first, secs)
        other["messages"][0]["content"] = other["messages"][0]["content"].replace("Book flight", "Book a flight", 1)
        got = sample_reusing(t, other, seed, drawn)
        fresh = t.sample(other, random.Random(seed))
        assert _same(got, fresh)
        differ += not _same(fresh, first) or got is not first
    assert differ  # the system message's sections change what is drawn: the test can tell


def test_skill_catalog_asks_the_words_the_domain_and_the_system_message():
    """skill.catalog draws its distractor skills on the harness: a record whose texts hold a drawn distractor's name,
    whose domain is another, or whose system message no longer renders the prompt gets its own draw."""
    from transforms.skill import SkillCatalog

    t = SkillCatalog(distractors=(2, 2))
    rec = next(r for r in FIXTURE if r.get("skills") and r.get("prompt"))
    differ = 0
    for seed in range(8):
        drawn: list = []
        first = sample_reusing(t, rec, seed, drawn)
        assert not isinstance(first, Skip) and first["distractors"]
        assert sample_reusing(t, clone(rec), seed, drawn) is first
        worded = clone(rec)
        name = first["distractors"][0]["name"]
        worded["messages"][-1]["content"] = f"{worded['messages'][-1].get('content') or ''} {name}"
        domain = clone(rec)
        domain["meta"] = {**(domain.get("meta") or {}), "domain": "airline"}
        stale = clone(rec)
        stale["messages"][0]["content"] += "\nAn added line."
        for other in (worded, domain, stale):
            got = sample_reusing(t, other, seed, drawn)
            fresh = t.sample(other, random.Random(seed))
            assert _same(got, fresh), (seed, got, fresh)
            differ += not _same(fresh, first)
        assert name not in _names_in(sample_reusing(t, worded, seed, drawn))
        assert isinstance(sample_reusing(t, stale, seed, drawn), Skip)
    assert differ


def test_skill_describe_asks_whether_a_description_is_quoted():
    """skill.describe draws on the harness: a record whose messages quote a drawn description that no catalogue
    lists (facts.ask(mentioned_outside)) gets its own draw, which leaves that skill alone; the same trajectory takes
    the kept draw."""
    from transforms.skill import SkillDescribe

    t = SkillDescribe(p=1.0)
    rec = clone(next(r for r in FIXTURE if r.get("skills") and r.get("prompt")))
    rec["prompt"] = None  # no catalogue: every description is asked about
    rec["messages"][0]["content"] = "You are the shop's live-stream assistant."
    descriptions = {s["name"]: s["description"] for s in rec["skills"]}
    for seed in range(4):
        drawn: list = []
        first = sample_reusing(t, rec, seed, drawn)
        assert not isinstance(first, Skip) and _same(first, t.sample(rec, random.Random(seed)))
        assert sample_reusing(t, clone(rec), seed, drawn) is first
        name = next(iter(first["descriptions"]))
        quoted = clone(rec)
        user = next(m for m in quoted["messages"] if m["role"] == "user")
        user["content"] = f"{user['content']} {descriptions[name]}"
        got = sample_reusing(t, quoted, seed, drawn)
        assert _same(got, t.sample(quoted, random.Random(seed)))
        assert got is not first and name not in got["descriptions"]


@pytest.mark.parametrize("leaf", ["skill.describe", "skill.restructure", "prompt.delimiters", "prompt.titles",
                                  "prompt.paraphrase", "prompt.tool_format"])
def test_prompt_and_skill_samplers_ask_the_system_message(leaf):
    """The skill and prompt samplers moved to the harness read the prompt only once the record's system message is
    known to render it: a record whose system message renders it no longer gets the skip, never the kept draw; on
    every fixture record and its other trajectories a reused draw equals a fresh one."""
    from hsa.transform import registry

    t = registry()[leaf]()
    assert on_harness(t)
    kept = stale_skips = 0
    lines = FIXTURES.read_text(encoding="utf-8").splitlines()[:3]  # and three that list their tools in the prompt
    for i, rec in enumerate(FIXTURE + [with_tools_section(json.loads(line)) for line in lines]):
        kept += _check(t, rec, i, random.Random(i))
        if not rec.get("prompt"):
            continue
        drawn: list = []
        first = sample_reusing(t, rec, i, drawn)
        stale = clone(rec)
        stale["messages"][0]["content"] += "\nAn added line."
        got = sample_reusing(t, stale, i, drawn)
        assert _same(got, t.sample(stale, random.Random(i)))
        stale_skips += leaf.startswith("prompt.") and isinstance(got, Skip) and not isinstance(first, Skip)
    assert kept > 0  # draws kept were taken
    assert stale_skips > 0 or not leaf.startswith("prompt.")  # the system message is asked: the test can tell


def _priority_record():
    """A record of two tools: ``file_ticket`` takes a ``priority`` enum of plain words and an ``urgency`` enum of
    identifiers, and a ``limit`` whose default its call passes; ``notify`` takes a free ``level`` string."""
    ticket = {"name": "file_ticket", "description": "File a support ticket.", "parameters": {
        "type": "object", "properties": {
            "priority": {"type": "string", "enum": ["low", "high"]},
            "urgency": {"type": "string", "enum": ["same_day", "next_week"]},
            "limit": {"type": "integer", "default": 5, "minimum": 1, "maximum": 50}},
        "required": ["priority"]}}
    notify = {"name": "notify", "description": "Notify the on-call engineer.", "parameters": {
        "type": "object", "properties": {"level": {"type": "string"}}}}
    args = {"priority": "high", "urgency": "same_day", "limit": 5}
    return normalize({"id": "ticket", "tools": [ticket, notify], "messages": [
        {"role": "user", "content": "Please file it."},
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                                               "function": {"name": "file_ticket", "arguments": args}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "filed"}]})


def test_tool_values_asks_the_texts_and_the_calls():
    """tool.values draws on the harness and asks the rest: a record whose text mentions a plain-word enum value, whose
    other call passes an enum value elsewhere, or whose call no longer passes the default explicitly gets a draw of
    its own (the value or the default is left alone there); the same trajectory takes the kept draw."""
    from transforms.tool import Values

    t = Values(p=1.0, styles=("screaming",))  # low -> LOW: every value changes when nothing stops it
    rec = _priority_record()
    mentioned = clone(rec)
    mentioned["messages"][0]["content"] = "Please file it, the priority is low."
    elsewhere = clone(rec)
    elsewhere["messages"].append({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c2", "type": "function", "function": {"name": "notify", "arguments": {"level": "low"}}}]})
    elsewhere["messages"].append({"role": "tool", "tool_call_id": "c2", "content": "sent"})
    no_default = clone(rec)
    no_default["messages"][1]["tool_calls"][0]["function"]["arguments"].pop("limit")
    differ = 0
    for seed in range(6):
        drawn: list = []
        first = sample_reusing(t, rec, seed, drawn)
        assert not isinstance(first, Skip) and _same(first, t.sample(rec, random.Random(seed)))
        changed = {(s["path"][0], old) for s in first["steps"] for old, _ in s["map"]}
        assert ("priority", "low") in changed and ("limit", 5) in changed  # neither is mentioned or passed elsewhere
        assert sample_reusing(t, clone(rec), seed, drawn) is first
        for other, left in ((mentioned, ("priority", "low")), (elsewhere, ("priority", "low")),
                            (no_default, ("limit", 5))):
            got = sample_reusing(t, other, seed, drawn)
            assert _same(got, t.sample(other, random.Random(seed))), (seed, got)
            assert got is not first
            assert left not in {(s["path"][0], old) for s in got["steps"] for old, _ in s["map"]}
            differ += 1
    assert differ


def test_answers_are_worked_out_once_per_record(monkeypatch):
    """A question is answered once per record object, whatever the branches, the draw and the variants that ask it
    (hsa.transform.Answers); a record with the same content but another object is asked again."""
    from hsa.transform import Answers

    calls: list = []

    def words(record):
        calls.append(record["id"])
        return {"alpha"}

    answers = Answers()
    rec = {"id": "a"}
    facts = Facts(rec, log=[], answers=answers)
    assert "alpha" in facts.ask_set(words) and "beta" not in facts.ask_set(words)
    assert Facts(rec, answers=answers).ask_set(words) == {"alpha"}
    assert calls == ["a"]
    assert Facts(dict(rec), answers=answers).ask_set(words) == {"alpha"} and calls == ["a", "a"]

    import hsa.record_texts as RT
    from transforms.tool import Values

    real, counted = RT.text_words, []

    def counting(record):
        counted.append(record["id"])
        return real(record)

    t = Values(p=1.0, styles=("screaming",))
    rec = _priority_record()
    rec["messages"][0]["content"] = "Please file it, the priority is low."  # a draw asks whether "low" is mentioned
    monkeypatch.setattr(RT, "text_words", counting)
    drawn: list = []
    shared = Answers()
    for _ in range(3):  # a draw, then the two variants after it take it: each asks the record again
        sample_reusing(t, rec, 0, drawn, answers=shared)
    assert len(drawn) == 1 and counted == ["ticket"]  # the record's words worked out once
    sample_reusing(t, clone(rec), 0, drawn, answers=shared)
    assert counted == ["ticket", "ticket"]  # another record object: asked again


def test_facts_record_each_question_and_membership_test():
    log: list = []
    facts = Facts({"id": "r"}, log=log)
    taken = facts.ask_set(lambda r: {"a", "b"})
    assert "a" in taken and "z" not in taken
    assert facts.ask(lambda r, k: r[k], "id") == "r"
    assert log[0][0] is True and log[0][3] == {"a": True, "z": False}
    assert log[1][0] is False and log[1][2] == ("id",) and log[1][3] == repr("r")
    assert Facts({}).ask_set(lambda r: {"a"}) == {"a"}  # not recording: the set itself


@settings(max_examples=25, deadline=None)
@given(records(max_tools=3, hooks=True))
def test_reused_params_on_generated_records(raw):
    rec = normalize(raw)
    rng = random.Random(len(rec["messages"]))
    for t in _leaves():
        _check(t, rec, rng.getrandbits(64), rng)


def test_pool_runs_give_the_same_rows_with_the_caches_on_and_off(monkeypatch):
    from hsa.context import current
    from hsa.transform import SlotRng, run

    recipe = load_recipe("default")

    def rows():
        cache.clear()
        out = []
        for i, rec in enumerate(FIXTURE[:12]):
            for k in range(3):
                for other in (rec, _trajectories(rec, ["zq_word"], random.Random(k))[k]):
                    plan = current().plans.get(("test", i, k))  # one slot plan for both trajectories (none kept when off)
                    v = run(recipe, other, SlotRng(k, random.Random(i * 10 + k), plan))[0]
                    out.append(json.dumps(v, sort_keys=False, default=repr))
        return out

    on = rows()
    monkeypatch.setenv("HSA_CACHE", "0")
    off = rows()
    monkeypatch.delenv("HSA_CACHE")
    cache.clear()
    assert on == off


def test_describe_under_a_pool_draws_per_domain(monkeypatch):
    """Regression: tool.describe's pool lookup was keyed by the tools alone, but its paraphrases depend on the
    harness's domain (meta.domain, the system prompt): records sharing tools in other domains got each other's
    draws, so output depended on record order and on HSA_CACHE. The lookup key now holds the domain."""
    import transforms.tool as TT
    from hsa.plans import SlotPlan
    from hsa.transform import SlotRng, _run_leaf

    t = TT.Describe(modes=("paraphrase",), p=1.0)
    differ = 0
    for rec in FIXTURE[:8]:
        variants = []
        for domain in ("airline", "coding", "retail"):
            r = clone(rec)
            r["meta"] = {**(r.get("meta") or {}), "domain": domain}
            variants.append(r)
        for seed in range(3):
            def tools(off):
                if off:
                    monkeypatch.setenv("HSA_CACHE", "0")
                cache.clear()
                plan = None if off else SlotPlan()  # one slot plan for the three domains when on
                out = [json.dumps(_run_leaf(t, v, SlotRng(seed, random.Random(0), plan), [], [])["tools"])
                       for v in variants]
                monkeypatch.delenv("HSA_CACHE", raising=False)
                cache.clear()
                return out

            on, off = tools(False), tools(True)
            assert on == off
            differ += len(set(off)) > 1
    assert differ  # the domains do change some draws: the test can tell
