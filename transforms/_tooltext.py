"""Description rewriting for ``tool.describe``: bank paraphrases and clause-boundary shortening.

Pure functions; names (identifier-like tokens) and code spans are never changed.

Paraphrase swaps are *phrase-level and grammatical in context* (the rules are in
``transforms/banks/descriptions.yaml`` and docs/design.md, "Descriptions"): each bank group has
a kind that says where its phrases may be swapped (``verb``, ``start``, ``noun``, ``phrase``), and
a domain group applies only on a harness of its domain. Shortening never drops a sentence or a
clause that carries a constraint (:data:`CONSTRAINT`).
"""

from __future__ import annotations

import random
import re
from functools import lru_cache

from transforms._banks import load_banks
from transforms._domains import domain_applies
from transforms.meaning import (ABBREVIATIONS, CONSTRAINT, group_changes, is_warning, paraphrase_changes,
                                shortening_changes)

__all__ = ["paraphrase", "shorten", "has_constraint", "CONSTRAINT", "PHRASE_KINDS"]

#: Where the phrases of a bank group may be swapped (see transforms/banks/descriptions.yaml).
PHRASE_KINDS = ("phrase", "verb", "start", "noun", "head")

_WH = re.compile(r"(?i)^(how|what|which|when|where|who|whom|whose|why)\b")
_DET = re.compile(r"(?i)^(the|a|an|this|that|these|those|each|every|any|its|their|your|our|his|her|my|no|some)\b")
_PREV_DET = re.compile(r"(?i)\b(the|a|an|this|that|these|those|each|every|any|its|their|your|our|his|her|my|no|some|"
                       r"total)\s+$")
_PREV_ARTICLE = re.compile(r"(?i)\b(a|an)(\s+)$")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n\s*(?:[-*•]\s+|\d+[.)]\s+)?)$")
_AUX = re.compile(r"(?i)^\s+(is|are|was|were|can|could|may|might|must|will|would|should|shall|have|has|had|do|does|"
                  r"did)\b")
_FUNCTION_BEFORE = re.compile(r"(?i)(?:[,;:(\[\"'\u2018\u201c]\s*|\b(?:the|a|an|this|that|these|those|each|every|any|its|"
                              r"their|your|our|his|her|my|no|some|of|for|in|on|at|to|from|with|by|about|into|per|"
                              r"via|than|as|and|or|but|not|is|are|was|were)\s+)$")
_FUNCTION_AFTER = re.compile(r"(?i)^(?:\s*$|\s*[.,;:!?)\]}\"'\u2019]|'s\b|\u2019s\b|\s+(?:of|for|in|on|at|to|from|with|"
                             r"by|and|or|that|which|who|is|are|was|were|can|may|must|will|should|if|when|as|into|"
                             r"about|than|but|not|does|do|has|have|per|via|whose|before|after|during|using)\b)")


def _group(entry, source: str) -> tuple[list[str], str, str | None]:
    if isinstance(entry, dict):
        phrases, kind, domain = entry.get("phrases"), entry.get("kind", "phrase"), entry.get("domain")
        unknown = sorted(set(entry) - {"phrases", "kind", "domain"})
        if unknown or kind not in PHRASE_KINDS or not isinstance(phrases, (list, tuple)) or (
                domain is not None and not isinstance(domain, str)):
            raise ValueError(f"phrase bank group {dict(entry)!r}: a group is a list of phrases or a mapping "
                             f"{{phrases: [...], kind: one of {list(PHRASE_KINDS)}, domain: NAME}}"
                             + (f" (unknown keys {unknown})" if unknown else ""))
        return [str(p) for p in phrases], kind, domain
    return [str(p) for p in entry], "phrase", None


@lru_cache(maxsize=64)
def _phrase_table(banks: tuple[str, ...], domain: str | None = None
                  ) -> tuple[re.Pattern[str] | None, dict[str, tuple[tuple[str, str], ...]]]:
    """The match regex and ``phrase (lower case) -> ((alternative, kind), ...)`` of the groups that apply on a
    harness of ``domain``."""
    table: dict[str, list[tuple[str, str]]] = {}
    for entry in load_banks(banks)["phrases"]:
        phrases, kind, group_domain = _group(entry, "phrases")
        broken = group_changes(phrases, mood=False)
        if broken:
            raise ValueError(f"phrase bank group {phrases!r} does not keep the meaning: {'; '.join(broken)}; "
                             "a group may only hold phrases with the same negations, modals, numbers and time words "
                             "(docs/design.md, the meaning contract)")
        if not domain_applies(group_domain, domain):
            continue
        for p in phrases:
            bucket = table.setdefault(p.lower(), [])
            bucket.extend((q, kind) for q in phrases if q.lower() != p.lower() and all(q != b[0] for b in bucket))
    if not table:
        return None, {}
    alts = sorted(table, key=lambda s: (-len(s), s))
    rx = re.compile(r"(?<![A-Za-z0-9_\-`])(" + "|".join(re.escape(a) for a in alts) + r")(?![A-Za-z0-9_\-])",
                    re.IGNORECASE)
    return rx, {k: tuple(v) for k, v in table.items()}


def _code_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in re.finditer(r"`[^`]*`", text)]


def _article_for(word: str) -> str:
    """``a`` or ``an`` before ``word`` (by its first sound, the usual spelling rules)."""
    w = word.lower()
    if re.match(r"(eu|uni|use|usu|uti|one|once|ur[aeiou])", w):
        return "a"
    if re.match(r"(hour|honest|honou?r|heir)", w):
        return "an"
    return "an" if w[:1] in "aeiou" else "a"


def _fits(kind: str, word: str, before: str, after: str) -> bool:
    """Whether the phrase ``word`` of a group of ``kind`` may be swapped between ``before`` and ``after``."""
    start = _SENTENCE_START.search(before) is not None
    if kind in ("verb", "start") and not start:
        return False
    if kind == "verb" and _AUX.match(after):
        return False  # the word is the subject: "Returns are accepted within 30 days"
    if kind in ("noun", "head") and not (start or _DET.match(word) or _FUNCTION_BEFORE.search(before)):
        return False  # the end of a longer noun phrase: "the viewer count of"
    if kind == "noun" and not _FUNCTION_AFTER.match(after):
        return False  # the start of a longer noun phrase: "the weather forecast"
    return True


@lru_cache(maxsize=16384)
def _swap_keeps_meaning(word: str, alt: str) -> bool:
    """Whether the bank phrase ``alt`` in place of the matched ``word`` keeps what a paraphrase must (negations,
    modals, numbers, time words: :func:`transforms.meaning.paraphrase_changes`, mood aside): a function of the two
    phrases, which the banks hold a few hundred of, asked for every match of every description."""
    return not paraphrase_changes(word, alt, mood=False)


def paraphrase(text: str, rng: random.Random, banks: tuple[str, ...] = (), rate: float = 0.7, *,
               domain: str | None = None) -> str:
    """``text`` with bank phrases (whole words, outside code spans) replaced by a synonym with probability ``rate``.

    Identifier-like tokens (names) are never matched: bank phrases are plain words and a
    match must not touch ``_``, ``-`` or a backtick. Only the groups that apply on a harness of
    ``domain`` are used, each where its kind allows; a phrase that starts with a wh-word is
    swapped only at the start of a sentence, no determiner follows a determiner, and a
    preceding ``a``/``an`` is made to agree with the new phrase.
    """
    rx, table = _phrase_table(tuple(banks), domain)
    if rx is None:
        return text
    spans = _code_spans(text)
    pieces: list[str] = []
    pos = 0
    for m in rx.finditer(text):
        if any(a <= m.start() < b for a, b in spans):
            continue
        word = m.group(0)
        before = text[:m.start()]
        after = text[m.end():]
        start = _SENTENCE_START.search(before) is not None
        if _WH.match(word) and not start:
            continue  # "decide how many": not a noun phrase here
        prev_det = _PREV_DET.search(before) is not None
        options = [alt for alt, kind in table[word.lower()]
                   if _fits(kind, word, before, after) and (start or not _WH.match(alt))
                   and not (prev_det and _DET.match(alt)) and _swap_keeps_meaning(word, alt)]
        if not options or rng.random() >= rate:
            continue
        alt = rng.choice(options)
        if word[:1].isupper():
            alt = alt[:1].upper() + alt[1:]
        elif word[:1].islower() and not alt[1:2].isupper():
            alt = alt[:1].lower() + alt[1:]
        head = text[pos:m.start()]
        art = _PREV_ARTICLE.search(head)
        if art:
            new_art = _article_for(alt)
            old = art.group(1)
            new_art = new_art.capitalize() if old[:1].isupper() else new_art
            head = head[:art.start(1)] + new_art + art.group(2)
        pieces.append(head)
        pieces.append(alt)
        pos = m.end()
    pieces.append(text[pos:])
    new = "".join(pieces)
    return text if paraphrase_changes(text, new) else new  # the meaning contract, on the whole text


def has_constraint(text: str) -> bool:
    """True when ``text`` carries a rule, a condition or a warning (:func:`transforms.meaning.is_warning`: a
    constraint word of :data:`CONSTRAINT`, or Warning, Unsafe, Note, Deprecated, Important ...; code spans do not
    count)."""
    return is_warning(text)


#: Where a description may be cut: semicolons, colons, dashes, and commas that open a qualifying
#: clause (not the commas of a list, which would leave "title, host.").
_CLAUSE_BREAK = re.compile(r"\s*(?:[;:]|\s[-\u2013\u2014]|,(?=\s+(?:optionally|e\.g\.|such as|for example|"
                           r"including|if|when|unless|which|sorted|with|without|starting|in|at|by)\b))\s")
_ITEM_LINE = re.compile(r"^[ \t]*(?:[-*+\u2022]|\d{1,3}[.)])[ \t]+\S")


def _units(text: str) -> list[tuple[str, str, str]]:
    """``text`` as (kind, unit, separator after it): ``list`` units are a whole list (its introducing line ending
    in a colon, its items and their indented continuation lines); ``prose`` units are sentences."""
    lines = text.split("\n")
    blocks: list[tuple[str, list[str]]] = []  # ("list" | "prose" | "blank", lines)
    for line in lines:
        if _ITEM_LINE.match(line):
            if blocks and blocks[-1][0] == "list":
                blocks[-1][1].append(line)
            elif blocks and blocks[-1][0] == "prose" and blocks[-1][1][-1].rstrip().endswith(":"):
                intro = blocks[-1][1].pop()  # "You should:" introduces the list: kept or dropped with it
                if not blocks[-1][1]:
                    blocks.pop()
                blocks.append(("list", [intro, line]))
            else:
                blocks.append(("list", [line]))
        elif not line.strip():
            blocks.append(("blank", [line]))
        elif blocks and blocks[-1][0] == "list" and line.startswith((" ", "\t")):
            blocks[-1][1].append(line)
        elif blocks and blocks[-1][0] == "prose":
            blocks[-1][1].append(line)
        else:
            blocks.append(("prose", [line]))
    units: list[list[str]] = []  # [kind, unit, separator]
    for kind, block in blocks:
        if kind == "blank":
            if units:
                units[-1][2] += "\n"
            continue
        if units:
            units[-1][2] += "\n"
        if kind == "list":
            units.append(["list", "\n".join(block), ""])
            continue
        para = "\n".join(block)
        pos = 0
        for m in re.finditer(rf"(?<=[.;!?]){ABBREVIATIONS}\s+", para):
            units.append(["prose", para[pos:m.start()], m.group(0)])
            pos = m.end()
        units.append(["prose", para[pos:], ""])
    return [(k, u, sep) for k, u, sep in units]


def _names_a_value(text: str, values: tuple[str, ...]) -> bool:
    return any(re.search(rf"(?<![\w-]){re.escape(v)}(?![\w-])", text) for v in values if v)


def shorten(text: str, max_words: int, values: tuple[str, ...] = ()) -> str:
    """``text`` cut at sentence, list or clause boundaries: its first sentence, then, while longer than
    ``max_words`` words, up to the last clause break (``,``, ``;``, ``:``, a dash) within the limit.

    Never cuts inside a word, a code span or a list (a list and the line that introduces it are kept or
    dropped whole), and never drops a sentence, list or clause that carries a constraint or a warning
    (:func:`has_constraint`: "Only transfer if the user explicitly asks", "Unsafe: executes arbitrary
    JavaScript", "Accepts: ISO 8601 ...", "Defaults to false" stay) or names one of ``values`` (the enum values
    of the parameter it describes: '"css" produces a screenshot sized in CSS pixels' explains a value); a full
    stop after "e.g." or "i.e." ends no sentence. ``text`` itself when there is no such boundary."""
    stripped = text.strip()
    units = _units(stripped)
    if len(units) > 1 and units[0][0] == "prose" and len(units[0][1].split()) >= 2:
        keep = [0] + [i for i in range(1, len(units)) if has_constraint(units[i][1])
                      or _names_a_value(units[i][1], values)]
        pieces = []
        for j, i in enumerate(keep):
            pieces.append(units[i][1])
            if j + 1 < len(keep):
                gap = [units[k][2] for k in range(i, keep[j + 1])]  # the widest break between the two kept units
                pieces.append(max(gap, key=lambda g: (g.count("\n"), len(g))))
        short = "".join(pieces)
        single = len(keep) == 1
    else:
        short, single = stripped, True
    if single and "\n" not in short and len(short.split()) > max_words:
        breaks = [m.start() for m in re.finditer(_CLAUSE_BREAK, short)
                  if len(short[:m.start()].split()) <= max_words and len(short[:m.start()].split()) >= 2
                  and short[:m.start()].count("`") % 2 == 0 and not has_constraint(short[m.start():])
                  and not _names_a_value(short[m.start():], values)]
        if breaks:
            short = short[:breaks[-1]]
    short = short.rstrip()
    if not _ITEM_LINE.match(short.rsplit("\n", 1)[-1]):
        short = short.rstrip(",;:").rstrip()
        if stripped.endswith(".") and not short.endswith((".", "!", "?")):
            short += "."
    if not short or short == stripped or shortening_changes(stripped, short):
        return text
    return short
