"""One loader reads every bank file (tool-family banks, phrase banks, distractor skills): same errors for all."""

from __future__ import annotations

import pytest

from transforms import tool as T
from transforms._banks import BankError, builtin_bank_names, group_table, read_bank
from transforms.phrasebank import load_bank
from transforms.skill_functional import load_distractors

LOADERS = {
    "tool banks": lambda path: T.ToolRename(styles=("verb",), banks=(path,)),
    "phrase bank": lambda path: load_bank("prompt_paraphrase", (path,)),
    "distractor skills": lambda path: load_distractors((path,)),
}


@pytest.mark.parametrize("kind", sorted(LOADERS))
def test_a_bad_or_missing_bank_file_names_the_file(tmp_path, kind):
    """Invalid YAML and a missing file are BankErrors (ValueErrors) that name the file, whatever the bank kind."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("groups: [\n", encoding="utf-8")
    with pytest.raises(BankError, match=rf"{bad} is not valid YAML"):
        LOADERS[kind](str(bad))
    missing = tmp_path / "missing.yaml"
    with pytest.raises(BankError, match=rf"{missing} does not exist"):
        LOADERS[kind](str(missing))


def test_built_in_banks_come_from_the_one_loader():
    """Every built-in bank file is read by read_bank, once (cached), and each loader's banks come from it."""
    names = builtin_bank_names()
    assert {"descriptions", "prompt_paraphrase", "skill_distractors", "skill_synonyms"} <= set(names)
    source, data = read_bank("skill_distractors")
    assert source == "transforms/banks/skill_distractors.yaml"
    assert read_bank("skill_distractors")[1] is data
    assert [d["name"] for d in load_distractors()] == [s["name"] for s in data["skills"]]
    with pytest.raises(BankError, match="no built-in bank 'nope'"):
        read_bank("nope")


def test_group_table_is_every_other_member_of_each_group():
    """Word -> the other members of its groups, bank order, no repeats; casefold keys for the tool word banks."""
    assert group_table([["buy", "purchase"], ["buy", "get", "purchase"]]) == {
        "buy": ("purchase", "get"), "purchase": ("buy", "get"), "get": ("buy", "purchase")}
    assert group_table([["Get", "get", "fetch"]], casefold=True) == {"get": ("fetch",), "fetch": ("Get", "get")}
