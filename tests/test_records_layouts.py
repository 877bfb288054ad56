"""Public dataset layouts read without loss: ShareGPT corner cases, xLAM, BFCL, top-level system, tool lists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hsa import records as R
from hsa.records import RecordError, normalize
from hsa.invariants import check_record

QUOTE_TOOL = '[{"name": "get_random_quote", "description": "Get a random quote", "parameters": {}}]'


def _calls(rec):
    return [c["function"] for m in rec["messages"] for c in m.get("tool_calls") or []]


@pytest.mark.parametrize("value", ["null", '"get_random_quote"', "[1]", '{"arguments": {}}'])
def test_sharegpt_function_call_that_is_no_call_is_a_reject_not_a_crash(value):
    """A function_call turn holding null, a string or a nameless object is a clear RecordError."""
    raw = {"conversations": [{"from": "human", "value": "Quote?"}, {"from": "function_call", "value": value},
                             {"from": "gpt", "value": "x"}], "tools": QUOTE_TOOL}
    with pytest.raises(RecordError, match=r"conversations\[1\] \(function_call\) holds .*expected") as e:
        normalize(raw)
    assert e.value.reason == "bad function_call"


def test_sharegpt_calls_with_parameters_keep_their_arguments():
    """glaive-style {"name", "parameters"} calls keep their arguments."""
    raw = {"conversations": [{"from": "human", "value": "Weather?"},
                             {"from": "function_call", "value": '{"name": "w", "parameters": {"city": "Tokyo"}}'},
                             {"from": "observation", "value": "sunny"}],
           "tools": '[{"name": "w", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]'}
    assert _calls(normalize(raw)) == [{"name": "w", "arguments": {"city": "Tokyo"}}]


def test_sharegpt_parallel_results_pair_with_their_calls_in_order():
    """Two calls in one function_call turn, then two observations: each result gets its call's id and name."""
    calls = [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}]
    raw = {"conversations": [{"from": "human", "value": "both"}, {"from": "function_call", "value": json.dumps(calls)},
                             {"from": "observation", "value": "A"}, {"from": "observation", "value": "B"},
                             {"from": "gpt", "value": "done"}],
           "tools": [{"name": "a", "parameters": {}}, {"name": "b", "parameters": {}}]}
    rec = normalize(raw)
    tools = [m for m in rec["messages"] if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["name"], m["content"]) for m in tools] == [("call_1", "a", "A"), ("call_2", "b", "B")]
    assert check_record(rec) == []


def test_xlam_answers_are_checked_and_empty_answers_noted():
    """An answer without a name is named as answers[i]; empty answers leave the query alone, with a note."""
    tools = '[{"name": "peers", "parameters": {"symbol": {"type": "str", "default": ""}}}]'
    with pytest.raises(RecordError, match=r"answers\[0\] is \"peers\"; expected"):
        normalize({"query": "q", "tools": tools, "answers": '["peers"]'})
    rec = normalize({"query": "Nothing to call here", "tools": tools, "answers": "[]"})
    assert rec["messages"] == [{"role": "user", "content": "Nothing to call here"}]
    assert any("'answers' is empty" in n for n in rec["notes"])


def test_a_bfcl_multi_turn_row_without_its_functions_says_what_to_add():
    """BFCL's multi-turn rows name their tool classes, not their functions: a reject that names the classes and
    the fix, not the generic 'missing messages'; with the functions added the row reads (docs/format.md)."""
    row = {"id": "multi_turn_base_0", "question": [[{"role": "user", "content": "Go to the workspace."}], []],
           "initial_config": {"GorillaFileSystem": {}}, "path": [], "involved_classes": ["GorillaFileSystem"]}
    with pytest.raises(RecordError, match=r"GorillaFileSystem.*multi_turn_func_doc") as e:
        normalize(row)
    assert e.value.reason == "bfcl multi-turn row without functions"
    cd = {"name": "cd", "description": "Change directory.",
          "parameters": {"type": "dict", "properties": {"folder": {"type": "string"}}, "required": ["folder"]}}
    rec = normalize({**row, "function": [cd]})
    assert [m["content"] for m in rec["messages"]] == ["Go to the workspace."]
    assert [t["name"] for t in rec["tools"]] == ["cd"]
    assert rec["extra"]["initial_config"] == {"GorillaFileSystem": {}}  # written back at the top level by hsa export


def test_the_bfcl_multi_turn_recipe_of_the_format_page_runs(tmp_path, monkeypatch):
    """docs/format.md's recipe, BFCL's own loader, run on the bfcl-eval package's data: every row it writes reads,
    multi-turn, memory (the backend's class) and web-search rows alike, with the functions of its classes as its
    tools. (The earlier recipe looked the classes up itself and failed on memory rows: ``MemoryAPI`` has no
    function file, only its backends do.)"""
    pytest.importorskip("bfcl_eval")
    page = (Path(__file__).resolve().parents[1] / "docs" / "format.md").read_text(encoding="utf-8")
    section = page.split("### BFCL multi-turn rows", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/format.md", "exec"), {"__name__": "format_md"})
    rows = [json.loads(line) for line in (tmp_path / "bfcl.jsonl").read_text().splitlines()]
    memory = [r for r in rows if r["involved_classes"] == ["MemoryAPI_kv"]]
    assert len(rows) >= 100 and memory and any(r["id"].startswith("web_search") for r in rows)
    for row in rows[:30] + memory[:10] + rows[-10:]:
        rec = normalize(row)
        names = {t["name"] for t in rec["tools"]}
        assert names == {f["name"] for f in row["function"]}
        assert len(rec["messages"]) == sum(len(turn) for turn in row["question"])


def test_bfcl_question_function_rows_are_read():
    """BFCL rows: the turns of 'question' become messages, 'function' the tools (BFCL's 'dict' type read)."""
    raw = {"id": "simple_0", "question": [[{"role": "user", "content": "Find the area of a triangle with a base of "
                                                                          "10 units and height of 5 units."}]],
           "function": [{"name": "calculate_triangle_area", "description": "Calculate the area of a triangle.",
                         "parameters": {"type": "dict", "properties": {
                             "base": {"type": "integer", "description": "The base of the triangle."},
                             "height": {"type": "integer", "description": "The height of the triangle."},
                             "unit": {"type": "string", "description": "The unit of measure (defaults to 'units')."}},
                             "required": ["base", "height"]}}]}
    rec = normalize(raw)
    assert rec["id"] == "simple_0" and [m["role"] for m in rec["messages"]] == ["user"]
    assert rec["tools"][0]["parameters"]["type"] == "object" and rec["tools"][0]["parameters"]["required"] == ["base", "height"]
    assert any("BFCL" in n for n in rec["notes"])


def test_top_level_system_becomes_the_system_message():
    """A top-level 'system' (LLaMA-Factory, Anthropic, ToolACE) is moved into the messages, so renames reach it."""
    msgs = [{"role": "user", "content": "hi"}]
    rec = normalize({"system": "You can call get_weather.", "messages": msgs})
    assert rec["messages"][0] == {"role": "system", "content": "You can call get_weather."}
    assert "system" not in rec["extra"]
    blocks = normalize({"system": [{"type": "text", "text": "A"}, {"type": "text", "text": "B"}], "messages": msgs})
    assert blocks["messages"][0] == {"role": "system", "content": "A\n\nB"}
    same = normalize({"system": "S", "messages": [{"role": "system", "content": "S"}, *msgs]})
    assert [m["role"] for m in same["messages"]] == ["system", "user"] and "system" not in same["extra"]
    other = normalize({"system": "T", "messages": [{"role": "system", "content": "S"}, *msgs]})
    assert other["extra"]["system"] == "T" and any("kept as an extra key" in n for n in other["notes"])


def test_tool_lists_with_json_strings_and_gemini_groups():
    """Tools given one by one as JSON text, and Gemini functionDeclarations groups, are read as tools."""
    one = {"name": "a", "parameters": {"type": "object", "properties": {}}}
    rec = normalize({"messages": [{"role": "user", "content": "x"}],
                     "tools": [json.dumps(one), {"functionDeclarations": [{"name": "b"}, {"name": "c"}]}]})
    assert [t["name"] for t in rec["tools"]] == ["a", "b", "c"]
    assert any("tools[0] was a JSON string" in n for n in rec["notes"])
    assert any("functionDeclarations unwrapped (2 tools)" in n for n in rec["notes"])
    with pytest.raises(RecordError, match=r"tools\[0\] is a string that is not JSON"):
        normalize({"messages": [{"role": "user", "content": "x"}], "tools": ["get_weather"]})


def test_required_next_to_the_parameters_moves_into_them():
    """When2Call puts 'required' beside 'parameters': it becomes the schema's required list."""
    tool = {"name": "get_company_by_domain", "description": "d", "parameters": {"type": "dict", "properties": {
        "domain": {"description": "The web domain.", "type": "str"}}}, "required": ["domain"]}
    rec = normalize({"messages": [{"role": "user", "content": "x"}], "tools": [tool]})
    t = rec["tools"][0]
    assert t["parameters"]["required"] == ["domain"] and "required" not in t["extra"]


@pytest.mark.parametrize("typ,expected", [
    ("List[int]", {"type": "array", "items": {"type": "integer"}}),
    ("List[Dict[str, Any]]", {"type": "array", "items": {"type": "object"}}),
    ("Tuple[float, float]", {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}]}),
    ("Dict[str, int]", {"type": "object", "additionalProperties": {"type": "integer"}}),
    ("Union[int, float]", {"type": ["integer", "number"]}),
    ("Optional[List[str]]", {"type": ["array", "null"], "items": {"type": "string"}}),
    ("string[]", {"type": "array", "items": {"type": "string"}}),
    ("float64", {"type": "number"}),
    ("uint32", {"type": "integer"}),
    ("List[Callable]", {"type": "array"}),
    ("Union[int, float], optional", {"type": ["integer", "number"]}),
    ("Dict[str, int], optional", {"type": "object", "additionalProperties": {"type": "integer"}}),
])
def test_generic_type_strings_keep_their_element_types(typ, expected):
    """xLAM's generic type strings become element schemas, not bare arrays."""
    out = R.normalize_schema({"type": "object", "properties": {"p": {"type": typ}}})
    assert out["properties"]["p"] == expected


def test_optional_of_a_type_admits_null_and_a_type_name_may_stand_for_a_schema():
    """``Optional[int]`` is ``Union[int, None]``: a call passing null (Python's default of such a parameter)
    validates, as it does for ``int | None``; before, the type was 'integer' and the call a reject. A bare type name
    where a schema belongs (``"items": "string"``, a property given as ``"string"``) is read as that type; before,
    the first made the schema unusable (every call a reject) and the second accepted any value."""
    notes = []
    out = R.normalize_schema({"type": "object", "required": ["a", "b", "c"], "properties": {
        "a": {"type": "Optional[int]"}, "b": {"type": "array", "items": "string"}, "c": "List[int]"}}, "p", notes)
    assert out == {"type": "object", "required": ["b", "c"], "properties": {
        "a": {"type": ["integer", "null"]}, "b": {"type": "array", "items": {"type": "string"}},
        "c": {"type": "array", "items": {"type": "integer"}}}}
    assert "p.a: type 'Optional[int]' -> ['integer', 'null']" in notes
    assert 'p.b.items: schema \'string\' (a type name) read as {"type":"string"}' in notes
    assert R.normalize_schema({"type": "object", "properties": {"x": "no such type"}})["properties"]["x"] == {}


@pytest.mark.parametrize("enum,values,taken,refused", [
    ("a, b", ["a", "b"], "a", ", "), ("['x', 'y']", ["x", "y"], "y", "['x'"), ("low|high", ["low", "high"], "high", "|"),
    ("only", ["only"], "only", "on")])
def test_an_enum_written_as_one_string_is_read_as_its_values(enum, values, taken, refused):
    """JSON Schema's enum is a list; given a string, validation tested substrings ("a, b" took ", "). The string is
    read as the list it spells, its comma- or bar-separated items, or itself, and noted."""
    notes = []
    out = R.normalize_schema({"type": "object", "properties": {"p": {"type": "string", "enum": enum}}}, "w", notes)
    assert out["properties"]["p"]["enum"] == values and any("(a string) read as" in n for n in notes)
    tool = {"name": "f", "parameters": {"type": "object", "properties": {"p": {"type": "string", "enum": enum}}}}

    def verdicts(value):
        rec = normalize({"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": None,
                         "tool_calls": [{"id": "c", "type": "function", "function": {
                             "name": "f", "arguments": json.dumps({"p": value})}}]}], "tools": [tool]})
        return [v.reason for v in check_record(rec)]

    assert verdicts(taken) == [] and verdicts(refused) == ["arguments do not validate"]


def test_draft4_boolean_exclusive_bounds_are_read_as_draft4_meant_them():
    """OpenAPI 3.0 and draft 4 write ``minimum: 0, exclusiveMinimum: true``. Read as today's numeric keyword, true
    was the bound 1, so a call passing 1 was refused ("1 is less than or equal to the minimum of True"). It becomes
    ``exclusiveMinimum: 0``; a false flag (the default) goes."""
    schema = {"type": "object", "properties": {
        "p": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
        "q": {"type": "integer", "maximum": 10, "exclusiveMaximum": False}}}
    notes = []
    out = R.normalize_schema(schema, "w", notes)
    assert out["properties"] == {"p": {"type": "number", "minimum": 0, "exclusiveMinimum": 0},
                                 "q": {"type": "integer", "maximum": 10}}
    assert "w.p: exclusiveMinimum: true (draft 4) -> exclusiveMinimum: 0" in notes

    def verdicts(p, q):
        rec = normalize({"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": None,
                         "tool_calls": [{"id": "c", "type": "function", "function": {
                             "name": "f", "arguments": json.dumps({"p": p, "q": q})}}]}],
                         "tools": [{"name": "f", "parameters": schema}]})
        return [v.reason for v in check_record(rec)]

    assert verdicts(1, 10) == [] and verdicts(0, 10) == ["arguments do not validate"]


def test_optional_markers_on_unions_and_generics_leave_required():
    """', optional' after a Union or a generic type still makes the parameter optional."""
    out = R.normalize_schema({"type": "object", "required": ["a", "b", "c"], "properties": {
        "a": {"type": "Union[int, float], optional"}, "b": {"type": "List[int], optional"}, "c": {"type": "int"}}})
    assert out["required"] == ["c"]


def test_openapi_nullable_admits_null():
    """OpenAPI 3.0's ``nullable: true`` (Gemini's function declarations, tools made from OpenAPI specs; Swagger's
    ``x-nullable``) means a call may pass null. JSON Schema ignores the keyword, so such a call was rejected
    ("arguments do not validate"). The validator now reads it (a null type, a null in the enum, a null
    alternative); the schema stays as written, so a tool in Gemini's dialect reads back as it was."""
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "required": ["city"], "properties": {
            "city": {"type": "string"}, "days": {"type": "integer", "nullable": True},
            "unit": {"type": "string", "enum": ["c", "f"], "nullable": True},
            "when": {"anyOf": [{"type": "string"}, {"type": "integer"}], "x-nullable": True}}}}}

    def verdicts(args):
        rec = normalize({"messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
                "name": "get_weather", "arguments": json.dumps(args)}}]}], "tools": [tool]})
        assert rec["tools"][0]["parameters"] == tool["function"]["parameters"]
        return [v.reason for v in check_record(rec)]

    assert verdicts({"city": "Paris", "days": None, "unit": None, "when": None}) == []
    assert verdicts({"city": None}) == ["arguments do not validate"]  # not nullable
    assert verdicts({"city": "Paris", "unit": "k"}) == ["arguments do not validate"]  # nullable, still an enum
    # a parameter called "nullable" is a name, not the keyword
    from hsa.invariants import validator_for

    named = {"type": "object", "properties": {"nullable": True, "type": {"type": "string"}}}
    assert not validator_for(named).is_valid({"type": None})


def test_a_bare_parameter_map_may_have_an_items_parameter():
    """An xLAM parameter called 'items' is a parameter, not the array keyword."""
    rec = normalize({"messages": [{"role": "user", "content": "x"}], "tools": [{"name": "order", "parameters": {
        "items": {"type": "List[str]", "description": "Products."}, "n": {"type": "int"}}}]})
    params = rec["tools"][0]["parameters"]
    assert params["properties"]["items"] == {"type": "array", "items": {"type": "string"}, "description": "Products."}
    assert params["required"] == ["items", "n"]


def test_a_layout_the_reader_does_not_foresee_is_one_reject(monkeypatch):
    """An unexpected error inside the reader becomes RecordError('unreadable record'), never a crash."""
    from hsa.formats import dispatch

    def boom(raw, conv):
        raise AttributeError("'str' object has no attribute 'get'")

    monkeypatch.setattr(dispatch, "convert_sharegpt", boom)
    with pytest.raises(RecordError, match="AttributeError") as e:
        normalize({"conversations": []})
    assert e.value.reason == "unreadable record"


def test_augment_counts_an_unreadable_line_as_rejected(tmp_path):
    """A run with a broken ShareGPT row finishes: the good row is written, the bad one is in rejects.jsonl."""
    from hsa.cli import main

    good = {"conversations": [{"from": "human", "value": "Quote?"},
                              {"from": "function_call", "value": '{"name": "get_random_quote", "arguments": {}}'},
                              {"from": "observation", "value": "{\"quote\": \"x\"}"}, {"from": "gpt", "value": "x"}],
            "tools": QUOTE_TOOL}
    bad = {"conversations": [{"from": "human", "value": "Quote?"}, {"from": "function_call", "value": "null"}],
           "tools": QUOTE_TOOL}
    inp = tmp_path / "in.jsonl"
    inp.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    assert main(["augment", str(inp), "--out", str(tmp_path / "out"), "--variants", "2", "--quiet"]) == 0
    rejects = [json.loads(x) for x in (tmp_path / "out" / "rejects.jsonl").read_text().splitlines()]
    assert [(r["line"], r["reason"]) for r in rejects] == [(2, "bad function_call")]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["counts"]["input_records"] == 2 and manifest["counts"]["rejected"] == 1


_WEATHER = {"name": "get_weather", "description": "Get the weather in a city", "parameters": {
    "type": "object", "properties": {"city": {"type": "string", "description": "The city"}}, "required": ["city"]}}


def _smoltalk_row(**kwargs) -> dict:
    """A row of smoltalk2's SFT split (SmolLM3's data): the tools are in chat_template_kwargs.xml_tools, one JSON
    text each, and the calls are Hermes tags in the assistant's text."""
    return {"messages": [
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'},
        {"role": "tool", "content": '{"temp": 21}'},
        {"role": "assistant", "content": "It is 21 degrees in Paris."}],
        "chat_template_kwargs": {"custom_instructions": "", "enable_thinking": False, "python_tools": None,
                                 "xml_tools": [json.dumps(_WEATHER)], **kwargs},
        "source": "xlam_traces_no_think"}


def test_tools_in_chat_template_kwargs_are_the_rows_tools(tmp_path):
    """smoltalk2's rows keep their tools in chat_template_kwargs.xml_tools, which trl passes to the chat template.
    Before, the row was an 'undefined tool' reject. The tools now move to 'tools' (noted), so that a variant's rows
    carry only the variant's tools: left in the keywords, the template would render the source's tool list beside
    renamed calls."""
    from hsa.cli import main

    rec = normalize(_smoltalk_row())
    assert [t["name"] for t in rec["tools"]] == ["get_weather"] and check_record(rec) == []
    assert rec["extra"]["chat_template_kwargs"] == {"custom_instructions": "", "enable_thinking": False,
                                                    "python_tools": None}
    assert any("chat_template_kwargs.xml_tools moved to 'tools' (1 tool)" in n for n in rec["notes"])
    inp = tmp_path / "in.jsonl"
    inp.write_text(json.dumps(_smoltalk_row()) + "\n", encoding="utf-8")
    assert main(["augment", str(inp), "--out", str(tmp_path / "out"), "--variants", "4", "--recipe", "tools",
                 "--quiet"]) == 0
    assert main(["export", str(tmp_path / "out"), "--out", str(tmp_path / "rows.jsonl")]) == 0
    rows = [json.loads(x) for x in (tmp_path / "rows.jsonl").read_text().splitlines()]
    renamed = [r for r in rows if "get_weather" not in {t["name"] for t in r["tools"]}]
    assert len(rows) == 4 and renamed
    for row in renamed:
        assert "get_weather" not in json.dumps(row["chat_template_kwargs"]) + json.dumps(row["messages"])
        assert row["chat_template_kwargs"]["enable_thinking"] is False and row["source"] == "xlam_traces_no_think"
    # invariant 3 (closure): the rows read back as input; invariant 8 (inversion): canonicalized, every variant
    # gives back the source as hsa reads it
    assert main(["validate", str(tmp_path / "rows.jsonl"), "--no-exec-hooks"]) == 0
    assert main(["canonicalize", str(tmp_path / "out"), "--out", str(tmp_path / "canon.jsonl")]) == 0
    canon = [normalize(json.loads(x)) for x in (tmp_path / "canon.jsonl").read_text().splitlines()]
    assert len(canon) == 4 and all(c["messages"] == rec["messages"] and c["tools"] == rec["tools"] for c in canon)


def test_custom_instructions_in_chat_template_kwargs_are_the_system_message():
    """SmolLM3's custom_instructions is the system prompt (its template renders a system message's text in the same
    place). Kept in the keywords, a tool it names would keep its old name in a variant; it becomes the system
    message of a row that has none, and the rows' variants rename it with the tool. A row with a system message
    keeps both as they were (the template renders the message)."""
    row = _smoltalk_row(custom_instructions="Always call get_weather before answering.")
    rec = normalize(row)
    assert rec["messages"][0] == {"role": "system", "content": "Always call get_weather before answering."}
    assert "custom_instructions" not in rec["extra"]["chat_template_kwargs"]
    with_system = {**row, "messages": [{"role": "system", "content": "Be brief."}, *row["messages"]]}
    kept = normalize(with_system)
    assert kept["messages"][0]["content"] == "Be brief." and len(kept["messages"]) == len(with_system["messages"])
    assert kept["extra"]["chat_template_kwargs"]["custom_instructions"].startswith("Always call")


def test_tools_in_chat_template_kwargs_beside_other_tools_are_refused():
    """A row whose 'tools' and chat_template_kwargs list different tools is refused, naming both: a template given
    both renders one of them. The same list in both places is read once."""
    with pytest.raises(RecordError, match="chat_template_kwargs.xml_tools") as e:
        normalize({**_smoltalk_row(), "tools": [{"name": "other", "parameters": {"type": "object"}}]})
    assert e.value.reason == "conflicting tools"
    assert [t["name"] for t in normalize({**_smoltalk_row(), "tools": [_WEATHER]})["tools"]] == ["get_weather"]
    with pytest.raises(RecordError, match=r"chat_template_kwargs.xml_tools\[0\] is a string that is not JSON"):
        normalize(_smoltalk_row(xml_tools=["{not json"]))


_FLIGHTS = {"name": "search_flights", "description": "Search flights", "parameters": {"type": "object", "properties": {
    "origin": {"type": "string"}, "destination": {"type": "string"}}, "required": ["origin", "destination"]}}


def _system_tools_row(system: str, tools: list | None) -> dict:
    row = {"messages": [
        {"role": "system", "content": system}, {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "21C"}, {"role": "assistant", "content": "21C."}]}
    return row if tools is None else {**row, "tools": tools}


def test_tool_definitions_listed_in_the_system_text_of_a_row_with_tools_stay_and_are_noted():
    """A row with 'tools' whose system message also lists them as JSON keeps its text (the listing is prompt text
    that renders the tools: prompt.tool_format varies its notation), and is noted: tool transforms rename the
    names in it but do not re-render it."""
    tools = [{"type": "function", "function": _WEATHER}, {"type": "function", "function": _FLIGHTS}]
    listed = "You have access to the following functions. Use them if required -\n" + json.dumps(
        [_WEATHER, _FLIGHTS], indent=2) + "\nAnswer briefly."
    rec = normalize(_system_tools_row(listed, tools))
    assert rec["messages"][0]["content"] == listed and check_record(rec) == []
    assert any(n.startswith("messages[0] (system) lists tools as JSON; kept as prompt text") for n in rec["notes"])


def test_tool_definitions_in_the_system_text_of_a_row_without_tools_are_its_tools():
    """A row with calls and no 'tools', whose definitions are JSON in its system text (a list, or Glaive's objects
    one after another), was an 'undefined tool' reject: the definitions are its tools, cut from the text. JSON that
    only looks like a tool (naming nothing the row defines or calls) stays text."""
    rec = normalize(_system_tools_row("Functions:\n" + json.dumps([_WEATHER]), None))
    assert [t["name"] for t in rec["tools"]] == ["get_weather"] and rec["messages"][0]["content"] == "Functions:"
    assert check_record(rec) == []
    glaive = "Use these functions -\n" + json.dumps(_WEATHER, indent=4) + "\n\n" + json.dumps(_FLIGHTS, indent=4)
    both = normalize(_system_tools_row(glaive, None))
    assert both["messages"][0]["content"] == "Use these functions -"
    assert [t["name"] for t in both["tools"]] == ["get_weather", "search_flights"]
    example = 'Reply like {"name": "Alice", "parameters": {"age": 3}}.'
    kept = normalize(_system_tools_row(example, [{"type": "function", "function": _WEATHER}]))
    assert kept["messages"][0]["content"] == example


def test_hsa_records_keep_their_tag_texts_but_content_blocks_are_read():
    """A record with hsa keys: a <tools> block in its system text is harness text (kept); tool_use blocks are calls."""
    tools_text = '<tools>\n[{"name": "get", "parameters": {"type": "object", "properties": {}}}]\n</tools>'
    rec = normalize({"messages": [{"role": "system", "content": tools_text}, {"role": "user", "content": "hi"}],
                     "skills": [{"name": "s", "description": "d", "content": "c"}]})
    assert rec["messages"][0]["content"] == tools_text and rec["tools"] == []
    blocks = normalize({"skills": [{"name": "s", "description": "d", "content": "c"}],
                        "tools": [{"name": "get", "input_schema": {"type": "object", "properties": {}}}],
                        "messages": [{"role": "user", "content": "hi"},
                                     {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "get",
                                                                        "input": {}}]},
                                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                                   "content": "ok"}]}]})
    assert blocks["messages"][1]["tool_calls"][0]["function"] == {"name": "get", "arguments": {}}
    assert blocks["messages"][2]["role"] == "tool" and blocks["messages"][2]["tool_call_id"] == "t1"


@pytest.mark.parametrize("params", [
    [{"name": "city", "type": "str", "description": "the city", "required": True}, {"name": "unit", "type": "string"}],
    {"type": "object", "properties": [{"name": "city", "type": "string", "description": "the city", "required": True},
                                      {"name": "unit", "type": "string"}]},
], ids=["parameter-list", "properties-list"])
def test_parameters_listed_as_objects_become_properties(params):
    """Parameters given as a list of {"name", "type", "required"} objects are read by name, with required kept."""
    row = {"messages": [{"role": "user", "content": "weather?"},
                        {"role": "assistant", "content": "", "tool_calls": [
                            {"id": "c1", "type": "function", "function": {"name": "w", "arguments": {"unit": "C"}}}]}],
           "tools": [{"name": "w", "description": "weather", "parameters": params}]}
    record = normalize(row)
    assert record["tools"][0]["parameters"] == {
        "type": "object", "properties": {"city": {"type": "string", "description": "the city"},
                                         "unit": {"type": "string"}}, "required": ["city"]}
    assert [v.reason for v in check_record(record)] == ["arguments do not validate"]  # city is required


def test_required_given_as_a_string():
    """``"required": "city"`` (or "a, b") naming declared properties is read as the list, not dropped."""
    schema = R.normalize_schema({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
                               "required": "a, b"})
    assert schema["required"] == ["a", "b"]
    assert R.normalize_schema({"type": "object", "properties": {"a": {}}, "required": "zzz"})["required"] == []


@pytest.mark.parametrize("key", ["input_parameters", "params"])
def test_parameter_schema_under_another_key(key):
    """API-Bank's input_parameters (a bare map) and 'params' are read as the tool's parameters, other keys kept."""
    tool = {"name": "w", "description": "weather", key: {"city": {"type": "str", "description": "the city"}},
            "output_parameters": {"temp": {"type": "int"}}}
    row = {"messages": [{"role": "user", "content": "weather?"},
                        {"role": "assistant", "content": "", "tool_calls": [
                            {"id": "c1", "type": "function", "function": {"name": "w", "arguments": {"city": "Oslo"}}}]}],
           "tools": [tool]}
    record = normalize(row)
    assert record["tools"][0]["parameters"]["properties"] == {"city": {"type": "string", "description": "the city"}}
    assert record["tools"][0]["extra"] == {"output_parameters": {"temp": {"type": "int"}}}
    assert f"tools[0] 'w': '{key}' read as the parameters" in record["notes"]
    assert check_record(record) == []


@pytest.mark.parametrize("key", ["conversation", "dialogue", "turns"])
def test_turn_lists_under_other_names(key):
    """A role/content turn list under another name is read as messages; from/value turns as ShareGPT."""
    record = normalize({key: [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]})
    assert [m["role"] for m in record["messages"]] == ["user", "assistant"]
    assert f"'{key}' read as messages" in record["notes"] and key not in record["extra"]
    sharegpt = normalize({key: [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]})
    assert [m["content"] for m in sharegpt["messages"]] == ["hi", "hello"]


CHATML = ("<|im_start|>system\nYou are a function calling AI model. <tools> {\"type\": \"function\", \"function\": "
          "{\"name\": \"get_weather\", \"description\": \"Weather\", \"parameters\": {\"type\": \"object\", "
          "\"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}} </tools><|im_end|>\n"
          "<|im_start|>user\nWeather in Oslo?<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{\"name\": "
          "\"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call><|im_end|>\n<|im_start|>tool\n"
          "<tool_response>\n{\"temp\": -3}\n</tool_response><|im_end|>\n<|im_start|>assistant\nIt is -3.<|im_end|>\n")


def test_rendered_chatml_text_is_read_back():
    """A row with only the rendered ChatML text becomes messages, and the Hermes tags in it tools and calls."""
    record = normalize({"text": CHATML})
    assert [m["role"] for m in record["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    assert record["messages"][2]["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": {"city": "Oslo"}}
    assert [t["name"] for t in record["tools"]] == ["get_weather"]
    assert record["notes"][0] == "converted from rendered ChatML text: 5 turns"
    assert check_record(record) == []
    with pytest.raises(RecordError, match="missing messages"):  # text around the markers: not a rendered chat
        normalize({"text": "The ChatML format starts turns with <|im_start|>user\nhi<|im_end|>"})


def test_roles_in_other_spellings_become_the_standard_ones():
    """human / gpt / model / USER / developer roles become user / assistant / system, noted once per record."""
    record = normalize({"messages": [{"role": "developer", "content": "be brief"}, {"role": "human", "content": "hi"},
                                     {"role": "model", "content": "hello"}, {"role": "USER", "content": "bye"}]})
    assert [m["role"] for m in record["messages"]] == ["system", "user", "assistant", "user"]
    assert record["notes"] == ["roles renamed: developer -> system (x1), human -> user (x1), model -> assistant (x1), "
                               "USER -> user (x1)"]


def test_a_notes_value_that_is_not_a_list_is_reported_not_split_into_characters():
    """A string 'notes' next to a top-level system text is a schema reject, as everywhere else, not a list of letters."""
    with pytest.raises(RecordError, match="at notes"):
        normalize({"system": "be brief", "notes": "abc", "messages": [{"role": "user", "content": "hi"}]})


_TEXT_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


def _hsa_row_with_a_text_call() -> dict:
    """An output row of hsa (``source_id``: an hsa record) with a tool list only, whose assistant text is a call
    written as Hermes tags: hsa records keep such a text as text."""
    tool = {"type": "function", "function": {"name": "get_weather", "description": "Get the weather for a city.",
                                             "parameters": {"type": "object", "properties": {
                                                 "city": {"type": "string", "description": "The city"}},
                                                 "required": ["city"]}}}
    other = {"type": "function", "function": {"name": "get_time", "description": "Get the time in a city.",
                                              "parameters": {"type": "object", "properties": {
                                                  "city": {"type": "string"}}, "required": ["city"]}}}
    return {"id": "r1", "source_id": "r0", "tools": [tool, other],
            "messages": [{"role": "user", "content": "What is the weather in Paris?"},
                         {"role": "assistant", "content": _TEXT_CALL}, {"role": "user", "content": "thanks"}]}


def test_a_record_reads_back_as_its_output_row_reads():
    """read_back reads a record as hsa's own row (which it is once written): a call written as text stays text,
    also when the record's harness has no hsa-only part. Read as a plain row, the text became a call that the
    written row does not have."""
    rec = normalize(_hsa_row_with_a_text_call())
    assert rec["messages"][1] == {"role": "assistant", "content": _TEXT_CALL}
    assert R.read_back(rec)["messages"] == rec["messages"]
    plain = R.read_row(json.dumps(R.denormalize(rec)))  # what the read-back was: the text read as a call
    assert plain["messages"][1].get("tool_calls")


def test_variants_of_an_hsa_row_with_a_text_call_restore_no_messages_and_validate(tmp_path):
    """Re-augmenting an output row whose assistant text is a tagged call: no variant's restore step patches the
    messages (no transform of the tools-only recipe changes them), every variant maps back to the source, and
    ``hsa validate`` finds no closure violation in the export."""
    from hsa.cli import main

    inp = tmp_path / "in.jsonl"
    inp.write_text(json.dumps(_hsa_row_with_a_text_call()) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    assert main(["augment", str(inp), "--out", str(out), "--variants", "4", "--workers", "1", "--quiet",
                 "--recipe", "tools"]) == 0
    assert main(["export", str(out), "--out", str(tmp_path / "rows.jsonl")]) == 0
    rows = [json.loads(x) for x in (tmp_path / "rows.jsonl").read_text().splitlines()]
    variants = [r for r in rows if r["variant"]]
    assert variants
    for row in variants:
        assert row["messages"][1]["content"].startswith("<tool_call>") and not row["messages"][1].get("tool_calls")
        for step in row["mapping"]["steps"]:
            assert "messages" not in (step.get("patch") or {}).get("o", {}), step
    assert main(["canonicalize", str(out), "--out", str(tmp_path / "back.jsonl")]) == 0
    for back in (json.loads(x) for x in (tmp_path / "back.jsonl").read_text().splitlines()):
        assert back["messages"] == _hsa_row_with_a_text_call()["messages"]
    assert main(["validate", str(tmp_path / "rows.jsonl")]) == 0


def _toucan_row(msgs, tools):
    """A row as Toucan-1.5M's SFT subset writes it: messages and tools as JSON strings, calls as messages of role
    tool_call holding a Python dict with JSON-string arguments, results as tool_response messages."""
    return {"uuid": "t-1", "subset_name": "multi-turn", "messages": json.dumps(msgs), "tools": json.dumps(tools)}


_TOUCAN_TOOLS = [
    {"type": "function", "function": {"name": "weather-get_weather", "description": "Weather of a city.",
                                      "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                     "required": ["city"]}}},
    {"type": "function", "function": {"name": "time-get_time", "description": "Time in a zone.",
                                      "parameters": {"type": "object", "properties": {"tz": {"type": "string"}},
                                                     "required": ["tz"]}}}]


def _call_msg(name, args, role="tool_call"):
    return {"role": role, "content": str({"name": name, "arguments": json.dumps(args)})}


def test_calls_and_results_written_as_roles_of_their_own_are_calls():
    """Toucan-1.5M (Qwen-Agent's roles): a run of tool_call messages is one assistant turn (with the text of the
    assistant message just before it), tool_response messages answer them in order; before, the roles were kept
    as they were and the record had no call at all (it validated, and nothing was varied or checked)."""
    msgs = [{"role": "user", "content": "Weather in Paris and time in Tokyo, then weather in Rome?"},
            {"role": "assistant", "content": "Checking both."},
            _call_msg("weather-get_weather", {"city": "Paris"}), _call_msg("time-get_time", {"tz": "Asia/Tokyo"}),
            {"role": "tool_response", "content": "14C"}, {"role": "tool_response", "content": "19:02"},
            _call_msg("weather-get_weather", {"city": "Rome"}, role="function_call"),
            {"role": "function_response", "content": "22C"},
            {"role": "assistant", "content": "Paris 14C, Tokyo 19:02, Rome 22C."}]
    rec = normalize(_toucan_row(msgs, _TOUCAN_TOOLS))
    roles = [m["role"] for m in rec["messages"]]
    assert roles == ["user", "assistant", "tool", "tool", "assistant", "tool", "assistant"]
    first, second = rec["messages"][1], rec["messages"][4]
    assert first["content"] == "Checking both."
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in first["tool_calls"]] == [
        ("weather-get_weather", {"city": "Paris"}), ("time-get_time", {"tz": "Asia/Tokyo"})]
    assert [(m["tool_call_id"], m["name"]) for m in rec["messages"] if m["role"] == "tool"] == [
        (first["tool_calls"][0]["id"], "weather-get_weather"), (first["tool_calls"][1]["id"], "time-get_time"),
        (second["tool_calls"][0]["id"], "weather-get_weather")]
    assert check_record(rec) == [] and any("call and result messages" in n for n in rec["notes"])


def test_a_call_message_that_is_no_call_and_an_unknown_role_are_rejects():
    """A call message whose content is no call object names the message; a role no reader knows is a reject that
    lists what hsa reads, instead of a record whose calls would be invisible text."""
    with pytest.raises(RecordError) as info:
        normalize(_toucan_row([{"role": "user", "content": "hi"}, {"role": "tool_call", "content": "call it"}],
                              _TOUCAN_TOOLS))
    assert info.value.reason == "bad tool call" and "messages[1] (tool_call)" in info.value.detail
    with pytest.raises(RecordError) as info:
        normalize({"messages": [{"role": "user", "content": "hi"}, {"role": "environment", "content": "ok"}]})
    assert info.value.reason == "unknown role" and "'environment'" in info.value.detail


def test_a_toucan_row_augments_with_its_calls_varied(tmp_path):
    """End to end: a tool rename reaches the calls that were tool_call messages, and results keep their call."""
    from hsa.cli import main

    msgs = [{"role": "user", "content": "Weather in Paris?"}, _call_msg("weather-get_weather", {"city": "Paris"}),
            {"role": "tool_response", "content": "14C"}, {"role": "assistant", "content": "14C in Paris."}]
    src = tmp_path / "toucan.jsonl"
    src.write_text(json.dumps(_toucan_row(msgs, _TOUCAN_TOOLS)) + "\n", encoding="utf-8")
    assert main(["augment", str(src), "--out", str(tmp_path / "out"), "--variants", "8", "--quiet"]) == 0
    assert main(["export", str(tmp_path / "out"), "--out", str(tmp_path / "rows.jsonl")]) == 0
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    renamed = 0
    for row in rows:
        tools = json.loads(row["tools"]) if isinstance(row["tools"], str) else row["tools"]  # as the source wrote them
        messages = json.loads(row["messages"]) if isinstance(row["messages"], str) else row["messages"]
        names = {(t.get("function") or t)["name"] for t in tools}
        calls = [c for m in messages for c in m.get("tool_calls") or ()]
        assert len(calls) == 1 and calls[0]["function"]["name"] in names
        renamed += calls[0]["function"]["name"] != "weather-get_weather"
    assert len(rows) == 8 and renamed > 0
    # invariant 3 (closure): the rows read back as input; invariant 8 (inversion): canonicalized, every variant
    # gives back the source record as hsa reads it
    assert main(["validate", str(tmp_path / "rows.jsonl"), "--no-exec-hooks"]) == 0
    assert main(["canonicalize", str(tmp_path / "out"), "--out", str(tmp_path / "canon.jsonl")]) == 0
    source = normalize(_toucan_row(msgs, _TOUCAN_TOOLS))
    canon = [normalize(json.loads(line)) for line in (tmp_path / "canon.jsonl").read_text().splitlines()]
    assert len(canon) == 8 and all(c["messages"] == source["messages"] and c["tools"] == source["tools"]
                                   for c in canon)


def test_sharegpt_rows_with_their_tools_listed_in_the_system_text_are_read():
    """LLaMA-Factory conversions of ToolACE (zaego123/ToolACE_data, this row verbatim) keep the tool list as JSON in
    a top-level ``system`` text and an empty ``tools: "[]"``. The system text reached the messages only after the
    ShareGPT conversion, past the reader of tool definitions in system text, so every such row was an ``undefined
    tool`` reject ("calls 'allPlayersBySeason', which is not among the tools ([])"). Now the listing is read after
    the conversion: 4 tools, cut from the text, and both calls validate."""
    raw = json.loads((Path(__file__).parent / "data" / "toolace_sharegpt_row.json").read_text(encoding="utf-8"))
    assert raw["tools"] == "[]" and "allPlayersBySeason" in raw["system"]
    rec = normalize(raw)
    assert [t["name"] for t in rec["tools"]] == ["allPlayersBySeason", "getConferences", "news/get-categories",
                                                  "Get World Cup Champions"]
    system = rec["messages"][0]
    assert system["role"] == "system" and "allPlayersBySeason" not in system["content"]
    assert system["content"].startswith("You are an expert in composing functions.")
    calls = [c["function"]["name"] for m in rec["messages"] for c in m.get("tool_calls") or ()]
    assert calls == ["allPlayersBySeason", "getConferences"]
    assert not [v for v in check_record(rec) if v.invariant == 1]
    assert any("converted tool definitions written as JSON in a system message" in n for n in rec["notes"])


def test_toolbench_answer_files_are_read():
    """ToolBench's answer files (OpenBMB/ToolBench data_example/answer/G1_answer, this one verbatim) were a
    'missing messages' reject whose detail named ToolBench among the layouts read. The kept trajectory is the last
    of ``answer_generation.train_messages`` (legacy function calling) with ``answer_generation.function`` as its
    tools; the search tree and compared candidates are left out and noted; a search that kept no path is a reject
    that says so."""
    data = Path(__file__).parent / "data"
    raw = json.loads((data / "toolbench_answer_G1.json").read_text(encoding="utf-8"))
    last = raw["answer_generation"]["train_messages"][-1]
    rec = normalize(raw)
    assert [t["name"] for t in rec["tools"]] == ["transitaire_for_transitaires", "transitaires_for_transitaires",
                                                  "Finish"]
    assert [m["role"] for m in rec["messages"]] == [{"function": "tool"}.get(m["role"], m["role"]) for m in last]
    calls = [c["function"]["name"] for m in rec["messages"] for c in m.get("tool_calls") or ()]
    assert calls == [m["function_call"]["name"] for m in last if m.get("function_call")]
    assert calls[-1] == "Finish" and not [v for v in check_record(rec) if v.invariant == 1]
    assert "tree" not in rec["extra"] and rec["extra"]["answer_generation"]["query"].startswith("Can you retrieve")
    assert "train_messages" not in rec["extra"]["answer_generation"]
    assert any("left out the search's bookkeeping: 'tree', 'compare_candidates'" in n for n in rec["notes"])
    with pytest.raises(RecordError, match="kept no path") as e:
        normalize(json.loads((data / "toolbench_answer_no_path.json").read_text(encoding="utf-8")))
    assert e.value.reason == "toolbench answer without a trajectory"
