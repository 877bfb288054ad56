"""Names: legality per tool dialect, word splitting, naming styles, whole-token rewriting."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache

__all__ = [
    "DIALECT_NAME_RULES",
    "is_legal",
    "split_words",
    "render_style",
    "STYLES",
    "replace_tokens",
    "find_tokens",
    "is_identifier_like",
    "namespace_of",
    "prose_uses",
    "is_plain_token",
    "text_tokens",
]

#: Legal tool-name patterns of each tool dialect.
DIALECT_NAME_RULES: dict[str, re.Pattern[str]] = {
    "openai": re.compile(r"^[a-zA-Z0-9_-]{1,64}$"),
    "anthropic": re.compile(r"^[a-zA-Z0-9_-]{1,64}$"),
    "mcp": re.compile(r"^[A-Za-z0-9_.-]{1,128}$"),
    "gemini": re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$"),
    "plain": re.compile(r"^[A-Za-z0-9_.-]{1,128}$"),
}

#: Legal parameter (property) names: the strictest common rule, Anthropic's.
PARAM_NAME_RULE = re.compile(r"^[a-zA-Z0-9_.-]{1,64}$")


def is_legal(name: str, dialect: str = "openai") -> bool:
    """True when ``name`` is a legal tool name in ``dialect``."""
    rule = DIALECT_NAME_RULES.get(dialect, DIALECT_NAME_RULES["openai"])
    return bool(rule.match(name))


def is_legal_param(name: str) -> bool:
    """True when ``name`` is a legal property name for every tool dialect."""
    return bool(PARAM_NAME_RULE.match(name))


#: A namespace in front of a tool name: ``mcp__server__`` (MCP clients join server and tool with ``__``),
#: ``shop.``, ``ns:``, ``ns/`` (the separator follows a non-empty part, and a name follows it).
_NAMESPACE = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9_-]*?__(?:[A-Za-z0-9][A-Za-z0-9.-]*?__)*|[^.:/\s]+(?:[.:/][^.:/\s]+)*[.:/])(?=[A-Za-z])")


def namespace_of(name: str) -> str:
    """The namespace prefix ``name`` already carries (``mcp__paper-search__``, ``shop.``, ``ns:``), else ``""``.

    >>> namespace_of("mcp__paper-search__search_arxiv"), namespace_of("a.b"), namespace_of("get_item")
    ('mcp__paper-search__', 'a.', '')
    """
    m = _NAMESPACE.match(name)
    return m.group(0) if m else ""


_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z0-9])|[A-Z]?[a-z0-9]+|[A-Z]+|[0-9]+")


def split_words(name: str) -> list[str]:
    """``getProductInfo``, ``get_product-info``, ``GetProductInfo`` -> ``['get', 'product', 'info']``."""
    return list(_split_words(name))


@lru_cache(maxsize=16384)
def _split_words(name: str) -> tuple[str, ...]:
    words: list[str] = []
    for chunk in _NON_ALNUM.split(name):
        words.extend(w.lower() for w in _CAMEL.findall(chunk))
    return tuple(words)


_NON_ALNUM = re.compile(r"[^A-Za-z0-9]+")


def _snake(words: list[str]) -> str:
    return "_".join(words)


def _camel(words: list[str]) -> str:
    return words[0] + "".join(w.capitalize() for w in words[1:]) if words else ""


def _pascal(words: list[str]) -> str:
    return "".join(w.capitalize() for w in words)


def _kebab(words: list[str]) -> str:
    return "-".join(words)


def _screaming(words: list[str]) -> str:
    return "_".join(w.upper() for w in words)


#: Naming styles that re-join the words of a name.
STYLES = {
    "snake": _snake,
    "camel": _camel,
    "pascal": _pascal,
    "kebab": _kebab,
    "screaming": _screaming,
}


def render_style(name: str, style: str) -> str:
    """Render ``name`` in ``style`` (one of :data:`STYLES`); names without words stay as they are."""
    words = split_words(name)
    if not words:
        return name
    return STYLES[style](words)


def is_identifier_like(name: str) -> bool:
    """Names that cannot be an ordinary word of prose: they contain ``_``, ``-``, ``.``, a digit or an inner capital."""
    return _IDENTIFIER_LIKE.search(name) is not None


_IDENTIFIER_LIKE = re.compile(r"[_\-.0-9]|[a-z][A-Z]")


# A token is a run of [A-Za-z0-9_-], and a dotted chain of such runs is one token too
# ("fs.read_file" does not contain the token "read_file"; "read_file." at a sentence end does).
_BOUND_BEFORE = r"(?<![A-Za-z0-9_\-])(?<![A-Za-z0-9_\-]\.)"
_BOUND_AFTER = r"(?![A-Za-z0-9_\-])(?!\.[A-Za-z0-9_\-])"


def _token_regex(names: Iterable[str]) -> re.Pattern[str]:
    alternatives = sorted(set(names), key=lambda n: (-len(n), n))
    return re.compile(_BOUND_BEFORE + "(" + "|".join(re.escape(n) for n in alternatives) + ")" + _BOUND_AFTER)


_REGEX_CACHE: dict[tuple[str, ...], re.Pattern[str]] = {}
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)*")
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)*$")
_TOKEN_SPLIT = re.compile(r"([A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)*)")


def is_plain_token(name: str) -> bool:
    """True when ``name`` is one token (a ``[A-Za-z0-9_-]+`` run, or a dotted chain of them): such a name occurs in a
    text exactly when it is one of the text's :func:`text_tokens`, a set lookup instead of a regex scan."""
    return _PLAIN_NAME.match(name) is not None


@lru_cache(maxsize=16384)
def text_tokens(text: str) -> frozenset[str]:
    """The set of tokens (maximal ``[A-Za-z0-9_-]+`` runs) of ``text``, cached per string."""
    return frozenset(_TOKEN_CHARS.findall(text))


def _may_contain(text: str, names) -> bool:
    """False only when no name can occur as a whole token of ``text`` (fast path, exact for plain names)."""
    if len(text) < 64:
        return any(n in text for n in names)
    toks = text_tokens(text)
    for n in names:
        if _PLAIN_NAME.match(n):
            if n in toks:
                return True
        elif n in text:
            return True
    return False


def _cached_regex(names: tuple[str, ...]) -> re.Pattern[str]:
    rx = _REGEX_CACHE.get(names)
    if rx is None:
        if len(_REGEX_CACHE) > 4096:
            _REGEX_CACHE.clear()
        rx = _REGEX_CACHE[names] = _token_regex(names)
    return rx


def find_tokens(text: str, names: Iterable[str]) -> list[str]:
    """Whole-token occurrences of any of ``names`` in ``text``.

    A token is a maximal run of ``[A-Za-z0-9_-]``, dotted runs joined (``fs.read_file`` is one token).
    """
    names = tuple(sorted(set(names)))
    if not names or not text or not _may_contain(text, names):
        return []
    if all(_PLAIN_NAME.match(n) for n in names):
        wanted = set(names)
        pieces = _pieces(text)
        return [pieces[i] for i in range(1, len(pieces), 2) if pieces[i] in wanted]
    return _cached_regex(names).findall(text)


def replace_tokens(text: str, renames: Mapping[str, str]) -> str:
    """Replace whole-token occurrences of each key of ``renames`` by its value, all at once.

    Simultaneous replacement, so swaps (``a -> b``, ``b -> a``) work; substrings of
    longer tokens are never touched (``2010`` is not inside ``20101``; ``item`` is
    not inside ``item_qa``).
    """
    if not renames or not text:
        return text
    names, plain = _rename_set(tuple(renames.items()))
    if not names or not _may_contain(text, names):
        return text
    if plain:  # token split, cached per text: no regex per rename set
        pieces = list(_pieces(text))
        for i in range(1, len(pieces), 2):
            new = renames.get(pieces[i])
            if new is not None:
                pieces[i] = new
        return "".join(pieces)
    return _cached_regex(names).sub(lambda m: renames[m.group(1)], text)


@lru_cache(maxsize=4096)
def _rename_set(items: tuple[tuple[str, str], ...]) -> tuple[tuple[str, ...], bool]:
    """The names a rename table changes (sorted) and whether all are plain tokens; cached per table."""
    names = tuple(sorted(k for k, v in items if k != v))
    return names, all(_PLAIN_NAME.match(n) for n in names)


@lru_cache(maxsize=16384)
def _pieces(text: str) -> tuple[str, ...]:
    """``text`` split into separators (even positions) and tokens (odd positions)."""
    return tuple(_TOKEN_SPLIT.split(text))


# --------------------------------------------------------------------------- plain-word names in prose
#
# A tool named by a plain word (Bash, Read, think, calculate) can be renamed in a text only where the text
# means the tool (docs/design.md, "What names a tool"): written as code or quoted (`Bash`, "Bash"), called
# (Bash(...)), or in a tool-name position ("the think tool", "tool: Read", "use Bash", "call calculate").
# Anywhere else the word may be the word (Read the file; Write a Bash script): such a use is ambiguous.

_QUOTES = "`'\""
_AFTER_REF = re.compile(r"\(|\s+(?:tool|tools|function|functions)\b|['\u2019]s\s+(?:tool|function)\b", re.I)
_BEFORE_REF = re.compile(r"(?:\b(?:tool|function)s?\s*[:=]?|\b(?:call|calls|called|calling|use|uses|used|using|invoke|"
                         r"invokes|invoked|invoking|run|runs|running)\s+(?:the\s+)?)\s*$", re.I)


def prose_uses(text: str, name: str) -> tuple[int, int]:
    """``(references, words)``: the whole-token occurrences of ``name`` in ``text`` that name a tool (code, quotes,
    a call, a tool-name position) and those that may be the plain word (case-sensitive: ``read`` is not ``Read``)."""
    refs = words = 0
    if not text or name not in text:
        return 0, 0
    for m in _cached_regex((name,)).finditer(text):
        s, e = m.span(1)
        q = text[s - 1] if s else ""
        if (q and q in _QUOTES and text.startswith(q, e)) or _AFTER_REF.match(text, e) \
                or _BEFORE_REF.search(text[max(0, s - 24):s]):
            refs += 1
        else:
            words += 1
    return refs, words
