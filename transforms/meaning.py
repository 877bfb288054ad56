"""The meaning contract of the text transforms, as rules a check can run.

A paraphrase (``tool.describe``, ``prompt.paraphrase``, ``skill.describe``) may change words, never
what the text asks or states: the rule checker here compares what a rewrite must keep
(docs/design.md, "The meaning contract of text transforms"):

* **negations**: not / n't / cannot, no / none / nothing, never, without, nor: each kept, by kind and count
  ("No absolute claims" is not "Avoid absolute claims");
* **modality and scope words**: must, should, may/can, always, only, at most, at least, exactly, unless,
  except, if, before, after, until, ...: each kept by kind and count ("Quote only from X" keeps its
  "only");
* **numbers**: every figure and number word, as written;
* **time and tense**: current, now, today, already, previously, was, were, has been, will, ...: never
  swapped ("Get current time" is not "Get the day's time");
* **lists**: the number of list items (Markdown bullets and numbered lines);
* **instructions**: how many sentences instruct (an imperative verb, "you must ...", "never ...") rather
  than state ("Quote delivery times only from X" is not "Delivery times come only from X").

:func:`paraphrase_changes` says what a rewrite lost (an empty list: nothing); the transforms drop a
rewrite that loses anything, and :func:`group_changes` checks every group of a phrase bank when the
bank is loaded, so a bank cannot hold two phrasings that differ in any of these. Shortening has its
own rule (:func:`shortening_changes`): a rewrite may drop sentences and whole lists, never a sentence
that warns or constrains, and never part of a list.

Hand-written rules, not a parser: the rules must be exact on the phrases they name (negations,
modals, figures), which a statistical tagger does not promise, and they run in every variant's
sample step. What a rule cannot see (the scope of "at most 200 characters" moving from the reply to
each sentence) is kept by the banks themselves and by the hand audit (docs/design.md).
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import NamedTuple

__all__ = ["Signature", "signature", "paraphrase_changes", "shortening_changes", "group_changes",
           "is_instruction", "sentences", "CONSTRAINT", "WARNING", "ABBREVIATIONS", "is_warning"]

_CODE = re.compile(r"`[^`\n]*`")

#: negation words by kind
_NEGATIONS = {
    "not": "not", "n't": "not", "cannot": "not",
    "no": "no", "none": "no", "nothing": "no", "nobody": "no", "nowhere": "no",
    "never": "never", "without": "without", "nor": "nor", "neither": "nor",
}
#: modality, scope and condition words by kind (longest phrases first when matched)
_MODALS = {
    "must": "must", "have to": "must", "has to": "must", "need to": "must", "needs to": "must", "required": "must",
    "requires": "must", "require": "must", "mandatory": "must",
    "should": "should", "ought to": "should",
    "may": "may", "might": "may", "can": "may", "could": "may",
    "always": "always", "only": "only", "exactly": "exactly", "at most": "at most", "at least": "at least",
    "no more than": "at most", "no fewer than": "at least", "up to": "at most",
    "unless": "unless", "except": "except", "if": "if", "only if": "only if", "if and only if": "iff",
    "before": "before", "after": "after", "until": "until", "once": "once", "whenever": "whenever",
    "ensure": "ensure", "make sure": "ensure", "avoid": "avoid", "forbidden": "forbidden", "prohibited": "forbidden",
    "instead": "instead", "explicitly": "explicitly",
}
#: time and tense words
_TIME = {
    "current": "current", "currently": "current", "present": "current", "now": "now", "today": "today",
    "today's": "today", "tonight": "today", "tomorrow": "tomorrow", "yesterday": "yesterday",
    "already": "already", "previously": "previously", "previous": "previous", "prior": "previous",
    "recent": "recent", "recently": "recent", "latest": "latest", "last": "last", "next": "next",
    "was": "past", "were": "past", "had": "past", "did": "past", "has been": "perfect", "have been": "perfect",
    "will": "future", "would": "conditional", "going to": "future", "still": "still", "yet": "yet",
}
_NUMBER_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
                 "sixteen seventeen eighteen nineteen twenty thirty forty fifty hundred thousand million billion "
                 "twice half first second third fourth fifth single double").split()


def _phrase_regex(words) -> re.Pattern[str]:
    alts = sorted(words, key=len, reverse=True)
    return re.compile(r"(?<![\w'\u2019-])(" + "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in alts)
                      + r")(?![\w-])", re.IGNORECASE)


_NEG_RX = re.compile(r"(?<![\w-])(not|cannot|no|none|nothing|nobody|nowhere|never|without|nor|neither)(?![\w'-])|"
                     r"(?<=\w)(n['\u2019]t)(?!\w)", re.IGNORECASE)
_MODAL_RX = _phrase_regex(_MODALS)
_TIME_RX = _phrase_regex(_TIME)
_NUMBER_RX = re.compile(r"(?<![\w.])(\d+(?:[.,:/-]\d+)*%?)(?![\w])|(?<![\w-])(" + "|".join(_NUMBER_WORDS)
                        + r")(?![\w-])", re.IGNORECASE)
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+\u2022]|\d{1,3}[.)]|[a-z][.)])[ \t]+\S", re.MULTILINE)

#: Words that make a sentence or clause a rule or a condition: shortening never drops one that has them.
CONSTRAINT = re.compile(r"(?i)\b(only|never|must|always|not|no|unless|if|otherwise|except|cannot|can't|don't|"
                        r"doesn't|won't|shouldn't|mustn't|should|required|requires|require|before|after|until|exactly|"
                        r"at\s+most|at\s+least|no\s+more\s+than|ensure|make\s+sure|avoid|forbidden|prohibited|"
                        r"instead|mandatory|explicitly|can(?=\s+(?:be|contain|include|accept|take|have|hold|only))|"
                        r"could|may|might|accepts?|accepted|allowed|valid|"
                        r"defaults?\s+to|default\s+is|by\s+default|omit|omitted)\b")
#: words that open a warning: a sentence holding one is never dropped by shortening
WARNING = re.compile(r"(?i)\b(warning|warn|unsafe|caution|danger|dangerous|deprecated|important|note|notice|"
                     r"careful|beware|security|destructive|irreversible|irreversibly|permanently|"
                     r"rce|arbitrary)\b")

#: base-form verbs that start an instruction ("Use", "Quote", "Reply"): the imperative mood
_IMPERATIVE = frozenset("""
accept access add adhere adjust adopt allow analyze analyse answer apply approve ask assess assist assume attach
authenticate avoid be begin book break bring build calculate call cancel capture change chat check choose cite
clarify clean click close collect combine commit compare compile complete compute confirm consider consult continue
convert copy correct create cut deal decide decline declare define delete deliver deny depend describe design
determine discuss dispatch display do document double download draft edit emit enable end enforce ensure enumerate
escalate estimate evaluate exchange execute exercise expand explain explore export express extract fabricate feed
feel fetch fill filter find finish fix focus follow format gather generate get give go greet guide hand handle help
highlight identify ignore implement import include infer invent inform insert inspect install introduce invoke keep
label launch lean leave let limit list load locate log look maintain make manage map mark match mention merge mimic
minimize modify move name navigate note notify obtain offer open operate order output parse pass pay pick place
plan play point post prefer prepare present preserve prevent print prioritize proceed process produce prompt
propose protect provide publish pull push put query quote raise reach read reason recommend record redeem redo
re-do redirect reduce refer reflect refresh refuse register reject rely remember remind remove rename render
reorder repeat replace reply report request require rerun reset resolve respect respond restart restate restore
resume retrieve retry return reuse review revise revisit rewrite run save say scaffold scan schedule search see
select send set share show sign skip solve sort speak specify split start state stay step stick stop store
structure submit suggest summarize summarise supply support switch take talk tell test think track transfer
translate treat trust try turn undo update upload use utilize validate verify view visit wait walk warn watch
welcome work wrap write
""".split())
_IMPERATIVE_LEAD = re.compile(
    r"^(?:please\s+|(?:also|then|now|first|finally|just|simply)\s+,?\s*)*"
    r"(?:(?:always|never|only|do\s+not|don't|don\u2019t|do)\s+)?([a-z]+(?:-[a-z]+)?)\b", re.IGNORECASE)
#: words that start a noun phrase before "for" ("Guide for creating ...", "Support for ...") but a command elsewhere
_NOUN_FIRST = frozenset("guide support plan request design report note map record schedule structure document test "
                        "review set list".split())
_BANNED = re.compile(r"^(?:please\s+)?(?:never|always|do\s+not|don't|don\u2019t)\s+[a-z]", re.IGNORECASE)
_YOU_MODAL = re.compile(r"^(?:please\s+)?you\s+(?:must|should|shall|need\s+to|have\s+to|may\s+not|must\s+not|"
                        r"should\s+not|will\s+need|are\s+(?:required|expected|not\s+allowed)\s+to|cannot|can't|"
                        r"never|always|only)\b", re.IGNORECASE)
#: abbreviations whose full stop ends no sentence ("e.g. [11, 12]")
ABBREVIATIONS = r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\betc\.)(?<!\bvs\.)(?<!\bcf\.)(?<!\bapprox\.)(?<!\bNo\.)"
_SENTENCE_END = re.compile(rf"(?<=[.!?]){ABBREVIATIONS}\s+(?=[\"'(\[`*_]*[A-Z0-9])|\n\s*\n|"
                           r"\n(?=[ \t]*(?:[-*+\u2022]|\d{1,3}[.)])\s)")


class Signature(NamedTuple):
    """What a paraphrase must keep of a text (see the module docstring)."""

    negations: Counter
    modals: Counter
    numbers: Counter
    time: Counter
    list_items: int
    instructions: int


def _prose(text: str) -> str:
    return _CODE.sub(" ", text)


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences and list items (a heuristic splitter: full stops before a capital, blank lines,
    list markers)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def is_instruction(sentence: str) -> bool:
    """True when ``sentence`` instructs: it starts (after a leading "if/when ...," clause or a list marker) with an
    imperative verb, with "never/always/only/do not" and a verb, or with "you must / should / ..."."""
    s = re.sub(r"^[ \t]*(?:[-*+\u2022]|\d{1,3}[.)]|[a-z][.)])[ \t]+", "", sentence.strip())
    s = re.sub(r"^[\"'(\[*_`]+", "", s)
    candidates = [s]
    lead = re.match(r"^(?:if|when|whenever|once|before|after|unless|while|for|to|in|on|with|as)\b[^,]{0,160},\s*", s,
                    re.IGNORECASE)
    if lead:
        candidates.append(s[lead.end():])
    for c in candidates:
        if _YOU_MODAL.match(c) or _BANNED.match(c) or re.match(r"^no\s+[a-z]", c, re.IGNORECASE):  # "No ...": a ban
            return True
        m = _IMPERATIVE_LEAD.match(c)
        rest = c[m.end():] if m else ""
        if (m and m.group(1).lower() in _IMPERATIVE and not re.match(r"^\s*(?:is|are|was|were|has|have|'s|of)\b", rest)
                and not (m.group(1).lower() in _NOUN_FIRST and re.match(r"^\s+for\b", rest))):
            return True
    return False


@lru_cache(maxsize=8192)
def signature(text: str) -> Signature:
    """The :class:`Signature` of ``text`` (code spans do not count: they are names and values, not prose)."""
    prose = _prose(text)
    negs = Counter(_NEGATIONS[(m.group(1) or "n't").lower().replace("\u2019", "'")] for m in _NEG_RX.finditer(prose))
    modals = Counter(_MODALS[re.sub(r"\s+", " ", m.group(1).lower())] for m in _MODAL_RX.finditer(prose))
    time = Counter(_TIME[re.sub(r"\s+", " ", m.group(1).lower())] for m in _TIME_RX.finditer(prose))
    numbers = Counter((m.group(1) or m.group(2)).lower() for m in _NUMBER_RX.finditer(prose))
    items = len(_LIST_ITEM.findall(text))
    instructions = sum(is_instruction(s) for s in sentences(prose))
    return Signature(negs, modals, numbers, time, items, instructions)


def _diff(kind: str, a: Counter, b: Counter) -> list[str]:
    out = []
    lost, added = a - b, b - a
    if lost:
        out.append(f"drops {kind} {', '.join(sorted(lost.elements()))!r}")
    if added:
        out.append(f"adds {kind} {', '.join(sorted(added.elements()))!r}")
    return out


def paraphrase_changes(old: str, new: str, *, mood: bool = True) -> list[str]:
    """What the rewrite ``new`` of ``old`` changed that a paraphrase must keep; ``[]`` when nothing.

    Compares the two :func:`signature`\\ s: negations, modality and scope words, numbers, time and tense words
    (each by kind and count), the number of list items and (with ``mood``) of instruction sentences.
    """
    if old == new:
        return []
    a, b = signature(old), signature(new)
    out = (_diff("a negation", a.negations, b.negations) + _diff("a modal or scope word", a.modals, b.modals)
           + _diff("a number", a.numbers, b.numbers) + _diff("a time or tense word", a.time, b.time))
    if a.list_items != b.list_items:
        out.append(f"has {b.list_items} list items instead of {a.list_items}")
    if mood and a.instructions != b.instructions:
        out.append(f"has {b.instructions} instructions instead of {a.instructions} (an instruction became a "
                   "statement, or the reverse)")
    return out


def is_warning(text: str) -> bool:
    """True when ``text`` warns or constrains: a :data:`WARNING` word or a :data:`CONSTRAINT` word (code spans do
    not count)."""
    prose = _prose(text)
    return bool(CONSTRAINT.search(prose) or WARNING.search(prose))


def _items(text: str) -> list[str]:
    return [m.group(0).strip() for m in re.finditer(r"^[ \t]*(?:[-*+\u2022]|\d{1,3}[.)])[ \t]+.*$", text, re.M)]


def shortening_changes(old: str, new: str) -> list[str]:
    """What the shortened ``new`` of ``old`` broke; ``[]`` when it only dropped what it may.

    A shortening keeps every sentence and list item that warns or constrains (:func:`is_warning`), word for
    word, and keeps or drops each list whole: the list items of ``new`` are those of ``old``'s lists, every
    item of each list it keeps.
    """
    if old == new:
        return []
    out = []
    flat = re.sub(r"\s+", " ", new)
    for s in sentences(old):
        if is_warning(s) and re.sub(r"\s+", " ", s).rstrip(".;:") not in flat:
            out.append(f"drops the warning or constraint {s[:80]!r}")
    old_lists = _lists(old)
    new_items = _items(new)
    for items in old_lists:
        kept = [i for i in items if i in new_items]
        if kept and len(kept) != len(items):
            out.append(f"keeps {len(kept)} of the {len(items)} items of the list that starts {items[0][:40]!r}")
    return out


def _lists(text: str) -> list[list[str]]:
    """The lists of ``text``: runs of list-item lines (indented continuation lines belong to their item)."""
    out: list[list[str]] = []
    current: list[str] = []
    for line in text.split("\n"):
        if re.match(r"^[ \t]*(?:[-*+\u2022]|\d{1,3}[.)])[ \t]+", line):
            current.append(line.strip())
        elif current and line.startswith((" ", "\t")) and line.strip():
            continue
        else:
            if current:
                out.append(current)
            current = []
    if current:
        out.append(current)
    return out


def group_changes(phrasings: list[str], *, mood: bool = True) -> list[str]:
    """Why the phrasings of one bank group do not say the same thing: each compared with the first
    (:func:`paraphrase_changes`, slots filled with a neutral word; ``mood=False`` for groups of phrases that are
    not sentences); ``[]`` when they may replace one another."""
    neutral = [re.sub(r"\{[A-Za-z_][A-Za-z0-9_]*\}", "X", p) for p in phrasings]
    out = []
    for p, n in zip(phrasings[1:], neutral[1:]):
        for reason in paraphrase_changes(neutral[0], n, mood=mood):
            out.append(f"{p!r} {reason} of {phrasings[0]!r}")
    return out
