"""hsa.literals: the C-tokenizer fast path finds exactly the literals tokenize finds (issue 8)."""

from __future__ import annotations

import random
import sys

import pytest
from hypothesis import example, given, settings, strategies as st

from hsa.literals import c_string_tokens, plain_literals, plain_literals_tokenize
from hsa.renames import hook_literals

FAST = sys.version_info[:2] == (3, 11)  # the C path is taken on 3.11 only

# Pieces that break sources where the two tokenizers part ways: stray and line-leading
# backslashes, dedents to no outer level, open brackets and strings at EOF, control
# characters, prefixes, escapes, non-ASCII, comments.
JUNK = ["\\", "\\\n", "(", ")", "[", "]", '"', "'", '"""', "'''", "\n", "\n    ", "\n  ", "\n\t", "\t", "#",
        ' \\ "x"\n', 'f"', 'b"', 'rb"', 'u"', 'Rb"', 'fR"', "$", "?", "\n\\ \"q\"\n", "1if", "0b", "1_",
        "\u2028", "\x85", "é", "℘", "²", '"\\x41"', "'\\N{BULLET}'", '"a\\\nb"', '\n"""\n', 'if x:\n  "z"\n',
        ";", ":", "\n\n# c\n", " ", '\\\n"w"', "\n\t\t", "\n        ", "\n# x", "\n    # c\n", '\t"t"\n',
        '"s"\n', "  \\\n", "\x0c", "\r\n", "\x00", "\ud800"]


def _hook_sources(records) -> list[str]:
    return sorted({h["source"] for r in records for h in r.get("hooks") or ()})


def _mutant(rng: random.Random, source: str) -> str:
    """``source`` cut at random and with 1-3 junk pieces put at random places or line starts."""
    mode = rng.random()
    if mode < 0.3:
        a = rng.randrange(len(source))
        source = source[a:a + rng.randrange(600)]
    elif mode < 0.5:
        lines = source.split("\n")
        a = rng.randrange(len(lines))
        source = "\n".join(lines[a:a + rng.randrange(1, 12)])
    for _ in range(rng.randrange(1, 4)):
        if rng.random() < 0.5:
            j = rng.randrange(len(source) + 1)
        else:
            j = rng.choice([0] + [k + 1 for k, ch in enumerate(source) if ch == "\n"])
            while rng.random() < 0.5 and j < len(source) and source[j] in " \t":
                j += 1
        source = source[:j] + rng.choice(JUNK) + source[j:]
    return source


def test_fixture_hook_sources_take_the_fast_path_and_agree(fixture_records):
    """Every fixture hook source is read by the C tokenizer and gives tokenize's literal set."""
    sources = _hook_sources(fixture_records)
    assert len(sources) > 10
    for source in sources:
        if FAST:
            assert c_string_tokens(source) is not None, source[:80]
        assert plain_literals(source) == plain_literals_tokenize(source)


def test_broken_fixture_sources_agree_with_tokenize(fixture_records):
    """3000 cut and junk-spliced fixture hook sources: the same literal set as tokenize, fast path or not."""
    sources = _hook_sources(fixture_records)
    rng = random.Random(0)
    fast = 0
    for _ in range(3000):
        source = _mutant(rng, rng.choice(sources))
        assert plain_literals(source) == plain_literals_tokenize(source), repr(source)
        fast += c_string_tokens(source) is not None
    if FAST:
        assert fast > 200  # the C path was taken on many broken sources, not only refused


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(JUNK + ["x = ", "'a|b'", '"c"', "def f():\n", "    return ", "\n", "(", ")"]),
                max_size=30))
@example(pieces=["℘", 'f"', 'f"'])  # a name to the C tokenizer, an error token and an f-string to tokenize
def test_junk_sources_agree_with_tokenize(pieces):
    """Sources made of junk pieces give tokenize's literal set."""
    source = "".join(pieces)
    assert plain_literals(source) == plain_literals_tokenize(source)


# Sources where the C tokenizer stops without an error or reads lines otherwise than tokenize.
SILENT = {
    "stray backslash after a statement": 'x = 1\n\\ "hidden"\n',
    "dedent to no outer level": 'if a:\n    b = "x"\n  c = "y"\n',
    "EOF inside brackets": 'x = ("a",\n',
    "EOF after a line continuation": 'x = "a" + \\\n',
    "a dedent after a backslash-only line": 'def f():\n    x = 1\n\\\n        if y:\n            return "a"\n    z = 2\n',
    "a stray backslash after a dedent": 'if a:\n    b\n\\ "x"\n',
}


@pytest.mark.skipif(not FAST, reason="the C tokenizer path is used on Python 3.11 only")
@pytest.mark.parametrize("case", sorted(SILENT))
def test_sources_the_c_tokenizer_misreads_are_refused(case):
    """Where the C tokenizer would end early or indent otherwise, the fast path is refused and tokenize decides."""
    source = SILENT[case]
    assert c_string_tokens(source) is None
    assert plain_literals(source) == plain_literals_tokenize(source)


@pytest.mark.parametrize("source, expected", [
    ('A = "a|b" "c"\n', {"a|b", "a", "b", "c"}),  # implicit concatenation: each token on its own
    ("A = '''x\ny'''\nB = u'u'\nC = R'\\d'\n", {"x\ny", "u", "\\d"}),
    ('A = "\\t|\\x41"\nB = b"q"\nC = rb"r"\nD = f"{A}" "p"\n', {"\t|A", "\t", "A", "p"}),
    ('A = ""\nB = """"""\nC = "\'"\n', {"", "'"}),
    ("x = 1if 1 else 'w'\n", {"w"}),  # a SyntaxWarning for the C tokenizer; ignored, as tokenize does
    ("x = 'é℘'  # 'no'\n", {"é℘"}),
    ("x = '\ud800'\n", set()),  # a lone surrogate: the C tokenizer refuses it, literal_eval too
    ("x = 'a'\r\ny = 'b'\n", {"a", "b"}),
    ("def f(:\n  'x", set()),
])
def test_literal_values(source, expected):
    """Literal values, prefixes, escapes and refusals are those of tokenize + literal_eval."""
    assert plain_literals(source) == expected == plain_literals_tokenize(source)


def test_hook_literals_uses_the_fast_path_per_hook():
    """hook_literals is the union over hooks of plain_literals."""
    rec = {"hooks": [{"name": "a", "source": 'X = "p|q"\n'}, {"name": "b", "source": "Y = 'r'\n"}, {"name": "c"}]}
    assert hook_literals(rec) == {"p|q", "p", "q", "r"}
