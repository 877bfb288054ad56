"""Issue 27 items 2, 7, 8 and issue 33 item 7 on real harnesses: enum values keep their meaning, tool.dialect keeps
every field a dialect defines, distractor tools and skills look like their neighbours and are refused when near."""

from __future__ import annotations

import json
import random

import pytest

from hsa.invariants import check_variant
from hsa.names import split_words
from hsa.recipes import load_recipe, recipe_from_dict, recipe_to_dict
from hsa.records import normalize
from hsa.renames import canonicalize, with_restore
from hsa.step_schemas import node_at
from hsa.transform import run
from tests.mcp_calls import all_with_calls, with_calls
from transforms.tool import Values
from transforms.tool_functional import string_enum


def _leaf(tree: dict, name: str) -> dict:
    """The first leaf named ``name`` of a recipe tree (as :func:`recipe_to_dict` writes it)."""
    if tree.get("transform") == name:
        return tree
    for child in [tree.get("child"), *(tree.get("transforms") or ())]:
        if isinstance(child, dict):
            found = _leaf(child, name)
            if found:
                return found
    return {}


def _value_changes(record: dict, variant: dict) -> list[tuple[str, str, str, list]]:
    """(tool as of the step, old, new, path) of every enum value a variant's own steps changed."""
    steps = variant["mapping"][len(record["mapping"]):]
    return [(s["tool"], old, new, s["path"]) for s in steps if s["op"] == "values" and s.get("texts", True)
            for old, new in s["map"]]


# --------------------------------------------------------------------------- item 2: values


def test_default_recipe_restyles_enum_values_and_never_masks_them():
    """The default recipe's tool.values changes case and separators only: every new value has the old one's words.

    Before: its styles were screaming, camel, kebab and mask, so 43 of 98 changed values on the nine servers were
    random strings (response-body -> lYNFw2LY) that nothing explained."""
    config = dict(_leaf(recipe_to_dict(load_recipe("default"))["transform"], "tool.values"))
    assert config, "the default recipe has a tool.values leaf"
    config["p"] = 1.0
    t = recipe_from_dict({"__version__": 1, "transform": config})
    changed = 0
    for raw in all_with_calls():
        record = normalize(raw)
        for seed in range(12):
            variant = run(t, record, random.Random(seed))[0]
            for tool, old, new, _ in _value_changes(record, variant):
                changed += 1
                assert [w.lower() for w in split_words(old)] == [w.lower() for w in split_words(new)], \
                    f"{record['id']} {tool}: {old!r} -> {new!r} is not a restyle"
    assert changed > 50


def test_masked_values_are_explained_in_the_parameter_description_in_enum_order():
    """Masking, when asked, explains every masked value where its parameter is described, listing the enum in order.

    Before: a masked value ("response-body" -> "lYNFw2LY") appeared in the enum with nothing saying what it
    meant, and a masked log level lost its place among error, warning, info, debug."""
    record = normalize(with_calls("playwright"))
    explained = 0
    for seed in range(8):
        variant, applied, _ = run(Values(modes=("enum",), styles=("mask",), p=1.0), record, random.Random(seed))
        assert check_variant(record, variant) == []
        assert canonicalize(variant)["tools"] == record["tools"]
        tools = {t["name"]: t for t in variant["tools"]}
        for tool, old, new, path in _value_changes(record, variant):
            schema = tools[tool]["parameters"]
            prop = tuple(path[:-1]) if path[-1] == "[]" else tuple(path)
            enum = string_enum(node_at(schema, tuple(path)))
            desc = node_at(schema, prop)["description"]
            desc = desc[desc.index("must be one of "):]  # the explanation: the last sentence
            assert f'"{new}" ({old})' in desc, f"{tool}.{path}: {new!r} is not explained in {desc!r}"
            listed = [v for v in enum if f'"{v}"' in desc]
            assert listed == enum and [desc.index(f'"{v}"') for v in enum] == sorted(desc.index(f'"{v}"') for v in enum)
            explained += 1
    assert explained > 20


def test_masked_log_level_keeps_its_rank_in_the_listing():
    """playwright's console level (error < warning < info < debug) lists the masked level where it ranks."""
    record = normalize(with_calls("playwright"))
    params = {"steps": [{"op": "values", "tool": "browser_console_messages", "path": ["level"],
                         "map": [["warning", "GRplb"]], "texts": True}],
              "explain": [{"tool": "browser_console_messages", "path": ["level"], "map": [["warning", "GRplb"]]}]}
    variant = Values(styles=("mask",)).apply(record, params)
    level = next(t for t in variant["tools"] if t["name"] == "browser_console_messages")["parameters"]["properties"]["level"]
    assert level["enum"] == ["error", "GRplb", "info", "debug"]
    assert level["description"].endswith('The value must be one of "error", "GRplb" (warning), "info", "debug".')
    call = next(c for m in variant["messages"] for c in m.get("tool_calls") or ()
                if c["function"]["name"] == "browser_console_messages")
    assert call["function"]["arguments"] == {"level": "GRplb"}
    assert check_variant(record, with_restore(record, variant)) == []
