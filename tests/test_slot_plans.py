"""Slot plans (:mod:`hsa.plans`, issue 29 step 3): the plan table's size never changes a byte.

docs/design-slot-plans.md, section 6: a plan table of size 0 (every plan built afresh for every variant) or 1
writes the bytes of an unbounded one, on records that really share pool slots (8 records of each of 4 harnesses).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hsa.cli import main
from hsa.context import WorkerContext, current, use
from hsa.plans import PlanTable
from tests.test_golden_outputs import _bench_augment


def _kept(table: PlanTable) -> int:
    """The leaf-run branches that hold what a harness-level leaf gave, over every plan of ``table``."""
    return sum(sum(b[4] is not None for b in r.harness) + sum(b[2] is not None for b in r.steps)
               for p in table._data.values() for r in p.runs)


def _augment(tmp: Path, src: Path, plans: int, monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, dict, int]:
    """An in-process run with a plan table of ``plans``, in a context of its own: the run sets up the current
    context's tables, which would otherwise outlive the test (a table of size 0 left to the next test of the
    process)."""
    monkeypatch.setenv("HSA_PLANS", str(plans))
    out = tmp / f"shards-{plans}"
    with use(WorkerContext()):  # fresh tables, the plan table's size read from HSA_PLANS
        assert main(["augment", str(src), "--out", str(out), "--variants", "3", "--seed", "7", "--recipe",
                     "default", "--workers", "1", "--quiet"]) == 0
        assert main(["export", str(out), "--out", str(tmp / f"v-{plans}.jsonl")]) == 0
        got = (tmp / f"v-{plans}.jsonl").read_bytes(), current().plans.stats(), _kept(current().plans)
    monkeypatch.delenv("HSA_PLANS")
    return got


def test_plan_table_of_size_0_or_1_gives_the_bytes_of_an_unbounded_one(tmp_path, monkeypatch):
    src = tmp_path / "in.jsonl"
    _bench_augment().make_input(32, src, 4)
    unbounded, stats, kept = _augment(tmp_path, src, 10**6, monkeypatch)
    assert stats["hits"] > 0 and stats["evictions"] == 0 and kept == stats["kept"] > 0  # slots shared, work held
    assert stats["taken"] > 0  # and taken from the plans by later variants
    one, stats1, _ = _augment(tmp_path, src, 1, monkeypatch)
    assert stats1["plans"] == 1 and stats1["evictions"] > 0
    none, stats0, kept0 = _augment(tmp_path, src, 0, monkeypatch)
    assert stats0["plans"] == 0 and stats0["hits"] == 0 and kept0 == 0
    assert one == unbounded
    assert none == unbounded


def test_plan_table_size_from_the_environment(monkeypatch):
    monkeypatch.setenv("HSA_PLANS", "3")
    assert WorkerContext().plans.max_plans == 3
    monkeypatch.setenv("HSA_CACHE", "0")
    assert WorkerContext().plans.max_plans == 0  # every cache off: no plan kept either
    monkeypatch.delenv("HSA_CACHE")
    monkeypatch.setenv("HSA_PLANS", "many")
    with pytest.raises(ValueError, match="HSA_PLANS must be a whole number"):
        WorkerContext()
    table = PlanTable(2)
    plans = [table.get(("h", slot)) for slot in (0, 1, 0, 2)]
    assert plans[0] is plans[2] and len(table) == 2 and table.evictions == 1
    assert table.get(("h", 1)) is not plans[1]  # the least recently used was dropped


def test_a_renaming_leaf_on_records_with_hooks_is_taken_from_the_plan(tmp_path, monkeypatch):
    """Records with hooks and no hook events (a hook sync reads the harness and the step alone) keep what a renaming
    leaf (tool, parameter or skill rename) gave, hooks included, in the slot plan, and later records of the slot
    take it: the bytes are those of a run without plans (the test above, on the same kind of records)."""
    src = tmp_path / "in.jsonl"
    _bench_augment().make_input(32, src, 4)
    rows = [json.loads(line) for line in src.read_text(encoding="utf-8").splitlines()]
    assert all(r.get("hooks") for r in rows) and sum(not r.get("hook_events") for r in rows) >= len(rows) // 2
    monkeypatch.setenv("HSA_PLANS", str(10**6))
    with use(WorkerContext()):  # the run's tables go with the block (_augment)
        assert main(["augment", str(src), "--out", str(tmp_path / "out"), "--variants", "3", "--seed", "7",
                     "--workers", "1", "--quiet"]) == 0
        kept = [b[2] for p in current().plans._data.values() for r in p.runs for b in r.steps if b[2] is not None]
        assert any("hooks" in parts for parts, _, _ in kept)
        assert any(step["op"] == "skills" for _, steps, _ in kept for step in steps)  # skill.rename's too
        assert sum(r.taken for p in current().plans._data.values() for r in p.runs if r.steps) > 0


def test_a_carried_leaf_whose_apply_adds_a_note_is_never_kept(tmp_path):
    """The check before a renaming leaf's work is kept compares every key but the parts and the messages: an apply
    that adds a note (a hook sync that refused says so in one) is applied afresh for every record, never kept."""
    import dataclasses
    import random
    from typing import ClassVar

    from hsa.plans import LeafRun
    from hsa.records import normalize
    from hsa.renames import rename_tools
    from hsa.transform import Transform, _apply_carried

    @dataclasses.dataclass(frozen=True)
    class Noting(Transform):
        name: ClassVar[str] = "test.noting"
        family: ClassVar[str] = "tool"
        note: bool = True

        def sample(self, record, rng: random.Random):
            return {}

        def mapping_steps(self, harness, params):
            return [{"op": "tools", "map": {harness["tools"][0]["name"]: "renamed_tool"}}]

        def apply(self, record, params):  # the steps' apply, with a note as a hook sync that refused adds one
            out = rename_tools(record, {record["tools"][0]["name"]: "renamed_tool"})
            if self.note:
                out["notes"] = [*out["notes"], "hook sync refused: made up"]
            return out

    src = tmp_path / "in.jsonl"
    _bench_augment().make_input(2, src, 1)
    record = normalize(json.loads(src.read_text(encoding="utf-8").splitlines()[0]))
    for leaf, kept in ((Noting(note=True), False), (Noting(note=False), True)):
        run = LeafRun(leaf, 1)
        outs = [_apply_carried(leaf, record, {}, run, record) for _ in range(3)]
        assert (run.steps[0][2] is not None) is kept and run.taken == (1 if kept else 0)
        assert outs[2]["notes"] == outs[0]["notes"] and outs[2]["tools"] == outs[0]["tools"]
        assert outs[2]["messages"] == outs[0]["messages"]


def test_a_hook_sync_that_refuses_gives_the_same_bytes_with_plans(tmp_path, monkeypatch):
    """A hook that cannot be analysed makes every rename's sync refuse, with a note (and the variant rejected): a
    renaming leaf's work on such records is not kept in the plan (the notes differ) and the undo keeps the notes
    the sync adds, so the rows and rejects are those of a run without plans."""
    src = tmp_path / "in.jsonl"
    _bench_augment().make_input(32, src, 4)
    rows = [json.loads(line) for line in src.read_text(encoding="utf-8").splitlines()]
    for r in rows:
        name = r["tools"][0].get("name") or r["tools"][0]["function"]["name"]
        r["hooks"][0]["source"] += f"\n\ndef broken(p):\n    return p['tool_name'] == {name!r} (\n"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    got = {}
    for plans in (10**6, 0):
        monkeypatch.setenv("HSA_PLANS", str(plans))
        out = tmp_path / f"out-{plans}"
        with use(WorkerContext()):  # the run's tables go with the block (_augment)
            assert main(["augment", str(src), "--out", str(out), "--variants", "3", "--seed", "7", "--workers", "1",
                         "--quiet"]) == 0
            assert main(["export", str(out), "--out", str(tmp_path / f"v-{plans}.jsonl")]) == 0
        got[plans] = ((tmp_path / f"v-{plans}.jsonl").read_bytes(), (out / "rejects.jsonl").read_bytes())
    assert b"sync refused" in got[0][1]
    assert got[10**6] == got[0]


def _stale_case(message: str, elsewhere: bool) -> tuple[dict, dict]:
    """A source whose tool ``lookup`` (a plain word) is renamed to ``find_entry`` and whose parameter ``term``
    of it to ``query``, and a variant that leaves the old names in ``message`` (a user message), in the tool's
    description, in a prompt section and in the result of its call. ``elsewhere``: another tool declares ``term``
    too, so the old name is looked for in the tool's own texts only (else in every text)."""
    from hsa.records import normalize
    from hsa.renames import rename_params, rename_tools

    fetch = {"name": "fetch", "description": "Fetch a page.", "parameters": {
        "type": "object", "properties": {"term": {"type": "string"}}}}
    source = normalize({
        "id": "r", "tools": [{"name": "lookup", "description": "Look up an entry.", "parameters": {
            "type": "object", "properties": {"term": {"type": "string", "description": "What to look up."}},
            "required": ["term"]}}] + ([fetch] if elsewhere else []),
        "prompt": {"template": "{% for s in sections %}{{ s.body }}{% endfor %}",
                   "sections": [{"id": "t", "title": "Tools", "body": "Use the tools."}]},
        "messages": [{"role": "system", "content": "Use the tools."},
                     {"role": "user", "content": "hello"},
                     {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
                         "name": "lookup", "arguments": {"term": "x"}}}]},
                     {"role": "tool", "tool_call_id": "c1", "content": "found x"}]})
    variant = rename_params(rename_tools(source, {"lookup": "find_entry"}), "find_entry", {("term",): "query"})
    bad = json.loads(json.dumps(variant))
    bad["messages"][1]["content"] = message
    bad["tools"][0]["description"] += " Use the lookup tool; set the `term` parameter."
    bad["prompt"]["sections"][0]["body"] += " Call the lookup tool."
    bad["messages"][3]["content"] = "found x for the `term` parameter"
    return source, {**bad, "mapping": variant["mapping"]}


@pytest.mark.parametrize("elsewhere", [False, True], ids=["every-text", "own-texts"])
def test_stale_references_from_the_slot_plan_are_the_walks_in_its_order(monkeypatch, elsewhere):
    """Invariant 6's names-left check, its harness half kept in the slot plan (issue 29): the results are in the
    order of one walk of the texts (messages, then tool descriptions, then the prompt; a tool's own texts before
    its results), the same with a plan as without; a second record of the slot takes the harness half and still
    gets its own messages' results."""
    from hsa import rename_texts
    from hsa.rename_texts import stale_references
    from tests.test_restore_fast import _in_a_slot_plan

    made = []
    real = rename_texts._StaleNames.__init__
    monkeypatch.setattr(rename_texts._StaleNames, "__init__", lambda self, *a: made.append(1) or real(self, *a))
    _, one = _stale_case("Please use the lookup tool.", elsewhere)
    _, two = _stale_case("hello again", elsewhere)
    plain = [stale_references(one, one["mapping"]), stale_references(two, two["mapping"])]
    assert len(made) == 2
    desc, result = "'an entry. Use the lookup tool; set the `term` parameter.'", "'found x for the `term` parameter'"
    old = "['lookup'] still referred to in "
    want = [("old name left behind", old + "a user message: 'Please use the lookup tool.'"),
            ("old name left behind", old + "a tool description: 'Look up an entry. Use the lookup tool; set the "
                                           "`term` parameter.'"),
            ("old name left behind", old + "the prompt: 'Use the tools. Call the lookup tool.'")]
    if elsewhere:
        want += [("old parameter name left behind", f"['term'] of 'find_entry' still referred to in its own texts: "
                                                    f"{text}") for text in (desc, result)]
    else:
        want += [("old parameter name left behind", f"['term'] still referred to in {where}: {text}")
                 for where, text in (("a tool message", result), ("a tool description", desc))]
    assert plain[0] == want
    assert plain[1] == want[1:]  # the user message of the second record refers to nothing old
    with _in_a_slot_plan() as plan:
        assert [stale_references(one, one["mapping"]), stale_references(two, two["mapping"])] == plain
        assert len(made) == 3 and sum(k[0] == "stale names" for k in plan.memo) == 1


def test_identifier_names_left_from_the_slot_plan_are_the_walks_in_its_order():
    """The whole-token half of the names-left check (an identifier-like tool name renamed away and left in a
    text), its harness half (tool texts, hook source) kept in the slot plan: messages first, then the harness in
    the order of its texts, the same with a plan as without, and each record's own messages."""
    from hsa.invariants import _names_left_behind
    from hsa.mapping import Mapping
    from hsa.records import normalize
    from hsa.renames import rename_tools
    from tests.test_restore_fast import _in_a_slot_plan

    source = normalize({"id": "r", "tools": [{"name": "get_weather", "description": "The weather.", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}],
        "hooks": [{"name": "guard", "event": "PreToolUse", "source": "def check(payload):\n    return None\n"}],
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]})
    variant = rename_tools(source, {"get_weather": "fetch_forecast"})

    def left(message: str) -> dict:
        bad = json.loads(json.dumps(variant))
        bad["messages"][1]["content"] = message
        bad["tools"][0]["description"] += " Same as get_weather."
        bad["hooks"][0]["source"] += "# get_weather\n"
        return bad

    one, two = left("I called get_weather."), left("ok")
    mapping = Mapping(variant["mapping"])
    plain = [[v.detail for v in _names_left_behind(r, mapping)] for r in (one, two)]
    harness = ["['get_weather'] still occur in text 'The weather. Same as get_weather.'",
               "['get_weather'] still occur in text 'def check(payload):     return None # get_weather '"]
    assert plain == [["['get_weather'] still occur in text 'I called get_weather.'", *harness], harness]
    with _in_a_slot_plan() as plan:
        assert [[v.detail for v in _names_left_behind(r, mapping)] for r in (one, two)] == plain
        assert sum(k[0] == "stale names" for k in plan.memo) == 1


def test_nested_names_is_the_scan_of_the_names_joined():
    """nested_names looks for each renamed compound name inside each longer name alone: the same answer as one
    scan of all the names joined by a character no name holds, on the livestream harnesses' names and their
    compound parts (each renamed in turn), and on made-up ones (dots, dashes, glued letters)."""
    from fixtures.livestream.generate import generate
    from hsa.mentions import inner_spans, is_compound
    from hsa.records import normalize
    from hsa.rename_texts import harness_names, nested_names

    def joined_scan(record, renamed):
        names = set(harness_names(record)) | set(renamed)
        return any(inner_spans("\x00".join(names), n) for n in renamed if is_compound(n))

    checked = hits = 0
    for raw in generate(6, seed=4):
        rec = normalize(raw)
        parts = {"_".join(n.split("_")[i:j]) for n in harness_names(rec) for i in range(3) for j in range(i + 2, i + 4)}
        parts |= set(harness_names(rec))  # whole names: most are inside no longer one
        for n in sorted(p for p in parts if is_compound(p)):
            step = {"op": "tools", "map": {n: "renamedtool"}}
            want = joined_scan(rec, [n, "renamedtool"])
            assert nested_names(rec, [step]) == want, n
            checked, hits = checked + 1, hits + want
    assert checked > 50 and 0 < hits < checked, (checked, hits)
    made = normalize({"id": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [
        {"name": n, "parameters": {"type": "object", "properties": {}}}
        for n in ("git_diff_staged", "xgit-diff", "git-diff.v2", "pre_git_diff", "git_diffx")]})
    for n in ("git_diff", "git-diff", "diff_staged"):
        assert nested_names(made, [{"op": "tools", "map": {n: "other_name"}}]) == joined_scan(made, [n, "other_name"])


def test_a_plan_not_yet_reused_keeps_nothing():
    """A slot plan the pipeline has not marked reused (its first variant, of a harness no earlier record had) has
    nothing to recall: the restore step and the check work without keys (``WorkerContext.keeping`` is None), and
    give the same; once reused they keep their work in it."""
    from hsa.context import WorkerContext, use
    from hsa.plans import SlotPlan
    from hsa.records import normalize
    from hsa.renames import rename_tools, with_restore

    source = normalize({"id": "r", "tools": [{"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}],
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]})
    variant = rename_tools(source, {"get_weather": "fetch_weather"})
    with use(WorkerContext()) as ctx:
        ctx.plan = plan = SlotPlan()
        assert ctx.keeping is None
        first = with_restore(source, variant)
        assert not plan.memo
        plan.reused = True
        assert ctx.keeping is plan
        assert with_restore(source, variant) == first and plan.memo
    assert first == with_restore(source, variant)  # and without any plan


def test_the_pipeline_marks_a_plan_reused_when_its_harness_was_met_before(tmp_path):
    """In an in-process run every variant is counted by its plan (``served``); a plan is marked reused (the restore
    step and the check keep their work there) from its second variant on, or from its first when an earlier record
    had the harness; records each with a harness of their own keep nothing."""
    src = tmp_path / "in.jsonl"
    _bench_augment().make_input(32, src, 4)  # 32 records of 4 harnesses
    rows = [json.loads(line) for line in src.read_text(encoding="utf-8").splitlines()]
    own = tmp_path / "own.jsonl"  # each record a harness of its own: a tool described apart
    for i, row in enumerate(rows):
        tools = row["tools"] if isinstance(row["tools"], list) else json.loads(row["tools"])
        fn = tools[0]["function"]
        row["tools"] = [{**tools[0], "function": {**fn, "description": f"{fn.get('description', '')} ({i})"}},
                        *tools[1:]]
    own.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    got = {}
    for name, path in (("shared", src), ("own", own)):
        with use(WorkerContext()):
            assert main(["augment", str(path), "--out", str(tmp_path / name), "--variants", "3", "--seed", "7",
                         "--recipe", "tools", "--workers", "1", "--quiet"]) == 0
            got[name] = list(current().plans._data.values())
    shared, alone = got["shared"], got["own"]
    assert sum(p.served for p in shared) == sum(p.served for p in alone) == 32 * 3
    assert all(p.reused for p in shared if p.served > 1) and any(p.memo for p in shared)
    # plans that served one variant, of a harness an earlier record had, are reused: fewer are not than served one
    assert sum(not p.reused for p in shared) < sum(p.served == 1 for p in shared)
    assert all(p.served == 1 and not p.reused and not p.memo for p in alone)


def test_a_plan_remembers_by_identity_and_the_variant_key_by_shared_and_pinned_parts(monkeypatch):
    """SlotPlan.same_as answers only for the very objects remembered (an equal copy is another question), holds at
    most SEEN of them; variant_key is the digest of the parts whichever way it is found: taken for a variant whose
    parts are the plan's shared objects or its source's own, worked out again for a copy, and equal."""
    from hsa import cache
    from hsa.context import WorkerContext, use
    from hsa.plans import SEEN, SlotPlan
    from hsa.records import clone, normalize
    from hsa.rename_texts import variant_key
    from hsa.renames import rename_tools

    plan = SlotPlan()
    a, b = {"x": 1}, {"x": 1}
    assert plan.same_as(("k", a)) is None
    assert plan.remember(("k", a), "A") == "A" and plan.same_as(("k", a)) == "A"
    assert plan.same_as(("k", b)) is None  # equal, not the same object
    for i in range(SEEN):
        plan.remember(("k", {"i": i}), i)
    assert plan.same_as(("k", a)) is None  # the oldest dropped

    source = normalize({"id": "r", "tools": [{"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}],
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]})
    variant = rename_tools(source, {"get_weather": "fetch_weather"})
    assert variant["skill_tool"] == source["skill_tool"]
    variant = {**variant, "skill_tool": source["skill_tool"]}  # as a leaf that leaves it alone hands it on
    other_source = clone(source)  # another record of the plan: equal harness, its own objects
    other = {**clone(variant), "tools": variant["tools"], "mapping": variant["mapping"],
             "skill_tool": other_source["skill_tool"]}  # the plan's tools and step, its own skill tool
    want = cache.digest(variant["mapping"], variant["tools"], None, variant["skill_tool"], None, None)
    with use(WorkerContext()) as ctx:
        ctx.plan = plan = SlotPlan()
        plan.reused = True
        calls = []
        real = cache.digest
        monkeypatch.setattr(cache, "digest", lambda *a: calls.append(1) or real(*a))
        assert variant_key(variant, variant["mapping"], source) == want and len(calls) == 1
        assert variant_key(other, other["mapping"], other_source) == want and len(calls) == 1  # taken
        copy = clone(variant)
        assert variant_key(copy, copy["mapping"], source) == want and len(calls) == 2  # other objects: again


def test_held_parts_pin_the_sources_own_digest_covered_parts_only():
    """hsa.plans.held: a part that is the source's own object under a key the harness digest covers stands as PINNED
    (the same in every record of the plan), a part the record lacks as ABSENT, anything else as itself: the source's
    prompt (its bodies are the trajectory's), and an equal copy of the source's tools (another object)."""
    from hsa.plans import ABSENT, PINNED, held

    tools, prompt = [{"name": "a"}], {"sections": []}
    source = {"tools": tools, "prompt": prompt, "skill_tool": {"name": "Skill"}}
    variant = {"tools": tools, "prompt": prompt, "skill_tool": {"name": "Skill"}}
    got = held(variant, ("tools", "prompt", "skill_tool", "hooks"), source)
    assert got[0] is PINNED and got[1] is prompt and got[2] is variant["skill_tool"] and got[3] is PINNED
    copy = {**variant, "tools": [dict(t) for t in tools]}
    assert held(copy, ("tools",), source)[0] is copy["tools"]
    assert held({"tools": tools}, ("hooks",), {"tools": tools, "hooks": []})[0] is ABSENT



def test_a_harness_part_given_back_is_compared_once_per_object_and_every_other_part_each_time(monkeypatch):
    """The variant check's invariant 8 (``hsa.invariants._gives_back``) compares what undoing a variant gives with
    the source's content key by key. Under a slot plan a harness part given back (a key the harness digest covers)
    that the plan found the same as the source's is not compared again for that very object; a part found to differ
    is never remembered, an equal part that is another object is compared, the messages are compared every time,
    and without a plan everything is. The verdicts are those of ``hsa._patch.same`` on the whole."""
    import hsa._patch as patch
    from hsa import _json
    from hsa.invariants import _gives_back
    from hsa.plans import SlotPlan

    compared: list[str] = []
    same = patch.same

    inside: list[bool] = []

    def counting(a, b):  # the top-level comparisons (same recurses through the module's name)
        if not inside:
            compared.append("tools" if isinstance(a, list) and a and "name" in a[0] else "messages")
        inside.append(True)
        try:
            return same(a, b)
        finally:
            inside.pop()

    def copy(v):
        return _json.loads(_json.dumps(v))

    want = {"messages": [{"role": "user", "content": "hi"}],
            "tools": [{"name": "get", "parameters": {"type": "object"}}]}
    wrong = {"messages": copy(want["messages"]), "tools": [{"name": "get", "parameters": {"type": "object", "x": 1}}]}
    right = {"messages": copy(want["messages"]), "tools": copy(want["tools"])}
    other = {"messages": copy(want["messages"]), "tools": copy(want["tools"])}
    monkeypatch.setattr(patch, "same", counting)

    def check(got: dict, verdict: bool, tools_compared: bool) -> None:
        assert counting(got, want) is verdict  # the whole, as the check compared it before
        compared.clear()
        assert _gives_back(got, want) is verdict
        assert compared.count("messages") == 1 and ("tools" in compared) is tools_compared, compared

    with use(WorkerContext()) as ctx:
        ctx.plan = plan = SlotPlan()
        plan.reused = True
        check(wrong, False, True)
        check(wrong, False, True)  # a part that differs is never remembered
        check(right, True, True)
        check(right, True, False)  # the very object the plan found the same
        check(other, True, True)  # equal, another object
        check(right, True, False)
        assert _gives_back({"tools": right["tools"], "messages": want["messages"]}, want) is False  # key order
        ctx.plan = None
        check(right, True, True)  # no plan: compared
