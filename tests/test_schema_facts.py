"""hsa.schema_facts: a schema's facts are worked out once per schema content (a value fact from the entry's own
copy), and the key tells apart what each fact reads (NaN or infinity from null for the facts that read values)."""

from __future__ import annotations

import math

from hsa import cache
from hsa.context import WorkerContext, use
from hsa.schema_facts import schema_fact

SCHEMA = {"type": "object", "properties": {"city": {"type": "string", "description": "The city"},
                                           "n": {"type": "integer", "default": 3}}}


def _calls():
    seen: list = []

    def keys(schema, *args):
        seen.append(args)
        return tuple(schema["properties"]) + args

    return keys, seen


def test_a_fact_is_worked_out_once_per_schema_content_and_args():
    keys, seen = _calls()
    with use(WorkerContext()):
        assert schema_fact(SCHEMA, keys) == ("city", "n")
        assert schema_fact({**SCHEMA}, keys) == ("city", "n")  # an equal fresh object: the same entry
        assert schema_fact(SCHEMA, keys, 1) == ("city", "n", 1)  # other args: another value of the entry
        assert seen == [(), (1,)]
        reordered = {"properties": SCHEMA["properties"], "type": "object"}
        schema_fact(reordered, keys)  # key order is content: another entry
        assert len(seen) == 3 and len(cache.lru("schema.facts", 1)) == 2


def test_a_fact_reads_its_own_copy_not_the_callers_object():
    def first_description(schema):
        return schema["properties"]["city"]["description"]

    mine = {"type": "object", "properties": {"city": {"type": "string", "description": "The city"}}}
    with use(WorkerContext()):
        schema_fact(mine, lambda s: None)  # the entry is made; the next fact is worked out later
        mine["properties"]["city"]["description"] = "changed after the entry was made"
        again = {"type": "object", "properties": {"city": {"type": "string", "description": "The city"}}}
        assert schema_fact(again, first_description) == "The city"


def test_a_value_fact_keeps_the_entrys_copy_and_a_structure_fact_keeps_nothing_of_the_callers():
    seen: list = []

    def properties(schema):  # a value fact that keeps a part of its schema, as a compiled validator does
        seen.append(schema)
        return schema["properties"]

    mine = {"type": "object", "properties": {"city": {"type": "string", "description": "The city"}}}
    with use(WorkerContext()):
        kept = schema_fact(mine, properties, exact=True)
        assert seen[0] is not mine and seen[0] == mine  # the entry's own copy
        mine["properties"]["city"]["description"] = "changed after the fact was worked out"
        assert kept["city"]["description"] == "The city"
        assert schema_fact(mine, lambda s: tuple(s["properties"]["city"]["description"].split()))[0] == "changed"
        mine["properties"]["city"]["description"] = "The city"
        assert schema_fact(mine, properties, exact=True) is kept and len(seen) == 1


def test_nan_and_null_share_structure_facts_but_not_value_facts():
    def defaults(schema):
        return repr(schema["properties"]["x"]["default"])

    def names(schema):
        return tuple(schema["properties"])

    nan = {"properties": {"x": {"default": math.nan}}}
    null = {"properties": {"x": {"default": None}}}
    with use(WorkerContext()):
        assert schema_fact(nan, defaults, exact=True) == "nan"
        assert schema_fact(null, defaults, exact=True) == "None"
        assert schema_fact(nan, defaults, exact=True) == "nan"
        assert schema_fact(nan, names) == schema_fact(null, names) == ("x",)


def test_a_schema_orjson_cannot_write_is_worked_out_each_time_or_kept_by_its_repr():
    keys, seen = _calls()
    big = {"properties": {"n": {"minimum": 2 ** 70}}}
    with use(WorkerContext()):
        assert schema_fact(big, keys) == ("n",) and schema_fact(big, keys) == ("n",)
        assert len(seen) == 2  # a structure fact of a schema without JSON bytes: worked out each time
        assert schema_fact(big, keys, exact=True) == ("n",) and schema_fact(big, keys, exact=True) == ("n",)
        assert len(seen) == 3  # exact: kept under its repr


def test_memoising_off_works_every_fact_out_every_time(monkeypatch):
    monkeypatch.setenv("HSA_CACHE", "0")
    keys, seen = _calls()
    with use(WorkerContext()):
        schema_fact(SCHEMA, keys)
        schema_fact(SCHEMA, keys)
    assert len(seen) == 2


def test_the_data_path_facts_equal_their_walks():
    from hsa.hooks_model import _schema_examples, schema_examples
    from hsa.invariants import _skeleton_paths, _skeleton_paths_of, validator_for
    from hsa.record_texts import _param_paths, _schema_texts_by_json, _schema_texts_of, param_paths

    schema = {"type": "object", "required": ["q"], "properties": {
        "q": {"type": "string", "description": "What to look for", "enum": ["a", "b"]},
        "opts": {"type": "object", "title": "Options", "properties": {"limit": {"type": "integer", "default": 5}}},
        "tags": {"type": "array", "items": {"type": "string", "description": "One tag"}}}}
    with use(WorkerContext()):
        for _ in range(2):
            assert param_paths(schema) == _param_paths(schema)
            assert _skeleton_paths(schema) == _skeleton_paths_of(schema)
            for rewritten in (False, True):
                assert _schema_texts_by_json(schema, rewritten=rewritten) == _schema_texts_of(schema, rewritten)
            got = schema_examples(schema)
            assert got == _schema_examples(schema, 6)
            got[0]["q"] = "mutated by the caller"  # each call gets its own objects
            v = validator_for(schema)
            assert v.is_valid({"q": "a"}) and not v.is_valid({"q": "c"}) and not v.is_valid({})
        assert validator_for(dict(schema)) is v


def test_the_string_values_of_a_tool_list_are_the_walk_of_every_schema():
    """tools_schema_strings (a fact of each schema) gives what schema_strings' walk of the whole list gives, on every
    tool list of the fixtures, and works each schema out once."""
    import json

    from hsa import rename_texts
    from hsa.records import normalize
    from tests.conftest import FIXTURES, ROOT

    lists = []
    for path in (FIXTURES, ROOT / "fixtures" / "mcp" / "records.jsonl"):
        lists += [normalize(json.loads(line))["tools"] for line in path.read_text(encoding="utf-8").splitlines()[:40]]
    lists.append([{"name": "t", "description": "", "parameters": {"type": "object", "properties": {
        "mode": {"type": "string", "enum": ["fast", 1, "slow"], "default": "fast"},
        "x": {"const": "only", "examples": ["e1", None]}}, "required": ["mode"]}}])
    assert sum(bool(rename_texts.schema_strings([t["parameters"] for t in ts])) for ts in lists) >= 2
    with use(WorkerContext()):
        for tools in lists:
            assert rename_texts.tools_schema_strings(tools) == rename_texts.schema_strings([t["parameters"] for t in tools])
        walked = []
        plain = rename_texts._schema_strings_fact
        try:
            rename_texts._schema_strings_fact = lambda schema: (walked.append(1), plain(schema))[1]
            for _ in range(3):
                rename_texts.tools_schema_strings(lists[-1])
        finally:
            rename_texts._schema_strings_fact = plain
        assert len(walked) <= 1  # once per schema content (already kept from the loop above: none)


def test_the_texts_of_a_tool_list_are_each_tools_description_and_schema_texts_in_order():
    """labelled_texts and texts_of give a tool list's texts as each tool's description, then its schema's texts (the
    walk of each schema, kept per schema), tool by tool, on every record of the fixtures; and texts_of is
    labelled_texts' texts, then the hook sources (the order the names-left check gives its results in)."""
    import json

    from hsa.record_texts import _schema_texts_of, _texts, labelled_texts, texts_of
    from hsa.records import normalize
    from tests.conftest import FIXTURES, ROOT

    records = []
    for path in (FIXTURES, ROOT / "fixtures" / "mcp" / "records.jsonl", ROOT / "examples" / "my-data.jsonl"):
        records += [normalize(json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines()[:30]]
    with use(WorkerContext()):
        for rec in records:
            for _ in range(2):  # worked out, then kept
                want = []
                for t in rec["tools"]:
                    if isinstance(t.get("description"), str):
                        want.append(("a tool description", t["description"]))
                    want += [("a parameter description", x) for x in _schema_texts_of(t["parameters"], False)]
                got = [pair for pair in labelled_texts(rec) if pair[0] in ("a tool description",
                                                                           "a parameter description")]
                assert got == want
                for rewritten in (False, True):
                    walk = [x for t in rec["tools"] for x in
                            ([t["description"]] if isinstance(t.get("description"), str) else [])
                            + list(_schema_texts_of(t["parameters"], rewritten))]
                    texts = _texts(rec, schemas=True, rewritten=rewritten, hooks=False)
                    assert walk == texts[len(texts) - len(walk) - _tail(rec):len(texts) - _tail(rec)]
                assert texts_of(rec, schemas=True) == [text for _, text in labelled_texts(rec)] + [
                    h.get("source", "") for h in rec.get("hooks") or ()]


def _tail(rec) -> int:
    """How many texts follow the tools' in _texts without hooks: skills' and the prompt's."""
    n = sum(isinstance(s.get(k), str) for s in rec.get("skills") or () for k in ("description", "content"))
    return n + sum(isinstance(sec.get(k), str) for sec in (rec.get("prompt") or {}).get("sections", ())
                   for k in ("title", "body"))
