"""Records: dialects in, one internal form, the same dialect out."""

from __future__ import annotations

import json

import pytest

from hsa import _json
from hsa.records import RecordError, denormalize, normalize, normalize_schema, record_schema


def _rec(tools, args='{"city": "Paris"}', name="get_weather"):
    return {"id": "r1", "messages": [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": name, "arguments": args}}]},
        {"role": "tool", "tool_call_id": "c1", "name": name, "content": "sunny"}],
        "tools": tools}


SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
OPENAI = [{"type": "function", "function": {"name": "get_weather", "description": "d", "parameters": SCHEMA}}]
ANTHROPIC = [{"name": "get_weather", "description": "d", "input_schema": SCHEMA}]
MCP = [{"name": "get_weather", "description": "d", "inputSchema": SCHEMA, "annotations": {"readOnlyHint": True}}]
FLAT = [{"name": "get_weather", "description": "d", "parameters": SCHEMA}]


@pytest.mark.parametrize("tools,dialect", [(OPENAI, "openai"), (ANTHROPIC, "anthropic"), (MCP, "mcp"), (FLAT, "plain")])
def test_dialects_round_trip_exactly(tools, dialect):
    """Each tool dialect normalises to one form and is written back byte-for-byte as it came."""
    raw = _rec(tools)
    rec = normalize(raw)
    assert rec["tools"][0]["dialect"] == dialect
    assert rec["tools"][0]["parameters"] == SCHEMA
    assert _json.canonical(denormalize(rec)) == _json.canonical(raw)


def test_arguments_as_object_or_string_are_kept_in_their_form():
    """Arguments given as JSON strings come back as strings; given as objects, as objects."""
    as_string = normalize(_rec(OPENAI))
    as_object = normalize(_rec(OPENAI, args={"city": "Paris"}))
    for rec in (as_string, as_object):
        assert rec["messages"][1]["tool_calls"][0]["function"]["arguments"] == {"city": "Paris"}
    assert isinstance(denormalize(as_string)["messages"][1]["tool_calls"][0]["function"]["arguments"], str)
    assert denormalize(as_object)["messages"][1]["tool_calls"][0]["function"]["arguments"] == {"city": "Paris"}


def test_tools_as_json_string_are_parsed_and_written_back_as_string():
    """A dataset that stores the tool list as a JSON string (glaive/xlam style) round-trips."""
    raw = _rec(json.dumps(OPENAI))
    rec = normalize(raw)
    assert rec["tools"][0]["name"] == "get_weather"
    assert isinstance(denormalize(rec)["tools"], str)
    assert json.loads(denormalize(rec)["tools"]) == OPENAI


def test_flat_tool_calls_are_accepted():
    """Calls written as {"name", "arguments"} without the function wrapper are read and written back flat."""
    raw = _rec(OPENAI)
    raw["messages"][1]["tool_calls"] = [{"id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}}]
    rec = normalize(raw)
    assert rec["messages"][1]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert denormalize(rec)["messages"][1]["tool_calls"] == raw["messages"][1]["tool_calls"]


def test_non_standard_types_are_normalised_with_notes():
    """Python/Java type names, 'optional' markers and draft-3 required become standard JSON Schema, noted."""
    notes: list[str] = []
    schema = {"type": "dict", "properties": {
        "a": {"type": "Integer"}, "b": {"type": "float", "optional": True}, "c": {"type": "tuple", "items": {"type": "str"}},
        "d": {"type": "any"}, "e": {"type": "string, optional"}, "f": {"type": "Boolean", "required": True},
        "g": {"type": "List[int]"}}, "required": ["a", "b", "e"]}
    out = normalize_schema(schema, "p", notes)
    assert out["type"] == "object"
    props = out["properties"]
    assert props["a"] == {"type": "integer"}
    assert props["b"] == {"type": "number"}
    assert props["c"] == {"type": "array", "items": {"type": "string"}}
    assert props["d"] == {}
    assert props["e"] == {"type": "string"}
    assert props["f"] == {"type": "boolean"}
    assert props["g"] == {"type": "array", "items": {"type": "integer"}}  # the element type is kept
    assert sorted(out["required"]) == ["a", "f"]
    assert any("'dict' -> 'object'" in n for n in notes)
    assert len(notes) >= 7


@pytest.mark.parametrize("weird", [None, 3, "string", [], {"type": 5}, {"type": ["int", "null"]},
                                   {"properties": {"x": "nope"}}, {"type": "object", "properties": None},
                                   {"type": "wat"}, {"type": "object", "required": "x"}])
def test_normalize_schema_never_crashes(weird):
    """Odd schemas found in the wild are normalised or replaced, never a crash."""
    notes: list[str] = []
    out = normalize_schema(weird, "p", notes)
    assert isinstance(out, (dict, bool))


def test_dotted_function_names_are_accepted():
    """BFCL-style dotted names (math.factorial) are read and kept; calls to them validate."""
    raw = _rec([{"name": "math.factorial", "parameters": {"type": "dict", "properties": {"n": {"type": "integer"}}}}],
               args={"n": 5}, name="math.factorial")
    rec = normalize(raw)
    assert rec["tools"][0]["name"] == "math.factorial"
    from hsa.invariants import check_record

    assert check_record(rec) == []


@pytest.mark.parametrize("raw,reason", [
    ([1, 2], "not an object"),
    ({"tools": []}, "missing messages"),
    ({"messages": "hi"}, "schema"),
    ({"messages": [{"content": "no role"}]}, "schema"),
])
def test_bad_records_raise_record_error_with_reason(raw, reason):
    """Structural problems raise RecordError with a stable reason and a helpful detail."""
    with pytest.raises(RecordError) as info:
        normalize(raw)
    assert info.value.reason == reason
    assert info.value.detail


def test_arguments_that_are_not_json_are_rejected():
    """A call whose arguments string is not JSON is a reject, not a crash."""
    with pytest.raises(RecordError) as info:
        normalize(_rec(OPENAI, args="{city: Paris"))
    assert info.value.reason == "arguments not JSON"


def test_unknown_top_level_keys_are_kept():
    """Keys hsa gives no meaning to travel with the record unchanged."""
    raw = _rec(OPENAI)
    raw["category"] = {"x": [1, None]}
    rec = normalize(raw)
    assert denormalize(rec)["category"] == {"x": [1, None]}


def test_record_schema_ships_with_the_package():
    """The input JSON Schema is a packaged file and itself a valid JSON Schema."""
    import jsonschema

    schema = record_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["required"] == ["messages"]


def test_fixture_records_round_trip(fixture_records):
    """Every bundled record normalises and is written back unchanged."""
    for raw in fixture_records[:50]:
        assert _json.canonical(denormalize(normalize(raw))) == _json.canonical(raw)


def test_xlam_layout_is_converted():
    """APIGen/xLAM rows (query, tools and answers as JSON strings) become messages with tool calls."""
    raw = {"id": 7, "query": "Weather in Paris?",
           "tools": json.dumps([{"name": "get_weather", "description": "d",
                                 "parameters": {"city": {"type": "str", "description": "c"}}}]),
           "answers": json.dumps([{"name": "get_weather", "arguments": {"city": "Paris"}}])}
    rec = normalize(raw)
    assert rec["messages"][0] == {"role": "user", "content": "Weather in Paris?"}
    assert rec["messages"][1]["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": {"city": "Paris"}}
    assert any("xLAM" in n for n in rec["notes"])


@pytest.mark.parametrize("params,expected", [
    # xLAM rows whose parameters are named like schema keywords (live_giveaways_by_type has a 'type' parameter)
    ({"type": {"description": "Kind of giveaway.", "type": "str", "default": "game"}},
     {"type": "object", "properties": {"type": {"description": "Kind of giveaway.", "type": "string", "default": "game"}},
      "required": []}),
    ({"properties": {"type": "Dict[str, Any]", "description": "Fields to set."}, "id": {"type": "int"}},
     {"type": "object", "properties": {"properties": {"type": "object", "description": "Fields to set."},
                                       "id": {"type": "integer"}}, "required": ["properties", "id"]}),
    # real JSON Schemas stay schemas, with or without a type
    ({"properties": {"type": {"type": "string"}}}, {"type": "object", "properties": {"type": {"type": "string"}}}),
    ({"type": "object", "properties": {"q": {"type": "string"}}}, {"type": "object", "properties": {"q": {"type": "string"}}}),
])
def test_xlam_parameter_maps_with_keyword_names(params, expected):
    """A bare xLAM parameter map is read as properties even when a parameter is called 'type' or 'properties'."""
    rec = normalize({"messages": [{"role": "user", "content": "x"}], "tools": [{"name": "f", "parameters": params}]})
    assert rec["tools"][0]["parameters"] == expected


def test_sharegpt_layout_is_converted():
    """ShareGPT conversations with function_call/observation turns become messages."""
    raw = {"conversations": [{"from": "human", "value": "hi"},
                             {"from": "function_call", "value": '{"name": "f", "arguments": {"x": 1}}'},
                             {"from": "observation", "value": "ok"},
                             {"from": "gpt", "value": "done"}],
           "tools": '[{"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}}]'}
    rec = normalize(raw)
    roles = [m["role"] for m in rec["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert rec["messages"][2]["tool_call_id"] == rec["messages"][1]["tool_calls"][0]["id"]
    from hsa.invariants import check_record

    assert check_record(rec) == []


def test_bare_parameter_maps_become_properties():
    """xLAM-style parameters (a bare map of name -> {type, default}) become an object schema."""
    raw = _rec([{"name": "get_weather", "parameters": {
        "city": {"type": "str", "description": "c"}, "days": {"type": "int, optional", "default": 1}}}])
    rec = normalize(raw)
    params = rec["tools"][0]["parameters"]
    assert params["properties"]["city"] == {"type": "string", "description": "c"}
    assert params["properties"]["days"]["type"] == "integer"
    assert params["required"] == ["city"]


def test_whole_tokens_treat_dotted_names_as_one_token():
    """Renaming read_file leaves fs.read_file alone, and a sentence-final period is not part of a token."""
    from hsa.names import find_tokens, replace_tokens

    text = "Call read_file. Then fs.read_file, read_file_v2 or (read_file)."
    assert replace_tokens(text, {"read_file": "readFile"}) == "Call readFile. Then fs.read_file, read_file_v2 or (readFile)."
    assert find_tokens(text, ["read_file"]) == ["read_file", "read_file"]
    assert replace_tokens("use math.factorial.", {"math.factorial": "fact"}) == "use fact."
