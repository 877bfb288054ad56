"""The fast paths of hook.sync give what the plain ones did: site selection in ``plan``, ``transport``, step info.

``_old_plan`` below is ``hsa.codemods.sync.plan`` as it was before sites were selected through a
``_SiteIndex`` (every site looked at for every step), kept here as the oracle. The corpus: the
fixture hooks, the hooks of some augmented variants, and every hook of ``tests/test_hook_sync.py``
(which holds the refusal cases), each under tool, skill, parameter and value steps built from
its own literals and its harness.
"""

from __future__ import annotations

import ast
import json
import pickle
import textwrap
from pathlib import Path

import pytest

from hsa.codemods import Refused
from hsa.codemods import sync as S
from hsa.codemods.analysis import HARD_ROLES, NAME_ROLES, SOFT_ROLES, _analyze, analyze
from hsa.hooks_model import entry_of, infer_entry, text_map
from hsa.names import render_style, replace_tokens
from hsa.records import normalize
from hsa.steps import Step
from tests.conftest import FIXTURES

# ---------------------------------------------------------------------------- the old implementation (oracle)


def _old_plan(an, step, h):
    op = step.get("op")
    kind = Step.from_json(step).renames_kind
    renamed = S._renamed(step)
    if kind is None or not renamed:
        return {}
    for p in an.problems:
        if kind in p.kinds and (op in ("tools", "skills") or p.tools is None or step["tool"] in p.tools):
            return S.Refusal(p.reason, f"line {p.line}: {p.detail}")
    table = text_map(step)
    concat_parts = {i for s in an.sites if s.kind == "concat" for i in s.parts}
    out = {}
    try:
        for site in an.sites:
            if site.index in concat_parts:
                continue
            names = site.role_names()
            name_roles = [r for r in site.roles if r[0] in NAME_ROLES]
            if name_roles:
                wanted = {S._name_value(site, r, step, h) for r in name_roles}
                if len(wanted) > 1:
                    raise Refused("literal plays conflicting roles", f"line {site.line}: {site.value!r} would have "
                                                                       f"to become {sorted(wanted)}")
                new = wanted.pop()
                if new != site.value and names & HARD_ROLES:
                    raise Refused("literal plays conflicting roles",
                                    f"line {site.line}: {site.value!r} names a renamed {kind} and is also used as "
                                    f"{' and '.join(sorted(names & HARD_ROLES))}")
            elif "unknown" in names:
                if site.value in renamed:
                    raise Refused("unresolved reference", f"line {site.line}: {site.value!r} equals a renamed "
                                                            f"{kind} but is compared with a value that cannot be "
                                                            "resolved")
                new = site.value
            elif names & (HARD_ROLES | SOFT_ROLES):
                new = site.value
            else:
                new = replace_tokens(site.value, table) if table else site.value
            if new != site.value:
                out[site.index] = new
    except Refused as exc:
        return exc.refusal
    return out


# ---------------------------------------------------------------------------- corpus


def _sync_test_hooks() -> list[str]:
    """Every hook source written in tests/test_hook_sync.py (triple-quoted strings that define a hook)."""
    tree = ast.parse(Path(__file__).with_name("test_hook_sync.py").read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "\n" in node.value \
                and ("def " in node.value or "sys.stdin" in node.value):
            src = textwrap.dedent(node.value).lstrip("\n")
            if infer_entry(src) is not None or "def check" in src:
                out.append(src)
    return sorted(set(out))


def _corpus():
    """(source, entry, harness) triples."""
    from tests.test_hook_sync import AGENTS_HOOKS, H, SCHEMAS, harness

    out = []
    for src in _sync_test_hooks():
        out.append((src, infer_entry(src) or "check", H))
    out.append((textwrap.dedent(AGENTS_HOOKS).lstrip("\n"), "Guard.on_tool_start",
                harness({**SCHEMAS, "delete_repo": {"type": "object"}, "drop_table": {"type": "object"}})))
    records = [normalize(json.loads(line)) for line in FIXTURES.read_text(encoding="utf-8").splitlines()[::25]]
    from hsa.recipes import load_recipe
    from hsa.transform import run

    recipe = load_recipe("hooks")
    import random

    variants = []
    for i, r in enumerate(records[:6]):
        variant = run(recipe, r, random.Random(i))
        if isinstance(variant, dict):
            variants.append(variant)
    for r in records + variants:
        h = S.harness_of(r)
        for hook in r.get("hooks") or ():
            out.append((hook["source"], entry_of(hook), h))
    seen, unique = set(), []
    for src, entry, h in out:
        if (src, entry, h) not in seen:
            seen.add((src, entry, h))
            unique.append((src, entry, h))
    return unique


def _steps(an, h):
    """Steps that touch this hook: renames of every tool, skill and declared parameter (to fresh names, to names
    that break prefix predicates, onto a sibling's key, swaps), and renames of the values it compares."""
    steps = []
    skill_tool = {"tool": h.skill_tool[0], "argument": h.skill_tool[1]}
    for names, op, extra in ((list(h.tools), "tools", {}), (list(h.skills), "skills", skill_tool)):
        for n in names:
            steps.append({"op": op, "map": {n: render_style(n, "camel") + "X"}, **extra})
            steps.append({"op": op, "map": {n: "zz_" + n[::-1]}, **extra})  # breaks prefix and suffix predicates
        if names:
            steps.append({"op": op, "map": {n: render_style(n, "pascal") + "V2" for n in names}, **extra})
        if len(names) > 1:  # a swap
            steps.append({"op": op, "map": {names[0]: names[1], names[1]: names[0]}, **extra})
    for name, table in h.kinds:
        keys = [p for p, _ in table if p and p[-1] != "[]"]
        for p in keys:
            steps.append({"op": "params", "tool": name, "paths": [[list(p), list(p[:-1]) + [p[-1] + "Y"]]]})
        for a, b in zip(keys, keys[1:]):
            if a[:-1] == b[:-1]:  # renamed onto a sibling's key: collisions
                steps.append({"op": "params", "tool": name, "paths": [[list(a), list(b)]]})
    for site in an.sites:  # values compared with the tool input, renamed for each tool that reaches them
        for role in site.roles:
            if role[0] in ("value", "member") and site.value:
                for t in sorted(h.tools if role[1] is None else set(role[1]) & set(h.tools)):
                    steps.append({"op": "values", "tool": t, "path": list(role[2]),
                                  "map": [[site.value, site.value + "_v"]]})
    return steps


CORPUS = _corpus()


def test_corpus_is_broad():
    """The corpus holds the refusal cases and fixture hooks (so the comparisons below see every path)."""
    assert len(CORPUS) > 40
    assert sum(1 for src, *_ in CORPUS if "startswith" in src) >= 2
    assert sum(1 for src, *_ in CORPUS if "sys.stdin" in src) >= 1


def test_plan_with_site_selection_equals_the_old_plan():
    """``plan`` (only the sites a step can matter to) and ``_plan(select=False)`` equal the old plan, site by site,
    refusals (reason and detail) included, for every hook of the corpus under every step built for it."""
    compared = edited = refused = 0
    for src, entry, h in CORPUS:
        an = analyze(src, entry)
        if not an.ok:
            continue
        for step in _steps(an, h):
            hk = S._harness_for(step, h)
            want = _old_plan(an, step, hk)
            assert S.plan(an, step, hk) == want, (src[:200], step)
            assert S._plan(an, step, hk, select=False) == want, (src[:200], step)
            compared += 1
            edited += bool(want) and not isinstance(want, S.Refusal)
            refused += isinstance(want, S.Refusal)
    assert compared > 1000 and edited > 100 and refused > 20, (compared, edited, refused)


def test_site_index_follows_the_analysis_it_was_made_for():
    """The cached site index is the one of the analysis asked for (keyed by identity, checked), also after
    a sync made a new analysis of the rewritten source."""
    from tests.test_hook_sync import H

    src = 'def check(p):\n    if p["tool_name"] == "list_coupons":\n        return {"message": "use list_coupons"}\n'
    an = analyze(src, "check")
    ix = S._site_index(an)
    assert S._site_index(an) is ix and ix.sites is an.sites
    new, refusal = S.sync_source(src, "check", {"op": "tools", "map": {"list_coupons": "coupons_v2"}}, H)
    an2 = analyze(new, "check")
    assert refusal is None and an2 is not an
    ix2 = S._site_index(an2)
    assert ix2 is not ix and ix2.sites is an2.sites
    assert "coupons_v2" in ix2.name_blob and "list_coupons" not in ix2.name_blob


def test_sync_of_a_hook_with_a_predicate_role_is_planned_even_without_the_name():
    """A ``startswith`` over tool names is checked under a rename though the literal names no renamed tool."""
    from tests.test_hook_sync import H

    src = 'def check(p):\n    if p["tool_name"].startswith("check_"):\n        return {"decision": "deny"}\n'
    _, refusal = S.sync_source(src, "check", {"op": "tools", "map": {"check_inventory": "inventoryCheck"}}, H)
    assert refusal is not None and refusal.reason == "predicate over names"


def test_step_info_is_decoded_once_and_read_only():
    """The step decoded for many hooks is shared; syncing with it leaves it as it was."""
    step = {"op": "params", "tool": "list_coupons", "paths": [[["product_id"], ["productId"]]]}
    step_json = S._json.canonical(step)
    info = S._step_info(step_json)
    assert S._step_info(step_json) is info
    assert info[1] == frozenset({"product_id"}) and info[2] == {"product_id": "productId"}
    from tests.test_hook_sync import H

    src = 'def check(p):\n    if p["tool_name"] == "list_coupons" and "product_id" not in p["tool_input"]:\n' \
          '        return {"message": "product_id is required"}\n'
    new, refusal, n = S._sync_cached(src, "check", step_json, H)
    assert refusal is None and n == 2 and '"productId" not in' in new
    assert info[0] == step


def test_transport_after_param_and_tool_steps_equals_a_fresh_analysis():
    """Analyses carried through sync edits (tool, parameter, skill steps) equal analysing the new source afresh."""
    checked = 0
    for src, entry, h in CORPUS:
        an = analyze(src, entry)
        if not an.ok:
            continue
        for step in _steps(an, h)[:12]:
            new, refusal, n = S._sync_cached(src, entry, S._json.canonical(step), S._harness_for(step, h))
            if refusal is not None or not n:
                continue
            a, b = analyze(new, entry), _analyze(new, entry)
            key = lambda s: (s.index, s.kind, s.value, s.start, s.end, s.line, s.roles, s.prefix, s.quote,  # noqa
                             s.parts)
            assert [key(s) for s in a.sites] == [key(s) for s in b.sites], (src[:200], step)
            assert [(p.kinds, p.tools, p.reason, p.detail) for p in a.problems] == \
                   [(p.kinds, p.tools, p.reason, p.detail) for p in b.problems]
            checked += 1
    assert checked > 50


def test_harness_hash_is_cached_equal_and_not_pickled():
    """Equal harnesses hash alike; the cached hash is not carried into a pickle (str hashes differ per process)."""
    from tests.test_hook_sync import H, harness

    other = harness()
    assert other == H and hash(other) == hash(H)
    assert "_hash" in H.__dict__
    state = pickle.loads(pickle.dumps(H))
    assert state == H and "_hash" not in state.__dict__ and hash(state) == hash(H)
    assert harness(skills=("item_qa",)) != H


@pytest.mark.parametrize("tool", ["check_inventory", "calculate_shipping"])
def test_param_steps_of_unrelated_tools_leave_hooks_alone(tool):
    """A hook that reads a parameter only of another tool is not changed (nor refused) by a step of this one;
    the same step on the tool it reads renames the key."""
    from tests.test_hook_sync import H

    src = 'def check(p):\n    if p["tool_name"] == "list_coupons" and "product_id" not in p["tool_input"]:\n' \
          '        return {"message": "an id is required"}\n'
    step = {"op": "params", "tool": tool, "paths": [[["product_id"], ["productId"]]]}
    new, refusal = S.sync_source(src, "check", step, H)
    assert refusal is None and new == src
    new, refusal = S.sync_source(src, "check", {**step, "tool": "list_coupons"}, H)
    assert refusal is None and '"productId" not in' in new


# ---------------------------------------------------------------------------- hooks a step leaves untouched


def _other_harnesses(h):
    """``h`` and harnesses that differ from it in every way a plan may read: every node an array, every node
    an object, and one more tool that declares every path of every tool (a collision for any new key)."""
    every = tuple(sorted({p for _, table in h.kinds for p, _ in table}))
    as_kind = lambda k: tuple((n, tuple((p, k) for p, _ in t)) for n, t in h.kinds)  # noqa: E731
    shadow = S.Harness(h.tools + ("zz_shadow",), h.skills, h.skill_tool,
                       h.kinds + (("zz_shadow", tuple((p, "object") for p in every)),))
    return [h, S.Harness(h.tools, h.skills, h.skill_tool, as_kind("array")),
            S.Harness(h.tools, h.skills, h.skill_tool, as_kind("object")), shadow]


def test_untouched_hooks_are_given_back_unrefused_under_any_harness():
    """Where ``_untouched`` says a step leaves a hook alone, the plain sync gives the source back, unrefused and
    unedited, under the hook's harness and under harnesses that differ in every kind and add a colliding tool;
    and the skip is not everything: many steps do edit or refuse."""
    untouched = touched = 0
    for src, entry, h in CORPUS:
        an = analyze(src, entry)
        for step in (_steps(an, h) if an.ok else [{"op": "tools", "map": {t: t + "X"}} for t in h.tools]):
            step_json = S._json.canonical(step)
            if not S._untouched(src, entry, step_json):
                touched += 1
                continue
            untouched += 1
            for other in _other_harnesses(h):
                assert S._sync_cached.__wrapped__(src, entry, step_json, S._harness_for(step, other)) == \
                    (src, None, 0), (src[:200], step)
    assert untouched > 500 and touched > 500, (untouched, touched)


def test_param_steps_that_rename_what_a_hook_reads_are_not_skipped():
    """A parameter step renaming the key a hook reads, renaming another key onto it, or renaming below an array the
    hook iterates, is planned (edited or refused), not skipped."""
    src = ('def check(p):\n    if p["tool_name"] == "list_coupons" and "product_id" not in p["tool_input"]:\n'
           '        return {"decision": "deny"}\n')
    for step in ({"op": "params", "tool": "list_coupons", "paths": [[["product_id"], ["productId"]]]},
                 {"op": "params", "tool": "list_coupons", "paths": [[["other"], ["product_id"]]]}):
        assert not S._untouched(src, "check", S._json.canonical(step))
    kept = {"op": "params", "tool": "list_coupons", "paths": [[["other"], ["another"]]]}
    assert S._untouched(src, "check", S._json.canonical(kept))
    assert S._param_read_kept(("a", "b"), [[["x"], ["y"]]])
    assert not S._param_read_kept(("a", "[]", "b"), [[["x"], ["y"]]])
    assert not S._param_read_kept(("*", "b"), [[["x"], ["y"]]])
    assert not S._param_read_kept(("a", "b"), [[["a"], ["c"]]])
    assert not S._param_read_kept(("c", "b"), [[["a"], ["c"]]])


def _records_and_variants():
    records = [normalize(json.loads(line)) for line in FIXTURES.read_text(encoding="utf-8").splitlines()[::5]]
    import random

    from hsa.recipes import load_recipe
    from hsa.transform import run

    out = [r for r in records if r.get("hooks")]
    for name in ("hooks", "default"):
        recipe = load_recipe(name)
        for i, r in enumerate(out[:12]):
            v = run(recipe, r, random.Random(i))[0]
            if isinstance(v, dict):
                out.append(v)
    return out


def test_harness_before_equals_harness_of_for_every_step_kind():
    """``HarnessBefore(record).for_step(step)`` is ``_harness_for(step, harness_of(record))``: the short cut for
    tool and skill steps (no schema encoded) and the full harness for the others, on fixture records, their
    variants and schemas of odd shape (the skill argument under ``items``, a ``"[]"`` argument, no properties)."""
    odd = {"tools": [{"name": "load_skill", "parameters": {"type": "object", "items": {"type": "string"},
                                                             "properties": {"[]": {"type": "array"}}}},
                     {"name": "b", "parameters": {"type": "object"}}, {"name": "c", "parameters": {"items": {}}}],
           "skills": [{"name": "s"}], "skill_tool": {"name": "load_skill", "argument": "[]"}}
    odd2 = {**odd, "skill_tool": {"name": "load_skill", "argument": "skill"},
            "tools": odd["tools"] + [{"name": "d", "parameters": {"properties": {"skill": {"enum": ["s"]}}}}]}
    checked = 0
    for r in _records_and_variants() + [odd, odd2]:
        h = S.harness_of(r)
        steps = [{"op": "tools", "map": {h.tools[0]: "x"}}, {"op": "skills", "map": {"a": "b"}},
                 {"op": "params", "tool": h.tools[0], "paths": [[["a"], ["b"]]]},
                 {"op": "values", "tool": h.tools[0], "path": ["a"], "map": [["x", "y"]]}]
        for step in steps:
            assert S.HarnessBefore(r).for_step(step) == S._harness_for(step, h), step
            checked += 1
        before = S.HarnessBefore(r)
        assert before.full() == h and before.tools == h.tools
    assert checked > 40


def test_record_hooks_synced_with_and_without_the_skip_are_equal(monkeypatch):
    """Every recipe that renames, applied to fixture records with hooks, gives the same bytes with the untouched
    hooks skipped and with every hook planned (the plain loop)."""
    import random

    from hsa.cache import clear
    from hsa.recipes import load_recipe
    from hsa.transform import run

    records = [r for r in (normalize(json.loads(line)) for line in FIXTURES.read_text(encoding="utf-8").splitlines())
               if r.get("hooks")][:40]

    def outputs():
        clear()
        out, synced = [], 0
        for name in ("hooks", "default", "skills"):
            recipe = load_recipe(name)
            for i, r in enumerate(records):
                v = run(recipe, r, random.Random(i))[0]
                out.append(json.dumps(v, sort_keys=False, default=str))
                if isinstance(v, dict):
                    synced += sum(a.get("source") != b.get("source") for a, b in zip(r["hooks"], v["hooks"]))
        assert synced > 20, synced  # hook sources were rewritten: the comparison sees syncs that edit
        return out

    fast = outputs()
    monkeypatch.setattr(S, "_SKIP_UNTOUCHED", False)
    plain = outputs()
    assert fast == plain
    assert len(fast) == 3 * len(records)


def test_the_step_key_decodes_to_the_step_exactly():
    """The record-level step key decodes to the step itself (types kept: 1 / 1.0 / True, NaN, None, big ints,
    key order sorted as canonical sorts it), and falls back to the canonical text where orjson cannot write it."""
    steps = [s for src, entry, h in CORPUS[:30] if analyze(src, entry).ok for s in _steps(analyze(src, entry), h)]
    steps += [{"op": "values", "tool": "t", "path": ["a"], "map": [[1, 1.0], [True, "x"], [None, "n"]]},
              {"op": "values", "tool": "t", "path": ["a"], "map": [[float("nan"), "x"]]},
              {"op": "tools", "map": {"é\u2028": "ü\x00"}}]
    big = {"op": "values", "tool": "t", "path": ["a"], "map": [[2 ** 70, "big"]]}
    assert S._json.sorted_key(big) == S._json.canonical(big)  # orjson cannot write it: the canonical text, as before
    for step in steps:
        key = S._json.sorted_key(step)
        back = S._json.loads(key)
        assert S._json.canonical(back) == S._json.canonical(step), (key, step)  # 1, 1.0, true, NaN told apart
        assert S._step_info(key)[0] == back
    assert S._json.sorted_key(steps[-2]) == S._json.canonical(steps[-2])  # NaN: orjson would write null
    assert len(steps) > 100


def test_harness_before_sees_the_schemas_as_they_were_when_taken(monkeypatch):
    """What the renames rely on (a schema is replaced, never reshaped in place, between a HarnessBefore and the
    hook sync of its step): through every renaming recipe and the undo of each variant, the harness worked out
    late equals the one worked out when the HarnessBefore was made."""
    import random

    from hsa.recipes import load_recipe
    from hsa.renames import canonicalize
    from hsa.transform import run

    made = []
    init, for_step = S.HarnessBefore.__init__, S.HarnessBefore.for_step

    def checked_init(self, record):
        init(self, record)
        made.append(self)
        checked[id(self)] = S.harness_of(record)

    def checked_for_step(self, step):
        got = for_step(self, step)
        assert got == S._harness_for(step, checked[id(self)]), step
        used.append(step["op"])
        return got

    used: list = []

    checked: dict = {}
    monkeypatch.setattr(S.HarnessBefore, "__init__", checked_init)
    monkeypatch.setattr(S.HarnessBefore, "for_step", checked_for_step)
    S._TOUCHED.clear()
    records = [r for r in (normalize(json.loads(line)) for line in FIXTURES.read_text(encoding="utf-8").splitlines())
               if r.get("hooks")][:30]
    for name in ("default", "tools", "skills", "hooks"):
        for i, r in enumerate(records):
            v = run(load_recipe(name), r, random.Random(i))[0]
            if isinstance(v, dict):
                canonicalize(v)
    assert len(made) > 200 and len(checked) == len(made)
    assert used.count("params") > 20 and used.count("tools") + used.count("skills") > 20, sorted(set(used))
