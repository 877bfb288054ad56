"""The fast paths of hsa.renames give what the plain ones did.

Oracles kept here: ``_old_record_tokens`` (every text's tokens, every ``param_paths`` leaf), the
rebuilding ``map_schema_descriptions``, ``replace_tokens`` called on every text, and
``tool.param_rename`` applied one ``rename_params`` copy per tool.
"""

from __future__ import annotations

import json
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from hsa import _json
from hsa.mapping import ARRAY
from hsa.names import replace_tokens, text_tokens
from hsa.records import clone, normalize
from hsa.record_texts import map_schema_descriptions, map_schema_descriptions_in_place, schema_skipper
from hsa.renames import (
    _hook_harness,
    _map_hook_payloads,
    _rename_skill_values,
    _rewrite_calls,
    _sync_hooks,
    map_texts,
    param_paths,
    record_tokens,
    record_words,
    rename_params,
    rename_skills,
    rename_tools,
    text_fields,
)
from hsa.rename_texts import harness_names, names_renamer
from hsa.rename_texts import token_renamer as _token_renamer
from hsa.testing import records, tool_schemas
from tests.conftest import FIXTURES

FIXTURE = [normalize(json.loads(line)) for line in FIXTURES.read_text(encoding="utf-8").splitlines()[::10]]


def _old_record_tokens(record):
    tokens = set()
    for text in text_fields(record):
        tokens |= text_tokens(text)
    for t in record["tools"]:
        tokens.add(t["name"])
        tokens.update(p[-1] for p in param_paths(t["parameters"]) if p[-1] != ARRAY)
    for s in record.get("skills") or ():
        tokens.add(s["name"])
    return tokens


def _old_rename_tools(record, renames):
    """rename_tools as it was: the whole record deep-copied, every schema walked (texts through the mention rules)."""
    renames = {k: v for k, v in renames.items() if k != v}
    out = clone(record)
    step = {"op": "tools", "map": dict(renames)}
    for t in out["tools"]:
        t["name"] = renames.get(t["name"], t["name"])
    _rewrite_calls(out, step)
    for m in out["messages"]:
        if m.get("role") == "tool" and isinstance(m.get("name"), str):
            m["name"] = renames.get(m["name"], m["name"])
    st = out["skill_tool"]
    st["name"] = renames.get(st["name"], st["name"])
    map_texts(out, names_renamer(renames, "tool", harness_names(record, renames)))
    _sync_hooks(out, step, _hook_harness(record))
    _map_hook_payloads(out, step)
    out["mapping"].append(step)
    return out


def _old_rename_skills(record, renames):
    """rename_skills as it was: the whole record deep-copied, every schema walked (texts through the mention rules)."""
    renames = {k: v for k, v in renames.items() if k != v}
    out = clone(record)
    st = out["skill_tool"]
    step = {"op": "skills", "map": dict(renames), "tool": st["name"], "argument": st["argument"]}
    for s in out.get("skills") or ():
        s["name"] = renames.get(s["name"], s["name"])
    _rewrite_calls(out, step)
    _rename_skill_values(out, renames)
    map_texts(out, names_renamer(renames, "skill", harness_names(record, renames)))
    _sync_hooks(out, step, _hook_harness(record))
    _map_hook_payloads(out, step)
    out["mapping"].append(step)
    return out


def _described(record: dict) -> dict:
    """``record`` whose schema descriptions name tools and skills (so a rename must reach into the schemas)."""
    out = clone(record)
    names = [t["name"] for t in out["tools"]] + [s["name"] for s in out.get("skills") or ()]
    for i, t in enumerate(out["tools"]):
        props = t["parameters"].get("properties") or {}
        for j, sub in enumerate(props.values()):
            if isinstance(sub, dict):
                sub["description"] = f'see "{names[(i + j) % len(names)]}" first; not {names[0]}x'
    return out


def test_record_tokens_equal_the_old_ones_on_fixtures_and_variants():
    """Tokens are those of every text, tool name, declared property name (but "[]") and skill name."""
    from hsa.recipes import load_recipe
    from hsa.transform import run

    recipe = load_recipe("default")
    checked = 0
    for i, r in enumerate(FIXTURE):
        variant = run(recipe, r, random.Random(i))
        for rec in (r, _described(r)) + ((variant,) if isinstance(variant, dict) else ()):
            old = _old_record_tokens(rec)
            assert record_tokens(rec) == old
            words = record_words(rec)  # what the samplers ask: membership alike, for every token and some others
            assert all(w in words for w in old)
            assert not any(w in words for w in ("zebra_word", "", f"{min(old)}~", *(f"{w}_x_" for w in old)))
            checked += 1
    assert checked > 50


def test_record_tokens_follow_a_changed_schema_and_skip_an_array_named_property():
    """The per-schema cache is keyed by content: an edited description or property shows; a "[]" key does not."""
    rec = clone(FIXTURE[0])
    schema = rec["tools"][0]["parameters"]
    before = record_tokens(rec)
    assert "zebra_word" not in before
    schema["description"] = "now with zebra_word"
    schema.setdefault("properties", {})["[]"] = {"type": "object", "properties": {"inner_key": {"type": "string"}}}
    after = record_tokens(rec)
    assert "zebra_word" in after and "inner_key" in after and "[]" not in after
    assert after == _old_record_tokens(rec)


@settings(max_examples=40, deadline=None)
@given(records(max_tools=3, hooks=True))
def test_record_tokens_equal_the_old_ones_on_generated_records(raw):
    """Generated harnesses (any dialect, nested objects and arrays) give the old token set."""
    rec = normalize(raw)
    assert record_tokens(rec) == _old_record_tokens(rec)


_SCHEMA_TEXT = st.text(alphabet="ab_ .\"\\-", max_size=8)
_SCHEMA = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), _SCHEMA_TEXT),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["description", "title", "properties", "$defs", "items", "enum", "default",
                                         "examples", "required", "type", "x"]), inner, max_size=4)),
    max_leaves=12)


@settings(max_examples=50, deadline=None)
@given(st.one_of(_SCHEMA, tool_schemas()))
def test_in_place_schema_descriptions_equal_the_rebuilt_ones(schema):
    """Mapping descriptions in place gives the schema the rebuilding walk returns, visiting the same strings."""
    seen_a, seen_b = [], []

    def fn_a(s):
        seen_a.append(s)
        return s.upper() + "!"

    def fn_b(s):
        seen_b.append(s)
        return s.upper() + "!"

    want = map_schema_descriptions(_json.copy(schema), fn_a)
    got = _json.copy(schema)
    map_schema_descriptions_in_place(got, fn_b)
    assert got == want and seen_a == seen_b


def test_schema_skipper_only_skips_schemas_that_hold_no_name():
    """A schema is skipped only when no name occurs in its JSON; names JSON escapes turn the test off."""
    skip = schema_skipper(["get_item"])
    assert skip({"description": "nothing here", "properties": {"a": {"title": "x"}}})
    assert not skip({"properties": {"a": {"description": 'use "get_item".'}}})
    assert not skip({"properties": {"get_item": {"type": "string"}}})  # a key: walked (conservative)
    assert schema_skipper(['say "hi"']) is None and schema_skipper(["a\\b"]) is None
    assert schema_skipper(["tab\there"]) is None and schema_skipper(None) is None


def test_token_renamer_equals_replace_tokens():
    """The substring-tested renamer returns what replace_tokens returns, for every text of the fixtures."""
    tables = [{"get_item": "fetchItem"}, {"item": "thing", "item_qa": "qa_item"}, {"shop.get_x": "y"},
              {"a": "b", "b": "a"}, {"x": "x"}]
    for rec in FIXTURE[:8]:
        tables.append({t["name"]: t["name"].upper() for t in rec["tools"]})
        tables.append({s["name"]: s["name"] + "-v2" for s in rec.get("skills") or ()})
        texts = text_fields(rec) + ["item_qa.", "item-qa item", "", "x.item_qa", "see get_item."]
        for table in tables:
            fn = _token_renamer(table)
            for text in texts:
                assert fn(text) == replace_tokens(text, table)


def test_renames_with_names_in_schema_descriptions_reach_them():
    """Tool and skill renames rewrite names in parameter descriptions (the schema walk is not skipped then),
    and the result equals map_texts without the schema test."""
    for rec in FIXTURE[:10]:
        rec = _described(rec)
        table = {t["name"]: t["name"].upper() + "_X" for t in rec["tools"][:3]}
        out = rename_tools(rec, table)
        want = clone(rec)
        map_texts(want, lambda s: replace_tokens(s, table))
        for t_out, t_want in zip(out["tools"], want["tools"]):
            assert t_out["parameters"] == t_want["parameters"]
            assert t_out["description"] == t_want.get("description", t_out["description"])
        assert any(n in json.dumps(out["tools"]) for n in table.values())
        if rec.get("skills"):
            stable = {s["name"]: s["name"] + "-2" for s in rec["skills"][:2]}
            out = rename_skills(rec, stable)
            want = clone(rec)
            map_texts(want, lambda s: replace_tokens(s, stable))
            assert [t["parameters"] for t in out["tools"]] == [t["parameters"] for t in want["tools"]]


def test_param_rename_copies_once_and_leaves_its_input_alone():
    """tool.param_rename over several tools equals one copying rename_params per tool, and never changes
    its input (the first rename copies, the next ones work on that copy)."""
    from transforms.tool import ParamRename
    from transforms.tool_functional import renamed_alike

    t = ParamRename(p=1.0)
    done = 0
    for i, rec in enumerate(FIXTURE):
        rec = _described(rec)
        params = t.sample(rec, random.Random(i))
        if not isinstance(params, dict) or len({e["tool"] for e in params["renames"]}) < 2:
            continue
        before = _json.dumps(rec)
        got = t.apply(rec, params)
        assert _json.dumps(rec) == before
        want = rec
        by_tool = {}
        for e in params["renames"]:
            by_tool.setdefault(e["tool"], {})[tuple(e["path"])] = e["new"]
        also = renamed_alike(rec, params["renames"])
        for tool, renames in by_tool.items():
            want = rename_params(want, tool, renames, also=also)
        assert _json.dumps(got) == _json.dumps(want)
        assert _json.dumps(rec) == before
        done += 1
    assert done >= 5


def test_tool_and_skill_renames_share_only_the_schemas_they_leave_alone():
    """rename_tools / rename_skills give the old (deep-copying) result; schemas that name nothing renamed are
    the input's own objects, the others (and the skill tool's, whose values change) are copies; the input
    is left as it was."""
    shared = copied = 0
    for rec in FIXTURE:
        for r in (rec, _described(rec)):
            snapshot = _json.dumps(r)
            table = {t["name"]: render for t, render in zip(r["tools"][::2], ("getThing", "shop.find-x", "Zz9"))}
            out = rename_tools(r, table)
            assert _json.dumps(out) == _json.dumps(_old_rename_tools(r, table))
            for a, b in zip(r["tools"], out["tools"]):
                mentions = any(n in json.dumps(a["parameters"]) for n in table)
                assert (b["parameters"] is a["parameters"]) == (not mentions)
                shared += not mentions
                copied += mentions
            if r.get("skills"):
                stable = {s["name"]: s["name"] + "-v2" for s in r["skills"][:2]}
                out = rename_skills(r, stable)
                assert _json.dumps(out) == _json.dumps(_old_rename_skills(r, stable))
                st = r["skill_tool"]["name"]
                for a, b in zip(r["tools"], out["tools"]):
                    if a["name"] == st:
                        assert b["parameters"] is not a["parameters"]
            assert _json.dumps(r) == snapshot
    assert shared > 20 and copied > 20


def test_text_words_are_the_tokens_of_every_text():
    """text_words (what tool.values asks of a record: is a plain value mentioned?) holds exactly the tokens of
    text_fields, the messages' and the harness's texts; names that are in no text are not in it."""
    from hsa.recipes import load_recipe
    from hsa.record_texts import text_fields, text_words
    from hsa.transform import run

    recipe = load_recipe("default")
    checked = 0
    for i, r in enumerate(FIXTURE):
        variant = run(recipe, r, random.Random(i))
        for rec in (r, _described(r)) + ((variant,) if isinstance(variant, dict) else ()):
            want = frozenset().union(*map(text_tokens, text_fields(rec)))
            words = text_words(rec)
            assert frozenset().union(*words.parts) == want
            names_only = {t["name"] for t in rec["tools"]} - want
            assert not any(n in words for n in names_only)
            checked += 1
    assert checked > 50
