"""The BFCL table's split by function: no tool of a test item is offered by any train item."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from trainers.bfcl_table import split_by_function, tool_names

names = st.lists(st.sampled_from([f"f{i}" for i in range(30)]), min_size=1, max_size=4)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text("abcdefgh", min_size=1, max_size=4), names, min_size=1, max_size=40),
       st.integers(0, 40), st.integers(0, 3))
def test_split_never_shares_a_tool_and_loses_no_item(items, target, seed):
    split = split_by_function(items, test_items=target, seed=seed)
    assert sorted(split["train"] + split["test"]) == sorted(items)
    assert len(split["test"]) <= target
    train_tools = {n for i in split["train"] for n in items[i]}
    assert not train_tools & {n for i in split["test"] for n in items[i]}
    assert split == split_by_function(dict(reversed(list(items.items()))), test_items=target, seed=seed)


def test_split_fills_the_test_side_from_small_groups():
    """One big group (every item sharing a common tool) stays in train; the singletons fill the test side."""
    items = {f"big{i}": ["common", f"g{i}"] for i in range(50)}
    items.update({f"solo{i}": [f"s{i}"] for i in range(20)})
    split = split_by_function(items, test_items=10, seed=random.Random(0).randrange(100))
    assert len(split["test"]) == 10 and all(i.startswith("solo") for i in split["test"])


def test_tool_names_reads_every_dialect():
    row = {"tools": [{"name": "a"}, {"type": "function", "function": {"name": "b"}}, {"description": "none"}]}
    assert tool_names(row) == ["a", "b"]
