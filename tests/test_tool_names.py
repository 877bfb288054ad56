"""New names for tools and parameters: styles, word banks, prefixes, Hammer masks, RoTBench noise."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hsa.names import is_legal, split_words
from hsa.records import normalize
from tests.tool_cases import record
from transforms import tool as T
from transforms._banks import load_banks, synonyms
from transforms._toolnames import NAME_STYLES, detect_style, new_name

NAMES = st.sampled_from(["get_product_info", "getOrderStatus", "SearchProducts", "check-inventory", "LIST_COUPONS",
                         "compare_products", "load_skill", "price", "fs.read_file", "get_v2_data"])


def _levenshtein(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


@pytest.mark.parametrize("name,style", [("get_product_info", "snake"), ("getProductInfo", "camel"),
                                        ("GetProductInfo", "pascal"), ("get-product-info", "kebab"),
                                        ("GET_PRODUCT_INFO", "screaming"), ("price", "snake")])
def test_detect_style(name, style):
    """The style of a name is recognised, so synonyms are written in the name's own style."""
    assert detect_style(name) == style


@pytest.mark.parametrize("old,prefix_words", [("get_product_info", ("fetch", "retrieve", "read", "obtain", "lookup",
                                                                     "load")),
                                              ("getOrderStatus", ("fetch", "retrieve", "read", "obtain", "lookup",
                                                                  "load"))])
def test_verb_style_replaces_the_verb_in_the_same_style(old, prefix_words):
    """The verb style swaps a verb for a bank synonym and keeps the rest and the style."""
    seen = set()
    for seed in range(40):
        new = new_name(old, "verb", random.Random(seed))
        assert new != old and detect_style(new) == detect_style(old)
        assert split_words(new)[1:] == split_words(old)[1:] or split_words(new)[0] == split_words(old)[0]
        seen.add(split_words(new)[0])
    assert seen & set(prefix_words)


def test_noun_style_replaces_a_bank_noun():
    """The noun style replaces one noun of the name by a synonym from the bank."""
    outs = {new_name("get_product_info", "noun", random.Random(s)) for s in range(40)}
    assert "get_item_info" in outs or "get_goods_info" in outs
    assert all(o.startswith("get_") for o in outs)


def test_styles_that_do_not_apply_return_the_name_unchanged():
    """A name without bank words, or a prefix style without a legal prefix, stays as it is."""
    rng = random.Random(0)
    assert new_name("xyzzy", "verb", rng) == "xyzzy"
    assert new_name("get_x", "prefix", rng, prefix=None) == "get_x"
    assert new_name("shop.get_x", "prefix", rng, prefix="shop.") == "shop.get_x"


@settings(max_examples=40, deadline=None)
@given(NAMES, st.integers(0, 10_000))
def test_slight_noise_edits_at_most_a_third_of_the_name(name, seed):
    """RoTBench slight: at most max(1, len/3) character edits."""
    new = new_name(name, "slight", random.Random(seed))
    assert 1 <= _levenshtein(name, new) <= max(1, len(name) // 3)


@settings(max_examples=40, deadline=None)
@given(NAMES, st.integers(0, 10_000))
def test_medium_noise_reverses_or_draws_letters(name, seed):
    """RoTBench medium: the name reversed, or random letters only."""
    new = new_name(name, "medium", random.Random(seed))
    assert new == name[::-1] or new.isalpha()


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 8), st.integers(0, 8))
def test_masks_have_the_configured_length_and_start_with_a_letter(seed, lo, extra):
    """Hammer masks: lengths within mask_len, letters and digits, first character a letter."""
    new = new_name("get_x", "mask", random.Random(seed), mask_len=(lo, lo + extra))
    assert lo <= len(new) <= lo + extra and new[0].isalpha() and new.isalnum()


def test_unknown_style_says_which_exist():
    """An unknown style names the known ones."""
    with pytest.raises(ValueError, match="expected one of"):
        new_name("x", "klingon", random.Random(0))
    with pytest.raises(ValueError, match="unknown style"):
        T.ToolRename(styles=("klingon",))


def test_every_style_is_accepted_by_tool_rename():
    """tool.rename accepts every name style; tool.param_rename every one but prefix."""
    T.ToolRename(styles=NAME_STYLES)
    T.ParamRename(styles=tuple(s for s in NAME_STYLES if s != "prefix"))


@pytest.mark.parametrize("style", ["verb", "noun", "prefix", "mask", "slight", "medium", "camel"])
def test_new_tool_names_are_legal_and_collide_with_nothing(style):
    """For each style, renamed tools get names legal in their dialect, distinct, and not tokens of the record."""
    from hsa.renames import record_tokens

    for case in ("shop", "strict", "anthropic", "mcp"):
        src = normalize(record(case))
        taken = record_tokens(src)
        for seed in range(8):
            params = T.ToolRename(styles=(style,)).sample(src, random.Random(seed))
            if not isinstance(params, dict):
                continue
            news = list(params["renames"].values())
            assert len(set(news)) == len(news)
            dialect = src["tools"][0]["dialect"]
            assert all(is_legal(n, dialect) and n not in taken for n in news), news


def test_banks_are_extendable_with_user_files(tmp_path):
    """A user bank file adds synonym groups to the built-in banks (used by the verb style)."""
    extra = tmp_path / "mine.yaml"
    extra.write_text("verbs:\n  - [zap, zorch]\n", encoding="utf-8")
    assert "zorch" in synonyms("verbs", (str(extra),))["zap"]
    assert len(load_banks((str(extra),))["verbs"]) == len(load_banks()["verbs"]) + 1
    assert new_name("zap_item", "verb", random.Random(0), banks=(str(extra),)) == "zorch_item"
    T.ToolRename(styles=("verb",), banks=(str(extra),))


@pytest.mark.parametrize("text,match", [("verbs: 3\n", "must be a list"), ("colours: []\n", "unknown bank"),
                                        ("- a\n", "must be a mapping"), ("verbs: [\n", "not valid YAML"),
                                        ("tools:\n  - name: book\n    parameters:\n      type: object\n      properties:\n"
                                         "        at: {type: string, description: Time, ISO 8601}\n",
                                         r"tools\[0\]\.parameters\.properties\.at\.ISO 8601 has no value.*quote")])
def test_bad_bank_files_fail_when_the_transform_is_built(tmp_path, text, match):
    """A bad bank file fails when the transform is built, saying what is wrong."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=match):
        T.ToolRename(styles=("verb",), banks=(str(bad),))
    with pytest.raises(ValueError, match="does not exist"):
        T.ToolRename(banks=(str(tmp_path / "missing.yaml"),))


def test_builtin_tool_banks_hold_only_meant_values():
    """Every built-in distractor schema is a valid JSON Schema with no stray keys (an unquoted comma in a
    YAML flow mapping once turned 'Time, ISO 8601' into a description 'Time' and a key 'ISO 8601': null)."""
    from jsonschema import Draft202012Validator

    keywords = {"type", "description", "enum", "default", "minimum", "maximum", "items", "format", "properties",
                "required", "minItems", "maxItems", "minLength", "maxLength", "additionalProperties"}

    def check(schema, where):
        assert set(schema) <= keywords, (where, sorted(set(schema) - keywords))
        for name, prop in schema.get("properties", {}).items():
            check(prop, f"{where}.{name}")
        if isinstance(schema.get("items"), dict):
            check(schema["items"], f"{where}[]")

    for tool in load_banks()["tools"]:
        Draft202012Validator.check_schema(tool["parameters"])
        check(tool["parameters"], tool["name"])
    at = next(t for t in load_banks()["tools"] if "at" in t["parameters"].get("properties", {}))
    assert at["parameters"]["properties"]["at"]["description"] == "Time, ISO 8601"


def test_builtin_banks_ignore_other_families_files():
    """Files of other families in transforms/banks (no tool bank key) are not read as tool banks."""
    banks = load_banks()
    assert banks["verbs"] and banks["phrases"] and banks["tools"] and banks["replies"]
    assert all(isinstance(g, tuple) or (isinstance(g, dict) and g["cues"]) for g in banks["verbs"])
