"""Harness-variant evaluation (hsa.evaluation): parsers, the scoring rules, the report, on hand-written cases."""

from __future__ import annotations

import copy
import json

import pytest

from hsa.evaluation import EvalInputError, collect, make_prompts, parse, parse_message, score
from hsa.evaluation.report import bootstrap_ci, dumps, to_markdown

# --------------------------------------------------------------------------- a hand-written source and variant

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city.", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "number"},
                                         "count": {"type": "integer"},
                                         "unit": {"type": "string", "enum": ["c", "f"], "default": "c"}},
        "required": ["city"]}}},
    {"type": "function", "function": {"name": "load_skill", "description": "Load a skill.", "parameters": {
        "type": "object", "properties": {"skill": {"type": "string"}}, "required": ["skill"]}}},
]


def _call(cid, name, args):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


def source_row(variant_of=None):
    """The canonical row: a parallel weather turn (#2), a skill load (#5), a reply (#7)."""
    return {
        "id": "w1/0", "source_id": "w1", "variant": 0, "transforms": [], "mapping": {"version": 1, "steps": []},
        "tools": copy.deepcopy(TOOLS),
        "skills": [{"name": "weather_reply", "description": "Reply about weather.", "content": "Be brief."}],
        "messages": [
            {"role": "system", "content": "You are a weather bot."},
            {"role": "user", "content": "weather in Paris for 3 days, and Rome?"},
            {"role": "assistant", "content": "", "tool_calls": [
                _call("c1", "get_weather", {"city": "Paris", "days": 3.0}),
                _call("c2", "get_weather", {"city": "Rome"})]},
            {"role": "tool", "tool_call_id": "c1", "name": "get_weather", "content": "sunny"},
            {"role": "tool", "tool_call_id": "c2", "name": "get_weather", "content": "rain"},
            {"role": "assistant", "content": "", "tool_calls": [_call("c3", "load_skill",
                                                                      {"skill": "weather_reply"})]},
            {"role": "tool", "tool_call_id": "c3", "name": "load_skill", "content": "Be brief."},
            {"role": "assistant", "content": "Paris is sunny, Rome rainy."},
        ]}


#: The variant: get_weather -> fetch_forecast, city -> location, skill weather_reply -> forecast_answer.
MAPPING = {"version": 1, "steps": [
    {"op": "tools", "map": {"get_weather": "fetch_forecast"}},
    {"op": "params", "tool": "fetch_forecast", "paths": [[["city"], ["location"]]]},
    {"op": "skills", "tool": "load_skill", "argument": "skill", "map": {"weather_reply": "forecast_answer"}},
]}


def variant_row():
    row = source_row()
    row.update(id="w1/1", variant=1, mapping=MAPPING,
               transforms=[{"name": "tool.rename", "params": {}}, {"name": "tool.param_rename", "params": {}},
                           {"name": "skill.rename", "params": {}}])
    fn = row["tools"][0]["function"]
    fn["name"] = "fetch_forecast"
    fn["parameters"]["properties"]["location"] = fn["parameters"]["properties"].pop("city")
    fn["parameters"]["required"] = ["location"]
    row["skills"][0]["name"] = "forecast_answer"
    m = row["messages"]
    m[2]["tool_calls"] = [_call("c1", "fetch_forecast", {"location": "Paris", "days": 3.0}),
                          _call("c2", "fetch_forecast", {"location": "Rome"})]
    m[3]["name"] = m[4]["name"] = "fetch_forecast"
    m[5]["tool_calls"] = [_call("c3", "load_skill", {"skill": "forecast_answer"})]
    return row


ROWS = [source_row(), variant_row()]


def hermes(*calls):
    return "".join(f"<tool_call>{json.dumps({'name': n, 'arguments': a})}</tool_call>" for n, a in calls)


def turn_scores(completion, row_id="w1/1", turn=2, **kwargs):
    """The per-prompt result of one completion for one prompt (other prompts get no prediction)."""
    report = score(ROWS, {f"{row_id}#{turn}": completion}, bootstrap=0, **kwargs)
    return next(r for r in report["results"] if r["id"] == f"{row_id}#{turn}")


# --------------------------------------------------------------------------- parsers


@pytest.mark.parametrize("text, fmt", [
    ('<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call><tool_call>{"name": "g", "arguments": '
     '{"b": "x"}}</tool_call><|im_end|>', "hermes"),
    ('[{"name": "f", "arguments": {"a": 1}}, {"name": "g", "parameters": {"b": "x"}}]', "json"),
    ('```json\n[{"name": "f", "arguments": {"a": 1}}, {"name": "g", "arguments": "{\\"b\\": \\"x\\"}"}]\n```', "json"),
    ('<|python_tag|>{"name": "f", "parameters": {"a": 1}}; {"name": "g", "parameters": {"b": "x"}}<|eom_id|>',
     "llama"),
    ('[TOOL_CALLS] [{"name": "f", "arguments": {"a": 1}}, {"name": "g", "arguments": {"b": "x"}}]</s>', "mistral"),
    ('[TOOL_CALLS]f[ARGS]{"a": 1}[TOOL_CALLS]g[CALL_ID]abc123XYZ[ARGS]{"b": "x"}', "mistral"),
    ('[f(a=1), g(b="x")]', "pythonic"),
    ("<think>which tools? f then g</think>[f(a=1), g(b='x')]", "pythonic"),
    ("<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n"
     "<function=g>\n<parameter=b>\nx\n</parameter>\n</function>\n</tool_call><|im_end|>", "hermes"),  # Qwen 3.5
    ("<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n</tool_call>\n<tool_call>g\n<arg_key>b"
     "</arg_key>\n<arg_value>x</arg_value>\n</tool_call>", "hermes"),  # GLM 4.5
    ('<|tool_call>call:f{a:1}<tool_call|><|tool_call>call:g{b:<|"|>x<|"|>}<tool_call|>', "gemma"),
    ('<|channel|>analysis<|message|>need f and g<|end|><|start|>assistant<|channel|>commentary to=functions.f '
     '<|constrain|>json<|message|>{"a": 1}<|call|><|start|>assistant<|channel|>commentary to=functions.g '
     '<|constrain|>json<|message|>{"b": "x"}<|call|>', "harmony"),
    ('<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{"a": 1}\n```<｜tool▁call▁end｜>\n'
     '<｜tool▁call▁begin｜>function<｜tool▁sep｜>g\n```json\n{"b": "x"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
     "deepseek"),  # V3
    ('<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{"a": 1}<｜tool▁call▁end｜><｜tool▁call▁begin｜>g'
     '<｜tool▁sep｜>{"b": "x"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>', "deepseek"),  # V3.1
    ('<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{"a": 1}'
     '<|tool_call_end|><|tool_call_begin|>functions.g:1<|tool_call_argument_begin|>{"b": "x"}<|tool_call_end|>'
     '<|tool_calls_section_end|>', "kimi"),
    ('<minimax:tool_call>\n<invoke name="f">\n<parameter name="a">1</parameter>\n</invoke>\n<invoke name="g">\n'
     '<parameter name="b">x</parameter>\n</invoke>\n</minimax:tool_call>', "invoke"),
    ('<|tool_call_start|>[f(a=1), g(b="x")]<|tool_call_end|>', "pythonic"),  # LFM2
    ('<|tool_call|>[{"name": "f", "arguments": {"a": 1}}, {"name": "g", "arguments": {"b": "x"}}]', "json"),  # Granite
    # the formats of vLLM's tool chat templates and parsers (examples/tool_chat_template_*.jinja), 2026-12
    ('<tool_calls>[{"name": "f", "arguments": {"a": 1}}, {"name": "g", "arguments": {"b": "x"}}]</tool_calls><|eos|>',
     "json"),  # Hunyuan-A13B
    ('<tool_calls>\n{"name": "f", "arguments": {"a": 1}}\n{"name": "g", "arguments": {"b": "x"}}\n</tool_calls>'
     "<end_of_sentence>", "json"),  # MiniMax-M1: one call per line
    ('<TOOLCALL>[{"name": "f", "arguments": {"a": 1}}, {"name": "g", "arguments": {"b": "x"}}]</TOOLCALL>',
     "json"),  # Nemotron
    ('<tools>\n{"name": "f", "arguments": {"a": 1}}\n{"name": "g", "arguments": {"b": "x"}}\n</tools>\n<|im_end|>',
     "json"),  # Qwen2.5-Coder as vLLM templates it
    ('<function_calls>\nf(a=1)\ng(b="x")\n</function_calls><|im_end|>', "pythonic"),  # OLMo 3: a call per line
    ('<|action_start|><|plugin|>\n[{"name": "f", "parameters": {"a": 1}}, {"name": "g", "parameters": {"b": "x"}}]'
     "<|action_end|>", "json"),  # InternLM2
    ('<|tools_prefix|>[{"f": {"a": 1}}, {"g": {"b": "x"}}]<|tools_suffix|>', "json"),  # Apertus: {name: arguments}
    (' -> tool/function_call\n[{"name": "f", "arguments": {"a": 1}}, {"name": "g", "arguments": {"b": "x"}}]'
     "<|im_end|><|stop|>", "json"),  # HyperCLOVA X SEED
])
def test_every_format_reads_the_same_two_calls(text, fmt):
    """Each tool-call format gives the same calls, found by auto and by naming the format."""
    want = ({"name": "f", "arguments": {"a": 1}}, {"name": "g", "arguments": {"b": "x"}})
    for f in ("auto", fmt):
        p = parse(text, f, names={"f", "g"})
        assert p.ok, p.error
        assert p.calls == want
        assert p.format == fmt


def test_text_parameters_are_typed_by_the_schema():
    """Formats that write parameters as text keep a string where the schema wants one, else read JSON."""
    schemas = {"f": {"type": "object", "properties": {"code": {"type": "string"}, "n": {"type": "integer"},
                                                      "tags": {"type": "array"}}}}
    text = ("<tool_call>\n<function=f>\n<parameter=code>\n007\n</parameter>\n<parameter=n>\n7\n</parameter>\n"
            '<parameter=tags>\n["a", "b"]\n</parameter>\n</function>\n</tool_call>')
    assert parse(text, schemas=schemas).calls == ({"name": "f", "arguments": {"code": "007", "n": 7,
                                                                              "tags": ["a", "b"]}},)


def test_harmony_reply_is_the_final_channel():
    """gpt-oss: a reply is the final channel's text; the analysis channel is dropped."""
    p = parse("<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>final<|message|>Hi!<|return|>")
    assert p.ok and p.calls == () and p.content == "Hi!"


def test_llama4_end_of_turn_and_python_literals_in_a_wrapper():
    """Llama 4's end-of-turn token is cleaned like Llama 3's; a wrapper's body may be Python literals (single
    quotes), as a template that prints the arguments object writes it."""
    assert parse('{"name": "f", "parameters": {"a": 1}}<|eot|>').calls == ({"name": "f", "arguments": {"a": 1}},)
    p = parse("<|action_start|><|plugin|>\n{'name': 'f', 'parameters': {'a': 'x'}}<|action_end|>")
    assert p.ok and p.calls == ({"name": "f", "arguments": {"a": "x"}},)


def test_bare_json_object_and_pythonic_names_with_spaces():
    """A single bare JSON call is read; a pythonic name with spaces is matched whole against declared tools."""
    assert parse('{"name": "f", "arguments": {}}').calls == ({"name": "f", "arguments": {}},)
    p = parse('[Get Weather Now(city="Paris", days=2)]', names={"Get Weather Now"})
    assert p.calls == ({"name": "Get Weather Now", "arguments": {"city": "Paris", "days": 2}},)


@pytest.mark.parametrize("text", ["The answer is [see below].", '{"answer": 42}', "Sure, (a) or (b)?",
                                  "[1, 2, 3]", ""])
def test_replies_that_look_like_code_are_replies(text):
    """Text that is not a call of a declared tool is a well-formed reply without calls."""
    p = parse(text, names={"f"})
    assert p.ok and p.calls == () and p.content == text.strip()


@pytest.mark.parametrize("text, why", [
    ('<tool_call>{"name": "f", "arguments": {"a": 1}}', "unbalanced"),
    ("<tool_call>{name: f}</tool_call>", "not JSON"),
    ('<tool_call>{"arguments": {}}</tool_call>', "no string 'name'"),
    ("[TOOL_CALLS] sorry", "not followed"),
    ("<|python_tag|>", "no call"),
    ("<|tool_call>call:f{a:1}", "not call:name"),
    ('<｜tool▁call▁begin｜>f<｜tool▁sep｜>{"a": 1}', "not closed"),
    ('<invoke name="f"><parameter name="a">1</parameter>', "not closed"),
    ("<|tool_call_start|>[f(a=1)]", "not closed"),
    ('[f(a=1), g(b="x"]', ""),
    ('<tool_calls>[{"name": "f", "arguments": {"a": 1}}]', "not closed"),
    ("<TOOLCALL>I would call f</TOOLCALL>", "no call list"),
    ('<|tools_prefix|>[{"f": 1}]<|tools_suffix|>', "no call list"),
])
def test_broken_calls_are_not_well_formed(text, why):
    """A completion that starts a call and does not finish it is not well formed, and says why."""
    p = parse(text, names={"f", "g"})
    assert not p.ok and why in p.error


def test_message_with_tool_calls_from_a_server():
    """An OpenAI message's tool_calls (arguments as a JSON string) are taken as they are."""
    msg = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "x", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]}
    p = parse_message(msg)
    assert p.ok and p.calls == ({"name": "f", "arguments": {"a": 1}},) and p.format == "message"
    assert parse_message({"content": '<tool_call>{"name": "f", "arguments": {}}</tool_call>'}).calls[0]["name"] == "f"


# --------------------------------------------------------------------------- prompts


def test_prompts_are_the_trajectory_up_to_each_assistant_turn():
    """One prompt per assistant turn, with the row's own tools and the messages before the turn."""
    prompts = make_prompts(ROWS)
    assert [p["id"] for p in prompts] == ["w1/0#2", "w1/0#5", "w1/0#7", "w1/1#2", "w1/1#5", "w1/1#7"]
    p = prompts[3]
    assert (p["row_id"], p["turn"], p["source_id"], p["variant"]) == ("w1/1", 2, "w1", 1)
    assert p["families"] == ["skill", "tool"] and p["transforms"] == ["skill.rename", "tool.param_rename",
                                                                       "tool.rename"]
    assert [m["role"] for m in p["messages"]] == ["system", "user"]
    assert [t["function"]["name"] for t in p["tools"]] == ["fetch_forecast", "load_skill"]
    assert [p["id"] for p in make_prompts(ROWS, turns="calls")] == ["w1/0#2", "w1/0#5", "w1/1#2", "w1/1#5"]
    assert [p["id"] for p in make_prompts(ROWS, turns="replies")] == ["w1/0#7", "w1/1#7"]


def test_rows_without_mapping_are_an_error_for_variants():
    """A variant row without a mapping cannot be scored; the error says what to use."""
    row = variant_row()
    del row["mapping"]
    with pytest.raises(EvalInputError, match="mapping"):
        collect([row])


# --------------------------------------------------------------------------- scoring rules


def test_right_only_after_mapping_back():
    """Variant names in the variant harness are right: they map back to the gold canonical calls."""
    r = turn_scores(hermes(("fetch_forecast", {"location": "Paris", "days": 3.0}),
                           ("fetch_forecast", {"location": "Rome"})))
    assert (r["call"], r["name"], r["argument"], r["format"], r["schema"]) == (1, 1, 1.0, 1, 1)


@pytest.mark.parametrize("calls", [
    [("get_weather", {"city": "Paris", "days": 3.0}), ("get_weather", {"city": "Rome"})],  # renamed tool
    [("fetch_forecast", {"city": "Paris", "days": 3.0}), ("fetch_forecast", {"city": "Rome"})],  # renamed param
])
def test_canonical_names_under_a_renamed_variant_are_wrong(calls):
    """A call that uses a canonical name the variant renamed would fail against the deployed harness."""
    r = turn_scores(hermes(*calls))
    assert r["call"] == 0 and r["argument"] == 0.0
    assert turn_scores(hermes(*calls), row_id="w1/0")["call"] == (1 if calls[0][0] == "get_weather" else 0)


def test_parallel_calls_in_another_order_are_right():
    """Parallel calls match order-free."""
    r = turn_scores(hermes(("fetch_forecast", {"location": "Rome"}),
                           ("fetch_forecast", {"days": 3.0, "location": "Paris"})))
    assert r["call"] == 1


def test_missing_or_extra_calls_are_wrong():
    """The whole turn must match: a missing call, an extra call or a repeated call is wrong."""
    one = turn_scores(hermes(("fetch_forecast", {"location": "Rome"})))
    assert (one["call"], one["name"], one["argument"]) == (0, 0, 0.5)
    three = turn_scores(hermes(("fetch_forecast", {"location": "Rome"}), ("fetch_forecast", {"location": "Rome"}),
                               ("fetch_forecast", {"location": "Paris", "days": 3.0})))
    assert three["call"] == 0 and three["argument"] == pytest.approx(2 / 3)


def test_an_int_where_a_number_is_expected_is_right():
    """BFCL: an int is accepted for a number parameter; a float is not accepted for an integer one."""
    assert turn_scores(hermes(("fetch_forecast", {"location": "Paris", "days": 3}),
                              ("fetch_forecast", {"location": "Rome"})))["call"] == 1
    from hsa.evaluation.scoring import values_match

    assert values_match(3, 3.0, {"type": "integer"}) is False
    assert values_match(3, 3.0, {"type": "number"}) is True
    assert values_match(True, 1, {"type": "number"}) is False
    assert values_match(2.5, 2.5) is True and values_match(2, 2.0) is False


def test_optional_parameters():
    """A parameter the gold gives must be given; one it omits may be left out, null, or the schema default."""
    rome = ("fetch_forecast", {"location": "Rome"})
    assert turn_scores(hermes(("fetch_forecast", {"location": "Paris"}), rome))["call"] == 0  # days omitted
    paris = ("fetch_forecast", {"location": "Paris", "days": 3.0})
    assert turn_scores(hermes(paris, ("fetch_forecast", {"location": "Rome", "unit": "c"})))["call"] == 1
    assert turn_scores(hermes(paris, ("fetch_forecast", {"location": "Rome", "unit": None})))["call"] == 1
    assert turn_scores(hermes(paris, ("fetch_forecast", {"location": "Rome", "unit": "f"})))["call"] == 0
    assert turn_scores(hermes(paris, ("fetch_forecast", {"location": "Rome", "count": 1})))["call"] == 0


def test_string_match_exact_and_bfcl():
    """--string-match bfcl ignores case, spaces and punctuation; exact does not."""
    text = hermes(("fetch_forecast", {"location": "paris", "days": 3.0}), ("fetch_forecast", {"location": "ROME "}))
    assert turn_scores(text)["call"] == 0
    assert turn_scores(text, string_match="bfcl")["call"] == 1


def test_skill_selection_maps_skill_names_back():
    """The variant's skill name is right; the canonical name of a renamed skill is wrong."""
    right = turn_scores(hermes(("load_skill", {"skill": "forecast_answer"})), turn=5)
    assert (right["skill"], right["call"]) == (1, 1)
    wrong = turn_scores(hermes(("load_skill", {"skill": "weather_reply"})), turn=5)
    assert (wrong["skill"], wrong["call"]) == (0, 0)
    assert turn_scores(hermes(("load_skill", {"skill": "weather_reply"})), row_id="w1/0", turn=5)["skill"] == 1


def test_no_call_turns():
    """Where the gold is a reply, a reply is right and a call is wrong; call metrics do not apply."""
    reply = turn_scores("Sunny in Paris!", turn=7)
    assert (reply["no_call"], reply["call"], reply["name"], reply["argument"]) == (1, 1, None, None)
    call = turn_scores(hermes(("fetch_forecast", {"location": "Rome"})), turn=7)
    assert (call["no_call"], call["call"]) == (0, 0)


def test_format_validity_and_schema_validity():
    """An unparseable completion fails everything; a call with arguments the schema rejects is schema-invalid."""
    bad = turn_scores('<tool_call>{"name": "fetch_forecast"')
    assert (bad["format"], bad["call"], bad["status"]) == (0, 0, "unparseable")
    loose = turn_scores(hermes(("fetch_forecast", {"location": 7})))
    assert (loose["format"], loose["schema"]) == (1, 0)


# --------------------------------------------------------------------------- the report


def test_bad_input_is_counted_and_named(tmp_path):
    """Missing predictions, unknown ids, unparseable completions and bad lines are each counted and named."""
    preds = tmp_path / "p.jsonl"
    preds.write_text("\n".join([
        json.dumps({"id": "w1/0#2", "completion": hermes(("get_weather", {"city": "Paris", "days": 3.0}),
                                                         ("get_weather", {"city": "Rome"}))}),
        json.dumps({"id": "w1/1#2", "completion": "<tool_call>{"}),
        json.dumps({"id": "nope#1", "completion": "hi"}),
        "not json",
        json.dumps({"completion": "no id"}),
        json.dumps({"id": "w1/0#2", "completion": "again"}),
    ]) + "\n")
    report = score(ROWS, str(preds), bootstrap=0)
    pr = report["problems"]
    assert pr["missing"] == {"n": 4, "ids": ["w1/0#5", "w1/0#7", "w1/1#5", "w1/1#7"]}
    assert pr["unparseable"]["n"] == 1 and pr["unparseable"]["examples"][0]["id"] == "w1/1#2"
    assert pr["unknown_ids"] == {"n": 1, "ids": ["nope#1"]}
    assert [b["line"] for b in pr["bad_lines"]["examples"]] == [4, 5]
    assert pr["duplicate_ids"] == {"n": 1, "ids": ["w1/0#2"]}
    canonical = report["canonical"]  # #2 and #5 call tools, #7 is a reply
    assert (canonical["n"], canonical["call_accuracy"]) == (2, pytest.approx(1 / 2))
    assert (canonical["n_replies"], canonical["reply_accuracy"]) == (1, 0.0)
    assert (canonical["n_turns"], canonical["turn_accuracy"]) == (3, pytest.approx(1 / 3))
    assert "missing: 4" in to_markdown(report)


def _many(n_sources, p_right):
    """Per-prompt results of n_sources sources, 4 prompts each; the first p_right share of prompts is right."""
    out = []
    for s in range(n_sources):
        for k in range(4):
            out.append({"source_id": f"s{s}", "call": int((s * 4 + k) % 10 < 10 * p_right)})
    return out


def test_bootstrap_interval_contains_the_estimate_and_narrows_with_n():
    """The source-level bootstrap interval holds the point estimate, and is narrower with more sources."""
    widths = []
    for n in (10, 100, 1000):
        res = _many(n, 0.6)
        point = sum(r["call"] for r in res) / len(res)
        lo, hi = bootstrap_ci(res, seed=0, reps=500)
        assert lo <= point <= hi
        widths.append(hi - lo)
    assert widths[0] > widths[1] > widths[2] > 0
    assert bootstrap_ci(_many(50, 0.5), seed=1) == bootstrap_ci(_many(50, 0.5), seed=1)


def test_report_groups_gap_and_held_out():
    """canonical / variants / seen / held_out / gap / by_family / by_transform are filled from the rows."""
    preds = {"w1/0#2": hermes(("get_weather", {"city": "Paris", "days": 3.0}), ("get_weather", {"city": "Rome"})),
             "w1/0#5": hermes(("load_skill", {"skill": "weather_reply"})), "w1/0#7": "ok",
             "w1/1#2": hermes(("get_weather", {"city": "Paris", "days": 3.0}), ("get_weather", {"city": "Rome"})),
             "w1/1#5": hermes(("load_skill", {"skill": "weather_reply"})), "w1/1#7": "ok"}
    report = score(ROWS, preds, held_out=["skill"], seed=3)
    # canonical names under the variant: both call turns wrong, the reply right
    assert (report["canonical"]["call_accuracy"], report["variants"]["call_accuracy"]) == (1.0, 0.0)
    assert (report["variants"]["reply_accuracy"], report["variants"]["turn_accuracy"]) == (1.0, pytest.approx(1 / 3))
    assert report["gap"]["call_accuracy"] == 1.0 and report["gap"]["n_sources"] == 1
    assert (report["gap"]["reply_accuracy"], report["gap"]["n_replies"]) == (0.0, 2)
    assert (report["held_out"]["n"], report["held_out"]["n_turns"]) == (2, 3) and report["seen"]["n_turns"] == 0
    assert set(report["by_family"]) == {"skill", "tool"} and report["by_family"]["skill"]["held_out"] is True
    assert set(report["by_transform"]) == {"skill.rename", "tool.param_rename", "tool.rename"}
    assert report["canonical"]["ci95"] == [1.0, 1.0]
    assert dumps(report) == dumps(score(ROWS, preds, held_out=["skill"], seed=3))  # deterministic bytes


def test_compare_pairs_two_reports():
    """--compare gives this minus that on the prompts both scored."""
    good = {f"w1/0#{t}": c for t, c in ((2, hermes(("get_weather", {"city": "Paris", "days": 3.0}),
                                                 ("get_weather", {"city": "Rome"}))), (7, "ok"))}
    other = score(ROWS, {}, bootstrap=0)
    report = score(ROWS, good, bootstrap=100, compare_to=other)
    paired = report["paired"]  # right: w1/0#2 of the 4 call turns, w1/0#7 of the 2 replies
    assert (paired["n"], paired["call_accuracy"]) == (4, pytest.approx(1 / 4))
    assert (paired["n_replies"], paired["reply_accuracy"]) == (2, pytest.approx(1 / 2))


def test_rows_with_a_pool_slot_are_grouped_by_slot():
    """Rows that carry the harness-variant pool's slot get a by_slot group per deployed harness variant."""
    rows = [source_row(), {**variant_row(), "slot": 2}]
    report = score(rows, {}, bootstrap=0)
    assert list(report["by_slot"]) == ["2"] and report["by_slot"]["2"]["n_turns"] == 3
    assert "by_slot" not in score(ROWS, {}, bootstrap=0)
