"""Before/after tests of every tool transform on hand-written records (tests/tool_cases.py)."""

from __future__ import annotations

import json
import random

import pytest

from hsa import _json
from hsa.mapping import Mapping
from hsa.records import normalize
from hsa.renames import apply_step, canonicalize, with_restore
from hsa.testing import assert_task_preserving
from hsa.transform import Skip
from hsa.invariants import calls_of, check_record, check_variant
from tests.tool_cases import record
from transforms import tool as T
from transforms._toolschema import get_pointer, is_strict, strict_problems


def _src(name: str) -> dict:
    return normalize(record(name))


def _first(transform, src, seeds=range(40), want=None):
    """The first (seed, params, variant) where ``transform`` applies (and ``want(params)`` holds)."""
    for seed in seeds:
        params = transform.sample(src, random.Random(seed))
        if isinstance(params, dict) and (want is None or want(params)):
            out = with_restore(src, transform.apply(src, params))  # as hsa.transform.run does
            assert check_variant(src, out) == [], check_variant(src, out)
            return seed, params, out
    raise AssertionError(f"{transform.name} never applied with the wanted params")


def _tool(rec, name):
    return next(t for t in rec["tools"] if t["name"] == name)


def _calls(rec, name):
    return [c["arguments"] for c in calls_of(rec) if c["name"] == name]


def _texts(rec) -> str:
    return json.dumps([m.get("content") for m in rec["messages"]] + [rec.get("prompt"), rec.get("skills")])


# --------------------------------------------------------------------------- names


def test_rename_reaches_calls_results_texts_and_hooks():
    """tool.rename renames a tool in its schema, calls, tool results, prompt, skills, messages and hook literals."""
    src = _src("shop")
    out = T.ToolRename(styles=("camel",)).apply(src, {"renames": {"get_order_status": "getOrderStatus"}})
    assert _tool(out, "getOrderStatus")
    assert [m["name"] for m in out["messages"] if m.get("tool_call_id") == "c2"] == ["getOrderStatus"]
    assert "get_order_status" not in _texts(out) and "getOrderStatus" in out["skills"][0]["content"]
    assert "'getOrderStatus'" in out["hooks"][0]["source"]
    assert "use getOrderStatus for orders" in _tool(out, "search_products")["description"]
    assert Mapping(out["mapping"]).to_canonical(calls_of(out)[1]) == calls_of(src)[1]


def test_prefix_style_uses_only_prefixes_legal_in_the_dialect():
    """The prefix style never puts a dot into OpenAI or Anthropic names, and may for MCP."""
    t = T.ToolRename(styles=("prefix",), prefixes=("shop.", "mcp__server__"))
    for name in ("shop", "anthropic"):
        for seed in range(10):
            params = t.sample(_src(name), random.Random(seed))
            assert all(new.startswith("mcp__server__") for new in params["renames"].values())
    assert all(isinstance(t.sample(_src("mcp"), random.Random(seed)), Skip) for seed in range(5))  # fs.* has one
    plain = normalize({"messages": [], "tools": [{"name": "read_file", "inputSchema": {"type": "object"}}]})
    seen = {new[:5] for seed in range(20) for new in t.sample(plain, random.Random(seed))["renames"].values()}
    assert {"shop.", "mcp__"} <= seen


def test_dotted_mcp_names_are_renamed_whole():
    """An MCP tool named fs.read_file is renamed as one token, in calls and in another tool's description."""
    src = _src("mcp")
    out = T.ToolRename().apply(src, {"renames": {"fs.read_file": "shop.fs.read_file"}})
    assert _tool(out, "fs.write_file")["description"] == "Write a file; shop.fs.read_file it first."
    assert check_variant(src, out) == []


def test_renaming_a_name_leaves_dotted_names_that_contain_it_alone():
    """Renaming read_file never touches fs.read_file (a dotted name is one token) in schemas, calls or text."""
    raw = record("mcp")
    raw["tools"].append({"name": "read_file", "description": "Plain read; not fs.read_file.",
                         "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}})
    src = normalize(raw)
    out = T.ToolRename().apply(src, {"renames": {"read_file": "readFile"}})
    names = [t["name"] for t in out["tools"]]
    assert "readFile" in names and "fs.read_file" in names
    assert out["tools"][-1]["description"] == "Plain read; not fs.read_file."
    assert check_variant(src, out) == []


def test_param_rename_at_any_depth_in_arrays_of_objects():
    """A parameter inside an object inside an array of objects is renamed in the schema and in every item of every call."""
    src = _src("shop")
    out = T.ParamRename().apply(src, {"renames": [
        {"tool": "batch_ship", "path": ["items", "[]", "pack", "gift_wrap"], "new": "wrapAsGift"}]})
    items = _tool(out, "batch_ship")["parameters"]["properties"]["items"]["items"]
    assert "wrapAsGift" in items["properties"]["pack"]["properties"]
    assert _calls(out, "batch_ship")[0]["items"][0]["pack"] == {"wrapAsGift": True, "note_text": "hi"}
    assert Mapping(out["mapping"]).to_canonical(calls_of(out)[-1]) == calls_of(src)[-1]


def test_param_rename_refuses_the_prefix_style():
    """tool.param_rename says that prefix is a tool-name style."""
    with pytest.raises(ValueError, match="tool names only"):
        T.ParamRename(styles=("prefix",))


# --------------------------------------------------------------------------- swap_names


def test_swap_names_permutes_tools_and_mentions_at_once():
    """tool.swap_names gives each tool another's name; mentions swap simultaneously and map back."""
    src = _src("shop")
    seed, params, out = _first(T.SwapNames(), src, want=lambda p: "get_order_status" in p["tools"])
    table = params["tools"]
    assert sorted(table) == sorted(table.values()) and all(a != b for a, b in table.items())
    assert "load_skill" not in table  # the skill tool stays unless asked
    assert out["skills"][0]["content"].startswith(f"Call {table['get_order_status']} first")
    m = Mapping(out["mapping"])
    assert [m.to_canonical(c) for c in calls_of(out)] == calls_of(src)


def test_swap_params_keeps_each_schema_with_its_value():
    """Swapped parameter names carry their schema, required flag and values, and the mapping swaps them back."""
    src = _src("strict")
    out = T.SwapNames(tools=False, params_p=1.0).apply(src, {"params": [
        {"op": "params", "tool": "cancel_order", "kind": "permute", "paths": [[["order_id"], ["reason"]],
                                                                            [["reason"], ["order_id"]]]}]})
    props = _tool(out, "cancel_order")["parameters"]["properties"]
    assert props["reason"] == {"type": "string"} and props["order_id"] == {"type": ["string", "null"]}
    assert _calls(out, "cancel_order") == [{"reason": "LS9", "order_id": None}]
    assert strict_problems(_tool(out, "cancel_order")["parameters"]) == []
    back = canonicalize(out)
    assert _tool(back, "cancel_order")["parameters"] == _tool(src, "cancel_order")["parameters"]


# --------------------------------------------------------------------------- order and descriptions


def test_reorder_changes_order_only():
    """tool.reorder shuffles tools, properties and required lists; nothing else, calls and the mapping unchanged."""
    src = _src("strict")
    seed, params, out = _first(T.Reorder(), src, want=lambda p: {"tools", "properties", "required"} <= set(p))
    assert [t["name"] for t in out["tools"]] == params["tools"] != [t["name"] for t in src["tools"]]
    same = lambda rec: {t["name"]: _json.canonical(_sorted_required(t)) for t in rec["tools"]}  # noqa: E731
    assert same(out) == same(src)  # key-sorted JSON: equal up to order
    tool_name, entries = next(iter(params["required"].items()))
    ptr, order = entries[0]
    assert get_pointer(_tool(out, tool_name)["parameters"], ptr)["required"] == order
    assert [s["op"] for s in out["mapping"]] == ["restore"] and calls_of(out) == calls_of(src)  # the order, put back


def test_paraphrase_keeps_names_and_code():
    """Paraphrase swaps bank phrases but never a name or a code span."""
    text = "Get the status; use get_order_status or `Get me` for a product, e.g. LS1234."
    outs = {T.paraphrase(text, random.Random(s)) for s in range(30)}
    assert len(outs) > 3
    for o in outs:
        assert "get_order_status" in o and "`Get me`" in o and "LS1234" in o


@pytest.mark.parametrize("text,short", [
    ("Search the store catalogue by keyword, optionally within a price range; sorted by relevance.",
     "Search the store catalogue by keyword."),
    ("Get the live room's title, host, user count and the link being presented.",
     "Get the live room's title, host, user count and the link being presented."),
    ("Apply a coupon to a product and return the final price; fails when expired.",
     "Apply a coupon to a product and return the final price."),
    ("Product id such as P10231", "Product id such as P10231"),
])
def test_shorten_cuts_only_at_sentence_or_clause_breaks(text, short):
    """Shortening never leaves a fragment: it cuts at sentence or clause breaks, or not at all."""
    assert T.shorten(text, 8) == short


def test_drop_descriptions_is_separate_and_keeps_calls():
    """tool.drop_descriptions removes descriptions only; calls and the mapping are unchanged."""
    src = _src("shop")
    out = T.DropDescriptions(p=1.0).apply(src, T.DropDescriptions(p=1.0).sample(src, random.Random(0)))
    assert not any("description" in t for t in out["tools"])
    assert "Price bounds" not in json.dumps(out["tools"]) and calls_of(out) == calls_of(src)


# --------------------------------------------------------------------------- structure


def test_nest_in_a_strict_schema_stays_strict_and_maps_back():
    """tool.nest groups parameters of a strict tool into a closed, fully required object; calls nest; canonicalize undoes it."""
    src = _src("strict")
    seed, params, out = _first(T.Nest(p=1.0), src, want=lambda p: any(s["tool"] == "calculate_shipping"
                                                                      for s in p["steps"]))
    step = next(s for s in params["steps"] if s["tool"] == "calculate_shipping")
    cpath = step["container"]["path"]
    schema = _tool(out, "calculate_shipping")["parameters"]
    assert strict_problems(schema) == []
    container = schema
    for key in cpath:
        container = container["properties"][key]
    assert container["additionalProperties"] is False
    assert sorted(container["required"]) == sorted(b[-1] for _, b in step["paths"])
    value = _calls(out, "calculate_shipping")[0]
    for key in cpath:
        value = value[key]
    assert sorted(value) == sorted(a[-1] for a, _ in step["paths"])
    back = canonicalize(out)
    assert calls_of(back) == calls_of(src)
    for name in ("calculate_shipping", "list_orders", "cancel_order"):
        assert _json.canonical(_sorted_required(_tool(back, name)["parameters"])) == \
            _json.canonical(_sorted_required(_tool(src, name)["parameters"]))


def _sorted_required(schema):
    if isinstance(schema, dict):
        return {k: (sorted(v) if k == "required" else _sorted_required(v)) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_sorted_required(v) for v in schema]
    return schema


def test_flatten_nested_object():
    """tool.flatten moves price_range.max up to price_range_max; the optional object's children stay optional."""
    src = _src("shop")
    step = {"op": "params", "tool": "search_products", "kind": "regroup",
            "paths": [[["price_range", "min"], ["price_range_min"]], [["price_range", "max"], ["price_range_max"]]],
            "container": {"path": ["price_range"], "schema": {"type": "object", "description": "Price bounds",
                                                              "required": ["min"], "additionalProperties": False},
                          "required": False}}
    params = T.Flatten().sample(src, random.Random(0))
    assert step in params["steps"]
    out = T.Flatten().apply(src, {"steps": [step]})
    schema = _tool(out, "search_products")["parameters"]
    assert list(schema["properties"])[:3] == ["query", "price_range_min", "price_range_max"]
    assert schema["required"] == ["query"]
    assert _calls(out, "search_products")[0]["price_range_min"] == 0
    assert check_variant(src, with_restore(src, out)) == []  # the inverse regroups; restore puts the key order back
    back = canonicalize(out)
    assert _tool(back, "search_products")["parameters"] == _tool(src, "search_products")["parameters"]


def test_flatten_inside_arrays_of_objects():
    """An object inside the items of an array is flattened in every item of every call."""
    src = _src("shop")
    seed, params, out = _first(T.Flatten(), src, want=lambda p: any(s["tool"] == "batch_ship" for s in p["steps"]))
    step = next(s for s in params["steps"] if s["tool"] == "batch_ship")
    assert step["container"]["path"] == ["items", "[]", "pack"]
    assert _calls(out, "batch_ship")[0]["items"] == [{"sku_code": "P1-M", "pack_gift_wrap": True,
                                                       "pack_note_text": "hi"}, {"sku_code": "P1-L"}]


def test_flatten_in_strict_schema_keeps_every_property_required():
    """Flattening a required strict object gives required, closed properties."""
    src = _src("strict")
    seed, params, out = _first(T.Flatten(), src, want=lambda p: any(s["tool"] == "calculate_shipping"
                                                                    for s in p["steps"]))
    schema = _tool(out, "calculate_shipping")["parameters"]
    assert strict_problems(schema) == []
    assert {"address_city", "address_district"} <= set(schema["required"])


def test_flatten_skips_objects_a_call_passes_empty():
    """An object some call passes as {} cannot be flattened (the empty object would be lost)."""
    raw = record("anthropic")
    raw["messages"][1]["tool_calls"][0]["function"]["arguments"]["extras"] = {}
    src = normalize(raw)
    for seed in range(10):
        params = T.Flatten().sample(src, random.Random(seed))
        assert not any(s["tool"] == "get_weather" for s in params["steps"]) if isinstance(params, dict) else True


def test_regroup_steps_keep_their_kind_through_inverse():
    """Mapping.inverse keeps a step's kind and data, so canonicalize finds the record-level applier."""
    step = {"op": "params", "tool": "t", "kind": "regroup", "paths": [[["a"], ["g", "a"]]],
            "container": {"path": ["g"], "schema": {"type": "object"}, "required": True}}
    inv = Mapping([step]).inverse().steps[0]
    assert inv["kind"] == "regroup" and inv["container"] == step["container"] and inv["paths"] == [[["g", "a"], ["a"]]]


# --------------------------------------------------------------------------- distractors and required parameters


def test_distractors_are_new_legal_and_strict_where_the_record_is():
    """Distractor tools never collide, take the record's dialect and strict form; calls do not change."""
    for name in ("shop", "strict", "anthropic", "mcp"):
        src = _src(name)
        seed, params, out = _first(T.Distractors(n=(2, 3)), src)
        added = [t for t in out["tools"] if t["name"] not in {s["name"] for s in src["tools"]}]
        assert len(added) >= 2 and calls_of(out) == calls_of(src)
        for t in added:
            assert t["dialect"] == src["tools"][0]["dialect"]
            if name == "strict":
                assert is_strict(t) and strict_problems(t["parameters"]) == []


def test_distractor_params_never_go_to_strict_tools():
    """Optional distractor parameters are added to non-strict tools only, and no call uses them."""
    src = _src("strict")
    for seed in range(10):
        params = T.Distractors(n=0, params_p=1.0).sample(src, random.Random(seed))
        assert not isinstance(params, dict) or params["params"] == []
    src = _src("shop")
    seed, params, out = _first(T.Distractors(n=0, params_p=1.0), src)
    assert params["params"] and all(e["name"] not in json.dumps(calls_of(out)) for e in params["params"])


def test_add_required_fills_calls_and_the_mapping_removes_it():
    """A required one-value parameter is passed by every call with its exact type, and mapped away on the way back."""
    src = _src("strict")
    out = T.AddRequired().apply(src, {"steps": [{"op": "params", "tool": "cancel_order", "kind": "require",
                                                 "paths": [], "fill": [[["confirm"], True]],
                                                 "schema": {"type": "boolean", "enum": [True]}}]})
    call = _calls(out, "cancel_order")[0]
    assert call["confirm"] is True
    assert strict_problems(_tool(out, "cancel_order")["parameters"]) == []
    assert check_variant(src, out) == []
    assert Mapping(out["mapping"]).to_canonical(calls_of(out)[-1]) == calls_of(src)[-1]
    wrong = {"name": "cancel_order", "arguments": {**call, "confirm": 1}}  # 1 is not True: kept, so it cannot match
    assert "confirm" in Mapping(out["mapping"]).to_canonical(wrong)["arguments"]
    assert "confirm" not in _tool(canonicalize(out), "cancel_order")["parameters"]["properties"]


# --------------------------------------------------------------------------- values


def test_enum_rename_reaches_texts_for_identifier_like_values():
    """Renaming the enum value same_day rewrites it in the schema, the call, the prompt and the messages."""
    src = _src("shop")
    seed, params, out = _first(T.Values(modes=("enum",), p=1.0, styles=("screaming",)), src,
                               want=lambda p: any(s["path"] == ["speed"] for s in p["steps"]))
    step = next(s for s in params["steps"] if s["path"] == ["speed"])
    assert ["same_day", "SAME_DAY"] in step["map"]
    assert _calls(out, "batch_ship")[0]["speed"] == "SAME_DAY"
    assert "SAME_DAY shipping costs extra" in out["prompt"]["sections"][0]["body"]
    assert "same_day" not in _texts(out)
    assert calls_of(canonicalize(out)) == calls_of(src)


def test_values_never_touch_booleans_or_other_paths():
    """tool.values never re-draws a boolean default, and leaves values shared with another path alone."""
    src = _src("shop")
    for seed in range(30):
        params = T.Values(p=1.0).sample(src, random.Random(seed))
        for s in params["steps"]:
            assert s["path"] != ["in_stock"]
            for old, new in s["map"]:
                assert type(old) is type(new) and not isinstance(old, bool)


def test_hammer_default_redraw_keeps_the_type_and_bounds():
    """A used number default is re-drawn within its bounds, with its type, and the call's value maps back exactly."""
    src = _src("shop")
    seed, params, out = _first(T.Values(modes=("default",), p=1.0), src)
    step = next(s for s in params["steps"] if s["path"] == ["limit"])
    (old, new), _ = step["map"]
    assert old == 7 and type(new) is int and 1 <= new <= 50 and new != 7
    assert _tool(out, "search_products")["parameters"]["properties"]["limit"]["default"] == new
    assert _calls(out, "search_products")[0]["limit"] == new
    back = Mapping(out["mapping"]).to_canonical(calls_of(out)[0])
    assert type(back["arguments"]["limit"]) is int and back == calls_of(src)[0]


@pytest.mark.parametrize("node", [
    {"type": "integer", "minimum": 1, "maximum": 50}, {"type": "integer", "exclusiveMinimum": 0, "maximum": 9},
    {"type": "number", "minimum": -3.5, "exclusiveMaximum": 4}, {"type": "integer", "multipleOf": 5},
    {"type": "number", "multipleOf": 0.5, "minimum": 0}, {"type": ["integer", "null"], "maximum": 3},
    {"type": "integer", "minimum": 10, "maximum": 2}, {"minimum": "x"},
])
@pytest.mark.parametrize("d", [7, 2.5, -4, 0])
def test_default_redraw_draws_what_jsonschema_alone_would_accept(node, d):
    """_redraw asks the quick walk first and jsonschema where it cannot say "valid": the same draws as a redraw
    that asks jsonschema about every candidate."""
    import random

    import jsonschema

    from hsa import _json

    check = {k: v for k, v in node.items() if k in ("type", "minimum", "maximum", "exclusiveMinimum",
                                                      "exclusiveMaximum", "multipleOf")}
    v = jsonschema.Draft202012Validator(check)

    def plain(rng):
        span = max(5, abs(d))
        for _ in range(16):
            if isinstance(d, int):
                try:
                    new = rng.randint(int(node.get("minimum", d - span if d < 0 else 0)), int(node.get("maximum", d + span)))
                except (ValueError, TypeError):
                    return None
            else:
                new = float(round(d + rng.uniform(-span, span), 2))
            if not _json.strict_equal(new, d) and v.is_valid(new):
                return new
        return None

    for seed in range(20):
        try:
            want = plain(random.Random(seed))
        except Exception as exc:  # the same error from both
            with pytest.raises(type(exc)):
                T.Values._redraw(d, node, random.Random(seed))
            continue
        assert repr(T.Values._redraw(d, node, random.Random(seed))) == repr(want)


def test_default_redraw_skips_numbers_that_occur_in_text():
    """A default whose number occurs in any text is not re-drawn (the mention would be ambiguous)."""
    raw = record("shop")
    raw["messages"][1]["content"] += " Show 7 results."
    src = normalize(raw)
    for seed in range(20):
        params = T.Values(modes=("default",), p=1.0).sample(src, random.Random(seed))
        assert not isinstance(params, dict) or all(s["path"] != ["limit"] for s in params["steps"])


def test_number_values_are_never_rewritten_inside_longer_numbers():
    """Whole tokens only: renaming never turns 2010 into something else inside 20101 or a call value."""
    src = _src("shop")
    out = T.ToolRename(styles=("mask",)).apply(src, {"renames": {"batch_ship": "x2010"}})
    assert _calls(out, "x2010")[0]["ref_code"] == 2010


# --------------------------------------------------------------------------- dialect


@pytest.mark.parametrize("target,key", [("anthropic", "input_schema"), ("mcp", "inputSchema"), ("openai", "function")])
def test_dialect_renders_the_tool_list(target, key):
    """tool.dialect writes the tools in the target dialect; calls validate and map back unchanged."""
    src = _src("shop") if target != "openai" else _src("anthropic")
    out = T.Dialect(targets=(target,)).apply(src, {"target": target})
    from hsa.records import denormalize

    assert all(key in t for t in denormalize(out)["tools"])
    assert check_record(out) == [] and calls_of(out) == calls_of(src)


def test_gemini_inlines_refs_and_drops_what_gemini_does_not_read():
    """Gemini declarations: $ref inlined, no additionalProperties, oneOf/anyOf kept as anyOf, calls still validate."""
    src = _src("shop")
    out = T.Dialect(targets=("gemini",)).apply(src, {"target": "gemini"})
    text = json.dumps([t["parameters"] for t in out["tools"]])
    assert "$ref" not in text and "$defs" not in text and "additionalProperties" not in text
    cost = _tool(out, "batch_ship")["parameters"]["properties"]["cost"]
    assert cost["properties"]["currency"]["enum"] == ["CNY", "USD"]
    assert check_record(out) == []


def test_gemini_is_drawn_when_a_call_passes_null():
    """Gemini's nullable is not JSON Schema, but hsa's call check reads it (``["string", "null"]`` becomes
    ``nullable``): a record whose call passes null gets the Gemini target too, and its variant validates (before,
    the check did not read nullable, and the target was never drawn for such a record)."""
    src = _src("strict")
    params = T.Dialect(targets=("gemini",)).sample(src, random.Random(0))
    assert params == {"target": "gemini"}
    out = T.Dialect(targets=("gemini",)).apply(src, params)
    assert '"nullable": true' in json.dumps([t["parameters"] for t in out["tools"]]) and check_record(out) == []
    assert any(a is None for c in calls_of(out) for a in c["arguments"].values())


def test_dialect_skips_targets_where_names_are_illegal():
    """Dotted MCP names are illegal for OpenAI and Anthropic: only legal targets are drawn."""
    src = _src("mcp")
    assert isinstance(T.Dialect(targets=("openai", "anthropic")).sample(src, random.Random(0)), T.Skip)


# --------------------------------------------------------------------------- irrelevance


def test_irrelevance_removes_the_gold_tool_and_answers_without_a_call():
    """tool.irrelevance cuts the trajectory at a gold turn, removes its tools and marks the mapping opaque."""
    src = _src("shop")
    seed, params, out = _first(T.Irrelevance(), src)
    assert not set(params["removed"]) & {t["name"] for t in out["tools"]}
    last = out["messages"][-1]
    assert last["role"] == "assistant" and "tool_calls" not in last and last["content"] == params["reply"]
    assert len(out["messages"]) == params["turn"] + 1
    assert not Mapping(out["mapping"]).task_preserving and T.Irrelevance.task_preserving is False
    assert check_variant(src, out) == []


# --------------------------------------------------------------------------- every transform, every hand-written record


CONFIGS = {
    "rename": T.ToolRename(styles=("snake", "camel", "pascal", "kebab", "screaming", "verb", "noun", "prefix", "mask",
                                   "slight", "medium")),
    "param_rename": T.ParamRename(styles=("camel", "kebab", "verb", "noun", "mask", "slight", "medium"), p=0.9),
    "swap_names": T.SwapNames(params_p=0.7),
    "reorder": T.Reorder(),
    "describe": T.Describe(p=0.9),
    "drop_descriptions": T.DropDescriptions(),
    "nest": T.Nest(p=1.0),
    "flatten": T.Flatten(),
    "distractors": T.Distractors(params_p=0.5),
    "add_required": T.AddRequired(p=0.9),
    "values": T.Values(p=0.9),
    "dialect": T.Dialect(targets=T.DIALECTS),
    "irrelevance": T.Irrelevance(),
}


@pytest.mark.parametrize("case", ["shop", "strict", "anthropic", "mcp"])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_tool_transform_holds_every_invariant_on_hand_written_records(name, case):
    """Invariants 1-6 (hsa.testing) and strict validity hold for each transform on each hand-written record, 4 seeds."""
    for seed in range(4):
        report = assert_task_preserving(CONFIGS[name], record(case), seed)
        if report.variant is not None:
            for t in normalize(report.variant)["tools"]:
                if is_strict(t):
                    assert strict_problems(t["parameters"]) == [], (name, case, seed, t["name"])


def test_apply_step_dispatches_structural_kinds():
    """hsa.renames.apply_step carries a kind-tagged params step across a record through its registered applier."""
    src = _src("shop")
    step = {"op": "params", "tool": "get_order_status", "kind": "regroup",
            "paths": [[["order_id"], ["request", "order_id"]], [["detail"], ["request", "detail"]]],
            "container": {"path": ["request"], "schema": {"type": "object", "additionalProperties": False},
                          "required": True}}
    out = apply_step(src, step)
    assert _calls(out, "get_order_status") == [{"request": {"order_id": "LS1234", "detail": "full_history"}}]
    assert out["mapping"][-1]["op"] == "params" and check_variant(src, out) == []


# --------------------------------------------------------------------------- hooks that read arguments as a whole


@pytest.mark.parametrize("body,whole", [
    ('    args = payload["tool_input"]\n    return {"n": len(args)}\n', True),
    ('    args = payload.get("tool_input") or {}\n    for k in args:\n        pass\n    return {}\n', True),
    ('    return {"message": str(payload["tool_input"])}\n', True),
    ('    return helper(payload)\n', True),
    ('    args = payload["tool_input"]\n    return {"ok": args.get("q") and "page" in args and args["q"]}\n', False),
    ('    if payload["tool_name"] == "x" and not payload["tool_input"].get("q"):\n        return {}\n'
     '    return {"decision": "allow"}\n', False),
])
def test_whole_input_reads_are_detected(body, whole):
    """A hook that counts, iterates, prints or passes on the tool input reads it as a whole; keyed reads do not."""
    from transforms._toolhooks import reads_whole_input

    assert reads_whole_input("def check(payload):\n" + body, "check") is whole


def test_structural_transforms_skip_records_whose_hooks_read_inputs_whole():
    """nest, flatten, add_required, values and parameter swaps skip when a tool hook reads inputs as a whole."""
    raw = record("shop")
    raw["hooks"][0]["source"] = ("def check(payload):\n    args = payload['tool_input']\n"
                                 "    return {'decision': 'retry' if len(args) > 9 else 'allow'}\n")
    src = normalize(raw)
    for t in (T.Nest(p=1.0), T.Flatten(), T.AddRequired(p=1.0), T.Values(p=1.0)):
        assert "as a whole" in t.sample(src, random.Random(0)).reason
    params = T.SwapNames(params_p=1.0).sample(src, random.Random(0))
    assert params["params"] == [] and params["tools"]


def _cart_with_hook(param: str, text: str) -> dict:
    """A record whose hook injected ``text`` (and recorded it as its decision) after a call of ``check_cart``, a tool
    that declares ``param`` (no other tool does) beside ``cart_id`` (``view_cart`` declares it too)."""
    return {"id": "cart-hook", "tools": [
        {"type": "function", "function": {"name": "check_cart", "parameters": {"type": "object", "properties": {
            "cart_id": {"type": "string"}, param: {"type": "string"}}}}},
        {"type": "function", "function": {"name": "view_cart", "parameters": {"type": "object", "properties": {
            "cart_id": {"type": "string"}}}}}],
        "messages": [
            {"role": "user", "content": "Check my cart."},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {
                "name": "check_cart", "arguments": {"cart_id": "7"}}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            {"role": "system", "content": [{"type": "text", "text": text}]},
            {"role": "assistant", "content": "Done."}],
        "hook_events": [{"hook": "check_params", "message_index": 3,
                         "payload": {"tool_name": "check_cart", "tool_input": {"cart_id": "7"}},
                         "decision": {"decision": "retry", "message": text}}]}


def _decisions_follow_messages(transform, raw: dict) -> int:
    """Run ``transform`` on ``raw`` over 20 seeds, every invariant checked; the injected message and the recorded
    decision agree in each variant. How many variants changed the injected message."""
    changed = 0
    text = raw["hook_events"][0]["decision"]["message"]
    for seed in range(20):
        report = assert_task_preserving(transform, raw, seed)
        if report.applied:
            variant = transform.apply(normalize(raw), report.applied[0]["params"])
            message = variant["messages"][3]["content"][0]["text"]
            assert variant["hook_events"][0]["decision"]["message"] == message
            changed += message != text
    return changed


def test_a_swap_keeps_a_hook_decision_saying_what_its_injected_message_says():
    """Regression (found by the property suite): a parameter swap whose mentions follow in every text (a name no
    other tool declares) rewrote the message a hook injected but not the hook event's decision message, so
    invariant 6 failed ("injected message and decision disagree"). The decision now follows its message."""
    raw = _cart_with_hook("coupon_code", "check_cart needs coupon_code.")
    assert _decisions_follow_messages(T.SwapNames(tools=False, p=1.0, params_p=1.0), raw)  # the test can tell


@pytest.mark.parametrize("text", ["check_cart needs the coupon parameter.", "check_cart needs `coupon`."])
def test_a_param_rename_keeps_a_hook_decision_saying_what_its_injected_message_says(text):
    """The same for tool.param_rename: a plain-word parameter named in reference form in an injected message is
    renamed there by the step's mentions, which the event sync (identifier-like names only) did not apply to the
    decision: 3 of 11 applied seeds failed invariant 6 before."""
    assert _decisions_follow_messages(T.ParamRename(p=1.0), _cart_with_hook("coupon", text))  # the test can tell


def _renamed_one_tool_at_a_time(rec: dict, renames: list[dict]) -> dict:
    """What tool.param_rename's apply gave before it carried the messages once for all its steps: one
    rename_params per tool, each carrying the messages itself."""
    from hsa.renames import rename_params
    from transforms.tool_functional import renamed_alike

    by_tool: dict[str, dict] = {}
    for entry in renames:
        by_tool.setdefault(entry["tool"], {})[tuple(entry["path"])] = entry["new"]
    out, also = rec, renamed_alike(rec, renames)
    for tool, table in by_tool.items():
        out = rename_params(out, tool, table, also=also)
    return out


def test_param_renames_carry_the_messages_once_as_one_tool_at_a_time():
    """tool.param_rename renames the parameters of several tools and carries the messages through all the steps
    in one pass: the record is exactly what one rename (and one message carry) per tool gives, on records with and
    without hook events (which keep the per-tool carry), and on records whose other tools' texts name a renamed
    parameter or do not."""
    from fixtures.livestream.generate import generate
    from transforms.tool_functional import rename_declared_params

    t = T.ParamRename(p=1.0)
    seen = {"events": 0, "none": 0, "steps": 0}
    for raw in generate(12, seed=11):
        for events in (True, False):
            rec = normalize(raw if events else {k: v for k, v in raw.items() if k != "hook_events"})
            params = t.sample(rec, random.Random(3))
            if not isinstance(params, dict):
                continue
            got = rename_declared_params(rec, params["renames"])
            want = _renamed_one_tool_at_a_time(rec, params["renames"])
            assert repr(got) == repr(want)
            seen["events" if rec.get("hook_events") else "none"] += 1
            seen["steps"] = max(seen["steps"], len(got["mapping"]))
    assert seen["events"] and seen["none"] and seen["steps"] >= 3, seen
    with pytest.raises(ValueError, match="hook events"):
        from hsa.renames import rename_params

        rec = normalize(next(r for r in generate(12, seed=11) if r.get("hook_events")))
        rename_params(rec, rec["tools"][0]["name"], {}, messages=False)


def test_a_parameter_rename_follows_into_other_tools_texts_only_where_they_name_it():
    """A parameter name that no other tool declares follows into the other tools' descriptions and schema texts
    (the mentions "in every text"); the other tools' schemas are left as the same objects when none names it."""
    from hsa.renames import rename_params

    def tool(name, desc, prop_desc):
        return {"name": name, "description": desc, "parameters": {"type": "object", "properties": {
            "x": {"type": "string", "description": prop_desc}}}}

    rec = normalize({"id": "p", "tools": [
        {"name": "lookup", "description": "Look up.", "parameters": {"type": "object", "properties": {
            "search_term": {"type": "string"}}}},
        tool("fetch", "Fetch what lookup found for its search_term.", "A page."),
        tool("open", "Open a page.", "The page; see the search_term of lookup."),
        tool("close", "Close a page.", "A page.")], "messages": [{"role": "user", "content": "hi"}]})
    out = rename_params(rec, "lookup", {("search_term",): "query_text"})
    fetch, open_, close = out["tools"][1:]
    assert fetch["description"] == "Fetch what lookup found for its query_text."
    assert open_["parameters"]["properties"]["x"]["description"] == "The page; see the query_text of lookup."
    assert close == rec["tools"][3]
    quiet = normalize({**{k: rec[k] for k in ("id", "messages")}, "tools": [
        rec["tools"][0], tool("close", "Close the search_term page.", "A page.")]})  # no schema names it
    out = rename_params(quiet, "lookup", {("search_term",): "query_text"})
    assert out["tools"][1] == {**quiet["tools"][1], "description": "Close the query_text page."}
