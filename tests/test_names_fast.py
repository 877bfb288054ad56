"""The fast path of ``hsa.names.replace_tokens`` (tokens looked up where they are, kept per text) gives what the plain
token walk did: ``_old_replace_tokens`` below is the function as it was, kept as the oracle."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hsa import cache
from hsa.names import _TOKEN_SPLIT, _rename_set, replace_tokens, text_tokens
from hsa.record_texts import text_fields
from hsa.records import normalize
from tests.conftest import FIXTURES


def _old_replace_tokens(text, renames):
    if not renames or not text:
        return text
    names, plain = _rename_set(tuple(renames.items()))
    if not names:
        return text
    if plain:
        pieces = _TOKEN_SPLIT.split(text)
        for i in range(1, len(pieces), 2):
            new = renames.get(pieces[i])
            if new is not None:
                pieces[i] = new
        return "".join(pieces)
    return replace_tokens(text, renames)  # the regex path is unchanged


@pytest.fixture(params=["on", "off"])
def caches(request, monkeypatch):
    if request.param == "off":
        monkeypatch.setenv("HSA_CACHE", "0")
    cache.clear()
    yield request.param
    monkeypatch.delenv("HSA_CACHE", raising=False)
    cache.clear()


def _fixture_texts():
    records = [normalize(json.loads(line)) for line in FIXTURES.read_text(encoding="utf-8").splitlines()[::15]]
    return sorted({t for r in records for t in text_fields(r) if t})


def test_replace_tokens_equals_the_token_walk_on_fixture_texts(caches):
    """Every text of the fixture records under renames of its own tokens (one, several, a swap, a dotted chain, an
    identity entry), twice (a miss, then a hit), equals the plain walk; a text it leaves alone comes back equal."""
    texts = _fixture_texts()
    changed = 0
    for k, text in enumerate(texts):
        toks = sorted(text_tokens(text))
        if not toks:
            continue
        a, b = toks[k % len(toks)], toks[(k * 7 + 3) % len(toks)]
        for renames in ({a: a + "_X"}, {a: b, b: a}, {a: "z", "absent_name": "q", b: b},
                        {t: t.upper() for t in toks[:5]}, {"fs." + a: "zz"}):
            want = _old_replace_tokens(text, renames)
            for _ in range(2):
                assert replace_tokens(text, renames) == want, (text[:120], renames)
            changed += want != text
    assert len(texts) > 50 and changed > 200, (len(texts), changed)


_ALPHABET = st.sampled_from(["a", "b", "ab", "a_b", "A", "-", ".", " ", " ", " ", "1", "(", "`", "\n"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_ALPHABET, max_size=40).map("".join),
       st.dictionaries(st.sampled_from(["a", "b", "ab", "a_b", "a.b", "b.a", "1", "a-"]),
                       st.sampled_from(["a", "b", "X", "y_z", ""]), max_size=4))
def test_replace_tokens_equals_the_token_walk_on_generated_texts(text, renames):
    """Texts made of token characters, dots, dashes and separators, under any plain rename table."""
    assert replace_tokens(text, renames) == _old_replace_tokens(text, renames)
    assert replace_tokens(text, renames) == _old_replace_tokens(text, renames)  # the kept spots
