"""Phrase banks: YAML files of equivalent phrasings, shared by ``prompt.paraphrase``,
``prompt.titles`` and ``skill.describe``.

A bank is a list of *groups*; the phrasings of a group say the same thing and may
replace one another. A phrasing may hold ``{slot}`` placeholders that capture text
(one line, at least one character) and carry it across; every phrasing of a group has
the same slots. Literal braces are written ``{{`` and ``}}``::

    version: 1
    groups:
      - id: no-unreturned-facts
        phrasings:
          - Never state a price, stock level or delivery time that no tool returned.
          - Only quote prices, stock levels and delivery times that a tool returned.
      - id: host-intro
        phrasings:
          - "You are {host}, the AI digital host of {store}'s live room."
          - "You are {host}, the AI host of {store}'s live stream."

Built-in banks live in ``transforms/banks/<name>.yaml``; users add groups with their
own files (the ``banks`` option of the transforms that use them). A bank also defines
the canonical form of a text: every match replaced by its group id and captures, so
two texts that differ only by equivalent phrasings have the same canonical form.
"""

from __future__ import annotations

import dataclasses
import re
from functools import lru_cache
from typing import Any

from transforms._banks import BankError, builtin_bank_names, read_bank
from transforms.meaning import group_changes

__all__ = ["Group", "Match", "Bank", "BankError", "load_bank", "builtin_bank_names", "SENTENCE_BANKS", "MEANING_BANKS"]

_SLOT = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}|\{|\}")
_BEFORE = r"(?<![A-Za-z0-9_])"
_AFTER = r"(?![A-Za-z0-9_])"


@dataclasses.dataclass(frozen=True)
class Group:
    """Phrasings that may replace one another; ``slots`` are their placeholders (sorted)."""

    id: str
    phrasings: tuple[str, ...]
    slots: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Match:
    """One phrasing found in a text: span, group index, phrasing index, captured slot values."""

    start: int
    end: int
    group: int
    phrasing: int
    captures: tuple[tuple[str, str], ...]


def _parse(phrasing: str, where: str) -> tuple[str, tuple[str, ...], str]:
    """One phrasing read: its regex's source (:class:`Bank` compiles it the first time a text holds the
    phrasing's longest literal run), its slots, and a format string to render it. A slot that ends the phrasing
    captures the rest of the line."""
    parts, slots, fmt, seen, pos = [], [], [], set(), 0
    ends_with_slot = phrasing.endswith("}") and not phrasing.endswith("}}")
    for m in _SLOT.finditer(phrasing):
        literal = phrasing[pos:m.start()]
        parts.append(re.escape(literal))
        fmt.append(literal.replace("\x00", ""))
        pos = m.end()
        tok = m.group(0)
        if tok in ("{{", "}}"):
            parts.append(re.escape(tok[0]))
            fmt.append(tok[0])
        elif m.group(1):
            name = m.group(1)
            if name in seen:
                parts.append(f"(?P={name})")
            elif ends_with_slot and m.end() == len(phrasing):
                parts.append(f"(?P<{name}>[^\\n]+)(?=\\n|\\Z)")  # the last slot: the rest of the line
                seen.add(name)
                slots.append(name)
            else:
                parts.append(f"(?P<{name}>[^\\n]+?)")
                seen.add(name)
                slots.append(name)
            fmt.append("\x00" + name + "\x00")
        else:
            raise BankError(f"{where}: unbalanced brace in {phrasing!r}; write literal braces as '{{{{' and '}}}}'")
    tail = phrasing[pos:]
    parts.append(re.escape(tail))
    fmt.append(tail)
    if not phrasing.strip():
        raise BankError(f"{where}: empty phrasing")
    if _SLOT.sub("", phrasing) == "" or re.fullmatch(r"(\{[A-Za-z_][A-Za-z0-9_]*\})+", phrasing):
        raise BankError(f"{where}: phrasing {phrasing!r} is only placeholders; add literal words around them")
    return _BEFORE + "".join(parts) + _AFTER, tuple(sorted(slots)), "".join(fmt)


def _literal(phrasing: str) -> str:
    """The longest literal run of ``phrasing``: a text without it cannot match (a cheap pre-check)."""
    runs = re.split(r"\{[A-Za-z_][A-Za-z0-9_]*\}", phrasing.replace("{{", "{").replace("}}", "}"))
    return max(runs, key=len)


_FOUND_MAX = 4096


@dataclasses.dataclass(frozen=True)
class Bank:
    """A loaded phrase bank: groups with their phrasings' regexes (compiled on first use: a run meets few of a
    bank's hundreds of phrasings, and compiling them all cost most of a run's start-up)."""

    groups: tuple[Group, ...]
    sources: tuple[str, ...]
    _patterns: tuple[tuple[tuple[str, str], ...], ...] = dataclasses.field(repr=False)
    _literals: tuple[tuple[str, ...], ...] = dataclasses.field(repr=False, default=())
    #: the compiled regexes by (group, phrasing); not part of the value
    _compiled: dict[tuple[int, int], re.Pattern[str]] = dataclasses.field(repr=False, compare=False, hash=False,
                                                                        default_factory=dict)
    #: find's answers by text (the variants of a record ask about the same texts); not part of the value
    _found: dict[str, tuple[Match, ...]] = dataclasses.field(repr=False, compare=False, hash=False,
                                                             default_factory=dict)

    def find(self, text: str) -> list[Match]:
        """Non-overlapping matches in ``text``, leftmost first; the longest wins a tie (cached per text)."""
        hit = self._found.get(text)
        if hit is None:
            hit = tuple(self._find(text))
            if len(self._found) >= _FOUND_MAX:
                self._found.clear()
            self._found[text] = hit
        return list(hit)

    def _find(self, text: str) -> list[Match]:
        cands = []
        for gi, pats in enumerate(self._patterns):
            for pi, (source, _) in enumerate(pats):
                if self._literals[gi][pi] not in text:
                    continue
                rx = self._compiled.get((gi, pi))
                if rx is None:
                    rx = self._compiled[gi, pi] = re.compile(source)
                for m in rx.finditer(text):
                    caps = tuple(sorted((k, v) for k, v in m.groupdict().items()))
                    cands.append(Match(m.start(), m.end(), gi, pi, caps))
        cands.sort(key=lambda c: (c.start, -(c.end - c.start), c.group, c.phrasing))
        out, pos = [], 0
        for c in cands:
            if c.start >= pos:
                out.append(c)
                pos = c.end
        return out

    def phrase(self, group: int, phrasing: int, captures: tuple[tuple[str, str], ...]) -> str:
        """Phrasing ``phrasing`` of ``group`` with ``captures`` filled in."""
        fmt = self._patterns[group][phrasing][1]
        values = dict(captures)
        return re.sub("\x00([A-Za-z_][A-Za-z0-9_]*)\x00", lambda m: values[m.group(1)], fmt)

    def substitute(self, text: str, choices: list[int], matches: list[Match] | None = None) -> str:
        """``text`` with the k-th match replaced by phrasing ``choices[k]`` of its group."""
        matches = self.find(text) if matches is None else matches
        if len(choices) != len(matches):
            raise ValueError(f"{len(choices)} phrasing choices for {len(matches)} matches in the text; "
                             "the params were drawn for a different text")
        pieces, pos = [], 0
        for m, choice in zip(matches, choices):
            if not 0 <= choice < len(self.groups[m.group].phrasings):
                raise ValueError(f"phrasing {choice} is out of range for group {self.groups[m.group].id!r}")
            pieces.append(text[pos:m.start])
            pieces.append(self.phrase(m.group, choice, m.captures))
            pos = m.end
        pieces.append(text[pos:])
        return "".join(pieces)

    def canonical(self, text: str) -> str:
        """``text`` with every match replaced by ``⟦group id|captures⟧`` (equal for equivalent texts)."""
        pieces, pos = [], 0
        for m in self.find(text):
            pieces.append(text[pos:m.start])
            caps = "|".join(f"{k}={v}" for k, v in m.captures)
            pieces.append(f"\u27e6{self.groups[m.group].id}|{caps}\u27e7")
            pos = m.end
        pieces.append(text[pos:])
        return "".join(pieces)

    def group_of(self, phrase: str) -> int | None:
        """The group whose phrasing is exactly ``phrase`` (case-insensitive), if any."""
        key = phrase.casefold()
        for gi, g in enumerate(self.groups):
            if any(p.casefold() == key for p in g.phrasings):
                return gi
        return None


#: Banks of sentences: their groups must also agree on whether each sentence instructs or states.
SENTENCE_BANKS = ("prompt_paraphrase", "skill_descriptions")
#: Banks whose groups the meaning contract checks when they load (the name banks have rules of their own).
MEANING_BANKS = (*SENTENCE_BANKS, "prompt_titles")


def _read(source: str, data: Any, meaning: bool = False, mood: bool = False
          ) -> list[tuple[Group, tuple[tuple[str, str], ...]]]:
    """The groups of one phrase bank file's YAML ``data``, checked, each with its phrasings' (regex source,
    format) from :func:`_parse`; with ``meaning``, also against the meaning contract
    (:func:`transforms.meaning.group_changes`; ``mood`` for banks of sentences)."""
    if not isinstance(data, dict) or not isinstance(data.get("groups"), list):
        raise BankError(f"{source}: a phrase bank is a mapping with a 'groups' list (got {type(data).__name__})")
    if data.get("version", 1) != 1:
        raise BankError(f"{source}: bank version {data.get('version')!r} is not supported (expected 1)")
    groups = []
    for i, g in enumerate(data["groups"]):
        where = f"{source}: groups[{i}]"
        if not isinstance(g, dict) or not isinstance(g.get("id"), str) or not isinstance(g.get("phrasings"), list):
            raise BankError(f"{where}: each group needs an 'id' string and a 'phrasings' list")
        phr = g["phrasings"]
        if len(phr) < 2 or not all(isinstance(p, str) for p in phr):
            raise BankError(f"{where} ({g['id']}): needs at least two phrasings, all strings")
        if len(set(phr)) != len(phr):
            raise BankError(f"{where} ({g['id']}): repeated phrasing")
        parsed = [_parse(p, f"{where} ({g['id']})") for p in phr]
        slots = {slot for _, slot, _ in parsed}
        if len(slots) != 1:
            raise BankError(f"{where} ({g['id']}): phrasings use different placeholders {sorted(slots)}; "
                            "every phrasing of a group must carry the same slots")
        broken = group_changes(phr, mood=mood) if meaning else []
        if broken:
            raise BankError(f"{where} ({g['id']}): the phrasings do not say the same thing: {'; '.join(broken)}. "
                            "A group's phrasings must keep every negation, modal and scope word, number, time or "
                            "tense word and list" + (" and whether it instructs or states" if mood else "")
                            + " (docs/design.md, the meaning contract); drop or rewrite the phrasing")
        groups.append((Group(g["id"], tuple(phr), next(iter(slots))), tuple((rx, fmt) for rx, _, fmt in parsed)))
    return groups


@lru_cache(maxsize=64)
def load_bank(name: str, extra: tuple[str, ...] = ()) -> Bank:
    """The built-in bank ``name`` plus the groups of the YAML files ``extra`` (their ids must be new). The groups of
    ``extra`` are checked against the meaning contract (:data:`MEANING_BANKS`); the built-in ones were checked
    before release, by the test suite."""
    if name not in builtin_bank_names():
        raise BankError(f"no built-in phrase bank {name!r}; built-in banks: {', '.join(builtin_bank_names())}")
    meaning, mood = name in MEANING_BANKS, name in SENTENCE_BANKS
    # the built-in groups are held to the meaning contract by the test suite (tests/test_banks.py), not again at
    # every start (28 ms, 7% of a one-record run's start-up); the groups of ``extra`` files are checked here
    read = _read(*read_bank(name), meaning=False, mood=mood)
    for path in extra:
        read += _read(*read_bank(path=path, what="phrase bank file"), meaning=meaning, mood=mood)
    groups = [g for g, _ in read]
    ids = [g.id for g in groups]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise BankError(f"phrase bank {name!r}: group ids {dup} are defined more than once; rename one of them")
    patterns = tuple(parsed for _, parsed in read)
    literals = tuple(tuple(_literal(p) for p in g.phrasings) for g in groups)
    return Bank(tuple(groups), (name, *extra), patterns, literals)
