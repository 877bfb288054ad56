"""The work of the ``skill`` family's transforms, as pure functions (the albumentations ``functional.py``).

:mod:`transforms.skill` holds the transforms: options, checks, and ``sample``, which draws every
random choice into JSON params. What does not draw is here: the skill catalogue of a prompt
(find, parse, render in list / table / XML / ``<available_skills>`` style), the tool results that
returned a skill's body, the enumerations of a description, the Markdown structure of a skill
(sections, anchors, what may move, restructuring and its canonical form) and the distractor-skill
pool. Every function is deterministic and returns new objects.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, NamedTuple

from hsa.names import find_tokens
from hsa.prompt_model import PREAMBLE_ID, PromptSite
from hsa.records import Record
from hsa.renames import param_paths
from hsa.skills_dir import is_legal_skill_name
from transforms._banks import BankError, read_bank
from transforms.phrasebank import load_bank

__all__ = [
    "CATALOG_STYLES",
    "HEADING_STYLES",
    "BULLETS",
    "ORDERED_DELIMITERS",
    "DEFAULT_ANCHORS",
    "AVAILABLE_SKILLS_LAYOUT",
    "declared_params",
    "Catalog",
    "catalog_style_ok",
    "render_catalog",
    "parse_catalog",
    "find_catalog",
    "catalog_miss",
    "with_catalog",
    "skill_results",
    "replace_in_results",
    "enumerations",
    "reorder_enumerations",
    "description_canonical",
    "mentioned_outside",
    "anchored_sections",
    "order_pins",
    "movable_runs",
    "markdown_plan",
    "restructure_markdown",
    "skill_canonical",
    "load_distractors",
    "skill_arg_schema",
    "set_skill_arg_schema",
    "with_key",
]

#: Catalogue styles :func:`render_catalog` writes.
CATALOG_STYLES = ("list", "table", "xml", "available_skills")
HEADING_STYLES = ("atx", "atx_closed", "setext")
BULLETS = ("-", "*", "+")
ORDERED_DELIMITERS = (".", ")")
#: Phrases that make a Markdown section refer to its neighbours: such a section keeps its place.
DEFAULT_ANCHORS = ("above", "below", "previous section", "previous step", "previous steps", "previous stage",
                   "preceding", "following section", "following step", "following steps", "next section", "next step",
                   "next steps", "next stage", "earlier section", "earlier step", "later section", "later step",
                   "as described", "as shown", "as mentioned", "mentioned earlier", "see section", "this section",
                   "the section", "the first step", "the last step", "the final step")


def declared_params(record: Record) -> set[str]:
    """Every parameter name the record's tools declare, at any depth."""
    out: set[str] = set()
    for t in record["tools"]:
        out.update(p[-1] for p in param_paths(t["parameters"]))
    return out


# =========================================================================== catalogue

_CAT_NAME = r"([A-Za-z0-9][A-Za-z0-9_.-]*)"
_TABLE_HEAD = "| Skill | Description |\n| --- | --- |"
_CAT_LINE = {
    "list": re.compile(rf"^- {_CAT_NAME}: (.*)$"),
    "table": re.compile(rf"^\| {_CAT_NAME} \| (.*) \|$"),
    "xml": re.compile(rf'^<skill name="{_CAT_NAME}">(.*)</skill>$'),
}
#: The ``<available_skills>`` layout of the Agent Skills integration guide, as :func:`render_catalog` writes it
#: when the catalogue had another style: one child element per line, indented.
AVAILABLE_SKILLS_LAYOUT = {"wrapped": True, "open": "\n  ", "sep": "\n  ", "close": "\n", "name_ws": "\n    ",
                           "desc_ws": "\n    ", "end_ws": "\n  ", "extras": {}, "inner": ["", ""]}
_AS_BLOCK = re.compile(r"<available_skills>(.*?)</available_skills>", re.DOTALL)
_AS_SKILL = re.compile(r"<skill>(.*?)</skill>", re.DOTALL)
_AS_CHILD = re.compile(r"(\s*)<([A-Za-z_][A-Za-z0-9_-]*)>([^<]*)</\2>")


class Catalog(NamedTuple):
    """The skill catalogue of a prompt: section ``index``, ``style``, skill ``names`` in order, their ``entries``
    (name, description), the section text ``before`` and ``after`` it, and the ``layout`` of an
    ``available_skills`` block (whitespace, extra child elements such as ``<location>`` per skill)."""

    index: int
    style: str
    names: list[str]
    entries: list[tuple[str, str]]
    before: str = ""
    after: str = ""
    layout: dict | None = None


def catalog_style_ok(entries: list[tuple[str, str]], style: str) -> bool:
    """True when every (name, description) can be written in ``style`` and read back unchanged."""
    for name, desc in entries:
        if "\n" in desc or "\r" in desc or not re.fullmatch(_CAT_NAME, name):
            return False
        if style == "table" and ("|" in desc or desc != desc.strip() or not desc):
            return False
        if style in ("xml", "available_skills") and ("<" in desc or "&" in desc):
            return False
        if style == "available_skills" and (desc != desc.strip() or not desc):
            return False  # the values of the elements are read back stripped
    return True


def render_catalog(entries: list[tuple[str, str]], style: str, layout: dict | None = None) -> str:
    """The catalogue text for (name, description) ``entries`` in ``style`` (see :data:`CATALOG_STYLES`).

    ``layout`` is the whitespace and extra children of an ``available_skills`` block
    (:data:`AVAILABLE_SKILLS_LAYOUT` by default).
    """
    if style == "list":
        return "\n".join(f"- {n}: {d}" for n, d in entries)
    if style == "table":
        return "\n".join([_TABLE_HEAD] + [f"| {n} | {d} |" for n, d in entries])
    if style == "xml":
        return "\n".join(f'<skill name="{n}">{d}</skill>' for n, d in entries)
    if style == "available_skills":
        lay = {**AVAILABLE_SKILLS_LAYOUT, **(layout or {})}
        extras = lay.get("extras") or {}
        a, b = lay.get("inner") or ("", "")  # whitespace inside each element: "<name>\npdf\n</name>"
        items = [f"<skill>{lay['name_ws']}<name>{a}{n}{b}</name>{lay['desc_ws']}<description>{a}{d}{b}</description>"
                 + "".join(f"{ws}<{tag}>{a}{value}{b}</{tag}>" for ws, tag, value in extras.get(n, ()))
                 + f"{lay['end_ws']}</skill>" for n, d in entries]
        inner = lay["open"] + lay["sep"].join(items) + lay["close"]
        return f"<available_skills>{inner}</available_skills>" if lay["wrapped"] else inner
    raise ValueError(f"unknown catalogue style {style!r}; expected one of {', '.join(CATALOG_STYLES)}")


def _available_skills(inner: str, wrapped: bool) -> tuple[list[tuple[str, str]], dict] | None:
    """(entries, layout) of the inside of an ``<available_skills>`` block; None when it is not one."""
    skills = list(_AS_SKILL.finditer(inner))
    if not skills:
        return None
    gaps = [inner[a.end():b.start()] for a, b in zip(skills, skills[1:])]
    opening, closing = inner[:skills[0].start()], inner[skills[-1].end():]
    if any(g.strip() for g in gaps + [opening, closing]) or len(set(gaps)) > 1:
        return None
    entries, extras, shapes, pads = [], {}, set(), set()
    for m in skills:
        body, pos, children = m.group(1), 0, []
        for c in _AS_CHILD.finditer(body):
            if c.start() != pos:
                return None
            raw = c.group(3)
            value = raw.strip()
            pads.add((raw[:len(raw) - len(raw.lstrip())], raw[len(raw.rstrip()):]))
            children.append((c.group(1), c.group(2), value))
            pos = c.end()
        tail = body[pos:]
        if tail.strip() or len(children) < 2 or [c[1] for c in children[:2]] != ["name", "description"]:
            return None
        if any(tag in ("name", "description") for _, tag, _ in children[2:]):
            return None
        name, desc = children[0][2], children[1][2]
        entries.append((name, desc))
        if children[2:]:
            extras[name] = [list(c) for c in children[2:]]
        shapes.add((children[0][0], children[1][0], tail))
    if len(shapes) != 1 or len(pads) != 1:
        return None
    name_ws, desc_ws, end_ws = shapes.pop()
    layout = {"wrapped": wrapped, "open": opening, "sep": gaps[0] if gaps else AVAILABLE_SKILLS_LAYOUT["sep"],
              "close": closing, "name_ws": name_ws, "desc_ws": desc_ws, "end_ws": end_ws, "extras": extras,
              "inner": list(pads.pop())}
    return entries, layout


def _catalog_blocks(body: str):
    """Candidate catalogues in a section body: (before, style, entries, after, layout), in order of appearance."""
    m = _AS_BLOCK.search(body)
    if m is not None:
        parsed = _available_skills(m.group(1), True)
        if parsed is not None:
            yield body[:m.start()], "available_skills", parsed[0], body[m.end():], parsed[1]
    elif body.lstrip().startswith("<skill>"):
        core = body.strip()
        parsed = _available_skills(core, False)
        if parsed is not None:
            lead = body[:len(body) - len(body.lstrip())]
            yield lead, "available_skills", parsed[0], body[len(lead) + len(core):], parsed[1]
    lines = body.split("\n")
    for style, rx in _CAT_LINE.items():
        i = 0
        while i < len(lines):
            start = i
            if style == "table":
                if "\n".join(lines[i:i + 2]) != _TABLE_HEAD:
                    i += 1
                    continue
                i += 2
            entries = []
            while i < len(lines):
                m = rx.match(lines[i])
                if not m:
                    break
                entries.append((m.group(1), m.group(2)))
                i += 1
            if not entries:
                i = start + 1
                continue
            block = "\n".join(lines[start:i])
            if render_catalog(entries, style) == block:
                before = "\n".join(lines[:start]) + ("\n" if start else "")
                after = ("\n" if i < len(lines) else "") + "\n".join(lines[i:])
                yield before, style, entries, after, None


def parse_catalog(body: str) -> tuple[str, list[tuple[str, str]]] | None:
    """(style, entries) when ``body`` is exactly a catalogue in one of :data:`CATALOG_STYLES`."""
    for before, style, entries, after, _ in _catalog_blocks(body):
        if not before and not after:
            return style, entries
    return None


def find_catalog(record: Record, prompt: dict) -> Catalog | None:
    """The prompt section that lists the record's skills (:class:`Catalog`), or None.

    A catalogue is a block of a section body (a list ``- name: description``, a table,
    ``<skill name=...>`` lines or an ``<available_skills>`` block), whole lines, that lists
    skills of the record, each once with its current description; text before and after
    it in the section (an intro line, blank lines) stays as it is.
    """
    skills = {s["name"]: s for s in record.get("skills") or ()}
    if not skills:
        return None
    for i, sec in enumerate(prompt.get("sections") or ()):
        if sec.get("id") == PREAMBLE_ID or not isinstance(sec.get("body"), str):
            continue
        for before, style, entries, after, layout in _catalog_blocks(sec["body"]):
            names = [n for n, _ in entries]
            if len(set(names)) == len(names) and all(n in skills and skills[n].get("description") == d
                                                     for n, d in entries):
                return Catalog(i, style, names, entries, before, after, layout)
    return None


def catalog_miss(record: Record, site: PromptSite | dict | str) -> str:
    """Why :func:`find_catalog` found no catalogue in the record's prompt (``site``: where it lives, or the prompt
    itself), naming the section and skills involved."""
    if isinstance(site, str):
        return f"no skill catalogue: the prompt cannot be read ({site})"
    prompt = site if isinstance(site, dict) else site.prompt
    skills = {s["name"]: s.get("description") for s in record.get("skills") or ()}
    for sec in prompt.get("sections") or ():
        body = sec.get("body") if isinstance(sec.get("body"), str) else ""
        if sec.get("id") == PREAMBLE_ID:
            continue
        for _, style, entries, _, _ in _catalog_blocks(body):
            unknown = [n for n, _ in entries if n not in skills]
            stale = [n for n, d in entries if n in skills and skills[n] != d]
            if unknown or stale:
                what = (f"names {', '.join(map(repr, unknown))} that are no skills of the record" if unknown else
                        f"gives {', '.join(map(repr, stale))} a description other than the skill's")
                where = sec.get("title") or sec.get("id")
                return f"no skill catalogue: section {where!r} lists skills ({style}) but {what}"
        named = find_tokens(body, list(skills))
        if len(set(named)) >= 2:
            return (f"no skill catalogue: section {sec.get('title') or sec.get('id')!r} names skills "
                    f"{', '.join(sorted(set(named))[:4])} but not in a catalogue layout ('- name: description' lines, "
                    "a '| Skill | Description |' table, <skill name=...> lines or <available_skills>)")
    return "no skill catalogue in the prompt (no section lists the record's skills with their descriptions)"


def with_catalog(prompt: dict, cat: Catalog, text: str) -> dict:
    out = {**prompt, "sections": [dict(s) for s in prompt["sections"]]}
    out["sections"][cat.index]["body"] = cat.before + text + cat.after
    return out


# =========================================================================== skill tool results


def skill_results(record: Record) -> list[tuple[int, str]]:
    """(message index, skill name) of every tool result that answers a skill-tool call."""
    st = record["skill_tool"]
    by_id: dict[str, str | None] = {}
    queue: list[tuple[str | None, str | None]] = []
    out = []
    for i, m in enumerate(record["messages"]):
        if m.get("role") == "assistant" and m.get("tool_calls"):
            queue = []
            for c in m["tool_calls"]:
                fn = c["function"]
                skill = None
                if fn["name"] == st["name"] and isinstance(fn.get("arguments"), dict):
                    value = fn["arguments"].get(st["argument"])
                    skill = value if isinstance(value, str) else None
                queue.append((c.get("id"), skill))
                if c.get("id"):
                    by_id[c["id"]] = skill
        elif m.get("role") == "tool":
            cid = m.get("tool_call_id")
            if cid and cid in by_id:
                skill = by_id[cid]
                queue = [q for q in queue if q[0] != cid]
            elif queue:
                skill = queue.pop(0)[1]
            else:
                skill = None
            if skill is not None:
                out.append((i, skill))
    return out


def replace_in_results(record: Record, name: str, old: str, new: str) -> None:
    """Rewrite (in place) the tool results that returned ``old`` as skill ``name``'s body."""
    if old == new or not old:
        return
    for i, skill in skill_results(record):
        msg = record["messages"][i]
        if skill == name and isinstance(msg.get("content"), str) and old in msg["content"]:
            msg["content"] = msg["content"].replace(old, new, 1)


# =========================================================================== skill.describe

_ITEM = r"(?!(?:and|or)\b)[A-Za-z][\w'-]*"
_ENUM = re.compile(rf"(?<=\s)({_ITEM})((?:, {_ITEM}(?: {_ITEM})?)+)(,?) (and|or) ({_ITEM}(?: {_ITEM})?)(?=[.;,)]|$)")


#: Words after which a list's first item starts for sure: prepositions, determiners, possessives and verbs that take
#: a list. After any other word ("tables of contents, headings": "of"; "brand colors, style guides": "brand") the
#: first item may begin further left, so the list is not reordered: reordering moves whole items only.
_LIST_OPENERS = frozenset("""
about for with like including include includes such as on in into to from between among via using by at over across
per the a an any all your their its our his her these those each every some many other both either
answer answers handle handles cover covers support supports create creates manage manages review reviews check checks
read reads write writes edit edits extract extracts convert converts apply applies use uses suggest suggests
""".split())
_OPENER_PUNCT = (":", "(", ";", "\u2014", "\u2013")


def _clear_start(text: str, start: int) -> bool:
    """True when an enumeration starting at ``start`` cannot extend to the left (see :data:`_LIST_OPENERS`)."""
    before = text[:start].rstrip()
    if not before or before.endswith(_OPENER_PUNCT):
        return True
    word = re.search(r"[\w'\u2019-]+$", before)
    if word is None:
        return False
    w = word.group(0).lower()
    return w in _LIST_OPENERS or w.endswith(("'s", "\u2019s"))


def enumerations(text: str) -> list[tuple[re.Match, list[str]]]:
    """The lists of three items or more whose items are certainly whole (see :func:`_clear_start`)."""
    out = []
    for m in _ENUM.finditer(text):
        if not _clear_start(text, m.start()):
            continue
        items = [m.group(1)] + [x for x in m.group(2).split(", ") if x] + [m.group(5)]
        out.append((m, items))
    return out


def _join_items(items: list[str], comma: str, conj: str) -> str:
    return ", ".join(items[:-1]) + f"{comma} {conj} {items[-1]}"


def reorder_enumerations(text: str, orders: list[list[int]]) -> str:
    """``text`` with its k-th enumeration (``a, b and c``; three items or more) reordered by ``orders[k]``."""
    enums = enumerations(text)
    if len(orders) != len(enums):
        raise ValueError(f"{len(orders)} orders for {len(enums)} enumerations in {text!r}")
    pieces, pos = [], 0
    for (m, items), order in zip(enums, orders):
        if sorted(order) != list(range(len(items))):
            raise ValueError(f"order {order} is not a permutation of the {len(items)} items of {m.group(0)!r}")
        pieces.append(text[pos:m.start()])
        pieces.append(_join_items([items[i] for i in order], m.group(3), m.group(4)))
        pos = m.end()
    pieces.append(text[pos:])
    return "".join(pieces)


def description_canonical(text: str, banks: tuple[str, ...] = ()) -> str:
    """A description up to the declared equivalences: enumerations sorted, bank phrasings replaced by group ids."""
    enums = enumerations(text)
    orders = [sorted(range(len(items)), key=lambda i, it=items: it[i]) for _, items in enums]
    return load_bank("skill_descriptions", tuple(banks)).canonical(reorder_enumerations(text, orders))


def mentioned_outside(record: Record, text: str) -> bool:
    for m in record["messages"]:
        c = m.get("content")
        if isinstance(c, str) and text in c:
            return True
        if isinstance(c, list) and any(isinstance(p, dict) and text in str(p.get("text", "")) for p in c):
            return True
    prompt = record.get("prompt") or {}
    return any(text in (s.get("body") or "") for s in prompt.get("sections") or ())


# =========================================================================== skill.restructure

_ATX = re.compile(r"^(#{1,6})[ \t]+(.*?)(?:[ \t]+(#+))?[ \t]*$")
_SETEXT = re.compile(r"^(=+|-+)[ \t]*$")
_BULLET = re.compile(r"^([ \t]*)([-*+])([ \t]+)(.*)$")
_ORDERED = re.compile(r"^([ \t]*)(\d{1,9})([.)])([ \t]+)(.*)$")
_BREAK = re.compile(r"^[ \t]{0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_FENCE_OPEN = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_BLOCK_START = re.compile(r"^[ \t]*(?:[-*+>#]|\d{1,9}[.)])(?:[ \t]|$)")
_FM = re.compile(r"\A(---[ \t]*\n)(.*?\n)(---[ \t]*(?:\n|\Z))", re.DOTALL)
_FM_KEY = re.compile(r"^[A-Za-z_][\w-]*[ \t]*:")


def _split_frontmatter(text: str) -> tuple[str, list[str] | None, str, str]:
    """(opening line, top-level frontmatter entries or None, closing line, body)."""
    m = _FM.match(text)
    if not m:
        return "", None, "", text
    inner = m.group(2)
    lines = inner.splitlines(keepends=True)
    entries: list[str] = []
    for line in lines:
        if _FM_KEY.match(line):
            entries.append(line)
        elif entries:
            entries[-1] += line
        else:
            return m.group(1), [inner], m.group(3), text[m.end():]  # leading comment: keep as one block
    return m.group(1), entries, m.group(3), text[m.end():]


def _scan(lines: list[str]) -> list[dict]:
    """Markdown elements by line: heading (atx/setext), bullet, ordered, fence, text, blank."""
    out: list[dict] = []
    fence = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if fence is not None:
            out.append({"kind": "fence", "lines": [line]})
            if line.strip().startswith(fence):
                fence = None
            i += 1
            continue
        fm = _FENCE_OPEN.match(line)
        if fm:
            fence = fm.group(1)[:3]
            out.append({"kind": "fence", "lines": [line]})
            i += 1
            continue
        if not line.strip():
            out.append({"kind": "blank", "lines": [line]})
            i += 1
            continue
        m = _ATX.match(line)
        if m and m.group(2).strip():
            out.append({"kind": "heading", "level": len(m.group(1)), "title": m.group(2),
                        "style": "atx_closed" if m.group(3) else "atx", "lines": [line]})
            i += 1
            continue
        prev_blank = i == 0 or not lines[i - 1].strip() or (out and out[-1]["kind"] == "heading")
        if (i + 1 < len(lines) and _SETEXT.match(lines[i + 1]) and prev_blank and not _BLOCK_START.match(line)
                and not line.startswith(("    ", "\t")) and not _BREAK.match(line)):
            level = 1 if lines[i + 1].lstrip()[0] == "=" else 2
            out.append({"kind": "heading", "level": level, "title": line.strip(), "style": "setext",
                        "lines": [line, lines[i + 1]]})
            i += 2
            continue
        if not _BREAK.match(line):
            m = _BULLET.match(line)
            if m:
                out.append({"kind": "bullet", "indent": m.group(1), "marker": m.group(2), "gap": m.group(3),
                            "text": m.group(4), "lines": [line]})
                i += 1
                continue
        m = _ORDERED.match(line)
        if m:
            out.append({"kind": "ordered", "indent": m.group(1), "number": m.group(2), "delim": m.group(3),
                        "gap": m.group(4), "text": m.group(5), "lines": [line]})
            i += 1
            continue
        out.append({"kind": "text", "lines": [line]})
        i += 1
    return out


@lru_cache(maxsize=2048)
def _elements(body: str) -> tuple[dict, ...]:
    """:func:`_scan` of ``body``, cached (skill bodies repeat across records and variants); do not mutate."""
    return tuple(_scan(body.splitlines(keepends=True)))


def _segments(elements: list[dict]) -> tuple[list[dict], list[list[dict]], list[bool]]:
    """(head elements, segments, is_unit) where units are the headed sections that may move."""
    heads = [(k, e["level"]) for k, e in enumerate(elements) if e["kind"] == "heading"]
    if not heads:
        return elements, [], []
    top = min(lv for _, lv in heads)
    at_top = [k for k, lv in heads if lv == top]
    rest = [lv for k, lv in heads if k not in at_top]
    if len(at_top) == 1 and at_top[0] == heads[0][0] and rest:
        level = min(rest)  # one title heading above the sections
    else:
        level = top
    bounds = [k for k, lv in heads if lv <= level]
    if level != top:
        bounds = [k for k in bounds if k != at_top[0]]
    if not bounds:
        return elements, [], []
    head = elements[:bounds[0]]
    segs, units = [], []
    for j, start in enumerate(bounds):
        stop = bounds[j + 1] if j + 1 < len(bounds) else len(elements)
        segs.append(elements[start:stop])
        units.append(elements[start]["level"] == level)
    return head, segs, units


def _text(elements: list[dict]) -> str:
    return "".join(line for e in elements for line in e["lines"])


_NUMBER_WORDS = "one|two|three|four|five|six|seven|eight|nine|ten|[ivx]+"
#: Titles that say where a section sits in a sequence: a number, an ordinal, "Final Review", "Overview", ..., the
#: sections that come before a procedure ("When to use", "Purpose", "Prerequisites"), and examples (they illustrate
#: what comes before them)
_SEQUENCE_TITLE = re.compile(
    r"\d|\b(?:first|second|third|fourth|fifth|then|finally|final|last|next|before|after|afterwards|later|"
    r"prerequisites?|overview|introduction|intro|getting started|quick ?start|conclusion|summary|wrap[ -]up|recap|"
    r"when (?:not )?to use|when to apply|purpose|goals?|scope|use cases?|about this skill|examples?)\b|"
    rf"\b(?:step|stage|phase|part|round)\s+(?:{_NUMBER_WORDS})\b", re.IGNORECASE)
#: How a section's first sentence says that it follows another one ("After a theme is selected", "You've run ...",
#: "To begin, ...": it comes first)
_SEQUENCE_OPENING = re.compile(
    r"^\W*(?:after|afterwards|once|then|next|finally|lastly|now|having|subsequently|continuing|from here|"
    r"at this point|with (?:this|that|these|those)|before|you've|you have|you'll now|you will now|"
    r"to (?:begin|start)|first(?:ly)?\b|to get started|start by|begin by|also|but|however|similarly|otherwise|"
    r"instead|in addition|additionally|furthermore|moreover|likewise|so)\b", re.IGNORECASE)
_CONDITIONAL_OPENING = re.compile(r"^\W*(?:when|if|as soon as)\b", re.IGNORECASE)
_COMPLETION = re.compile(
    r"\b(?:pass(?:es|ed)?|complete[sd]?|done|finish(?:es|ed)?|succeed(?:s|ed)?|selected|chosen|approved|ready|"
    r"fail(?:s|ed)?|ran|run|created|written|generated|confirmed|reviewed|tested|installed|set up)\b", re.IGNORECASE)
#: "Step 3", "Stage 2", "phase one", "section 4": explicit references to a place in a sequence.
_NUMBERED_REF = re.compile(rf"\b(?:step|stage|phase|part|section)\s+(?:\d+|{_NUMBER_WORDS})\b", re.IGNORECASE)
_TITLE_PREFIX = re.compile(rf"^\W*(?:(?:step|stage|phase|part|round)\s+(?:\d+|{_NUMBER_WORDS})|\d+(?:\.\d+)*)[.):\s-]*",
                           re.IGNORECASE)
#: A text that points at what comes right after it: it ends with a colon ("First, undertake this task:"), or says
#: "the following", "as follows", "below", "this task".
_POINTS_FORWARD = re.compile(r"(?:^|\s)(?:the following|as follows|below|these steps|this task|the next)\b|:\s*\Z",
                             re.IGNORECASE)
#: Terms a section defines: a capitalised label that opens a line or sentence ("Signature: the single unique
#: element ...") or a bold phrase; a later section that uses one keeps both in order.
_DEFINED = re.compile(r"(?:^|[.!?]\s+|^[ \t]*[-*+][ \t]+)(?:\*\*)?([A-Z][a-z]{3,}(?: [a-z]{3,})?)(?:\*\*)?:[ \t]+\S",
                      re.MULTILINE)
_BOLD = re.compile(r"\*\*([A-Za-z][A-Za-z -]{2,38}[A-Za-z])\*\*")
_NOT_TERMS = frozenset("""note notes important warning tip tips example examples output input step steps goal goals
rule rules usage default defaults purpose overview summary context critical required optional always never yes
when what where why how why with this that these those each color type layout""".split())


@lru_cache(maxsize=256)
def _phrases_regex(phrases: tuple[str, ...]) -> re.Pattern[str] | None:
    if not phrases:
        return None
    alts = "|".join(re.escape(p.lower()) for p in sorted(set(phrases), key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?:{alts})(?![\w-])")


def _title_core(title: str) -> str:
    """A title without its sequence prefix ("Stage 2: Reader Testing" -> "reader testing"), lower-cased."""
    return re.sub(r"\s+", " ", _TITLE_PREFIX.sub("", title.strip().strip("#*_ ")).strip(" :.-")).lower()


@lru_cache(maxsize=1024)
def _title_mention(core: str) -> re.Pattern[str] | None:
    """How a text names a section titled ``core``: the title's words (two or more), or a one-word title quoted,
    in bold or code, or next to the word "section" ("refund" in a sentence is a word, "the Refund section" names
    the section)."""
    if " " in core:
        return _phrases_regex((core,))
    w = re.escape(core)
    return re.compile(rf"[\"'*`\u201c\u2018]{w}[\"'*`\u201d\u2019]|(?<![\w-]){w}\s+section|section\s+[\"'*`]?{w}(?![\w-])")


def _text_opening(text: str) -> str:
    """The first sentence of the first line of ``text`` (a list marker stripped)."""
    for line in text.splitlines():
        line = re.sub(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+", "", line.strip())
        if line and not line.startswith("#"):
            return re.split(r"(?<=[.!?:;])\s", line, maxsplit=1)[0]
    return ""


def _defined_terms(text: str) -> set[str]:
    """Labels of five letters or more ("Signature: ...") and bold phrases of two words or more."""
    found = {m.group(1).lower() for m in _DEFINED.finditer(text)} | {
        m.group(1).lower() for m in _BOLD.finditer(text) if " " in m.group(1).strip()}
    return {t for t in found if t not in _NOT_TERMS and len(t) >= 5}


def order_pins(head: str, sections: list[tuple[str, str]], anchors: tuple[str, ...] = DEFAULT_ANCHORS
               ) -> dict[int, str]:
    """Which of ``sections`` (title, body) must keep their place, and why: the order-safety rule shared by
    ``skill.restructure`` (skill bodies) and ``prompt.reorder`` (prompt sections); ``head`` is the text above the
    first section.

    A section stays when its title places it in a sequence (a number, "Final", "Overview", "When to use",
    "Purpose", "Prerequisites"), when its first sentence says it follows or opens something ("After ...",
    "To begin, ...", "But ...", "When reader testing passes:"), when it refers to a place ("above", "the next
    step", "Step 3": ``anchors`` and numbered references), when it names another section's title or another
    section names its title, and when it uses a term another section defines ("Signature: ..." and a later
    "the signature element") or defines one another section uses. A text that points forward ("First, undertake
    this task:", "the following", "below", a closing colon) pins the section right after it; the head pins the
    first section. When unsure, a section stays.
    """
    cores = [_title_core(t) for t, _ in sections]
    texts = [b.lower() for _, b in sections]
    anchor_rx = _phrases_regex(tuple(anchors))
    out: dict[int, str] = {}
    if head.strip() and sections and _POINTS_FORWARD.search(head.strip()):
        out[0] = f"the text above the first section points to it ({head.strip().splitlines()[-1][:40]!r})"
    for k, (title, body) in enumerate(sections):
        opening = _text_opening(body)
        if _SEQUENCE_TITLE.search(title):
            out.setdefault(k, f"title {title!r} places it in a sequence")
        elif _SEQUENCE_OPENING.search(opening) or (_CONDITIONAL_OPENING.search(opening)
                                                   and _COMPLETION.search(opening)):
            out.setdefault(k, f"opens with {opening[:40]!r}: it follows something")
        elif (m := (anchor_rx.search(texts[k]) if anchor_rx else None) or _NUMBERED_REF.search(texts[k])):
            out.setdefault(k, f"refers to a place ({m.group(0)!r})")
        if k + 1 < len(sections) and _POINTS_FORWARD.search(body.strip().lower()[-200:]):
            out.setdefault(k, "points to the section after it")
            out.setdefault(k + 1, f"section {title!r} points to it")
    for k in range(len(sections)):
        for j, core in enumerate(cores):
            if j != k and len(core) >= 4 and (rx := _title_mention(core)) is not None and rx.search(texts[k]):
                out.setdefault(k, f"names section {sections[j][0]!r}")
                out.setdefault(j, f"section {sections[k][0]!r} names it")
    whole = [head.lower()] + texts
    for j, defined in enumerate(_defined_terms(b) for _, b in sections):
        for term in sorted(defined):
            rx = _phrases_regex((term,))
            first = next(i for i, t in enumerate(whole) if rx.search(t)) - 1  # -1: the head
            users = [k for k in range(j + 1, len(sections)) if rx.search(texts[k])]
            if first == j and users:  # the term appears first where it is defined, and later sections use it
                out.setdefault(j, f"defines {term!r}, used by section {sections[users[0]][0]!r}")
                for k in users:
                    out.setdefault(k, f"uses {term!r}, defined in section {sections[j][0]!r}")
    return out


def anchored_sections(segs: list[list[dict]], units: list[bool], anchors: tuple[str, ...],
                      head: str = "") -> dict[int, str]:
    """Why each section of a skill body that must keep its place does: section index -> reason.

    A section that is not a unit at the sections' level stays; the others follow :func:`order_pins` (``head`` is
    the text above the first section).
    """
    out = {k: "not at the sections' level" for k in range(len(segs)) if not units[k]}
    pins = order_pins(head, [(s[0]["title"], _text(s[1:])) for s in segs], anchors)
    for k, why in pins.items():
        out.setdefault(k, why)
    return dict(sorted(out.items()))


@lru_cache(maxsize=2048)
def _anchored_of(body: str, anchors: tuple[str, ...]) -> tuple[tuple[int, str], ...]:
    """:func:`anchored_sections` of a body, cached (skill bodies repeat across records and variants)."""
    head, segs, units = _segments(list(_elements(body)))
    return tuple(sorted(anchored_sections(segs, units, anchors, _text(head)).items()))


def _movable_of(body: str, anchors: tuple[str, ...]) -> list[int]:
    """Indices of the sections of ``body`` that may move (see :func:`anchored_sections`)."""
    _, segs, _ = _segments(list(_elements(body)))
    fixed = dict(_anchored_of(body, tuple(anchors)))
    return [k for k in range(len(segs)) if k not in fixed]


def movable_runs(movable: list[int]) -> list[list[int]]:
    """Runs of consecutive movable sections: a section moves only within its run, never past an anchored one."""
    runs: list[list[int]] = []
    for k in movable:
        if runs and runs[-1][-1] == k - 1:
            runs[-1].append(k)
        else:
            runs.append([k])
    return [r for r in runs if len(r) >= 2]


def markdown_plan(content: str, anchors: tuple[str, ...] = DEFAULT_ANCHORS) -> dict:
    """What :func:`restructure_markdown` can change in ``content``.

    ``movable``: indices of the sections that may move; ``runs``: the runs of consecutive
    movable sections a move stays within; ``anchored``: why each other section keeps its
    place (:func:`anchored_sections`); ``sections``: number of sections; ``frontmatter``:
    number of top-level frontmatter keys (0 without frontmatter); ``headings``,
    ``bullets``, ``ordered``: counts.
    """
    _, entries, _, body = _split_frontmatter(content)
    elements = list(_elements(body))
    _, segs, _ = _segments(elements)
    anchored = dict(_anchored_of(body, tuple(anchors)))
    movable = [k for k in range(len(segs)) if k not in anchored]
    return {"movable": movable, "runs": movable_runs(movable), "anchored": anchored, "sections": len(segs),
            "frontmatter": len(entries) if entries and len(entries) > 1 and _FM_KEY.match(entries[0]) else 0,
            "headings": sum(e["kind"] == "heading" for e in elements),
            "bullets": sum(e["kind"] == "bullet" for e in elements),
            "ordered": sum(e["kind"] == "ordered" for e in elements)}


def _heading_lines(e: dict, style: str, prev_blank: bool) -> list[str]:
    nl = "\n" if e["lines"][-1].endswith("\n") else ""
    title, level = e["title"], e["level"]
    if style == "setext" and level <= 2 and prev_blank and not _BLOCK_START.match(title) \
            and not _BREAK.match(title) and not _SETEXT.match(title):
        return [title + "\n", ("=" if level == 1 else "-") * max(3, len(title)) + nl]
    if style == "atx_closed":
        return ["#" * level + " " + title + " " + "#" * level + nl]
    return ["#" * level + " " + title + nl]


def restructure_markdown(content: str, params: dict, anchors: tuple[str, ...] = DEFAULT_ANCHORS) -> str:
    """``content`` with sections reordered and heading, bullet, ordered-list and frontmatter styles changed.

    ``params``: ``order`` (new order of the sections, by index; anchored sections stay, and
    the others move only within their run of consecutive movable sections),
    ``heading`` (:data:`HEADING_STYLES`), ``bullet`` (``-``, ``*``, ``+``), ``ordered``
    (``.`` or ``)``), ``frontmatter`` (new order of the top-level keys); each optional.
    The text of every section is preserved (:func:`skill_canonical` is unchanged).
    """
    opening, entries, closing, body = _split_frontmatter(content)
    fm = opening + "".join(entries or ()) + closing
    if params.get("frontmatter") is not None:
        order = params["frontmatter"]
        if entries is None or sorted(order) != list(range(len(entries))):
            raise ValueError(f"frontmatter order {order} does not fit the {len(entries or ())} frontmatter keys")
        moved = [entries[i] for i in order]
        if moved and not moved[-1].endswith("\n"):
            raise ValueError("frontmatter entries must end with a newline")
        fm = opening + "".join(moved) + closing
    elements = list(_elements(body))
    if params.get("order") is not None:
        head, segs, _ = _segments(elements)
        order = params["order"]
        run_of = {k: tuple(r) for r in movable_runs(_movable_of(body, tuple(anchors))) for k in r}
        if sorted(order) != list(range(len(segs))) or any(
                (order[k] != k) if k not in run_of else (order[k] not in run_of[k]) for k in range(len(segs))):
            raise ValueError(f"section order {order} is not a permutation of the {len(segs)} sections that keeps "
                             "anchored sections in place and moves the others only between anchored ones")
        texts = [_text(s) for s in segs]
        cores = [t.rstrip("\n") for t in texts]
        seps = [t[len(c):] for t, c in zip(texts, cores)]
        new_body = _text(head) + "".join(cores[order[k]] + seps[k] for k in range(len(segs)))
        elements = list(_elements(new_body))
    out: list[str] = []
    for e in elements:
        kind = e["kind"]
        prev_blank = not out or not out[-1].strip()
        if kind == "heading" and params.get("heading"):
            out.extend(_heading_lines(e, params["heading"], prev_blank))
        elif kind == "bullet" and params.get("bullet"):
            nl = "\n" if e["lines"][0].endswith("\n") else ""
            out.append(f"{e['indent']}{params['bullet']}{e['gap']}{e['text'].rstrip(chr(10))}{nl}")
        elif kind == "ordered" and params.get("ordered"):
            nl = "\n" if e["lines"][0].endswith("\n") else ""
            out.append(f"{e['indent']}{e['number']}{params['ordered']}{e['gap']}{e['text'].rstrip(chr(10))}{nl}")
        else:
            out.extend(e["lines"])
    return fm + "".join(out)


def _normal(e: dict) -> tuple:
    kind = e["kind"]
    if kind == "heading":
        return ("h", e["level"], e["title"].strip())
    if kind == "bullet":
        return ("ul", e["indent"], e["text"].rstrip("\n"))
    if kind == "ordered":
        return ("ol", e["indent"], e["number"], e["text"].rstrip("\n"))
    return ("t", e["lines"][0].rstrip("\n"))


@lru_cache(maxsize=2048)
def skill_canonical(content: str) -> tuple:
    """A skill body up to layout: frontmatter entries as a set, sections as a multiset, styles normalised, blank lines dropped."""
    _, entries, _, body = _split_frontmatter(content)
    elements = [e for e in _elements(body) if e["kind"] != "blank"]
    head, segs, _ = _segments(elements)
    fm = tuple(sorted(x if x.endswith("\n") else x + "\n" for x in (entries or ())))
    return fm, tuple(_normal(e) for e in head), tuple(sorted(tuple(_normal(e) for e in s) for s in segs))


# =========================================================================== skill.catalog


@lru_cache(maxsize=16)
def load_distractors(extra: tuple[str, ...] = ()) -> tuple[dict, ...]:
    """The distractor-skill pool: ``transforms/banks/skill_distractors.yaml`` plus the files ``extra``."""
    files = [read_bank("skill_distractors")] + [read_bank(path=p, what="distractor skill file") for p in extra]
    pool = []
    for source, data in files:
        if not isinstance(data, dict) or not isinstance(data.get("skills"), list):
            raise BankError(f"{source}: a distractor file is a mapping with a 'skills' list of "
                            "{name, description, content}")
        for i, s in enumerate(data["skills"]):
            if not (isinstance(s, dict) and all(isinstance(s.get(k), str) for k in ("name", "description", "content"))
                    and is_legal_skill_name(s["name"], "hat")):
                raise BankError(f"{source}: skills[{i}] needs string name (a legal skill name), description and "
                                "content")
            if any(k in s and not isinstance(s[k], str) for k in ("domain", "summary")):
                raise BankError(f"{source}: skills[{i}] {s['name']!r}: 'domain' and 'summary' must be strings "
                                "(a domain such as live_commerce, or general; a one-line description)")
            pool.append(dict(s))
    return tuple(pool)


def skill_arg_schema(record: Record) -> dict | None:
    st = record["skill_tool"]
    for t in record["tools"]:
        if t["name"] == st["name"]:
            sub = (t["parameters"].get("properties") or {}).get(st["argument"])
            return sub if isinstance(sub, dict) else None
    return None


def set_skill_arg_schema(record: Record, sub: dict) -> None:
    """Put ``sub`` where :func:`skill_arg_schema` found the argument's schema, copying the path (tools shared)."""
    st = record["skill_tool"]
    tools = record["tools"] = list(record["tools"])
    for i, t in enumerate(tools):
        if t["name"] == st["name"]:
            params = dict(t["parameters"])
            params["properties"] = with_key(params["properties"], st["argument"], sub)
            tools[i] = with_key(t, "parameters", params)
            return
    raise ValueError(f"skill.catalog: the skill tool {st['name']!r} is not among the tools")


def with_key(d: dict, key: str, value: Any) -> dict:
    """A copy of ``d`` with ``key`` set to ``value`` (an existing key keeps its place)."""
    out = dict(d)
    out[key] = value
    return out
