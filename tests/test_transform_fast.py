"""The fast paths of the transforms' own sampling and applying (issue 18) give what the plain code gives.

Oracles kept here, as the code was before: the distractor relevance filter and ``internal_tool``,
``value_sites`` walking every schema per call, ``_rewrite_calls`` carrying every call, ``apply_values``
always copying and rewriting the texts. Each fast path is compared with its oracle on the fixtures, their
variants and generated records, with the caches on and off.
"""

from __future__ import annotations

import functools
import json
import random

from hypothesis import given, settings

from hsa import _json, cache
from hsa.mapping import carry_call
from hsa.names import is_legal, is_plain_token, replace_tokens, split_words
from hsa.records import clone, iter_calls, normalize, normalize_schema
from hsa.renames import _rewrite_calls, apply_values, copy_for_texts, map_texts, owned_copy, rename_params
from hsa.testing import records
from tests.conftest import normalized_fixtures
from transforms import tool_functional as F
from transforms._banks import load_banks
from transforms._domains import RELEVANCE_THRESHOLD, domain_applies, harness_domain, pool_tool_words, tool_words, \
    words_relevance
from transforms._toolschema import to_strict, values_at

FIXTURE = normalized_fixtures(6)


@functools.lru_cache(maxsize=4)
def _variants(n_per: int = 2):
    """The fixtures and some default-recipe variants of them (renamed tools, new schemas, changed texts)."""
    from hsa.recipes import load_recipe
    from hsa.transform import run

    recipe = load_recipe("default")
    out = []
    for i, r in enumerate(FIXTURE):
        out.append(r)
        for k in range(n_per):
            out.append(run(recipe, r, random.Random(i * 7 + k))[0])
    return out


# --------------------------------------------------------------------------- oracles


def _old_distractor_candidates(record, candidates, taken, dialect, max_relevance):
    tools = record["tools"]
    words = {tuple(split_words(t["name"])) for t in tools}
    legal = [t for t in candidates
             if t["name"] not in taken and tuple(split_words(t["name"])) not in words and is_legal(t["name"], dialect)]
    real = [tool_words(t) for t in tools]
    pool = [t for t in legal
            if max((words_relevance(pool_tool_words(t), r) for r in real), default=0.0) < max_relevance]
    domain = harness_domain(record)
    other = [i for i, t in enumerate(pool) if not domain_applies(F.pool_tool_domain(t), domain)]
    rest = [i for i in range(len(pool)) if i not in set(other)]
    return legal, pool, other, rest


def _old_internal_tool(raw, dialect, strict):
    params = normalize_schema(_json.copy(raw.get("parameters") or {"type": "object", "properties": {}}), raw["name"], [])
    if isinstance(params, dict) and "type" not in params:
        params = {"type": "object", **params}
    if strict:
        params = to_strict(params)
    tool = {"name": raw["name"], "parameters": params,
            "dialect": dialect, "extra": {"strict": True} if strict else {}, "outer": {}}
    if raw.get("description"):
        tool["description"] = raw["description"]
    return tool


def _old_value_sites(record):
    where = {}
    for t in record["tools"]:
        for path in F.value_paths(t["parameters"]):
            node = F.node_at(t["parameters"], path) or {}
            for v in (F.string_enum(node) or []) + [node[k] for k in ("default", "const") if k in node]:
                where.setdefault(_json.canonical(v), set()).add((t["name"], path))
        for args in F.calls_of_tool(record, t["name"]):
            for path in F.value_paths(t["parameters"]):
                for v in values_at(args, path):
                    if not isinstance(v, (dict, list)):
                        where.setdefault(_json.canonical(v), set()).add((t["name"], path))
    return where


def _old_rewrite_calls(record, step):
    for m in record["messages"]:
        for call in m.get("tool_calls") or ():
            fn = call["function"]
            new = carry_call(step, {"name": fn["name"], "arguments": fn["arguments"]}, True)
            fn["name"], fn["arguments"] = new["name"], new["arguments"]


def _old_apply_values(record, step):
    from hsa.renames import _clone_for_step, _finish_step, _tool_index
    from hsa.step_schemas import map_schema_values

    i = _tool_index(record, step["tool"], "values")
    out = _clone_for_step(record, i)
    out["tools"][i]["parameters"] = map_schema_values(out["tools"][i]["parameters"], step["path"], step["map"])
    if step.get("texts"):
        from hsa.renames import _decisions_follow, _injected_decisions

        table = {a: b for a, b in step["map"] if isinstance(a, str) and isinstance(b, str)}
        out = copy_for_texts(out, table)
        injected = _injected_decisions(out)  # a hook's decision says what the message it injected says
        results = {k: m["content"] for k, m in enumerate(out["messages"]) if m.get("role") == "tool" and "content" in m}
        map_texts(out, lambda s: replace_tokens(s, table), names=table)
        for k, content in results.items():
            out["messages"][k]["content"] = content
        if injected:
            _decisions_follow(out, injected)
    out["mapping"] = list(out["mapping"])
    _old_rewrite_calls(out, step)
    from hsa.renames import _map_hook_payloads

    _map_hook_payloads(out, step)
    out["mapping"].append(step)
    return out


# --------------------------------------------------------------------------- distractors


def test_distractor_candidates_equal_the_plain_filter(caches):
    """The relevance filter kept per (pool, tools) gives the same legal / pool / other / rest, twice in a row
    (a hit), on fixtures and variants, for the bank at four thresholds (0.05 scores most pairs; 1.0 only a word of
    the candidate's name in a real tool)."""
    bank = load_banks(())["tools"]
    from hsa.renames import record_tokens

    checked = 0
    for rec in _variants(1):
        taken = record_tokens(rec)
        for threshold in (0.05, RELEVANCE_THRESHOLD, 0.6, 1.0):
            want = _old_distractor_candidates(rec, bank, taken, "openai", threshold)
            for _ in range(2):
                got = F.distractor_candidates(rec, bank, taken, "openai", threshold)
                assert got == want
                assert all(a is b for a, b in zip(got[1], want[1]))  # the pool's own tool objects
            checked += 1
    assert checked > 20


def test_near_candidates_keyed_by_the_tools_and_the_pool():
    """Another tool list, or another pool, is not served a stale mask."""
    bank = load_banks(())["tools"]
    rec = FIXTURE[0]
    near = F.near_candidates(bank, rec["tools"], RELEVANCE_THRESHOLD)
    assert len(near) == len(bank)
    # a real tool made of a bank tool's words: that candidate becomes near
    i = next(k for k, n in enumerate(near) if not n)
    tools = rec["tools"] + [{**rec["tools"][0], "name": bank[i]["name"] + "_x", "description": bank[i].get("description", "")}]
    assert F.near_candidates(bank, tools, RELEVANCE_THRESHOLD)[i] is True
    other = tuple(dict(t) for t in bank[:3])
    assert F.near_candidates(other, rec["tools"], RELEVANCE_THRESHOLD) == near[:3]


def test_internal_tool_equals_the_plain_one_and_is_a_fresh_copy(caches):
    """Every bank tool, in each dialect and strict form; changing what it returned changes no later result."""
    for raw in load_banks(())["tools"]:
        for dialect, strict in (("openai", False), ("openai", True), ("anthropic", False)):
            want = _old_internal_tool(raw, dialect, strict)
            got = F.internal_tool(raw, dialect, strict)
            assert _json.dumps(got) == _json.dumps(want)
            got["parameters"]["properties"] = {"spoiled": {}}
            got["name"] = "spoiled"
            assert _json.dumps(F.internal_tool(raw, dialect, strict)) == _json.dumps(want)


# --------------------------------------------------------------------------- values


def test_value_sites_equal_the_plain_walk(caches):
    """Sites from the schema walk kept per schema and calls grouped once equal every schema walked per call."""
    for rec in _variants(2):
        assert F.value_sites(rec) == _old_value_sites(rec)
        assert F.value_sites(rec) == _old_value_sites(rec)  # a hit


@settings(max_examples=40, deadline=None)
@given(records(max_tools=3))
def test_value_sites_equal_the_plain_walk_on_generated_records(raw):
    rec = normalize(raw)
    assert F.value_sites(rec) == _old_value_sites(rec)


def test_value_nodes_tell_apart_schemas_that_compare_equal():
    """1 / 1.0 / True defaults and a NaN default are different schemas: their canonical texts differ."""
    texts = set()
    for d in (1, 1.0, True, float("nan"), None):
        schema = {"type": "object", "properties": {"a": {"type": "number", "default": d}}}
        ((path, enum, listed, has_default),) = F.value_nodes(schema)
        assert path == ("a",) and enum is None and has_default
        texts.add(listed)
    assert len(texts) == 5


def _samples_caches_on_and_off(t, monkeypatch) -> dict[str, list[str]]:
    """``t``'s params (repr) drawn twice per default-recipe variant, with the caches on ("1") and off ("0")."""
    recs = _variants(1)
    got = {}
    for mode in ("1", "0"):
        monkeypatch.setenv("HSA_CACHE", mode)
        cache.clear()
        got[mode] = [repr(t.sample(r, random.Random(i))) for i, r in enumerate(recs) for _ in range(2)]
    cache.clear()
    return got


def test_values_sample_equals_with_caches_on_and_off(monkeypatch):
    """tool.values draws the same params from the same rng with and without its caches."""
    from transforms.tool import Values

    t = Values(p=1.0, modes=("enum", "default"))
    got = _samples_caches_on_and_off(t, monkeypatch)
    assert got["1"] == got["0"]
    assert sum(s.startswith("{'steps'") for s in got["1"]) > 5


# --------------------------------------------------------------------------- appliers


def test_rewrite_calls_equals_carrying_every_call():
    """Skipping the calls a step cannot change gives what carrying every call gives, for every kind of step."""
    for rec in _variants(2):
        for step in rec["mapping"]:
            if step["op"] in ("restore", "opaque") or step.get("kind"):
                continue
            a, b = clone(rec), clone(rec)
            _rewrite_calls(a, step)
            _old_rewrite_calls(b, step)
            assert _json.dumps(a) == _json.dumps(b)
    rec = clone(FIXTURE[0])
    names = [c["function"]["name"] for _, _, c in iter_calls(rec)]
    step = {"op": "tools", "map": {names[0]: "renamed_tool"}}
    _rewrite_calls(rec, step)
    assert [c["function"]["name"] for _, _, c in iter_calls(rec)] == [
        "renamed_tool" if n == names[0] else n for n in names]


def test_apply_values_equals_the_copying_applier_and_leaves_its_input_alone(caches):
    """A values step whose old values no text holds skips the text copy; one that some text holds rewrites it;
    both equal the plain applier, and the input record is unchanged."""
    done = {"skip": 0, "texts": 0}
    for rec in _variants(2):
        for t in rec["tools"]:
            for path, enum, _, _ in F.value_nodes(t["parameters"]):
                if not enum:
                    continue
                step = {"op": "values", "tool": t["name"], "path": list(path),
                        "map": [[v, v.upper() + "_Q"] for v in enum], "texts": True}
                before = _json.dumps(rec)
                got = apply_values(rec, step)
                assert _json.dumps(got) == _json.dumps(_old_apply_values(rec, step))
                assert _json.dumps(rec) == before
                held = any(v in json.dumps(rec["messages"]) for v in enum)
                done["texts" if held else "skip"] += 1
    assert done["skip"] > 3 and done["texts"] > 3


def test_texts_hold_sees_every_text_map_texts_rewrites():
    """Each text field on its own: a name put there is found; the record without it is not."""
    from hsa.record_texts import texts_hold

    base = clone(FIXTURE[0])
    assert not texts_hold(base, ["zq_marker"])
    edits = [
        lambda r: r["messages"][0].__setitem__("content", "x zq_marker y"),
        lambda r: r["messages"][0].__setitem__("content", [{"type": "text", "text": "zq_marker"}]),
        lambda r: r["messages"][0].__setitem__("content", ["zq_marker"]),
        lambda r: r["tools"][0].__setitem__("description", "uses zq_marker"),
        lambda r: r["tools"][0]["parameters"].__setitem__("description", "zq_marker"),
    ]
    if base.get("skills"):
        edits.append(lambda r: r["skills"][0].__setitem__("content", "zq_marker"))
    if base.get("prompt") and base["prompt"].get("sections"):
        edits.append(lambda r: r["prompt"]["sections"][0].__setitem__("title", "zq_marker"))
    for edit in edits:
        r = clone(base)
        edit(r)
        assert texts_hold(r, ["zq_marker"])
    r = clone(base)
    r["prompt"] = {"template": "x"}  # no section list: copy_for_texts would add one, so the test says "maybe"
    assert texts_hold(r, ["zq_marker"])


def test_owned_copy_lets_the_renames_work_in_place_without_touching_the_input():
    """rename_params on the owned copy (in place; or with every schema shared, replaced) equals the deep-copying
    rename, and leaves the input as it was."""
    done = 0
    for rec in _variants(1):
        for t in rec["tools"]:
            paths = [p for p in F.param_paths(t["parameters"]) if p[-1] != "[]"]
            if not paths:
                continue
            table = {paths[0]: paths[0][-1] + "_zz"}
            before = _json.dumps(rec)
            out, shared = owned_copy(rec, lambda u: u["name"] != t["name"])
            got = rename_params(out, t["name"], table, copy=False)
            want = rename_params(clone(rec), t["name"], table, copy=False)
            assert _json.dumps(got) == _json.dumps(want)
            assert _json.dumps(rec) == before
            assert _json.dumps(rename_params(rec, t["name"], table)) == _json.dumps(want)
            assert _json.dumps(rec) == before
            out, shared = owned_copy(rec, lambda u: True)  # every schema shared: the renamed one is replaced
            got = rename_params(out, t["name"], table, copy=False, shared_schemas=True)
            assert _json.dumps(got) == _json.dumps(want)
            assert _json.dumps(rec) == before and len(shared) == len(rec["tools"])
            assert all(u["parameters"] is not v["parameters"] for u, v in zip(rec["tools"], out["tools"])
                       if u["name"] == t["name"])
            done += 1
    assert done > 20


def _seen_by_map_texts(record) -> list[str]:
    """The texts map_texts hands to its function, in order (the oracle of rewritten_texts)."""
    seen: list[str] = []

    def fn(s):
        seen.append(s)
        return s

    map_texts(copy_for_texts(record), fn)
    return seen


_ODD_SCHEMA = {"type": "object", "properties": {
    "default": {"type": "string", "description": "the default zq_marker"},
    "enum": {"type": "object", "title": "zq_title", "properties": {"required": {"type": "string", "description": "r"}}},
    "examples": {"type": "array", "items": {"type": "string", "description": "an item"}}},
    "$defs": {"x": {"description": "in defs"}}, "anyOf": [{"description": "a branch"}]}


def test_rewritten_texts_are_the_texts_map_texts_rewrites(caches):
    """In order, on the fixtures, their variants, and a schema whose properties are named default, enum, required
    and examples (map_texts rewrites their descriptions; text_fields' schema walk does not read them)."""
    from hsa.record_texts import rewritten_texts

    recs = _variants(1)
    odd = clone(FIXTURE[0])
    odd["tools"][0]["parameters"] = _json.copy(_ODD_SCHEMA)
    for rec in recs + [odd]:
        assert list(rewritten_texts(rec)) == _seen_by_map_texts(rec)
    assert "the default zq_marker" in rewritten_texts(odd) and "zq_title" in rewritten_texts(odd)


@settings(max_examples=40, deadline=None)
@given(records(max_tools=3, hooks=True))
def test_rewritten_texts_on_generated_records(raw):
    from hsa.record_texts import rewritten_texts

    rec = normalize(raw)
    assert list(rewritten_texts(rec)) == _seen_by_map_texts(rec)


def test_texts_hold_is_exact_for_plain_names_and_safe_for_others(caches):
    """For plain names: texts_hold is true exactly when the token rename changes a text; for other names (a space,
    a quote) false still means nothing changes."""
    from hsa.record_texts import texts_hold, rewritten_texts

    odd = clone(FIXTURE[0])
    odd["tools"][0]["parameters"] = _json.copy(_ODD_SCHEMA)
    checked = {True: 0, False: 0}
    for rec in _variants(1) + [odd]:
        words = sorted({w.strip(".,:;()`'\"") for t in rewritten_texts(rec) for w in t.split()[:3]} - {""})[:12]
        for names in [["zq_marker"], ["zq_title"], ["zz_absent"]] + [[w] for w in words] + [["two words"], ['"q"']]:
            table = {n: n + "_new" for n in names}
            after = copy_for_texts(rec)
            map_texts(after, lambda s: replace_tokens(s, table))
            changed = _json.dumps(after) != _json.dumps(rec)
            held = texts_hold(rec, names)
            if all(is_plain_token(n) for n in names):
                assert held == changed, names
            elif not held:
                assert not changed, names
            checked[held] += 1
    assert checked[True] > 10 and checked[False] > 10


def test_tools_named_paths_equal_param_owners_and_named_paths(caches):
    """Owners and per-tool paths and siblings as the plain functions give them; the sets are the caller's own."""
    for rec in _variants(1):
        for _ in range(2):
            owners, per_tool = F.tools_named_paths(rec["tools"])
            assert owners == F.param_owners(rec)
            assert per_tool == [F.named_paths(t["parameters"]) for t in rec["tools"]]
            for _, siblings in per_tool:
                for v in siblings.values():
                    v.add("spoiled_name")
    owners, per_tool = F.tools_named_paths(FIXTURE[0]["tools"])
    assert all("spoiled_name" not in v for _, sib in per_tool for v in sib.values())


def test_param_rename_sample_equals_with_caches_on_and_off(monkeypatch):
    """tool.param_rename draws the same params from the same rng with and without its caches."""
    from transforms.tool import ParamRename

    t = ParamRename(p=0.7, styles=("snake", "camel", "mask", "verb"))
    got = _samples_caches_on_and_off(t, monkeypatch)
    assert got["1"] == got["0"] and sum("renames" in g for g in got["1"]) > 10
