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


def test_render_cache_is_keyed_by_the_template_and_the_exact_sections(fixture_records):
    """A cached render is the plain jinja2 render of the same template and sections: on the fixtures' prompts (a miss
    and a hit), after one section changes, and for sections that differ only in ``True`` / ``1`` / ``1.0``, NaN /
    None or key order, which render differently."""
    from hsa import cache
    from hsa.prompt_model import _compiled, render, system_sections

    cache.clear()
    seen = 0
    for r in fixture_records:
        prompt = normalize(r).get("prompt")
        if not prompt:
            continue
        sections = system_sections(prompt)
        want = _compiled(prompt["template"]).render(sections=sections)
        assert render(prompt["template"], sections) == want
        assert render(prompt["template"], sections) == want
        changed = [dict(sections[0], body=sections[0]["body"] + " more")] + list(sections[1:])
        assert render(prompt["template"], changed) == _compiled(prompt["template"]).render(sections=changed) != want
        seen += 1
    assert seen > 10
    typed = "{{ sections[0].x }}"
    for x, text in ((True, "True"), (1, "1"), (1.0, "1.0"), (None, "None"), (float("nan"), "nan"), (True, "True")):
        assert render(typed, [{"x": x}]) == text
    keys = "{% for k in sections[0] %}{{ k }}{% endfor %}"
    assert render(keys, [{"a": 1, "b": 2}]) == "ab" and render(keys, [{"b": 2, "a": 1}]) == "ba"
