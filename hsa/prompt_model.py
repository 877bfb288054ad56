"""Sectioned prompts: rendering, delimiter templates, splitting a system message, keeping it in sync.

A prompt is ``{"sections": [{"id", "title", "body", "movable"}], "template": <jinja2>}``;
the system message is the template rendered with the sections, in jinja2's sandboxed
environment. This module

* renders prompts (:func:`render`) and builds the delimiter templates that the prompt
  family switches between (:func:`make_template`, :data:`DELIMITER_STYLES`);
* splits a plain system message into sections (:func:`split_system`): Markdown
  headings, XML tags, ``[BEGIN OF X]`` / ``[END OF X]`` blocks and all-caps headers.
  A split is accepted only when the inferred template renders the sections back to
  the message byte for byte, so importing never changes what the model sees;
* finds where a record's prompt is rendered (:func:`locate`) and writes a changed
  prompt back into the record, re-rendering the system message and, for sections
  placed in the user turn, the context message before the user's own words (:func:`commit`).
"""

from __future__ import annotations

import dataclasses
import re
from functools import lru_cache
from typing import Any

from hsa.cache import exact_key as _exact_key
from hsa.cache import lru as _lru
from hsa.record_model import Prompt, PromptSection, Record

__all__ = [
    "PREAMBLE_ID",
    "DELIMITER_STYLES",
    "PromptRenderError",
    "render",
    "body_regions",
    "make_template",
    "split_system",
    "is_structural",
    "heading_levels",
    "PromptSite",
    "locate",
    "commit",
    "check_sync",
    "user_context",
    "system_sections",
    "user_sections",
]

#: Id of the text before the first delimited section (rendered bare, never moved).
PREAMBLE_ID = "_preamble"

#: Delimiter styles :func:`make_template` renders, and that :func:`split_system` recognises.
DELIMITER_STYLES = ("markdown", "xml", "bracket", "caps", "caps_colon", "caps_line")


class PromptRenderError(ValueError):
    """A prompt template that does not compile or does not render in the sandbox."""


# --------------------------------------------------------------------------- rendering


@lru_cache(maxsize=1)
def _env():
    from jinja2.sandbox import SandboxedEnvironment

    # Defaults on purpose: the same settings as ``jinja2.Template`` (the fixture generator and
    # most hand-written harnesses render that way), so rendering here reproduces their bytes.
    return SandboxedEnvironment()


@lru_cache(maxsize=512)
def _compiled(template: str):
    import jinja2

    try:
        return _env().from_string(template)
    except jinja2.TemplateError as exc:
        raise PromptRenderError(f"prompt template does not compile: {exc}; fix the template "
                                "(jinja2 syntax) or drop the record's 'prompt'") from None


_RENDERED = _lru("prompt.render", 16 << 20)


def render(template: str, sections: list[PromptSection]) -> str:
    """The text of ``template`` rendered with ``sections`` in jinja2's sandboxed environment (cached by both:
    every prompt transform and check renders the same prompt again). The key is the template itself and the
    sections' :func:`hsa.cache.exact_key` (no digest of either: the template is the record's own string)."""
    key = (template, _exact_key(sections))
    hit = _RENDERED.get(key)
    if hit is not None:
        return hit
    import jinja2

    try:
        out = _compiled(template).render(sections=sections)
    except jinja2.TemplateError as exc:  # SecurityError is a TemplateError too
        raise PromptRenderError(f"prompt template does not render: {type(exc).__name__}: {exc}") from None
    return _RENDERED.put(key, out, len(template) + len(key[1]) + len(out) + 200)


_BODY_MARK = re.compile("\x00([0-9]+)\x00")


def body_regions(template: str, sections: list[PromptSection]) -> tuple[str, list[tuple[int, int, int]]] | None:
    """``(text, [(section index, start, end)])``: ``sections`` rendered by ``template``, and where each section's body
    lies in that text, in order (a body the template writes twice is listed twice); None when the template does not
    write every body as it is (a filter on it, a test of its content) or does not render.

    Found by rendering each body as a marker: the rendered text must be the marked one with each marker replaced by
    its body, byte for byte."""
    if not any(isinstance(s.get("body"), str) for s in sections):
        return None
    marked = [{**s, "body": f"\x00{i}\x00"} if isinstance(s.get("body"), str) else s for i, s in enumerate(sections)]
    try:
        text, shape = render(template, sections), render(template, marked)
    except PromptRenderError:
        return None
    pieces, regions, pos, last = [], [], 0, 0
    for m in _BODY_MARK.finditer(shape):
        i = int(m.group(1))
        if i >= len(sections) or not isinstance(sections[i].get("body"), str):
            return None
        body = sections[i]["body"]
        pieces += (shape[last:m.start()], body)
        pos += m.start() - last
        regions.append((i, pos, pos + len(body)))
        pos += len(body)
        last = m.end()
    pieces.append(shape[last:])
    return (text, regions) if "".join(pieces) == text else None


def _jinja_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def make_template(style: str, *, gap: str = "\n\n", end: str = "\n", level: int = 2, upper: bool = True,
                  tag: str = "id", head: str = "\n") -> str:
    """A jinja2 template rendering every section in delimiter ``style`` (see :data:`DELIMITER_STYLES`).

    ``gap`` separates sections, ``end`` follows the last one; ``level`` is the Markdown
    heading level; ``upper`` upper-cases titles in ``bracket`` style (caps styles always
    do); ``tag`` is what names an XML section: its ``id``, or its ``title`` lower-cased with
    spaces as underscores; ``head`` separates a title from its body (``"\\n\\n"``: a blank line after
    each heading). A section with id :data:`PREAMBLE_ID` is rendered bare.
    """
    title = "{{ s.title | upper }}" if upper or style.startswith("caps") else "{{ s.title }}"
    if style == "markdown":
        if not 1 <= level <= 6:
            raise ValueError(f"markdown heading level must be 1-6 (got {level!r})")
        open_, close = "#" * level + " {{ s.title }}", ""
    elif style == "xml":
        if tag not in ("id", "title"):
            raise ValueError(f"xml tag must be 'id' or 'title' (got {tag!r})")
        name = "{{ s.id }}" if tag == "id" else '{{ s.title | lower | replace(" ", "_") }}'
        open_, close = f"<{name}>", f"\n</{name}>"
    elif style == "bracket":
        open_, close = f"[BEGIN OF {title}]", f"\n[END OF {title}]"
    elif style == "caps":
        open_, close = f"[{title}]", ""
    elif style == "caps_colon":
        open_, close = f"{title}:", ""
    elif style == "caps_line":
        open_, close = title, ""
    elif style == "paragraphs":  # untitled sections, bodies alone (the importer's split of unstructured prose)
        open_, close, head = "", "", ""
    else:
        raise ValueError(f"unknown delimiter style {style!r}; expected one of {', '.join(DELIMITER_STYLES)}")
    for name, value in (("gap", gap), ("end", end), ("head", head)):
        if not isinstance(value, str) or value.strip("\n") or (name == "head" and not value and style != "paragraphs"):
            raise ValueError(f"{name} must be a run of newlines (got {value!r})")
    return ("{% for s in sections %}"
            f'{{% if s.id == "{PREAMBLE_ID}" %}}{{{{ s.body }}}}{{% else %}}{open_}{head}{{{{ s.body }}}}{close}'
            '{% endif %}'
            f"{{% if not loop.last %}}{{{{ {_jinja_str(gap)} }}}}{{% else %}}{{{{ {_jinja_str(end)} }}}}{{% endif %}}"
            "{% endfor %}")


# --------------------------------------------------------------------------- structural templates

_MARK = "\x00{}{}\x00"
_DELIMITER_TEXT = re.compile(r"(?:[\s#<>/\[\]:*=|_`~-]|BEGIN OF|END OF)*")


def is_structural(template: str, sections: list[PromptSection]) -> bool:
    """True when ``template`` renders each section exactly once, in order, and adds only delimiters.

    Such a template can be replaced by another delimiter style without losing text.
    Rendering markers in place of ids, titles and bodies shows what the template adds
    of its own; that must be punctuation, whitespace or ``BEGIN OF`` / ``END OF``.
    """
    marked = [{**s, "id": _MARK.format("I", i), "title": _MARK.format("T", i), "body": _MARK.format("B", i)}
              for i, s in enumerate(sections)]
    try:
        text = render(template, marked)
    except PromptRenderError:
        return False
    bodies = [text.find(_MARK.format("B", i)) for i in range(len(sections))]
    if any(b < 0 or text.count(_MARK.format("B", i)) != 1 for i, b in enumerate(bodies)) or bodies != sorted(bodies):
        return False
    rest = re.sub("\x00[ITBitb][0-9]+\x00", "", text)
    return _DELIMITER_TEXT.fullmatch(rest) is not None


# --------------------------------------------------------------------------- splitting

_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_MD_HEADING = re.compile(r"^(#{1,6}) (\S.*)$")
_XML_OPEN = re.compile(r"^<([A-Za-z_][A-Za-z0-9_.-]*)>$")
_BRACKET_OPEN = re.compile(r"^\[BEGIN OF (\S[^\]]*)\]$")
_CAPS_WORDS = r"[A-Z](?:[A-Z0-9 &/'_-]*[A-Z0-9])?"
_CAPS = {
    "caps": re.compile(rf"^\[({_CAPS_WORDS})\]$"),
    "caps_colon": re.compile(rf"^({_CAPS_WORDS}):$"),
    "caps_line": re.compile(r"^([A-Z][A-Z0-9 &/'_-]*[A-Z0-9])$"),  # two characters at least: "A" alone is prose
}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def _humanize(ident: str) -> str:
    words = re.sub(r"[_.-]+", " ", ident).strip()
    return words[:1].upper() + words[1:] if words else ident


def _unique_ids(raw: list[str]) -> list[str]:
    out: list[str] = []
    for i, rid in enumerate(raw):
        base = rid or f"section_{i + 1}"
        new, k = base, 2
        while new in out or new == PREAMBLE_ID:
            new, k = f"{base}_{k}", k + 1
        out.append(new)
    return out


def _line_starts(text: str) -> list[tuple[int, str]]:
    """(offset, line without its newline) of every line of ``text``."""
    out, pos = [], 0
    for line in text.split("\n"):
        out.append((pos, line))
        pos += len(line) + 1
    return out


def _unfenced(lines: list[tuple[int, str]]) -> list[tuple[int, int, str]]:
    """(line index, offset, line) of the lines outside fenced code blocks."""
    out, fence = [], None
    for i, (pos, line) in enumerate(lines):
        m = _FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            continue
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
            continue
        out.append((i, pos, line))
    return out


def _headed(text: str, style: str) -> tuple[list[tuple[int, int, str]], dict] | None:
    """Header lines for the heading styles: (offset, offset after the header line, title)."""
    lines = _line_starts(text)
    found: list[tuple[int, int, str, int]] = []
    options: dict[str, Any] = {}
    for i, pos, line in _unfenced(lines):
        if style == "markdown":
            m = _MD_HEADING.match(line)
            if m:
                found.append((pos, pos + len(line) + 1, m.group(2), len(m.group(1))))
        else:
            m = _CAPS[style].match(line)
            if m and (style != "caps_line" or i == 0 or not lines[i - 1][1].strip()):
                found.append((pos, pos + len(line) + 1, m.group(1), 0))
    if style == "markdown" and found:
        levels = sorted({f[3] for f in found})
        level = next((lv for lv in levels if sum(1 for f in found if f[3] == lv) >= 2), levels[0])
        found = [f for f in found if f[3] == level]
        options["level"] = level
    return [(a, b, t) for a, b, t, _ in found], options


def _blocks(text: str, style: str) -> list[tuple[int, int, int, int, str]] | None:
    """Block sections (xml, bracket): (start, body start, body end, end, name); None on a malformed block."""
    lines = _line_starts(text)
    out = []
    i = 0
    opener = _XML_OPEN if style == "xml" else _BRACKET_OPEN
    while i < len(lines):
        pos, line = lines[i]
        m = opener.match(line)
        if not m:
            i += 1
            continue
        name = m.group(1)
        closing = f"</{name}>" if style == "xml" else f"[END OF {name}]"
        j = next((k for k in range(i + 1, len(lines)) if lines[k][1] == closing), None)
        if j is None:
            return None
        body_start = pos + len(line) + 1
        body_end = lines[j][0] - 1 if j > i + 1 else body_start - 1
        out.append((pos, body_start, max(body_end, body_start), lines[j][0] + len(closing), name))
        i = j + 1
    return out


def heading_levels(text: str) -> set[int]:
    """The levels of the Markdown headings (``#`` to ``######``) of ``text``, code fences excepted."""
    return {len(m.group(1)) for _, _, line in _unfenced(_line_starts(text)) if (m := _MD_HEADING.match(line))}


def _newline_run(text: str) -> str | None:
    return text if text and not text.strip("\n") else None


def _assemble(text: str, style: str) -> Prompt | None:
    """Split ``text`` in ``style``; None when the style does not describe it exactly."""
    options: dict[str, Any] = {}
    raw: list[tuple[str, str, str]] = []  # (id, title, body)
    gaps: list[str] = []
    if style in ("xml", "bracket"):
        blocks = _blocks(text, style)
        if not blocks:
            return None
        first = blocks[0][0]
        preamble = text[:first]
        for k, (start, b0, b1, end, name) in enumerate(blocks):
            body = text[b0:b1] if b1 > b0 else ""
            after = text[end:blocks[k + 1][0]] if k + 1 < len(blocks) else text[end:]
            if k + 1 < len(blocks):
                gaps.append(after)
            else:
                options["end"] = after
            if style == "xml":
                raw.append((name, _humanize(name), body))
            else:
                raw.append((_slug(name), name, body))
        if style == "bracket":
            options["upper"] = all(t == t.upper() for _, t, _ in raw)
    else:
        found, options = _headed(text, style)
        if not found:
            return None
        preamble = text[:found[0][0]]
        for k, (start, body_start, title) in enumerate(found):
            stop = found[k + 1][0] if k + 1 < len(found) else len(text)
            chunk = text[min(body_start, stop):stop] if body_start <= len(text) else ""
            body = chunk.rstrip("\n")
            tail = chunk[len(body):]
            if k + 1 < len(found):
                gaps.append(tail)
            else:
                options["end"] = tail
            raw.append((_slug(title), title, body))
        if all(body.startswith("\n") and body.strip() for _, _, body in raw):
            raw = [(rid, title, body[1:]) for rid, title, body in raw]  # a blank line after every heading
            options["head"] = "\n\n"
    sections: list[PromptSection] = []
    if preamble:
        body = preamble.rstrip("\n")
        tail = preamble[len(body):]
        if not body or not tail:
            return None
        gaps.insert(0, tail)
        sections.append({"id": PREAMBLE_ID, "title": "", "body": body, "movable": False})
    if gaps and (len(set(gaps)) != 1 or _newline_run(gaps[0]) is None):
        return None
    gap = gaps[0] if gaps else "\n\n"
    end = options.pop("end", "")
    if end and _newline_run(end) is None:
        return None
    ids = _unique_ids([rid for rid, _, _ in raw])
    n = len(raw)
    for k, ((_, title, body), sid) in enumerate(zip(raw, ids)):
        sections.append({"id": sid, "title": title, "body": body, "movable": 0 < k < n - 1})
    template = make_template(style, gap=gap, end=end, **options)
    try:
        if render(template, sections) != text:
            return None
    except PromptRenderError:
        return None
    return {"sections": sections, "template": template}


#: Order in which :func:`split_system` tries the styles (block styles first: they are the least ambiguous).
_SPLIT_ORDER = ("xml", "bracket", "markdown", "caps", "caps_colon", "caps_line")
#: Id prefix of the untitled sections of an unstructured message (``paragraph_1``, ``paragraph_2``, ...).
PARAGRAPH_PREFIX = "paragraph_"


def _paragraphs(text: str) -> Prompt | None:
    """``text`` as untitled, fixed sections, one per paragraph (split at blank lines outside code fences), rendered
    back exactly by the ``paragraphs`` template; None when it does not render back.

    The fallback for a message without delimiters (a one-sentence prompt, prose paragraphs): the sections let the
    prompt family paraphrase it and see it in the canonical form, and none of them moves (prose paragraphs point
    at each other: "Then ...", "Above example ...").
    """
    body = text.rstrip("\n")
    end = text[len(body):]
    lines = _line_starts(body)
    outside = {i for i, _, _ in _unfenced(lines)}  # lines outside code fences (fence lines excluded)
    # a paragraph starts after exactly one blank line between two lines of text, none of them in a fence
    starts = [0] + [lines[i][0] for i in range(2, len(lines))
                    if not lines[i - 1][1].strip() and lines[i][1].strip() and lines[i - 2][1].strip()
                    and {i - 2, i - 1, i} <= outside]
    pieces = [body[a:b] for a, b in zip(starts, starts[1:] + [len(body)])]
    bodies = [p[:-2] if k + 1 < len(pieces) else p for k, p in enumerate(pieces)]
    if not body or any(not b.strip() or not (k + 1 == len(pieces) or pieces[k].endswith("\n\n"))
                       for k, b in enumerate(bodies)):
        return None
    sections: list[PromptSection] = [{"id": f"{PARAGRAPH_PREFIX}{k + 1}", "title": "", "body": b, "movable": False}
                                     for k, b in enumerate(bodies)]
    template = make_template("paragraphs", gap="\n\n", end=end)
    try:
        return {"sections": sections, "template": template} if render(template, sections) == text else None
    except PromptRenderError:
        return None


def split_system(text: str) -> Prompt | str:
    """Split a system message into sections, or say why it cannot be split.

    Tries XML tags (``<rules>...</rules>``), ``[BEGIN OF X]`` / ``[END OF X]`` blocks,
    Markdown headings (the shallowest level that occurs at least twice), and all-caps
    headers (``[RULES]``, ``RULES:``, or ``RULES`` alone after a blank line). Text before
    the first section becomes a fixed section with id :data:`PREAMBLE_ID`. Inner sections
    are movable; the first and the last stay in place (they usually hold the role and
    the output format). A message with none of these (a one-sentence prompt, prose) becomes
    untitled, fixed sections, one per paragraph (``paragraph_1``, ...). The result renders
    back to ``text`` exactly.
    """
    if not isinstance(text, str) or not text.strip():
        return "the system message is empty"
    for style in _SPLIT_ORDER:
        prompt = _assemble(text, style)
        if prompt is not None:
            return prompt
    prompt = _paragraphs(text)
    if prompt is not None:
        return prompt
    return ("no section structure reproduces the system message exactly (tried Markdown headings, XML tags, "
            "[BEGIN OF X]/[END OF X] blocks, all-caps headers and paragraphs)")


# --------------------------------------------------------------------------- a record's prompt


def in_user_turn(section: PromptSection) -> bool:
    """Whether ``section`` is placed in the first user message (``prompt.placement``), not the system message."""
    return section.get("placement", "system") == "user"


def system_sections(prompt: Prompt) -> list[PromptSection]:
    """The sections rendered into the system message (all but those placed in the user message)."""
    return [s for s in prompt["sections"] if not in_user_turn(s)]


def user_sections(prompt: Prompt) -> list[PromptSection]:
    """The sections placed in the first user message (see ``prompt.placement``)."""
    return [s for s in prompt["sections"] if in_user_turn(s)]


def user_context(prompt: Prompt) -> str:
    """The text of the context message that holds the sections placed in the user turn (see ``prompt.placement``):
    those sections rendered by the prompt's template; ``""`` when none is placed there."""
    secs = user_sections(prompt)
    if not secs:
        return ""
    return render(prompt["template"], secs).rstrip("\n")


@dataclasses.dataclass(frozen=True)
class PromptSite:
    """Where a record's prompt lives: the prompt (the record's own or imported) and the messages it renders."""

    prompt: dict
    system_index: int | None  # the system message rendered from the prompt (None: the record has none)
    user_index: int | None  # the first user message of the conversation itself (string content)
    imported: bool  # True when the prompt was split from the system message here
    context_index: int | None = None  # the user-role message just before it that holds the user-placed sections


def _first(record: Record, roles: tuple[str, ...], start: int = 0) -> int | None:
    for i, m in enumerate(record["messages"][start:], start):
        if m.get("role") in roles:
            return i
    return None


def locate(record: Record) -> PromptSite | str:
    """The prompt of ``record`` and where it is rendered, or the reason prompt transforms cannot apply."""
    messages = record["messages"]
    si = _first(record, ("system", "developer"))
    ui = _first(record, ("user",))
    prompt = record.get("prompt")
    if prompt:
        if not isinstance(prompt.get("template"), str):
            return "the record's prompt has no template"
        ids = [s.get("id") for s in prompt.get("sections") or ()]
        if len(set(ids)) != len(ids):
            return "the record's prompt has duplicate section ids"
        try:
            expected = render(prompt["template"], system_sections(prompt))
            context = user_context(prompt)
        except PromptRenderError as exc:
            return str(exc)
        if si is not None and messages[si].get("content") != expected:
            return "the system message is not the prompt template rendered with the sections"
        ci = None
        if context:
            if ui is None or messages[ui].get("content") != context:
                return "the first user message is not the context message of the sections placed in the user turn"
            ci, ui = ui, _first(record, ("user",), ui + 1)
        if ui is not None and not isinstance(messages[ui].get("content"), str):
            ui = None
        return PromptSite(prompt, si, ui, False, ci)
    if ui is not None and not isinstance(messages[ui].get("content"), str):
        ui = None
    if si is None:
        return "no system message to split into sections"
    content = messages[si].get("content")
    if not isinstance(content, str):
        return "the system message is not plain text"
    split = split_system(content)
    if isinstance(split, str):
        return f"system message not split: {split}"
    return PromptSite(split, si, ui, True)


def _shift_hook_events(record: Record, at: int, by: int) -> None:
    """Move the ``message_index`` of the hook events at or after message ``at`` by ``by`` (a message was inserted
    or removed there)."""
    events = record.get("hook_events")
    if events:
        record["hook_events"] = [{**e, "message_index": e["message_index"] + by}
                                 if isinstance(e.get("message_index"), int) and e["message_index"] >= at else e
                                 for e in events]


def commit(record: Record, site: PromptSite, prompt: dict) -> Record:
    """A copy of ``record`` with ``prompt`` stored and the messages it renders re-rendered.

    Sections placed in the user turn go into a context message of their own (role ``user``), inserted right
    before the first user message, never into the user's own words; it is updated or removed as placements
    change, and hook events after it keep pointing at their messages. Only the messages list and the changed
    messages are copied; every other part is shared with ``record`` (transforms never modify their input, so
    sharing is safe).
    """
    out = dict(record)
    out["prompt"] = prompt
    messages = out["messages"] = list(record["messages"])
    if site.system_index is not None:
        msg = messages[site.system_index] = dict(messages[site.system_index])
        msg["content"] = render(prompt["template"], system_sections(prompt))
    new = user_context(prompt)
    if site.context_index is not None and new:
        messages[site.context_index] = {**messages[site.context_index], "content": new}
    elif site.context_index is not None:
        del messages[site.context_index]
        _shift_hook_events(out, site.context_index, -1)
    elif new:
        if site.user_index is None:
            raise ValueError("sections are placed in the user turn but the record has no user message to put "
                             "them before")
        messages.insert(site.user_index, {"role": "user", "content": new})
        _shift_hook_events(out, site.user_index, 1)
    return out


def check_sync(record: Record) -> str | None:
    """None when the record's system message (and user prefix) is its prompt rendered; else what differs."""
    if not record.get("prompt"):
        return None
    site = locate(record)
    return site if isinstance(site, str) else None
