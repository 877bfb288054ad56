"""hsa._json.loads gives a text's values back exactly: orjson reads integers beyond 64 bits as floats without a word,
so a record holding one (a 20-digit order number as a JSON number) must not reach a row changed."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from hsa import _json
from hsa.io import InputLine
from hsa.mapping import argument_leaves
from hsa.pipeline.record import augment_record
from hsa.recipes import load_recipe
from hsa.records import read_row
from hsa.renames import canonicalize

BIG = [2**63, -(2**63) - 1, 2**64, -(2**64), 123456789012345678901234567890, 10**19, -(10**40)]


def test_integers_beyond_64_bits_are_read_exactly():
    for n in BIG:
        for text in (f"{n}", f"[{n}]", f'{{"a": {n}, "b": 1.5}}', f'{{"a": "x", "b": [{n}]}}'.encode()):
            got, want = _json.loads(text), json.loads(text)
            assert _json.strict_equal(got, want), (text, got)
    assert _json.loads(f'{{"a": {2**63 - 1}}}')["a"] == 2**63 - 1  # the largest 64-bit int, orjson's own


def test_other_texts_read_as_the_standard_library_reads_them():
    for text in ('{"id": "1234567890123456789012", "x": 1}', "[0.12345678901234567890123]", "[1e400]",
                 '"\\ud800"', "[NaN, Infinity]", '{"a": 1, "a": 2}', b'{"k": "\xc3\xa9"}'):
        got, want = _json.loads(text), json.loads(text)
        assert repr(got) == repr(want), text


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_loads_gives_back_what_was_written(value):
    text = json.dumps(value, ensure_ascii=False)
    assert _json.strict_equal(_json.loads(text), json.loads(text))
    assert _json.strict_equal(_json.loads(text.encode("utf-8")), json.loads(text))


def test_a_big_integer_argument_survives_augment_and_canonicalize():
    big = 98765432109876543210987
    line = json.dumps({
        "id": "big-1",
        "tools": [{"type": "function", "function": {
            "name": "get_order", "description": "Look up an order by its number.",
            "parameters": {"type": "object", "properties": {"order_number": {"type": "integer"}},
                           "required": ["order_number"]}}}],
        "messages": [
            {"role": "user", "content": f"Where is order {big}?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"type": "function", "function": {"name": "get_order", "arguments": {"order_number": big}}}]},
            {"role": "tool", "name": "get_order", "content": "shipped"},
            {"role": "assistant", "content": "It has shipped."}]}).encode()
    for recipe in ("identity", "tools"):
        res = augment_record(InputLine("in.jsonl", 1, line, 0), load_recipe(recipe), seed=3, variants=3,
                             keep_original=True)
        assert res.rows and not res.rejects, res.rejects
        for row in res.rows:
            call = next(m for m in row["messages"] if m.get("tool_calls"))["tool_calls"][0]["function"]
            values = argument_leaves(call["arguments"]).values()  # the argument may be renamed or nested
            assert any(type(v) is int and v == big for v in values), (recipe, row["variant"], call)
            back = canonicalize(read_row(_json.dumps(row)))
            src_call = next(m for m in back["messages"] if m.get("tool_calls"))["tool_calls"][0]["function"]
            assert type(src_call["arguments"]["order_number"]) is int
            assert src_call["arguments"]["order_number"] == big

