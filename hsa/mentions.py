"""Mentions of harness names in free text: which occurrences refer to the name, and renaming exactly those.

A name written in a text is either a *reference* (the text means the tool, parameter or skill of that name) or an
ordinary word that happens to be spelled alike ("Read the file first" beside a tool named ``Read``; "the head of
the list" beside a parameter named ``head``). A rename must follow every reference and leave every word alone
(docs/design.md, invariant 6 and "What a rename may change"), and :mod:`hsa.invariants` reports a reference left
under an old name. This module is that decision, written once for the renames and for the check:

* an *identifier-like* name (``get_item``, ``start_index``, ``MultiEdit``, ``skill-creator``: a ``_``, ``-``,
  ``.``, digit or inner capital) cannot be a word: every whole-token occurrence is a reference, and so is a
  compound name (two words or more, joined by ``-`` or ``_``) inside a longer identifier or path joined with the
  same separator (``<skill-creator-path>``), unless that longer token is itself a name of the harness
  (``git_diff_staged`` beside ``git_diff``);
* a *plain-word* name (``Bash``, ``Read``, ``think``, ``path``, ``tail``) is a reference only in a reference form
  (:func:`mention_spans`); every other occurrence is the word.

The forms (case-sensitive, whole tokens):

* every kind: code or quotes around the name alone (`` `tail` ``, ``'tail'``, ``"Read"``, “Read”); a run of names
  joined by ``|`` or ``/`` in code or quotes (``"Write|Edit"``); the name followed by the noun of its kind
  ("the head parameter", "the Read tool", "the pdf skill"); the name coordinated (``,``, ``and``, ``or``, ``/``,
  ``|``) with a neighbour that is itself a reference or identifier-like ("Use Grep, Glob, or Task", "the head and
  tail parameters");
* tools: a call (``Read(`` or ``shell {``), a tool-name position after a verb of calling or a tool noun ("use
  Bash", "call calculate", "tools: Read", "tools like Bash"), a matcher ("a Bash matcher"), and a capitalised
  name in the middle of a sentence after a lower-case word ("use your Read tool", "prefer Edit over Write"), which
  English does not do to a verb, unless the name is also the proper name of a program or language (``Bash``:
  "a string for Bash");
* parameters in their own tool's texts and results (kind ``param_own``): an assignment (``head=10``,
  ``replace_all: true``) and a line that starts with the name and a colon (``- path: the file to read``).

Measured on 258 hand-labelled mentions from public harness prompts (Claude Code, its Agent SDK, tau-bench, Zed,
Codex: fixtures/harnesses/plain_word_mentions.jsonl, ``tests/test_mentions.py``): see docs/design.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from functools import lru_cache

from hsa.cache import lru as _lru
from hsa.names import is_identifier_like, split_words

#: A renamed text by (text, table, kind, inner, keep): :class:`MentionRenamer`.
_RENAMED = _lru("mentions.renamed", 16 << 20)

__all__ = [
    "KINDS",
    "mention_spans",
    "is_reference",
    "prose_uses",
    "rename_mentions",
    "mention_replacements",
    "rename_in_context",
    "replaced",
    "MentionRenamer",
    "mention_renamer",
    "referenced",
    "stale_mentions",
    "is_compound",
    "inner_spans",
]

#: The kinds of names a text mentions, and the nouns that name each kind after the name ("the X parameter").
KINDS: dict[str, tuple[str, ...]] = {
    "tool": ("tool", "tools", "function", "functions", "matcher", "matchers"),
    "param": ("parameter", "parameters", "param", "params", "argument", "arguments", "arg", "args", "field",
              "fields", "option", "options", "property", "properties", "key", "keys", "flag", "flags", "attribute",
              "attributes"),
    "skill": ("skill", "skills"),
}
#: ``param_own``: a parameter mentioned in its own tool's texts and results, where assignments (``head=10``,
#: ``pages: "1-5"``) and a line that starts with the name and a colon are references too; elsewhere an assignment is
#: more often another thing's key (``{ name: 'Submit' }`` in a code example) than the parameter's.
KINDS["param_own"] = KINDS["param"]

# A token is a maximal run of [A-Za-z0-9_-]; a dotted chain of runs is one token (as hsa.names.find_tokens has it);
# a full stop after a neighbour ends its sentence ("province and city."), it does not make "city." a dotted name.
_BEFORE = r"(?<![A-Za-z0-9_\-])(?<![A-Za-z0-9_\-]\.)"
_AFTER = r"(?![A-Za-z0-9_\-])(?!\.[A-Za-z0-9_\-])"

_OPEN_CLOSE = {"`": "`", "'": "'", '"': '"', "\u2018": "\u2019", "\u201c": "\u201d", "*": "*"}

#: Programs and languages whose name is also a tool name in some harness: capitalised mid-sentence, such a word is
#: more likely the program ("a Bash script") than the tool, so that form alone does not make it a reference.
PROPER_NOUNS = frozenset({"Bash", "Shell", "Python", "Node", "Git", "Docker", "Java", "Ruby", "Rust", "Go", "Perl",
                          "Linux", "Chrome", "Terminal", "Zsh", "Fish", "Make", "Npm", "Excel", "Slack", "Figma"})

_CALL_VERBS = (r"call|calls|called|calling|use|uses|used|using|invoke|invokes|invoked|invoking|run|runs|running|"
               r"prefer|prefers|via")
_TOOL_BEFORE = re.compile(
    r"(?:\b(?:tool|function)s?(?:[ \t]+(?:like|such[ \t]+as|including|named|called))?[ \t:=(*_\u2014\u2013-]*"
    r"|\b(?:" + _CALL_VERBS + r")\s+(?:the\s+|your\s+)?)$", re.I)
_NOUN_AFTER: dict[str, re.Pattern[str]] = {
    kind: re.compile(r"[`'\"\u2019\u201d*]*(?:\s+|['\u2019]s\s+)(?:" + "|".join(nouns) + r")\b", re.I)
    for kind, nouns in KINDS.items()}
_CALL_AFTER = re.compile(r"\(|\s?\{\s*\"")
_ASSIGN_AFTER = re.compile(r"[`'\"]?\s*(?:=(?!=)\s*\S|:\s*(?:[\"'\[{`]|-?[0-9]|true\b|false\b|null\b))")
_LINE_START = re.compile(r"(?:^|\n)[ \t]*(?:[-*+]|\d+[.)])?[ \t]*[`*]*$")
_LIST_BEFORE = re.compile(r"(?:\bthe|,|\band|\bor)\s+$", re.I)
_PREV_WORD = re.compile(r"([A-Za-z][A-Za-z'\u2019-]*)[ \t,(]+$")
_NEXT_WORD = re.compile(r"[ \t]+([A-Za-z][A-Za-z-]*)")
_COORD_BEFORE = re.compile(r"([A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)*)[`'\"*]*(?:\s*,\s*(?:(?:and|or)\s+)?|\s+(?:and|or)\s+|\s*[|/]\s*)[`'\"*]*$")
_COORD_AFTER = re.compile(r"[`'\"*]*(?:\s*,\s*(?:(?:and|or)\s+)?|\s+(?:and|or)\s+|\s*[|/]\s*)[`'\"*]*([A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)*)")


@lru_cache(maxsize=4096)
def _token_rx(name: str) -> re.Pattern[str]:
    return re.compile(_BEFORE + re.escape(name) + _AFTER)


def _quoted(text: str, s: int, e: int) -> bool:
    """The name at ``text[s:e]`` alone in code or quotes, or in a ``|``/``/`` run of names that is."""
    while s > 0 and text[s - 1] in "|/" and s > 1 and (text[s - 2].isalnum() or text[s - 2] in "_-"):
        s = _token_start(text, s - 1)
    while e < len(text) and text[e] in "|/" and e + 1 < len(text) and (text[e + 1].isalnum() or text[e + 1] in "_-"):
        e = _token_end(text, e + 1)
    if s == 0 or e >= len(text):
        return False
    q = text[s - 1]
    close = _OPEN_CLOSE.get(q)
    if close is None or text[e] != close:
        return False
    if q == "*":  # **Read**: emphasis, not code; only a name list in bold counts ("**Read**, **Write**")
        return False
    if q == "'" and s >= 2 and text[s - 2].isalnum():  # a contraction or a possessive, not a quote
        return False
    return True


def _token_start(text: str, i: int) -> int:
    while i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_-"):
        i -= 1
    return i


def _token_end(text: str, i: int) -> int:
    while i < len(text) and (text[i].isalnum() or text[i] in "_-"):
        i += 1
    return i


def _sentence_start(before: str) -> bool:
    """Whether the text before a word ends a sentence or clause (or is empty): the word may be capitalised there."""
    stripped = before.rstrip(" \t*`\"'([{#>")
    return not stripped or stripped[-1] in ".!?:;\n\u2014\u2013-=|" or stripped.endswith("\\n")


def _base_reference(text: str, s: int, e: int, name: str, kind: str) -> bool:
    """The forms of :func:`mention_spans` that do not depend on a neighbouring mention."""
    if _quoted(text, s, e):
        return True
    noun = _NOUN_AFTER[kind].match(text, e)
    if noun and (not noun.group(0).rstrip().endswith("s") or name[0].isupper() or is_identifier_like(name)
                 or _LIST_BEFORE.search(text[max(0, s - 12):s])):
        return True  # "read tools" is tools that read; "the think and calculate tools" names two
    before = text[max(0, s - 40):s]
    if kind == "tool":
        if _CALL_AFTER.match(text, e) or _TOOL_BEFORE.search(before):
            return True
        if name[0].isupper() and name not in PROPER_NOUNS and not _sentence_start(before):
            prev = _PREV_WORD.search(before)
            if prev and prev.group(1)[0].islower():
                nxt = _NEXT_WORD.match(text, e)
                if not (nxt and nxt.group(1)[0].isupper()):
                    return True
    elif kind == "param_own":
        if _ASSIGN_AFTER.match(text, e):
            return True
        if text.startswith(":", e) and _LINE_START.search(text[max(0, s - 12):s]):
            return True
    return False


def _name_like(token: str, text: str, s: int, e: int, kind: str) -> bool:
    """A coordinated neighbour that makes a list of names: identifier-like, or a reference itself."""
    return is_identifier_like(token) or _base_reference(text, s, e, token, kind)


def mention_spans(text: str, name: str, kind: str = "tool") -> list[tuple[int, int, bool]]:
    """Every whole-token occurrence of ``name`` in ``text`` (case-sensitive), with whether it is a reference.

    Identifier-like names: every occurrence. Plain words: the forms of the module docstring."""
    if not text or name not in text:
        return []
    if kind not in KINDS:
        raise ValueError(f"unknown mention kind {kind!r}; expected one of {', '.join(KINDS)}")
    out = []
    ident = is_identifier_like(name)
    for m in _token_rx(name).finditer(text):
        s, e = m.span()
        out.append((s, e, ident or _is_ref(text, s, e, name, kind)))
    return out


def _set_off(text: str, s: int, e: int) -> bool:
    """Whether the token at ``s:e`` is set off by a quote or backtick on either side."""
    return (s > 0 and text[s - 1] in _QUOTES) or (e < len(text) and text[e] in _QUOTES)


_QUOTES = "`'\""


def _is_ref(text: str, s: int, e: int, name: str, kind: str) -> bool:
    if _base_reference(text, s, e, name, kind):
        return True
    # coordination: walk the list both ways while the joints hold; one name-like member makes it a list of names.
    # Members of one list are quoted alike: "such as 'create', open files" is a quoted name and then a verb
    quoted = _set_off(text, s, e)
    pos, end = s, e
    for _ in range(12):
        m = _COORD_BEFORE.search(text[max(0, pos - 60):pos])
        if not m:
            break
        tok = m.group(1)
        ts = max(0, pos - 60) + m.start(1)
        te = ts + len(tok)
        if _set_off(text, ts, te) != quoted:
            break
        if _name_like(tok, text, ts, te, kind):
            return True
        pos = ts
    pos = end
    for _ in range(12):
        m = _COORD_AFTER.match(text, pos)
        if not m:
            break
        ts, te = m.span(1)
        if _set_off(text, ts, te) != quoted:
            break
        if _name_like(m.group(1), text, ts, te, kind):
            return True
        pos = te
    return False


def is_reference(text: str, start: int, name: str, kind: str = "tool") -> bool:
    """Whether the occurrence of ``name`` at ``start`` in ``text`` refers to the ``kind`` of that name."""
    if text[start:start + len(name)] != name:
        raise ValueError(f"{name!r} does not occur at {start} in the text")
    return is_identifier_like(name) or _is_ref(text, start, start + len(name), name, kind)


def prose_uses(text: str, name: str, kind: str = "tool") -> tuple[int, int]:
    """``(references, words)``: how many whole-token occurrences of ``name`` in ``text`` refer to it, and how many
    may be the plain word."""
    spans = mention_spans(text, name, kind)
    refs = sum(1 for *_, ref in spans if ref)
    return refs, len(spans) - refs


# --------------------------------------------------------------------------- compound names inside longer tokens


def is_compound(name: str) -> bool:
    """A name of two words or more joined by ``-`` or ``_`` (``skill-creator``, ``git_diff``)."""
    return ("-" in name or "_" in name) and len(split_words(name)) >= 2


@lru_cache(maxsize=4096)
def _inner_rx(name: str) -> re.Pattern[str]:
    sep = "-" if "-" in name else "_"
    other = "_" if sep == "-" else "-"
    # inside a longer token: joined to it by the name's own separator on at least one side, never by a dot
    return re.compile(r"(?<![A-Za-z0-9" + re.escape(other) + r".])" + re.escape(name)
                      + r"(?![A-Za-z0-9" + re.escape(other) + r"])")


def inner_spans(text: str, name: str, keep: Collection[str] = ()) -> list[tuple[int, int]]:
    """Occurrences of the compound ``name`` inside a longer token of ``text`` joined by the name's own separator
    (``<skill-creator-path>``, ``skill-creator-v2``), except inside a token that is one of ``keep`` (the names of
    the harness: ``git_diff_staged`` is a tool of its own beside ``git_diff``). Whole-token occurrences are not
    listed."""
    if not is_compound(name) or name not in text:
        return []
    sep = "-" if "-" in name else "_"
    out = []
    for m in _inner_rx(name).finditer(text):
        s, e = m.span()
        ts, te = _token_start(text, s), _token_end(text, e)
        if ts == s and te == e:
            continue  # a whole token: the token rule's
        if not ((s > ts and text[s - 1] == sep) or (e < te and text[e] == sep)):
            continue
        if (s > ts and text[s - 1] != sep) or (e < te and text[e] != sep):
            continue  # glued to letters on one side (xskill-creator): another word
        if text[ts:te] in keep:
            continue
        out.append((s, e))
    return out


# --------------------------------------------------------------------------- renaming and checking


def _spans(text: str, names: Iterable[str], kind: str, inner: bool, keep: Collection[str]) -> list[tuple[int, int, str]]:
    found = []
    for n in names:
        if n not in text:
            continue
        found.extend((s, e, n) for s, e, ref in mention_spans(text, n, kind) if ref)
        if inner:
            found.extend((s, e, n) for s, e in inner_spans(text, n, keep))
    found.sort(key=lambda x: (x[0], -(x[1] - x[0])))
    out, pos = [], 0
    for s, e, n in found:
        if s >= pos:
            out.append((s, e, n))
            pos = e
    return out


def mention_replacements(text: str, renames: Mapping[str, str], kind: str = "tool", *, inner: bool = False,
                         keep: Collection[str] = ()) -> list[tuple[int, int, str]]:
    """The replacements :func:`rename_mentions` makes in ``text``: ``(start, end, new name)`` in ``text``'s own
    positions, in order, none overlapping.

    Whether a plain word is a reference can hang on its neighbour ("get Get (Get)": the capitalised word after a
    lower-case one), and a neighbour may be a name that just changed; so the text is read again until no old name
    outside the replaced spans reads as a reference: the result refers to none of them (what
    :func:`stale_mentions` checks), and a replaced span is never renamed twice (swaps stay swaps)."""
    if not text or not renames:
        return []
    names = [k for k, v in renames.items() if k != v and k in text]
    out: list[tuple[int, int, str]] = []
    now = text
    for _ in range(8 if names else 0):
        done = _now_spans(out)
        spans = [(s, e, n) for s, e, n in _spans(now, names, kind, inner, keep)
                 if not any(s < de and ds < e for ds, de in done)]
        if not spans:
            break
        out = sorted(out + [(_in_source(s, out), _in_source(e, out), renames[n]) for s, e, n in spans])
        now = replaced(text, out)
        names = [n for n in names if n in now]
        if not names:
            break
    return out


def _now_spans(replacements: list[tuple[int, int, str]]) -> list[tuple[int, int]]:
    """Where each of ``replacements`` (sorted, in the source text's positions) lies in the replaced text."""
    out, delta = [], 0
    for s, e, new in replacements:
        out.append((s + delta, s + delta + len(new)))
        delta += len(new) - (e - s)
    return out


def _in_source(pos: int, replacements: list[tuple[int, int, str]]) -> int:
    """The source text's position of ``pos`` of the replaced text, ``pos`` outside every replaced span."""
    delta = 0
    for s, e, new in replacements:
        if s + delta + len(new) > pos:
            break
        delta += len(new) - (e - s)
    return pos - delta


def replaced(text: str, replacements: Iterable[tuple[int, int, str]]) -> str:
    """``text`` with each ``(start, end, new)`` of ``replacements`` (in order, none overlapping) made."""
    pieces, pos = [], 0
    for s, e, new in replacements:
        pieces += (text[pos:s], new)
        pos = e
    pieces.append(text[pos:])
    return "".join(pieces)


def rename_mentions(text: str, renames: Mapping[str, str], kind: str = "tool", *, inner: bool = False,
                    keep: Collection[str] = ()) -> str:
    """``text`` with every reference to a key of ``renames`` replaced by its value, all at once (swaps work).

    ``inner``: compound names inside longer tokens follow too (:func:`inner_spans`, but tokens in ``keep``).
    The replacements are :func:`mention_replacements`."""
    if not text or not renames:
        return text
    return replaced(text, mention_replacements(text, renames, kind, inner=inner, keep=keep))


def rename_in_context(text: str, regions: Iterable[tuple[int, int]], renames: Mapping[str, str],
                      kind: str = "tool", *, inner: bool = False, keep: Collection[str] = ()) -> list[str] | None:
    """Each ``(start, end)`` region of ``text`` after :func:`rename_mentions`, its words read in the context of the
    whole ``text`` (a prompt section's body read where its template renders it: "TOOLS: (get)" names a tool where
    the body "(get)" alone may not). None when a replacement crosses the edge of a region."""
    repl = mention_replacements(text, renames, kind, inner=inner, keep=keep)
    out = []
    for rs, re_ in regions:
        inside = []
        for s, e, new in repl:
            if rs <= s and e <= re_:
                inside.append((s - rs, e - rs, new))
            elif s < re_ and rs < e:
                return None
        out.append(replaced(text[rs:re_], inside))
    return out


class MentionRenamer:
    """The text function of :func:`rename_mentions` for one table of renames, with a substring test first (most
    texts name none); :meth:`in_context` renames regions of a text read whole (:func:`rename_in_context`).

    A text that names one of the names is renamed once per content: the result is kept (``mentions.renamed``) by
    the text and everything the rename reads (the table in its order, the kind, ``inner``, ``keep``). The same
    texts come back with the same tables from record to record (a harness's system message, common phrases, under
    each variant of a pool slot): 82-84% of the calls on the shared benchmark inputs."""

    __slots__ = ("renames", "names", "kind", "inner", "keep", "_key")

    def __init__(self, renames: Mapping[str, str], kind: str = "tool", *, inner: bool = False,
                 keep: Collection[str] = ()):
        self.renames = {k: v for k, v in renames.items() if k != v}
        self.names = tuple(self.renames)
        self.kind = kind
        self.inner = inner
        self.keep = frozenset(keep)
        self._key = (tuple(self.renames.items()), kind, inner, self.keep)

    def touches(self, text: str) -> bool:
        """Whether ``text`` holds one of the renamed names (as a substring): only then may it change."""
        for n in self.names:  # a loop, not any(): this is asked of every text a rename passes
            if n in text:
                return True
        return False

    def __call__(self, text: str) -> str:
        for n in self.names:
            if n in text:
                key = (text, self._key)
                hit = _RENAMED.get(key)
                if hit is None:
                    hit = _RENAMED.put(key, rename_mentions(text, self.renames, self.kind, inner=self.inner,
                                                            keep=self.keep), 2 * len(text) + 200)
                return hit
        return text

    def in_context(self, text: str, regions: list[tuple[int, int]]) -> list[str] | None:
        if not self.touches(text):
            return [text[s:e] for s, e in regions]
        return rename_in_context(text, regions, self.renames, self.kind, inner=self.inner, keep=self.keep)


def mention_renamer(renames: Mapping[str, str], kind: str = "tool", *, inner: bool = False,
                    keep: Collection[str] = ()) -> MentionRenamer:
    """``lambda text: rename_mentions(text, renames, kind, ...)`` with a substring test first (most texts name
    none), as a :class:`MentionRenamer`."""
    return MentionRenamer(renames, kind, inner=inner, keep=keep)


def referenced(text: str, name: str, kind: str = "tool") -> bool:
    """Whether ``text`` holds a reference to ``name``."""
    return any(ref for *_, ref in mention_spans(text, name, kind))


def stale_mentions(text: str, names: Iterable[str], kind: str = "tool", *, inner: bool = False,
                   keep: Collection[str] = ()) -> list[str]:
    """The ``names`` that ``text`` still refers to (each once, in order of first reference): what a rename of them
    should have changed."""
    seen: list[str] = []
    for _, _, n in _spans(text, [n for n in names if n in text], kind, inner, keep):
        if n not in seen:
            seen.append(n)
    return seen
