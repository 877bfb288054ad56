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

__all__ = ["CHECKS", "IFEVAL_EQUIVALENTS", "Instructions", "check", "check_loose", "score", "evaluate",
           "ifeval_registry", "loose_variants", "validate_checks", "CheckError"]


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


# --------------------------------------------------------------------------- IFEval's own checkers

#: Our check types that IFEval has with the same meaning: type -> (IFEval instruction id, kwargs from params).
IFEVAL_EQUIVALENTS: dict[str, tuple[str, Callable[..., dict]]] = {
    "max_words": ("length_constraints:number_words", lambda n: {"num_words": n + 1, "relation": "less than"}),
    "min_words": ("length_constraints:number_words", lambda n: {"num_words": n, "relation": "at least"}),
    "max_sentences": ("length_constraints:number_sentences",
                      lambda n: {"num_sentences": n + 1, "relation": "less than"}),
    "keywords": ("keywords:existence", lambda words: {"keywords": list(words)}),
    "forbidden": ("keywords:forbidden_words", lambda words: {"forbidden_words": list(words)}),
    "keyword_count": ("keywords:frequency", lambda word, n: {"keyword": word, "frequency": n,
                                                             "relation": "at least"}),
    "lowercase": ("change_case:english_lowercase", lambda: {}),
    "uppercase": ("change_case:english_capital", lambda: {}),
    "ends_with": ("startend:end_checker", lambda text: {"end_phrase": text}),
    "json": ("detectable_format:json_format", lambda: {}),
    "bullets": ("detectable_format:number_bullet_lists", lambda n: {"num_bullets": n}),
    "no_commas": ("punctuation:no_comma", lambda: {}),
    "title": ("detectable_format:title", lambda: {}),
    "quoted": ("startend:quotation", lambda: {}),
    "placeholders": ("detectable_content:number_placeholders", lambda n: {"num_placeholders": n}),
    "highlights": ("detectable_format:number_highlighted_sections", lambda n: {"num_highlights": n}),
    "postscript": ("detectable_content:postscript", lambda marker: {"postscript_marker": marker}),
    "sections": ("detectable_format:multiple_sections", lambda n: {"section_spliter": "SECTION", "num_sections": n}),
}


def ifeval_registry() -> tuple[dict | None, str]:
    """IFEval's checker classes by instruction id from a maintained package, and its name: ``if-verifiable``
    (IFEval's code, packaged), else ``lm-eval``'s IFEval task; ``(None, why)`` when neither is installed."""
    try:
        from if_verifiable.ifeval.instructions_registry import INSTRUCTION_DICT
        from importlib.metadata import version

        name = f"if-verifiable {version('if-verifiable')}"
    except ImportError:
        try:
            from lm_eval.tasks.ifeval.instructions_registry import INSTRUCTION_DICT
            from importlib.metadata import version

            name = f"lm-eval {version('lm-eval')}"
        except ImportError:
            return None, "neither if-verifiable nor lm-eval is installed (pip install 'hsa[eval]')"
    try:  # langdetect draws at random unless seeded: the same response must always get the same verdict
        from langdetect import DetectorFactory

        DetectorFactory.seed = 0
    except ImportError:
        pass
    return INSTRUCTION_DICT, name


def _ifeval_checker(registry: dict, instruction_id: str, kwargs: dict, prompt: str) -> Callable[[str], bool]:
    checker = registry[instruction_id](instruction_id)
    checker.build_description(**{k: v for k, v in kwargs.items() if v is not None})
    args = checker.get_instruction_args()
    if args and "prompt" in args:
        checker.build_description(prompt=prompt)
    return lambda response: bool(response.strip() and checker.check_following(response))


class Instructions:
    """The checkers of one prompt: IFEval's own where a maintained package provides the instruction and it runs
    here, :data:`CHECKS` otherwise. ``row`` is ours (``checks``) or IFEval's (``instruction_id_list`` +
    ``kwargs``)."""

    def __init__(self, row: dict, registry: dict | None, fallbacks: dict[str, str]):
        prompt = row.get("prompt") if isinstance(row.get("prompt"), str) else \
            " ".join(m.get("content") or "" for m in row.get("prompt") or () if isinstance(m, dict))
        self.checkers: list[tuple[str, Callable[[str], bool]]] = []
        if row.get("instruction_id_list") is not None:  # IFEval's own rows
            if registry is None:
                raise CheckError("IFEval rows (instruction_id_list) need IFEval's checkers: pip install "
                                 "if-verifiable (or lm-eval)")
            for iid, kw in zip(row["instruction_id_list"], row.get("kwargs") or [{}] * len(row["instruction_id_list"])):
                if iid not in registry:
                    raise CheckError(f"unknown IFEval instruction {iid!r}")
                self.checkers.append(("ifeval", _ifeval_checker(registry, iid, kw or {}, prompt)))
            return
        checks = row.get("checks") or []
        validate_checks(checks)
        for c in checks:
            params = {k: v for k, v in c.items() if k != "type"}
            ours = CHECKS[c["type"]][1]
            eq = IFEVAL_EQUIVALENTS.get(c["type"])
            if registry is not None and eq is not None and eq[0] in registry and eq[0] not in fallbacks:
                fn = _ifeval_checker(registry, eq[0], eq[1](**params), prompt)
                try:
                    fn("Probe. A short English sentence for the checker.")
                except Exception as exc:  # noqa: BLE001  (e.g. nltk's punkt data is not installed: LookupError)
                    lines = [x.strip() for x in str(exc).splitlines() if x.strip().strip("*")]
                    fallbacks[eq[0]] = f"{type(exc).__name__}: {(lines or [''])[0][:120]}"
                else:
                    self.checkers.append(("ifeval", fn))
                    continue
            self.checkers.append(("hsa", lambda r, fn=ours, params=params: bool(fn(r, **params))))

    def strict(self, response: str) -> list[bool]:
        return [fn(response) for _, fn in self.checkers]

    def loose(self, response: str) -> list[bool]:
        variants = [v for v in loose_variants(response) if v.strip()]
        return [any(fn(v) for v in variants) for _, fn in self.checkers]


def check_loose(response: str, checks: Sequence[dict[str, Any]]) -> list[bool]:
    """One pass/fail per check of :data:`CHECKS`, a check passing when any loose reading passes it."""
    variants = [v for v in loose_variants(response) if v.strip()] or [response]
    results = [check(v, checks) for v in variants]
    return [any(r[i] for r in results) for i in range(len(checks))]


def evaluate(responses: Sequence[str], rows: Sequence[dict], *, use_ifeval: bool = True) -> dict[str, Any]:
    """IFEval's four accuracies over prompts with their responses (fractions): ``prompt_strict`` (every
    instruction of the prompt followed), ``instruction_strict`` (share of all instructions followed), and the
    same two ``_loose`` (an instruction is followed when a loose reading of the response follows it), plus
    ``n`` (prompts), ``n_instructions`` and ``checker``: which code checked how many instructions and why a
    type fell back to ours. ``rows`` are ours (``checks``) or IFEval's (``instruction_id_list``, ``kwargs``)."""
    if len(responses) != len(rows):
        raise ValueError(f"{len(responses)} responses for {len(rows)} prompts")
    registry, name = ifeval_registry() if use_ifeval else (None, "not asked for")
    fallbacks: dict[str, str] = {}
    built = [Instructions(r, registry, fallbacks) for r in rows]
    strict, loose = [], []
    for resp, ins in zip(responses, built):
        resp = resp.split("</think>", 1)[-1].strip()
        strict.append(ins.strict(resp) if resp else [False] * len(ins.checkers))
        loose.append(ins.loose(resp) if resp else [False] * len(ins.checkers))
    n_inst = sum(len(i.checkers) for i in built)
    n = len(responses)
    by = {"ifeval": 0, "hsa": 0}
    for ins in built:
        for who, _ in ins.checkers:
            by[who] += 1
    return {"prompt_strict": sum(all(r) for r in strict) / n if n else None,
            "prompt_loose": sum(all(r) for r in loose) / n if n else None,
            "instruction_strict": sum(map(sum, strict)) / n_inst if n_inst else None,
            "instruction_loose": sum(map(sum, loose)) / n_inst if n_inst else None,
            "n": n, "n_instructions": n_inst,
            "checker": {"ifeval": name if registry is not None else None, "ifeval_unavailable":
                        None if registry is not None else name,
                        "instructions_checked_by_ifeval": by["ifeval"], "instructions_checked_by_hsa": by["hsa"],
                        "fallbacks": dict(sorted(fallbacks.items()))}}
