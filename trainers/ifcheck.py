"""Checkers for verifiable instructions (formats, lengths, keywords, casing), IFEval style.

Each check is a JSON object ``{"type": name, ...params}``; :data:`CHECKS` lists the
types with their parameters. The bundled prompt set ``trainers/data/general_instructions.jsonl``
uses them: each row has ``prompt`` (conversational), ``checks`` and a hand-written
``example`` answer that passes its checks.

>>> check("hello there. bye.", [{"type": "lowercase"}, {"type": "max_words", "n": 5}])
[True, True]
>>> score("Hello", [{"type": "lowercase"}, {"type": "max_words", "n": 5}])
0.5
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["CHECKS", "check", "check_loose", "score", "evaluate", "loose_variants", "validate_checks", "CheckError"]


class CheckError(ValueError):
    """A check that names an unknown type or lacks a parameter."""


def _words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z0-9\u00C0-\u024F']+", text)


def _sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+", text.strip())
    return [p for p in parts if _words(p)]


def _strip_fence(text: str) -> str:
    t = text.strip()
    m = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", t, flags=re.S)
    return m.group(1) if m else t


def _contains(text: str, word: str) -> bool:
    return re.search(r"(?<![A-Za-z0-9])" + re.escape(word.lower()) + r"(?![A-Za-z0-9])", text.lower()) is not None


def _count(text: str, word: str) -> int:
    return len(re.findall(r"(?<![A-Za-z0-9])" + re.escape(word.lower()) + r"(?![A-Za-z0-9])", text.lower()))


def _bullets(text: str) -> int:
    return sum(1 for line in text.splitlines() if re.match(r"\s*[-*]\s+\S", line))


def _paragraphs(text: str) -> int:
    return len([p for p in re.split(r"\n\s*\n", text.strip()) if p.strip()])


def _is_json(text: str) -> bool:
    try:
        json.loads(_strip_fence(text))
    except ValueError:
        return False
    return True


#: type -> (required parameters, checker(response, **params) -> bool, description)
CHECKS: dict[str, tuple[tuple[str, ...], Callable[..., bool], str]] = {
    "max_words": (("n",), lambda r, n: len(_words(r)) <= n, "at most n words"),
    "min_words": (("n",), lambda r, n: len(_words(r)) >= n, "at least n words"),
    "max_chars": (("n",), lambda r, n: len(r.strip()) <= n, "at most n characters"),
    "max_sentences": (("n",), lambda r, n: len(_sentences(r)) <= n, "at most n sentences"),
    "keywords": (("words",), lambda r, words: all(_contains(r, w) for w in words), "mentions every word"),
    "forbidden": (("words",), lambda r, words: not any(_contains(r, w) for w in words), "mentions none of the words"),
    "keyword_count": (("word", "n"), lambda r, word, n: _count(r, word) >= n, "mentions word at least n times"),
    "lowercase": ((), lambda r: r == r.lower() and any(c.isalpha() for c in r), "all lowercase letters"),
    "uppercase": ((), lambda r: r == r.upper() and any(c.isalpha() for c in r), "all capital letters"),
    "starts_with": (("text",), lambda r, text: r.strip().startswith(text), "starts with text"),
    "ends_with": (("text",), lambda r, text: r.strip().endswith(text), "ends with text"),
    "json": ((), _is_json, "the whole answer is JSON (a ```json fence is allowed)"),
    "bullets": (("n",), lambda r, n: _bullets(r) == n, "exactly n markdown bullet lines"),
    "paragraphs": (("n",), lambda r, n: _paragraphs(r) == n, "exactly n paragraphs separated by blank lines"),
    "no_commas": ((), lambda r: "," not in r, "no commas"),
    "title": ((), lambda r: re.search(r"<<[^<>\n]+>>", r) is not None, "a title in <<double angle brackets>>"),
    "quoted": ((), lambda r: len(r.strip()) >= 2 and r.strip()[0] == '"' and r.strip()[-1] == '"',
               "wrapped in double quotes"),
    "placeholders": (("n",), lambda r, n: len(re.findall(r"\[[^\[\]\n]+\]", r)) >= n,
                     "at least n [placeholders]"),
    "highlights": (("n",), lambda r, n: len(re.findall(r"\*[^*\n]+\*", r)) >= n, "at least n *highlighted* parts"),
    "postscript": (("marker",), lambda r, marker: re.search(r"(?m)^\s*" + re.escape(marker), r) is not None,
                   "a postscript line starting with marker"),
    "sections": (("n",), lambda r, n: len(re.findall(r"(?m)^SECTION \d+", r)) == n,
                 "exactly n parts headed 'SECTION k'"),
}


def validate_checks(checks: Sequence[dict[str, Any]]) -> None:
    """Raise :class:`CheckError` for an unknown type or a missing parameter."""
    for i, c in enumerate(checks):
        if not isinstance(c, dict) or c.get("type") not in CHECKS:
            raise CheckError(f"checks[{i}] = {c!r}: unknown check type; expected one of {sorted(CHECKS)}")
        required, _, _ = CHECKS[c["type"]]
        missing = [p for p in required if p not in c]
        extra = [k for k in c if k != "type" and k not in required]
        if missing or extra:
            raise CheckError(f"checks[{i}] ({c['type']}): expected parameters {list(required)} "
                             f"(missing {missing}, unexpected {extra})")


def check(response: str, checks: Sequence[dict[str, Any]]) -> list[bool]:
    """One pass/fail per check, in order."""
    validate_checks(checks)
    out = []
    for c in checks:
        _, fn, _ = CHECKS[c["type"]]
        params = {k: v for k, v in c.items() if k != "type"}
        out.append(bool(fn(response, **params)))
    return out


def score(response: str, checks: Sequence[dict[str, Any]]) -> float:
    """The fraction of ``checks`` that ``response`` passes (1.0 when there are none)."""
    results = check(response, checks)
    return sum(results) / len(results) if results else 1.0


def loose_variants(response: str) -> list[str]:
    """IFEval's loose readings of a response: as it is, without its first line, without its last line, without
    both, each also with ``*`` removed (markdown emphasis)."""
    lines = response.split("\n")
    bases = [response, "\n".join(lines[1:]).strip(), "\n".join(lines[:-1]).strip(), "\n".join(lines[1:-1]).strip()]
    out = []
    for b in bases + [b.replace("*", "") for b in bases]:
        if b not in out:
            out.append(b)
    return out


def check_loose(response: str, checks: Sequence[dict[str, Any]]) -> list[bool]:
    """One pass/fail per check, a check passing when any loose reading (:func:`loose_variants`) passes it."""
    variants = [v for v in loose_variants(response) if v.strip()] or [response]
    results = [check(v, checks) for v in variants]
    return [any(r[i] for r in results) for i in range(len(checks))]


def evaluate(responses: Sequence[str], checks: Sequence[Sequence[dict[str, Any]]]) -> dict[str, Any]:
    """IFEval's four accuracies over prompts with their responses (fractions): ``prompt_strict`` (every check of
    the prompt passes), ``instruction_strict`` (share of all checks that pass), and the same two ``_loose``
    (a check passes when a loose reading of the response passes it), plus ``n`` (prompts) and
    ``n_instructions``."""
    if len(responses) != len(checks):
        raise ValueError(f"{len(responses)} responses for {len(checks)} prompts")
    strict = [check(r, c) for r, c in zip(responses, checks)]
    loose = [check_loose(r, c) for r, c in zip(responses, checks)]
    n_inst = sum(len(c) for c in checks)
    n = len(responses)
    return {"prompt_strict": sum(all(r) for r in strict) / n if n else None,
            "prompt_loose": sum(all(r) for r in loose) / n if n else None,
            "instruction_strict": sum(map(sum, strict)) / n_inst if n_inst else None,
            "instruction_loose": sum(map(sum, loose)) / n_inst if n_inst else None,
            "n": n, "n_instructions": n_inst}
