"""The fast paths of reading a variant back as its row reads (issue 18) give what the plain code gives."""

from __future__ import annotations

import json
import random

import pytest

from hsa import _json, cache
from hsa.mapping import Mapping
from hsa.records import RecordError, denormalize, normalize, read_row
from hsa.steps import OpaqueStep
from hsa.tool_dialects import normalize_tool, read_tool
from tests.exact_support import exact


def _exact(a, b) -> bool:
    """Equal with the same types at every level and the same key order (NaN equal to NaN)."""
    return exact(a, b, nan_equal=True)


def _tool(params, name="get_price"):
    return {"type": "function", "function": {"name": name, "description": "d", "parameters": params}}


ODD_TOOLS = [  # values a repr tells apart and JSON bytes do not, or cannot write
    _tool({"type": "object", "properties": {"n": {"type": "int", "default": 1}}}),
    _tool({"type": "object", "properties": {"n": {"type": "int", "default": 1.0}}}),
    _tool({"type": "object", "properties": {"n": {"type": "int", "default": True}}}),
    _tool({"type": "object", "properties": {"n": {"type": "number", "default": float("nan")}}}),
    _tool({"type": "object", "properties": {"n": {"type": "number", "default": None}}}),
    _tool({"type": "object", "properties": {"n": {"type": "number", "default": float("inf")}}}),
    _tool({"type": "object", "properties": {"n": {"type": "integer", "maximum": 2 ** 70}}}),
    _tool({"type": "object", "properties": {"n": {"type": "string", "enum": ("a", "b")}}}),
    _tool({"type": "object", "properties": {"n": {"type": "string", "enum": ["a", "b"]}}}),
    _tool({"type": "object", "properties": {"n": {"type": "string", "default": "\ud800"}}}),
    _tool({"properties": {"b": {"type": "str, optional"}, "a": {"type": "List[int]"}}}),
    _tool({"properties": {"a": {"type": "List[int]"}, "b": {"type": "str, optional"}}}),
    {"name": "no_schema", "description": "x"},
    {"name": "bare", "parameters": {"city": {"type": "str"}, "days": {"type": "int, optional", "default": 3}}},
]


@pytest.mark.parametrize("loaded", [False, True])
def test_a_cached_tool_is_the_read_tool_afresh(loaded):
    """normalize_tool, on a miss and on every hit (keyed by repr or by JSON bytes), gives read_tool's tool and
    notes with the same types (1 / 1.0 / True, NaN / None, tuple / list, big ints, key order), and each call's
    own objects: changing one leaves the next hit alone."""
    cache.caches().get("records.tools") and cache.caches()["records.tools"].clear()
    for rounds in range(3):
        for i, raw in enumerate(ODD_TOOLS):
            want_notes: list[str] = []
            want = read_tool(_json.copy(raw) if not loaded else raw, i, want_notes)
            notes: list[str] = ["before"]
            got = normalize_tool(raw, i, notes, loaded=loaded and _plain_json(raw))
            assert _exact(got, want), (i, got, want)
            assert notes == ["before", *want_notes]
            got["parameters"]["mutated"] = True
            got["name"] = "changed"
    assert cache.caches()["records.tools"].hits >= 2 * len(ODD_TOOLS)


def _plain_json(raw) -> bool:
    """True when ``raw`` is what a JSON parser can make (``loaded`` promises that)."""
    try:
        return _exact(json.loads(json.dumps(raw)), raw)
    except (ValueError, TypeError):
        return False


def test_tools_at_two_positions_keep_their_own_notes():
    """A tool read with notes is kept by (content, position): the notes name the position."""
    raw = _tool({"properties": {"a": {"type": "int"}}})
    first, second = [], []
    normalize_tool(raw, 0, first, loaded=True)
    normalize_tool(raw, 3, second, loaded=True)
    assert first and all("tools[0]" in n or "tools[0]" not in n for n in first)
    assert [n.replace("tools[3]", "tools[0]") for n in second] == first


def test_a_tool_read_without_notes_is_found_at_another_position():
    """A tool that reads without a note is the same tool at every position (a list read back after a reorder):
    kept by its content alone, found at the next position, and read afresh (its own objects)."""
    raw = _tool({"type": "object", "properties": {"a": {"type": "integer"}}}, name="moved_tool")
    c = cache.lru("records.tools", 32 << 20)
    c.clear()
    notes: list[str] = []
    first = normalize_tool(raw, 0, notes, loaded=True)
    hits = c.hits
    again = normalize_tool(raw, 5, notes, loaded=True)
    assert not notes and c.hits == hits + 1 and _exact(again, first) and again is not first
    assert _exact(again, read_tool(raw, 5, []))


def test_the_tool_cache_is_bounded_by_bytes_and_off_with_hsa_cache_0(monkeypatch):
    c = cache.lru("records.tools", 32 << 20)
    for k in range(10000):
        normalize_tool(_tool({"type": "object", "properties": {f"p{k}": {"type": "string", "description": "x" * 4000}}},
                             name=f"t{k}"), 0, [], loaded=True)
    assert 0 < c.bytes <= c.max_bytes and c.evictions > 0
    monkeypatch.setenv("HSA_CACHE", "0")
    cache.clear()
    raw = ODD_TOOLS[0]
    assert _exact(normalize_tool(raw, 0, []), read_tool(raw, 0, []))
    assert len(cache.caches()["records.tools"]) == 0
    monkeypatch.delenv("HSA_CACHE")
    cache.clear()


def _records():
    from fixtures.livestream.generate import generate
    from hsa.recipes import load_recipe
    from hsa.transform import run

    recipe = load_recipe("default")
    out = []
    for raw in generate(8, seed=11, harnesses=2):
        src = normalize(raw)
        out.append(src)
        for k in range(3):
            out.append(run(recipe, src, random.Random(k))[0])
    return out


def test_read_row_is_normalize_of_the_parsed_text():
    """read_row (tools looked up by JSON bytes) gives normalize(loads(text)) exactly, on sources and variants of
    records that share harnesses, cold and warm, and on hand-made rows in other dialects."""
    rows = [_json.dumps(denormalize(r)) for r in _records()]
    rows += [json.dumps({"id": "odd", "messages": [{"role": "user", "content": "x"}],
                         "tools": [{"name": "f", "input_schema": {"properties": {"a": {"type": "float"}}}}],
                         "skill_tool": "Skill"}),
             json.dumps({"id": "str", "messages": [{"role": "user", "content": "x"}],
                         "tools": json.dumps([_tool({"type": "object", "properties": {"v": {"default": None}}})])}),
             '{"id": "big", "messages": [{"role": "user", "content": "x"}], "tools": [{"name": "f", "parameters": '
             '{"type": "object", "properties": {"n": {"maximum": 123456789012345678901234567890}}}}]}']
    cache.caches().get("records.tools") and cache.caches()["records.tools"].clear()
    for rounds in range(2):
        for text in rows:
            assert _exact(read_row(text), normalize(_json.loads(text)))


def test_read_row_rejects_what_normalize_rejects():
    for text in ('[1, 2]', '{"id": "x", "messages": [{"role": "user"}], "tools": [{"parameters": {}}]}'):
        with pytest.raises(RecordError) as got:
            read_row(text)
        with pytest.raises(RecordError) as want:
            normalize(_json.loads(text))
        assert (got.value.reason, got.value.detail) == (want.value.reason, want.value.detail)


def _results(lines, recipe, keep_original=True, **kw):
    from hsa.io import InputLine
    from hsa.pipeline import augment_record

    out = []
    for i, line in enumerate(lines):
        res = augment_record(InputLine("in.jsonl", i + 1, line.encode()), recipe, seed=3, variants=3,
                             keep_original=keep_original, **kw)
        out.append((res.rows, res.rejects, res.stats.to_json()))
    return out


@pytest.mark.parametrize("pool", [0, 8])
def test_a_recipe_without_a_leaf_gives_what_run_gives(monkeypatch, fixture_lines, pool):
    """The identity recipe's shortcut (no rng made, run not called) writes the rows and stats that running it
    writes, with and without a pool (the slot column); a tree with a leaf is not taken for one."""
    import hsa.pipeline.record as P
    from hsa.recipes import load_recipe, recipe_from_dict

    identity = load_recipe("identity")
    nested = recipe_from_dict({"transform": "meta.sequence", "transforms": [
        {"transform": "meta.sequence", "transforms": []}]})
    assert P._draws_nothing(identity) and P._draws_nothing(nested)
    assert not P._draws_nothing(load_recipe("default"))
    assert not P._draws_nothing(recipe_from_dict({"transform": "meta.sequence",
                                                  "transforms": [{"transform": "tool.reorder"}]}))
    assert not P._draws_nothing(recipe_from_dict({"transform": "meta.sometimes", "p": 0.5,
                                                  "child": {"transform": "meta.sequence", "transforms": []}}))
    lines = fixture_lines[:6]
    fast = _results(lines, identity, harness_pool=pool)
    alone = _results(lines, identity, keep_original=False, harness_pool=pool)  # variant rows not made from row 0
    assert [rows[1:] for rows, _, _ in fast] == [rows for rows, _, _ in alone]
    monkeypatch.setattr(P, "_draws_nothing", lambda recipe: False)
    assert _results(lines, identity, harness_pool=pool) == fast
    assert all(rows and not rejects for rows, rejects, _ in fast)
    assert [[r.get("slot") for r in rows[1:]] for rows, _, _ in fast] == [
        [P.slot_for(3, rows[0]["source_id"], k, pool) if pool else None for k in (1, 2, 3)] for rows, _, _ in fast]


def test_sources_read_by_json_bytes_are_the_sources_read_by_repr(fixture_lines):
    """augment_record reads a line's tools keyed by their JSON bytes (``loaded``): the same source record as the
    repr-keyed read, cold and warm."""
    from hsa.io import InputLine, parse_line

    cache.caches().get("records.tools") and cache.caches()["records.tools"].clear()
    for rounds in range(2):
        for i, line in enumerate(fixture_lines[:10]):
            raw = parse_line(InputLine("in.jsonl", i + 1, line.encode()))
            assert _exact(normalize(raw, loaded=True), normalize(_json.loads(line)))


def test_a_worker_without_hooks_to_run_does_not_import_the_sandbox():
    """init_worker leaves hsa.sandbox unimported when execution stays on (its default), and still turns execution
    off, and on again, where asked."""
    import subprocess
    import sys

    from hsa import sandbox
    from hsa.pipeline.executor import init_worker
    from hsa.recipes import load_recipe, recipe_to_dict

    config = recipe_to_dict(load_recipe("identity"))
    code = ("import sys; from hsa.pipeline.executor import init_worker; "
            f"init_worker({config!r}, {{'exec_hooks': True}}); print('hsa.sandbox' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    try:
        init_worker(config, {"exec_hooks": False})
        assert not sandbox.execution_enabled()
        init_worker(config, {"exec_hooks": True})
        assert sandbox.execution_enabled()
    finally:
        sandbox.set_execution(True)


class _Str(str):
    """A str that is not exactly ``str``: it takes the plain path of _normalize_type and _generic_keywords."""


@pytest.mark.parametrize("name", ["string", "integer", "number", "boolean", "object", "array", "null", "String",
                                  " string", "string, optional", "int", "List[int]", "Optional[str]", "str | None",
                                  "Union[int, float]", "any", "tuple", "Dict[str, float]", "date", "string[]",
                                  "Optional[int]", "uint8"])
def test_the_standard_type_shortcut_gives_what_the_plain_path_gives(name):
    """A JSON-Schema type name is given back as is, without a note or an element schema: the same as the plain
    path (taken by a str subclass) gives, and every other spelling still takes the plain path."""
    from hsa.tool_dialects import _STANDARD_TYPES, _generic_keywords, _normalize_type

    fast, plain = [], []
    assert _normalize_type(name, "w", fast) == _normalize_type(_Str(name), "w", plain)
    assert fast == plain and (fast == [] or name not in _STANDARD_TYPES)
    assert _generic_keywords(name) == _generic_keywords(_Str(name))


# --------------------------------------------------------------------------- normalize_schema's standard copy

from collections import OrderedDict  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from hsa.testing import records as drawn_records  # noqa: E402

_NAMES = st.sampled_from(["city", "type", "properties", "required", "items", "optional", "enum", "default", "a b", ""])
_TYPES = st.one_of(st.sampled_from(["string", "integer", "number", "boolean", "object", "array", "null", "str",
                                    "int", "List[int]", "string, optional", "Optional[str]", "any", "String",
                                    "string[]", "Optional[List[int]]", "float64"]),
                   st.lists(st.sampled_from(["string", "null", "integer", "int"]), max_size=3), st.none(),
                   st.integers(0, 2))
_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.just(2 ** 70), st.floats(allow_nan=True),
                    st.text(max_size=4), st.just("a, b"), st.just("['x']"), st.tuples(st.text(max_size=2)), st.lists(st.text(max_size=2), max_size=2))


def _schemas(depth: int = 3):
    sub = st.deferred(lambda: _schemas(depth - 1)) if depth else st.just({"type": "string"})
    node = st.fixed_dictionaries({}, optional={
        "type": _TYPES, "description": st.text(max_size=5), "enum": _LEAVES, "default": _LEAVES,
        "properties": st.one_of(st.dictionaries(_NAMES, st.one_of(sub, st.booleans(), st.just("x")), max_size=3),
                                st.lists(st.fixed_dictionaries({"name": _NAMES, "type": _TYPES}), max_size=2)),
        "required": st.one_of(st.lists(_NAMES, max_size=3), st.just("city, type"), st.booleans(), st.none()),
        "optional": st.booleans(), "minimum": st.integers(-2, 2),
        "exclusiveMinimum": st.one_of(st.booleans(), st.integers(-2, 2)),
        "items": st.one_of(sub, st.lists(sub, max_size=2), st.booleans(), st.sampled_from(["string", "int", "?"])),
        "anyOf": st.lists(st.one_of(sub, st.just(3)), max_size=2), "additionalProperties": st.one_of(sub, st.booleans()),
        "$defs": st.dictionaries(_NAMES, sub, max_size=2)})
    return st.one_of(node, node.map(OrderedDict), st.booleans(), st.lists(
        st.fixed_dictionaries({"name": _NAMES, "type": _TYPES}), max_size=2))


def _placement(out, src) -> list:
    """Where ``out`` shares objects with ``src`` (``is``), walked in step: the copy must make new objects where
    the rewrite makes them, and share what it shares."""
    marks = [out is src and isinstance(out, (dict, list))]
    if isinstance(out, dict) and isinstance(src, dict):
        for k in out:
            if k in src:
                marks += [k] + _placement(out[k], src[k])
    elif isinstance(out, list) and isinstance(src, list) and len(out) == len(src):
        for a, b in zip(out, src):
            marks += _placement(a, b)
    return marks


def _check_standard_copy(schema) -> bool:
    from hsa.tool_dialects import _normalize_schema, _standard_copy, normalize_schema

    before = repr(schema)
    got_notes, want_notes = [], []
    got = normalize_schema(schema, "w", got_notes)
    want = _normalize_schema(schema, "w", want_notes)
    assert repr(schema) == before  # neither changes its input
    assert _exact(got, want) and got_notes == want_notes, (schema, got, want)
    assert _placement(got, schema) == _placement(want, schema)
    fast = _standard_copy(schema)
    assert fast is None or (not want_notes and _exact(fast, schema)), schema  # only what the rewrite keeps as is
    return fast is not None


@settings(max_examples=400, deadline=None)
@given(_schemas())
def test_the_standard_copy_of_a_schema_is_what_the_rewrite_gives(schema):
    """normalize_schema's shortcut for standard schemas gives the rewriting walk's schema and notes exactly
    (types, key order, which objects are new), on schemas with keyword-named parameters, type lists with repeats,
    string and boolean ``required``, ``optional`` flags, tuple-form items, parameter lists, dict subclasses,
    tuples, NaN and big ints; and it is taken only where the rewrite changes nothing."""
    _check_standard_copy(schema)


def test_the_standard_copy_is_taken_for_the_tools_of_the_fixtures():
    """Every schema of the fixtures' tools, read and read back, takes the shortcut (it is what makes reading rows
    back cheap) and gives the rewrite's result; a schema one rewrite would touch does not."""
    taken = 0
    for rec in _records():
        for t in rec["tools"]:
            taken += _check_standard_copy(t["parameters"])
    assert taken > 50
    for odd in ({"type": "object", "properties": {"a": {"type": "string", "optional": True}}},
                {"type": "object", "properties": {"a": {"type": "string"}}, "required": "a"},
                {"properties": {"a": {"type": "string"}}}, {"type": ["string", "string"]},
                {"type": "object", "properties": {"a": {"type": "str"}}}, {"type": "array", "items": [{"type": "null"}]},
                {"type": "object", "properties": [{"name": "a", "type": "string"}]}):
        assert not _check_standard_copy(odd)
    for tool in ODD_TOOLS:
        raw = tool.get("function", tool)
        _check_standard_copy(raw.get("parameters", {}))


def test_a_cached_tool_list_is_the_list_read_tool_by_tool():
    """normalize_tools (the whole list looked up by its JSON bytes, or its repr where they hold a null) gives, on
    misses and hits, the tools and notes of normalize_tool one by one, with the same types (NaN / None, big ints,
    key order), each call its own objects; lists that differ only where JSON bytes would not tell are told apart."""
    from hsa.tool_dialects import normalize_tools

    lists = [[json.loads(json.dumps(t)) for t in ODD_TOOLS if _plain_json(t)]]
    lists += [lists[0][::-1], lists[0][:3], [lists[0][3]], [lists[0][4]], [lists[0][5]], []]  # NaN, None, inf alone
    cache.caches().get("records.tools") and cache.caches()["records.tools"].clear()
    for rounds in range(3):
        for raws in lists:
            want_notes: list[str] = []
            want = [read_tool(_json.copy(t), i, want_notes) for i, t in enumerate(raws)]
            notes: list[str] = ["before"]
            got = normalize_tools(raws, notes, loaded=True)
            assert _exact(got, want) and notes == ["before", *want_notes]
            for t in got:
                t["parameters"]["mutated"] = True
            got.append("changed")
    assert cache.caches()["records.tools"].hits >= 2 * len(lists)


def _plain_frozen(tool, loaded=False):
    """tool_dialects._frozen without its shortcut: the strict walk decides whether the bytes give the tool back."""
    import orjson

    try:
        data = orjson.dumps(tool)
    except TypeError:
        return None
    return data if _json.strict_equal(orjson.loads(data), tool) else None


def _odd_lines() -> list[str]:
    """Rows whose tools read back oddly: keyword-named parameters, a bare xLAM map, a tool without a schema, NaN
    and a big int (written by json, read by its fallback), a null default, Anthropic and MCP dialects, a string
    required list and optional flags, tools given as a JSON string."""
    def call(name, args):
        return {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}

    user = {"role": "user", "content": "please help with the order"}
    kw = {"type": "object", "properties": {"type": {"type": "string", "description": "the type"},
                                           "properties": {"type": "object", "properties": {"items": {
                                               "type": "integer"}}},
                                           "required": {"type": "boolean", "default": None},
                                           "optional": {"type": "string", "enum": ["a", "b"]}},
          "required": ["type", "required"]}
    rows = [
        {"id": "kw", "tools": [_tool(kw, "lookup_order"), _tool({"type": "object", "properties": {
            "q": {"type": "str, optional"}, "n": {"type": "int", "required": True}}}, "search_items")],
         "messages": [user, call("lookup_order", {"type": "x", "properties": {"items": 2}, "required": True})]},
        {"id": "bare", "tools": [{"name": "get_rate", "description": "rates", "parameters": {
            "base": {"type": "str", "description": "base"}, "days": {"type": "int, optional", "default": 3},
            "type": {"type": "str"}}}, {"name": "no_schema_tool", "description": "no schema"}],
         "messages": [user, call("get_rate", {"base": "EUR", "type": "spot"})]},
        {"id": "dialects", "tools": json.dumps([
            {"name": "fetch", "description": "f", "input_schema": {"type": "object", "properties": {
                "url": {"type": "string"}, "items": {"type": "array", "items": [{"type": "string"}]}}}},
            {"name": "list.files", "inputSchema": {"properties": {"path": {"type": "string", "optional": True}},
                                                  "required": "path"}}]),
         "messages": [user, call("fetch", {"url": "http://x"})]},
    ]
    lines = [json.dumps(r) for r in rows]
    rows = [  # NaN, and a big int: json writes them, orjson cannot read them
        {"id": "nan", "tools": [_tool({"type": "object", "properties": {"x": {"type": "number", "default": float(
            "nan")}}}, "calc"), _tool({"type": "object", "properties": {"y": {"type": "string", "optional": True},
                                                                         "z": {"type": "string"}}}, "flags")],
         "messages": [user, call("calc", {"x": 1.5})]},
        {"id": "big", "tools": [_tool({"type": "object", "properties": {"n": {"type": "integer", "maximum": 2 ** 70},
                                                                         "m": {"type": "string"}}}, "count_items")],
         "messages": [user, call("count_items", {"n": 3})]}]
    return lines + [json.dumps(r) for r in rows]


@pytest.mark.parametrize("pool", [0, 8])
def test_odd_rows_augment_as_with_every_shortcut_and_cache_off(monkeypatch, pool):
    """The default recipe on rows with odd tools writes the same rows, rejects and counts as with the read-back
    shortcuts replaced by their plain code (the rewriting walk, tool-by-tool reads, the strict walk of frozen
    tools, the skeleton carried through to_variant) and every cache off."""
    import hsa.invariants as inv
    import hsa.tool_dialects as td
    from hsa.recipes import load_recipe

    recipe = load_recipe("default")
    lines = _odd_lines()
    fast = _results(lines, recipe, harness_pool=pool)
    assert sum(len(rows) for rows, _, _ in fast) > len(lines)  # variants were written
    with monkeypatch.context() as m:
        m.setattr(td, "_standard_copy", lambda schema: None)
        m.setattr(td, "normalize_tools", lambda raws, notes, loaded=False, shared=False: [  # a list of its own
            td.normalize_tool(t, i, notes, loaded=loaded) for i, t in enumerate(raws)])
        m.setattr("hsa.records.normalize_tools", td.normalize_tools)
        m.setattr(td, "_frozen", _plain_frozen)
        m.setattr(inv, "_carried_as_is", lambda mapping, name: False)
        m.setenv("HSA_CACHE", "0")
        cache.clear()
        plain = _results(lines, recipe, harness_pool=pool)
    cache.clear()
    assert plain == fast


# --------------------------------------------------------------------------- the read-back in two halves


def _harness_twin(record: dict) -> dict:
    """``record`` with its harness (tools, skill tool, how they are written) and another, minimal trajectory."""
    twin = {k: v for k, v in record.items() if k not in ("messages", "hook_events", "meta", "prompt", "skills", "hooks")}
    twin["messages"] = [{"role": "user", "content": "Hi."}]
    return twin


def _split_read_back_agrees(record: dict) -> bool | None:
    """Whether :func:`read_back_trajectory` of ``record``, its harness half read from a record with the same harness
    and another trajectory, is :func:`read_back` of it exactly (types, key order), but the mapping, transforms and
    notes, which the caller (``hsa.renames._as_written``) sets; None when it does not apply."""
    from hsa.records import harness_read_back, plain_trajectory, read_back, read_back_trajectory

    if not plain_trajectory(record):
        return None
    try:
        whole = read_back(record)
    except RecordError:
        return None
    harness = harness_read_back(read_back(_harness_twin(record)))
    if harness is None:
        return None
    split = read_back_trajectory(record, harness)
    assert split is not None, record["id"]
    split, whole = ({k: v for k, v in r.items() if k not in ("mapping", "transforms", "notes")} for r in (split, whole))
    return _exact(split, whole) and repr(split) == repr(whole)  # the mapping, transforms and notes: the caller's


def _variants(record: dict, seeds=range(2)):
    from hsa.transform import run
    from tests.transform_table import TABLE

    for name, make in sorted(TABLE.items()):
        for seed in seeds:
            try:
                variant, _, _ = run(make(), record, random.Random(seed))
            except Exception:  # noqa: BLE001 - a transform that raises here is the property suite's to report
                continue
            yield name, variant


def test_the_read_back_in_two_halves_is_the_read_back_on_every_transform(fixture_lines):
    """Every transform of the table on fixture records of each harness kind (livestream, Claude Code, tau-bench,
    MCP, prompts, skills): each variant with a plain trajectory reads back in two halves exactly as whole, and the
    records that are not plain are few."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "fixtures"
    lines = fixture_lines[::25]
    for f in ("harnesses/claude_code.jsonl", "harnesses/tau_airline.jsonl", "harnesses/mcp_calls.jsonl",
              "mcp/records.jsonl", "prompts/records.jsonl", "harnesses/skills.jsonl"):
        lines += (root / f).read_text(encoding="utf-8").splitlines()[:4]
    checked = plain = 0
    for line in lines:
        try:
            source = read_row(line)
        except RecordError:
            continue
        for name, variant in _variants(source):
            checked += 1
            agrees = _split_read_back_agrees(variant)
            if agrees is not None:
                plain += 1
                assert agrees, (name, variant["id"])
    assert checked > 1000 and plain > 0.9 * checked, (checked, plain)


@given(drawn_records(), st.integers(0, 2**32 - 1))
@settings(max_examples=25)
def test_the_read_back_in_two_halves_is_the_read_back_on_drawn_records(raw, seed):
    """The same on records drawn by hsa.testing (every dialect, argument encoding, skills, prompts, hooks)."""
    source = normalize(raw)
    for name, variant in _variants(source, seeds=(seed,)):
        assert _split_read_back_agrees(variant) is not False, name


@pytest.mark.parametrize("message, why", [
    ({"role": "assistant", "content": "", "function_call": {"name": "f", "arguments": "{}"}}, "legacy call"),
    ({"role": "function", "name": "f", "content": "1"}, "legacy result"),
    ({"role": "tool", "tool_name": "f", "content": "1"}, "Ollama"),
    ({"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]}, "blocks"),
    ({"role": "human", "content": "hi"}, "role spelling"),
    ({"type": "human", "data": {"content": "hi"}}, "LangChain"),
])
def test_a_trajectory_the_reader_converts_is_not_plain(message, why):
    """The guard of the split: a message in a layout the reader converts, or an extra key, sends the record to
    the whole read-back."""
    from hsa.records import plain_trajectory

    record = normalize({"messages": [{"role": "user", "content": "hi"}], "tools": []})
    assert plain_trajectory(record)
    assert not plain_trajectory({**record, "messages": [message]}), why
    assert not plain_trajectory({**record, "extra": {"system": "x"}})
    assert not plain_trajectory({**record, "meta": '{"a": 1}'})  # a JSON text the reader would parse


def test_the_harness_half_is_the_tools_as_they_read_back():
    """A tool read without a schema keeps a marker its row loses once it has one (``tool.distractors`` or
    ``tool.add_required`` give it parameters): the split takes the tools as they read back, not as they are."""
    record = normalize({"messages": [{"role": "user", "content": "hi"}],
                        "tools": [{"name": "no_schema", "description": "x"}]})
    record["tools"][0] = {**record["tools"][0], "parameters": {"type": "object",
                                                               "properties": {"a": {"type": "string"}}}}
    assert _split_read_back_agrees(record)
    from hsa.records import harness_read_back, read_back

    assert _json.loads(harness_read_back(read_back(_harness_twin(record)))[0])[0]["extra"] == {}


def _shared_lines(n: int, harnesses: int, tool_only: bool) -> list[str]:
    """``n`` generated records of ``harnesses`` shared harnesses (as benchmarks/bench_augment.py makes them): tool-only
    (messages without the system message, and tools) or whole (skills, prompt, hooks and hook events)."""
    from fixtures.livestream.generate import make_harness, make_record

    shared = [make_harness(random.Random(f"0-harness-{k}")) for k in range(harnesses)]
    rng = random.Random(1)
    recs = [json.loads(json.dumps(make_record(rng, i, 0, shared[i % harnesses]))) for i in range(1, n + 1)]
    if tool_only:
        recs = [{"id": r["id"], "tools": r["tools"], "messages": [m for m in r["messages"] if m["role"] != "system"]}
                for r in recs]
    return [json.dumps(r) for r in recs]


@pytest.mark.parametrize("tool_only", [True, False])
def test_the_restore_step_by_identity_is_the_restore_step_worked_out(monkeypatch, tool_only):
    """On records of shared harnesses under a pool, the restore step takes the harness half of its read-back and
    the key of its split undo from the slot plan by identity (``hsa.written.by_plan``): every read-back in
    two halves is the whole read-back (but the mapping, transforms and notes, which the caller sets), every key so
    found is the digest of the steps and parts it stands for, every inverse so found is the variant's own (and its
    names check passes), each is taken for over a third of the variants, and the rows, rejects and counts are those
    of the restore step with none of them."""
    import hsa.records as R
    import hsa.renames as rn
    from hsa.recipes import load_recipe

    recipe = load_recipe("default")
    lines = _shared_lines(48, 2, tool_only)
    seen = {"halves": 0, "keys": 0, "restores": 0}
    split_read, split_undo, restore = R.read_back_trajectory, rn._undo_split, rn.with_restore

    def read_back_trajectory(record, harness, **kw):
        got = split_read(record, harness, **kw)
        whole = R.read_back(record)
        got_, whole_ = ({k: v for k, v in r.items() if k not in ("mapping", "transforms", "notes")}
                        for r in (got, whole))
        assert _exact(got_, whole_) and repr(got_) == repr(whole_), record["id"]
        seen["halves"] += 1
        return got

    def undo_split(record, steps, known=None, **kw):
        if known is not None and known.key is not None:
            parts = {k: record[k] for k in rn.step_parts(record) if k in record}
            assert known.key == ("undone", cache.digest(steps, parts)), record["id"]
            seen["keys"] += 1
        return split_undo(record, steps, known, **kw)

    def with_restore(source, variant):
        seen["restores"] += 1
        return restore(source, variant)

    def undo_from(record, n, *, owned, written=None):
        if written is not None and written.undo.inverse is not None:  # what the entry holds is this record's
            steps = record["mapping"][len(record["mapping"]) - n:]
            rn._check_mapping_names(record, Mapping(steps))
            inverse = [s.to_json() for s in Mapping(steps).inverse().typed() if not isinstance(s, OpaqueStep)]
            assert written.undo.inverse == (inverse, rn._splits(record, inverse)), record["id"]
            assert _json.dumps_bytes(written.undo.inverse[0]) == _json.dumps_bytes(inverse), record["id"]
            seen["inverses"] += 1
        return undo(record, n, owned=owned, written=written)

    undo = rn._undo_from
    seen["inverses"] = 0
    with monkeypatch.context() as m:
        m.setattr(R, "read_back_trajectory", read_back_trajectory)
        m.setattr(rn, "_undo_split", undo_split)
        m.setattr(rn, "with_restore", with_restore)
        m.setattr(rn, "_undo_from", undo_from)
        fast = _results(lines, recipe, harness_pool=8)
        shared = _shared_objects_unchanged()
    assert seen["halves"] > seen["restores"] // 3, seen  # the first variants of a plan work it out
    assert shared > 0
    assert not tool_only or seen["keys"] > seen["restores"] // 3, seen
    assert not tool_only or seen["inverses"] > seen["restores"] // 3, seen  # a prompt is each record's own
    monkeypatch.setattr(rn, "by_plan", lambda variant, steps, source, parts: None)
    assert _results(lines, recipe, harness_pool=8) == fast


def _shared_objects_unchanged() -> int:
    """Assert that what the restore step gives variants from the slot plans as it is (read only: the tools of a
    harness half, the undone harness parts) is still what it was kept as, in every plan of this process; returns how
    many such objects there are."""
    from hsa.context import current

    held = 0
    for plan in current().plans:
        for key, hit in plan.memo.items():
            if key[0] == "undone" and isinstance(hit, tuple) and len(hit) == 4:
                assert _json.dumps_bytes(hit[3]) == hit[0]
                held += 1
        for _, halves in plan._seen.get("read back", {}).values():
            for half in halves.values():
                if half.tools is not None:
                    assert _json.dumps_bytes(half.tools) == half.read[0]
                    held += 1
    return held



def test_rows_share_the_tools_a_slot_plan_wrote_and_their_json(monkeypatch):
    """Under a pool the variant rows of a shared harness take their tools as written (``denormalize_tool`` of each)
    and those tools' JSON from the slot plan, by the identity of the variant's tools (``_row_tools``): for over a
    third of the variant rows the object is one an earlier record's row had, every such list is what the variant's
    tools write, its JSON is the list's, and the rows, rejects, counts and encoded rows are those written afresh."""
    import hsa.pipeline.record as P
    from hsa.io import encode_row
    from hsa.recipes import load_recipe
    from hsa.tool_dialects import denormalize_tool

    recipe = load_recipe("default")
    lines = _shared_lines(48, 2, True)
    seen = {"rows": 0, "shared": 0}
    lists: set[int] = set()
    row_tools = P._row_tools

    def checked(plan, variant, source, encoded):
        got = row_tools(plan, variant, source, encoded)
        if got is not None:
            assert _exact(got, [denormalize_tool(t) for t in variant["tools"]]), variant["id"]
            assert encoded[id(got)] == (got, _json.dumps(got))
            seen["shared"] += id(got) in lists
            lists.add(id(got))
        seen["rows"] += 1
        return got

    def encoded(lines):
        from hsa.io import InputLine

        out = []
        for i, line in enumerate(lines):
            res = P.augment_record(InputLine("in.jsonl", i + 1, line.encode()), recipe, seed=3, variants=3,
                                   keep_original=True, harness_pool=8)
            memo = res.encoded
            out.append((res.rows, res.rejects, res.stats.to_json(), [encode_row(r, memo) for r in res.rows]))
        return out

    with monkeypatch.context() as m:
        m.setattr(P, "_row_tools", checked)
        fast = encoded(lines)
    assert seen["shared"] > seen["rows"] // 3, seen
    monkeypatch.setattr(P, "_row_tools", lambda plan, variant, source, encoded: None)
    assert encoded(lines) == fast
