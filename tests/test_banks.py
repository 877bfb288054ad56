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


@pytest.mark.parametrize("name", ["prompt_paraphrase", "prompt_titles", "skill_descriptions"])
def test_every_built_in_group_keeps_the_meaning_contract(name, tmp_path, monkeypatch):
    """The built-in phrase banks are held to the meaning contract here, not at every start: each group read from the
    shipped file passes ``_read``'s contract check (what a user's extra bank file gets at load). The check must be
    able to fail: the same file with one group given a phrasing that drops a negation is refused."""
    from transforms import phrasebank as pb

    assert set(pb.MEANING_BANKS) == {"prompt_paraphrase", "prompt_titles", "skill_descriptions"}
    source, data = read_bank(name)
    mood = name in pb.SENTENCE_BANKS
    groups = pb._read(source, data, meaning=True, mood=mood)
    assert [g.id for g, _ in groups] == [g["id"] for g in data["groups"]]
    broken = {**data, "groups": [dict(g) for g in data["groups"]]}
    first = broken["groups"][0]
    bad = first["phrasings"][0]
    bad = bad.replace("{", "not {", 1) if "{" in bad else "never " + bad
    first["phrasings"] = [*first["phrasings"], bad]
    with pytest.raises(BankError, match="do not say the same thing"):
        pb._read(source, broken, meaning=True, mood=mood)


def test_an_extra_bank_file_is_checked_against_the_meaning_contract(tmp_path):
    """Groups from a user's bank file are still checked at load (the built-in ones are checked by the suite)."""
    extra = tmp_path / "extra.yaml"
    extra.write_text("version: 1\ngroups:\n  - id: mine\n    phrasings: ['Always answer briefly.', "
                     "'Never answer briefly.']\n", encoding="utf-8")
    with pytest.raises(BankError, match="do not say the same thing"):
        load_bank("prompt_paraphrase", (str(extra),))
