"""New names for tools and parameters: word styles, synonyms, prefixes, masks and RoTBench noise.

Pure functions of (old name, style, rng, options). Whether a name is legal and new in
its record is checked by the callers (:mod:`transforms.tool`), which retry random
styles a few times.
"""

from __future__ import annotations

import random
import string

import re
from functools import lru_cache

from hsa.names import STYLES, is_legal, namespace_of, split_words
from transforms._banks import polysemous, sense_groups

__all__ = ["NAME_STYLES", "RANDOM_STYLES", "CONVENTION_STYLES", "detect_style", "new_name", "DEFAULT_PREFIXES",
           "MIXED_PREFIXES", "cue_words", "synonym_choices", "Namespace", "namespaces", "fill_prefix", "legal_prefixes",
           "meta_server", "namespace_renames"]

#: Styles a renaming transform can draw from.
#:
#: ``snake``, ``camel``, ``pascal``, ``kebab``, ``screaming``
#:     the words of the name re-joined (``get_product_info`` -> ``getProductInfo``);
#: ``verb`` / ``noun``
#:     one verb (noun) of the name replaced by a synonym from the word banks, in the name's own style;
#: ``prefix``
#:     a namespace prefix derived from the tool's namespace (``mcp__filesystem__``, ``git.``; see
#:     :func:`namespaces`) legal in the tool's dialect (tool names only), never in front of a name that already
#:     carries one (``mcp__paper-search__search_arxiv``, ``a.b``, ``ns:tool``);
#: ``mask``
#:     random letters and digits (Hammer's function masking);
#: ``slight``
#:     RoTBench slight noise: characters inserted, deleted or substituted in up to a third of the name;
#: ``medium``
#:     RoTBench medium noise: the name reversed, or random letters.
NAME_STYLES = (*STYLES, "verb", "noun", "prefix", "mask", "slight", "medium")

#: Styles whose result depends on the rng (worth retrying when the result collides).
RANDOM_STYLES = frozenset({"verb", "noun", "prefix", "mask", "slight", "medium"})

#: Styles that are a naming convention: in a coherent draw every tool of a namespace takes it together.
CONVENTION_STYLES = frozenset({*STYLES, "prefix"})

#: Prefix templates of the ``prefix`` style: ``{namespace}`` is the namespace's name (an MCP server, a shared
#: word): ``mcp__git__git_status`` as Claude Code names an MCP server's tools, ``git.status`` for a dotted namespace
#: (MCP and Gemini names only: OpenAI and Anthropic names hold no dots).
DEFAULT_PREFIXES = ("mcp__{namespace}__", "{namespace}.")

#: The fixed prefixes of hsa before namespaces were derived (``mix_styles: true`` brings them back).
MIXED_PREFIXES = ("shop.", "mcp__server__")


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


_CUE_WORD = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])")


def cue_words(*texts: str) -> frozenset[str]:
    """The lower-case words of ``texts`` and their singulars: what the ``cues`` of a sense group are looked up in
    (kept per texts: every rename of a tool or parameter reads its description's)."""
    try:
        return _cue_words_kept(texts)
    except TypeError:  # a text that cannot be hashed (not a string): worked out, not kept
        return _cue_words(texts)


@lru_cache(maxsize=8192)
def _cue_words_kept(texts: tuple[str, ...]) -> frozenset[str]:
    return _cue_words(texts)


def _cue_words(texts: tuple[str, ...]) -> frozenset[str]:
    out: set[str] = set()
    for text in texts:
        for w in _CUE_WORD.findall(text or ""):
            w = w.lower()
            out.add(w)
            if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
                out.add(w[:-1])
    return frozenset(out)


def _stem(word: str) -> str:
    return word[:5] if len(word) >= 5 else word


def synonym_choices(old: str, kind: str, *, context: frozenset[str] = frozenset(), namespace_words: int = 0,
                    banks: tuple[str, ...] = (), param: bool = False) -> list[tuple[int, tuple[str, ...]]]:
    """``[(word index, synonyms)]``: the words of ``old`` that bank ``kind`` (``verbs`` or ``nouns``) may replace in
    the sense the name uses them, and the synonyms of each (docs/design.md, "What a rename may change").

    A verb stands at the action position (the first word after the ``namespace_words`` leading words of the
    namespace, tool names only); a noun anywhere else, or anywhere in a parameter name (``param``). A group whose
    ``cues`` none of the name's other words or ``context`` (:func:`cue_words` of the descriptions) hold does not
    apply; a polysemous word takes cued groups only; a one-word command (one word after a namespace) takes none, a
    one-word name without a namespace cued groups only. A synonym sharing its first five letters with another word
    of the name is left out (``book_reservation`` never becomes ``reserve_reservation``)."""
    words = split_words(old)
    rest = words[namespace_words:]
    if not rest:
        return []
    if len(rest) == 1 and namespace_words:
        return []  # git_status, browser_close: the command of the program the namespace names
    cued_only_all = len(rest) == 1
    table = sense_groups(kind, banks)
    verbs = sense_groups("verbs", banks)
    poly = polysemous(banks)
    if param:
        spots = range(namespace_words, len(words)) if kind == "nouns" else ()
    elif kind == "verbs":
        spots = (namespace_words,)
    else:
        spots = [i for i in range(namespace_words, len(words)) if i > namespace_words or words[i] not in verbs]
    out = []
    for i in spots:
        w = words[i]
        groups = table.get(w)
        if not groups:
            continue
        others = frozenset(words[:i] + words[i + 1:])
        cues = context | others
        stems = {_stem(o) for o in others}
        choices: list[str] = []
        for g in groups:
            if g.cues:
                if not g.cues & cues:
                    continue
            elif cued_only_all or w in poly:
                continue
            for alt in g.words:
                if alt != w and alt not in choices and not {_stem(x) for x in split_words(alt)} & stems:
                    choices.append(alt)
        if choices:
            out.append((i, tuple(choices)))
    return out


def _synonym(old: str, kind: str, rng: random.Random, banks: tuple[str, ...], context: frozenset[str] = frozenset(),
             namespace_words: int = 0, param: bool = False, lexicon: dict[str, str] | None = None) -> str | None:
    prefix = namespace_of(old)
    body = old[len(prefix):]
    choices = synonym_choices(body, kind, context=context, namespace_words=0 if prefix else namespace_words,
                              banks=banks, param=param)
    if not choices:
        return None
    i, alts = rng.choice(choices)
    words = split_words(body)
    if lexicon is None:
        pick = rng.choice(alts)
    else:  # a word one name of the namespace already replaced takes the same synonym here (get -> fetch, all of them)
        known = [(j, a) for j, a in choices if lexicon.get(words[j].lower()) in a]
        if known:
            i, alts = known[0]
            pick = lexicon[words[i].lower()]
        else:
            pick = lexicon.setdefault(words[i].lower(), rng.choice(alts))
    new_words = words[:i] + split_words(pick) + words[i + 1:]
    return prefix + STYLES[detect_style(body)](new_words)


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
             prefix: str | None = None, banks: tuple[str, ...] = (), context: frozenset[str] = frozenset(),
             namespace_words: int = 0, param: bool = False, lexicon: dict[str, str] | None = None) -> str:
    """A new name for ``old`` in ``style`` (see :data:`NAME_STYLES`); ``old`` itself when the style does not apply.

    ``lexicon`` (``verb`` and ``noun`` styles): the synonyms already drawn for other names of the namespace, by
    word; a word found there takes the same synonym, and a new draw is added to it.

    ``prefix`` is the namespace prefix the ``prefix`` style adds (``None``: the style
    does not apply); ``banks`` are extra bank files for the ``verb`` and ``noun`` styles, which replace a word only
    in the sense the name uses it (:func:`synonym_choices`: ``context`` holds the :func:`cue_words` of the
    descriptions, ``namespace_words`` how many leading words name the namespace, ``param`` a parameter name).
    """
    if style in STYLES:
        words = split_words(old)
        return STYLES[style](words) if words else old
    if style == "mask":
        return _mask(rng, *mask_len)
    if style == "verb":
        return _synonym(old, "verbs", rng, banks, context, namespace_words, param, lexicon) or old
    if style == "noun":
        return _synonym(old, "nouns", rng, banks, context, namespace_words, param, lexicon) or old
    if style == "prefix":  # a name that already carries a namespace keeps it (no mcp__server__mcp__x__y)
        if prefix is None or old.startswith(prefix) or namespace_of(old):
            return old
        if namespace_words and prefix.endswith("."):  # git_status -> git.status: the dot replaces the word's joint
            body = _drop_words(old, namespace_words)
            return prefix + body if body else old
        return prefix + old
    if style == "slight":
        return _slight(old, rng)
    if style == "medium":
        return _medium(old, rng)
    raise ValueError(f"unknown name style {style!r}; expected one of {', '.join(NAME_STYLES)}")


def _drop_words(name: str, n: int) -> str:
    """``name`` without its first ``n`` words and the separator after them (``git_diff_staged``, 1: ``diff_staged``)."""
    words = split_words(name)
    if len(words) <= n:
        return ""
    m = re.match(r"^(?:[A-Za-z0-9]+?(?:[_\-]|(?=[A-Z]))){%d}" % n, name)
    return name[m.end():] if m else STYLES[detect_style(name)](words[n:])


# --------------------------------------------------------------------------- namespaces


class Namespace(tuple):
    """Tools that change together: ``name`` (what a prefix says: an MCP server, a shared word; None when nothing
    names it), ``words`` (how many leading words of each member's name are that shared word: 1 for ``git_``, 0
    otherwise), ``members`` (tool names, in record order) and ``prefixed`` (the members already carry a namespace
    prefix such as ``mcp__git__``)."""

    __slots__ = ()

    def __new__(cls, name, words, members, prefixed):
        return super().__new__(cls, (name, words, tuple(members), prefixed))

    name = property(lambda self: self[0])
    words = property(lambda self: self[1])
    members = property(lambda self: self[2])
    prefixed = property(lambda self: self[3])


_MCP = re.compile(r"^mcp__([A-Za-z0-9][A-Za-z0-9.-]*?)__")


def namespaces(names: list[str], *, server: str | None = None, banks: tuple[str, ...] = (),
               min_shared: int = 3) -> list[Namespace]:
    """The namespaces of a tool list (docs/design.md, "Namespaces"), in order of first member.

    1. names that carry a namespace prefix (``mcp__filesystem__read_file``, ``fs.read``, ``ns:x``) by prefix, named
       after it (``filesystem``, ``fs``, ``ns``);
    2. of the rest, names whose first word is shared by ``min_shared`` or more of them and is no verb of the banks
       (``git_status``, ``git_log``, ...; ``browser_click``, ...), named after that word;
    3. the rest, one namespace, named ``server`` (the record's ``meta.server``) or nothing.
    """
    groups: dict[tuple, list[str]] = {}
    order: list[tuple] = []
    rest = []
    for n in names:
        pre = namespace_of(n)
        if pre:
            m = _MCP.match(n)
            key = ("prefix", m.group(1) if m else re.split(r"[.:/]", pre)[0] or pre)
            if key not in groups:
                order.append(key)
            groups.setdefault(key, []).append(n)
        else:
            rest.append(n)
    verbs = sense_groups("verbs", banks)
    first: dict[str, list[str]] = {}
    for n in rest:
        w = split_words(n)
        if len(w) >= 2:
            first.setdefault(w[0], []).append(n)
    shared = {w for w, ms in first.items() if len(ms) >= min_shared and w not in verbs and w not in polysemous(banks)}
    out_rest = []
    for n in rest:
        w = split_words(n)
        if len(w) >= 2 and w[0] in shared:
            key = ("word", w[0])
            if key not in groups:
                order.append(key)
            groups.setdefault(key, []).append(n)
        else:
            out_rest.append(n)
    out = [Namespace(key[1], 1 if key[0] == "word" else 0, groups[key], key[0] == "prefix") for key in order]
    if out_rest:
        out.append(Namespace(server, 0, out_rest, False))
    first_index = {n: i for i, n in enumerate(names)}
    return sorted(out, key=lambda ns: first_index[ns.members[0]])


def fill_prefix(template: str, namespace: Namespace) -> str | None:
    """The prefix ``template`` makes for ``namespace`` (``mcp__{namespace}__`` -> ``mcp__git__``), None when the
    template needs a name and the namespace has none; a template without ``{namespace}`` is a fixed prefix."""
    if "{namespace}" not in template:
        return template
    if not namespace.name:
        return None
    return template.replace("{namespace}", namespace.name)


def legal_prefixes(prefixes, tools: list[dict]) -> list[str]:
    """The namespace ``prefixes`` that make a legal name in the dialect of every tool."""
    dialects = sorted({t["dialect"] for t in tools})
    return [p for p in prefixes if all(is_legal(p + "x", d) for d in dialects)]


def meta_server(record) -> str | None:
    """The record's ``meta.server`` (the namespace its unprefixed tools belong to, e.g. an MCP server), if a name."""
    meta = record.get("meta")
    server = meta.get("server") if isinstance(meta, dict) else None
    return server if isinstance(server, str) and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", server) else None


def namespace_renames(ns: Namespace, members: list[str], tools: list[dict], styles, p: float, prefixes,
                      rng: random.Random, fresh) -> dict[str, str]:
    """One namespace's draw (``tool.rename``): with probability ``p`` a style of ``styles``; a convention renames
    every member at once (all or none: a namespace keeps one convention), any other style each member with
    probability ``p`` (a tool without a synonym of its action word takes one of another word when ``styles`` has
    both ``verb`` and ``noun``, and the other way round). A style that changes no name here (snake on snake names,
    a verb style without a bank verb) gives way to the others, in random order. ``fresh(old, style, prefix, namespace_words)`` is a new name free in
    the record, or None; ``tools`` are the members' definitions (for the prefixes legal in their dialects)."""
    if rng.random() >= p:
        return {}
    first = rng.choice(styles)
    rest = [s for s in styles if s != first]
    rng.shuffle(rest)
    drawn = {old: rng.random() < p for old in members}
    for style in [first, *rest]:
        if style not in CONVENTION_STYLES:
            table = {}
            other = {"verb": "noun", "noun": "verb"}.get(style) if set(styles) >= {"verb", "noun"} else None
            for old in members:
                new = fresh(old, style, None, ns.words) if drawn[old] else None
                if new is None and drawn[old] and other:  # a synonym of another word: Read -> View, Bash -> Shell
                    new = fresh(old, other, None, ns.words)
                if new is not None and new not in table.values():  # get, Get -> GET, GET: the second keeps its name
                    table[old] = new
        else:
            table = _convention(ns, members, tools, style, prefixes, rng, fresh)
        if table:
            return table
    return {}


def _convention(ns: Namespace, members: list[str], tools: list[dict], style: str, prefixes, rng, fresh) -> dict:
    prefix = None
    if style == "prefix":
        if ns.prefixed:
            return {}
        legal = legal_prefixes([x for x in (fill_prefix(t, ns) for t in prefixes) if x], tools)
        if not legal:
            return {}
        prefix = rng.choice(legal)
    table = {}
    for old in members:
        new = fresh(old, style, prefix, ns.words)
        if new is None and new_name(old, style, random.Random(0), prefix=prefix, namespace_words=ns.words) != old:
            return {}  # a member cannot take the convention (its new name is taken): the namespace keeps its own
        if new is not None and new in table.values():
            return {}  # two members meet in the convention (get, Get -> GET): the namespace keeps its own
        if new is not None:
            table[old] = new
    return table
