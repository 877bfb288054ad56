"""Phrase-bank lookups cached per text (issue 8): the same matches as a fresh search, callers get their own list."""

from __future__ import annotations

from hsa.records import normalize
from transforms import phrasebank
from transforms.phrasebank import load_bank


def _texts(records) -> list[str]:
    out = []
    for raw in records:
        rec = normalize(raw)
        out += [s["body"] for s in (rec.get("prompt") or {}).get("sections", ())]
        out += [s.get("description", "") for s in rec.get("skills") or ()]
    return out


def test_cached_find_equals_a_fresh_search(fixture_records, monkeypatch):
    """Bank.find answers as the uncached search does, on first and repeated calls, past the cache bound."""
    monkeypatch.setattr(phrasebank, "_FOUND_MAX", 7)
    texts = _texts(fixture_records[:40])
    found = 0
    for name in ("prompt_paraphrase", "skill_descriptions"):
        bank = load_bank(name)
        for text in texts + texts[::-1]:
            assert bank.find(text) == bank._find(text)
            found += bool(bank.find(text))
        assert len(bank._found) <= 7
    assert found  # the banks match some fixture texts


def test_find_returns_a_list_of_its_own():
    """Changing the list find returned does not change the next answer."""
    bank = load_bank("prompt_paraphrase")
    text = "Be concise. Do not make up facts. Answer in English."
    first = bank.find(text)
    first.clear()
    assert bank.find(text) == bank._find(text)


def test_cache_is_not_part_of_the_bank_value():
    """Two loads of a bank compare equal whatever each has cached."""
    a = load_bank("prompt_paraphrase")
    a.find("Be concise.")
    load_bank.cache_clear()
    b = load_bank("prompt_paraphrase")
    assert a == b and repr(a) == repr(b)
