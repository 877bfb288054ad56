"""Description rewriting for ``tool.describe``: bank paraphrases and clause-boundary shortening.

Pure functions; names (identifier-like tokens) and code spans are never changed.
"""

from __future__ import annotations

import random
import re
from functools import lru_cache

from transforms._banks import load_banks

__all__ = ["paraphrase", "shorten"]


@lru_cache(maxsize=16)
def _phrase_table(banks: tuple[str, ...]) -> tuple[re.Pattern[str] | None, dict[str, tuple[str, ...]]]:
    table: dict[str, list[str]] = {}
    for group in load_banks(banks)["phrases"]:
        phrases = [str(p) for p in group]
        for p in phrases:
            bucket = table.setdefault(p.lower(), [])
            bucket.extend(q for q in phrases if q.lower() != p.lower() and q not in bucket)
    if not table:
        return None, {}
    alts = sorted(table, key=lambda s: (-len(s), s))
    rx = re.compile(r"(?<![A-Za-z0-9_\-`])(" + "|".join(re.escape(a) for a in alts) + r")(?![A-Za-z0-9_\-])",
                    re.IGNORECASE)
    return rx, {k: tuple(v) for k, v in table.items()}


def _code_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in re.finditer(r"`[^`]*`", text)]


def paraphrase(text: str, rng: random.Random, banks: tuple[str, ...] = (), rate: float = 0.7) -> str:
    """``text`` with bank phrases (whole words, outside code spans) replaced by a synonym with probability ``rate``.

    Identifier-like tokens (names) are never matched: bank phrases are plain words and a
    match must not touch ``_``, ``-`` or a backtick.
    """
    rx, table = _phrase_table(tuple(banks))
    if rx is None:
        return text
    spans = _code_spans(text)

    def sub(m: re.Match) -> str:
        if any(a <= m.start() < b for a, b in spans) or rng.random() >= rate:
            return m.group(0)
        word = m.group(0)
        alt = rng.choice(table[word.lower()])
        if word[:1].isupper():
            return alt[:1].upper() + alt[1:]
        if word[:1].islower() and not alt[1:2].isupper():
            return alt[:1].lower() + alt[1:]
        return alt

    return rx.sub(sub, text)


#: Where a description may be cut: semicolons, colons, dashes, and commas that open a qualifying
#: clause (not the commas of a list, which would leave "title, host.").
_CLAUSE_BREAK = re.compile(r"\s*(?:[;:]|\s[-\u2013\u2014]|,(?=\s+(?:optionally|e\.g\.|such as|for example|"
                           r"including|if|when|unless|which|sorted|with|without|starting|in|at|by)\b))\s")


def shorten(text: str, max_words: int) -> str:
    """``text`` cut at a sentence or clause boundary: its first sentence, then, while longer than
    ``max_words`` words, up to the last clause break (``,``, ``;``, ``:``, a dash) within the limit.
    Never cuts inside a word or a code span; ``text`` itself when there is no such boundary."""
    stripped = text.strip()
    sentences = re.split(r"(?<=[.;!?])\s+", stripped)
    short = sentences[0] if len(sentences) > 1 and len(sentences[0].split()) >= 2 else stripped
    if len(short.split()) > max_words:
        breaks = [m.start() for m in re.finditer(_CLAUSE_BREAK, short)
                  if len(short[:m.start()].split()) <= max_words and len(short[:m.start()].split()) >= 2
                  and short[:m.start()].count("`") % 2 == 0]
        if breaks:
            short = short[:breaks[-1]]
    short = short.rstrip().rstrip(",;:").rstrip()
    if stripped.endswith(".") and not short.endswith((".", "!", "?")):
        short += "."
    return short if short and short != stripped else text
