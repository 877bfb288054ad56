"""New names for tools and parameters: word styles, synonyms, prefixes, masks and RoTBench noise.

Pure functions of (old name, style, rng, options). Whether a name is legal and new in
its record is checked by the callers (:mod:`transforms.tool`), which retry random
styles a few times.
"""

from __future__ import annotations

import random
import string

from hsa.names import STYLES, namespace_of, split_words
from transforms._banks import synonyms

__all__ = ["NAME_STYLES", "RANDOM_STYLES", "detect_style", "new_name", "DEFAULT_PREFIXES"]

#: Styles a renaming transform can draw from.
#:
#: ``snake``, ``camel``, ``pascal``, ``kebab``, ``screaming``
#:     the words of the name re-joined (``get_product_info`` -> ``getProductInfo``);
#: ``verb`` / ``noun``
#:     one verb (noun) of the name replaced by a synonym from the word banks, in the name's own style;
#: ``prefix``
#:     a namespace prefix (``shop.``, ``mcp__server__``) legal in the tool's dialect (tool names only), never in
#:     front of a name that already carries one (``mcp__paper-search__search_arxiv``, ``a.b``, ``ns:tool``);
#: ``mask``
#:     random letters and digits (Hammer's function masking);
#: ``slight``
#:     RoTBench slight noise: characters inserted, deleted or substituted in up to a third of the name;
#: ``medium``
#:     RoTBench medium noise: the name reversed, or random letters.
NAME_STYLES = (*STYLES, "verb", "noun", "prefix", "mask", "slight", "medium")

#: Styles whose result depends on the rng (worth retrying when the result collides).
RANDOM_STYLES = frozenset({"verb", "noun", "prefix", "mask", "slight", "medium"})

DEFAULT_PREFIXES = ("shop.", "mcp__server__")


def detect_style(name: str) -> str:
    """The word style ``name`` is written in (``snake`` for one lower-case word)."""
    if "_" in name:
        letters = [c for c in name if c.isalpha()]
        return "screaming" if letters and all(c.isupper() for c in letters) else "snake"
    if "-" in name:
        return "kebab"
    if name[:1].isupper():
        return "pascal" if any(c.islower() for c in name) else "screaming"
    if any(c.isupper() for c in name[1:]):
        return "camel"
    return "snake"


def _mask(rng: random.Random, lo: int, hi: int) -> str:
    n = rng.randint(lo, hi)
    first = rng.choice(string.ascii_letters)
    return first + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n - 1))


def _synonym(old: str, kind: str, rng: random.Random, banks: tuple[str, ...]) -> str | None:
    words = split_words(old)
    table = synonyms(kind, banks)
    spots = [i for i, w in enumerate(words) if w in table]
    if not spots:
        return None
    if kind == "verbs" and spots[0] == 0 and rng.random() < 0.75:
        i = 0  # the leading verb is the one that reads as the action
    else:
        i = rng.choice(spots)
    replacement = split_words(rng.choice(table[words[i]]))
    new_words = words[:i] + replacement + words[i + 1:]
    return STYLES[detect_style(old)](new_words)


_NOISE_CHARS = string.ascii_lowercase


def _slight(old: str, rng: random.Random) -> str:
    for _ in range(8):  # an insert and a delete can cancel out: draw again
        new = _slight_once(old, rng)
        if new != old:
            return new
    return new


def _slight_once(old: str, rng: random.Random) -> str:
    chars = list(old)
    edits = rng.randint(1, max(1, len(chars) // 3))
    for _ in range(edits):
        op = rng.choice(("insert", "delete", "substitute") if len(chars) > 2 else ("insert", "substitute"))
        if op == "insert":
            chars.insert(rng.randint(0, len(chars)), rng.choice(_NOISE_CHARS))
        elif op == "delete":
            del chars[rng.randrange(len(chars))]
        else:
            i = rng.randrange(len(chars))
            chars[i] = rng.choice([c for c in _NOISE_CHARS if c != chars[i].lower()])
    return "".join(chars)


def _medium(old: str, rng: random.Random) -> str:
    if rng.random() < 0.5 and old[::-1] != old:
        return old[::-1]
    n = min(max(len(old), 4), 24)
    return "".join(rng.choice(string.ascii_letters) for _ in range(n))


def new_name(old: str, style: str, rng: random.Random, *, mask_len: tuple[int, int] = (5, 15),
             prefix: str | None = None, banks: tuple[str, ...] = ()) -> str:
    """A new name for ``old`` in ``style`` (see :data:`NAME_STYLES`); ``old`` itself when the style does not apply.

    ``prefix`` is the namespace prefix the ``prefix`` style adds (``None``: the style
    does not apply); ``banks`` are extra bank files for the ``verb`` and ``noun`` styles.
    """
    if style in STYLES:
        words = split_words(old)
        return STYLES[style](words) if words else old
    if style == "mask":
        return _mask(rng, *mask_len)
    if style == "verb":
        return _synonym(old, "verbs", rng, banks) or old
    if style == "noun":
        return _synonym(old, "nouns", rng, banks) or old
    if style == "prefix":  # a name that already carries a namespace keeps it (no mcp__server__mcp__x__y)
        if prefix is None or old.startswith(prefix) or namespace_of(old):
            return old
        return prefix + old
    if style == "slight":
        return _slight(old, rng)
    if style == "medium":
        return _medium(old, rng)
    raise ValueError(f"unknown name style {style!r}; expected one of {', '.join(NAME_STYLES)}")
