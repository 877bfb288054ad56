"""Prompt-structure transforms: the ``prompt`` family.

A fixed-harness model memorises one system-prompt layout. These transforms vary the
layout while keeping what the prompt says: section order (``prompt.reorder``),
delimiters (``prompt.delimiters``), titles (``prompt.titles``), instruction wording
(``prompt.paraphrase``), the format of tools rendered into the prompt
(``prompt.tool_format``) and where a catalogue sits (``prompt.placement``).

Every transform works on the record's ``prompt`` (sections + jinja2 template). A
record without one gets its system message split into sections first
(:func:`hsa.prompt_model.split_system`); when that is not possible the record passes
through unchanged with a skip reason. After each transform the system message is the
template rendered with the sections again, and :func:`canonical_prompt` — the sections'
content up to the declared equivalences — is unchanged. Tool calls are never touched.
"""

from __future__ import annotations

import dataclasses
import json
import keyword
from functools import lru_cache
import random
import re
from typing import Any, ClassVar

from hsa.prompt_model import (
    DELIMITER_STYLES,
    PREAMBLE_ID,
    PromptSite,
    commit,
    is_structural,
    locate,
    make_template,
    render,
    system_sections,
    user_prefix,
)
from hsa import _json
from hsa.records import Record
from hsa.transform import Skip, Transform, check_choices, check_probability, register
from transforms.meaning import paraphrase_changes
from transforms.phrasebank import BankError, load_bank
from transforms.skill import find_catalog
from transforms.skill_functional import movable_runs, order_pins

__all__ = [
    "PromptReorder",
    "PromptDelimiters",
    "PromptTitles",
    "PromptParaphrase",
    "PromptToolFormat",
    "PromptPlacement",
    "TOOL_FORMATS",
    "render_tools",
    "find_tool_sections",
    "canonical_prompt",
]

TOOL_FORMATS = ("json", "yaml", "typescript", "python", "markdown")


def _bank(name: str, extra: tuple[str, ...]):
    try:
        return load_bank(name, tuple(extra))
    except BankError as exc:
        raise ValueError(str(exc)) from None


def _site(record: Record) -> PromptSite | Skip:
    site = locate(record)
    return Skip(site) if isinstance(site, str) else site


def _copy_prompt(prompt: dict) -> dict:
    return {**prompt, "sections": [dict(s) for s in prompt["sections"]]}


def _rendered(prompt: dict) -> tuple[str, str]:
    return render(prompt["template"], system_sections(prompt)), user_prefix(prompt)


# =========================================================================== tools rendered into the prompt


def _fn(tool: dict) -> dict:
    out: dict[str, Any] = {"name": tool["name"]}
    if "description" in tool:
        out["description"] = tool["description"]
    out["parameters"] = tool["parameters"]
    return out


_TS_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


def _comment(text: str, indent: str) -> list[str]:
    return [f"{indent}// {line}".rstrip() for line in text.split("\n")] if text else []


def _ts_type(schema: Any, indent: str) -> str:
    if not isinstance(schema, dict):
        return "any"
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    t = schema.get("type")
    if isinstance(t, list):
        return " | ".join(_ts_type({**schema, "type": x}, indent) for x in t) or "any"
    if t == "string":
        return "string"
    if t in ("integer", "number"):
        return "number"
    if t == "boolean":
        return "boolean"
    if t == "null":
        return "null"
    if t == "array":
        inner = _ts_type(schema.get("items"), indent)
        return f"({inner})[]" if "|" in inner else f"{inner}[]"
    if t == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        if not props:
            return "object"
        required = set(schema.get("required") or ())
        lines = ["{"]
        for name, sub in props.items():
            key = name if _TS_IDENT.match(name) else json.dumps(name)
            desc = sub.get("description") if isinstance(sub, dict) else None
            lines += _comment(desc or "", indent + "  ")
            opt = "" if name in required else "?"
            lines.append(f"{indent}  {key}{opt}: {_ts_type(sub, indent + '  ')},")
        lines.append(f"{indent}}}")
        return "\n".join(lines)
    return "any"


def _render_typescript(tools: list[dict]) -> str | None:
    if any(not _TS_IDENT.match(t["name"]) for t in tools):
        return None
    out = ["namespace functions {", ""]
    for t in tools:
        out += _comment(t.get("description") or "", "")
        params = t["parameters"]
        if params.get("properties"):
            out.append(f"type {t['name']} = (_: {_ts_type(params, '')}) => any;")
        else:
            out.append(f"type {t['name']} = () => any;")
        out.append("")
    out.append("} // namespace functions")
    return "\n".join(out)


_PY_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "array": "list",
             "object": "dict", "null": "None"}


def _py_type(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "Any"
    t = schema.get("type")
    if isinstance(t, list):
        return " | ".join(_PY_TYPES.get(x, "Any") for x in t) or "Any"
    return _PY_TYPES.get(t, "dict" if "properties" in schema else "Any")


def _render_python(tools: list[dict]) -> str | None:
    blocks = []
    for t in tools:
        props = t["parameters"].get("properties") or {}
        names = [t["name"], *props]
        if any(not n.isidentifier() or keyword.iskeyword(n) for n in names):
            return None
        docs = [t.get("description") or "", *[(s or {}).get("description") or "" for s in props.values()]]
        if any('"""' in d or "\\" in d for d in docs):
            return None
        required = [n for n in (t["parameters"].get("required") or ()) if n in props]
        optional = [n for n in props if n not in required]
        args = [f"{n}: {_py_type(props[n])}" for n in required] + \
               [f"{n}: {_py_type(props[n])} | None = None" for n in optional]
        lines = [f"def {t['name']}({', '.join(args)}) -> dict:"]
        doc = ['    """' + (t.get("description") or t["name"]).replace("\n", "\n    ")]
        if props:
            doc += ["", "    Args:"]
            for n in required + optional:
                d = (props[n] or {}).get("description") if isinstance(props[n], dict) else None
                doc.append(f"        {n}: {(d or '').replace(chr(10), ' ')}".rstrip())
        doc.append('    """')
        blocks.append("\n".join(lines + doc))
    return "\n\n".join(blocks)


def _md_cell(text: str) -> str | None:
    return None if "|" in text or "\n" in text else text


def _render_markdown(tools: list[dict]) -> str | None:
    rows = ["| Tool | Description | Parameters |", "| --- | --- | --- |"]
    for t in tools:
        props = t["parameters"].get("properties") or {}
        required = set(t["parameters"].get("required") or ())
        parts = []
        for n, s in props.items():
            s = s if isinstance(s, dict) else {}
            kind = s.get("type", "any")
            kind = "/".join(kind) if isinstance(kind, list) else str(kind)
            part = f"`{n}` ({kind}{', required' if n in required else ''})"
            if s.get("description"):
                part += f": {s['description']}"
            parts.append(part)
        cells = [f"`{t['name']}`", t.get("description") or "", "; ".join(parts) or "-"]
        if any(_md_cell(c) is None for c in cells):
            return None
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def render_tools(tools: list[dict], fmt: str) -> str | None:
    """The record's tools rendered in ``fmt`` (see :data:`TOOL_FORMATS`); None when ``fmt`` cannot hold them."""
    if fmt not in TOOL_FORMATS:
        raise ValueError(f"unknown tool format {fmt!r}; expected one of {', '.join(TOOL_FORMATS)}")
    return _render_tools_cached(_json.dumps([_fn(t) for t in tools]), fmt)


@lru_cache(maxsize=1024)
def _render_tools_cached(fns_json: str, fmt: str) -> str | None:
    fns = _json.loads(fns_json)
    if fmt == "json":
        return json.dumps(fns, indent=2, ensure_ascii=False)
    if fmt == "yaml":
        import yaml

        return yaml.safe_dump(fns, sort_keys=False, allow_unicode=True, width=1 << 20).rstrip("\n")
    if fmt == "typescript":
        return _render_typescript(fns)
    if fmt == "python":
        return _render_python(fns)
    return _render_markdown(fns)


_FORMAT_PREFIX = {"json": '[\n  {\n    "name": ', "yaml": "- name: ", "typescript": "namespace functions {",
                  "python": "def ", "markdown": "| Tool | Description | Parameters |"}


def find_tool_sections(record: Record, prompt: dict) -> list[tuple[int, str]]:
    """(section index, format) of the sections whose body is exactly the record's tools in a known format."""
    if not record["tools"]:
        return []
    out = []
    for i, sec in enumerate(prompt.get("sections") or ()):
        body = sec.get("body")
        if not isinstance(body, str):
            continue
        for fmt, prefix in _FORMAT_PREFIX.items():
            if body.startswith(prefix) and render_tools(record["tools"], fmt) == body:
                out.append((i, fmt))
                break
    return out


# =========================================================================== canonical form


def canonical_prompt(record: Record, *, banks: tuple[str, ...] = (), title_banks: tuple[str, ...] = ()) -> dict | None:
    """The prompt's information, up to the equivalences the prompt family declares; None without a prompt.

    Per section id: whether it may move, its title's group in the ``prompt_titles`` bank
    (or the title case-folded), and its body with ``prompt_paraphrase`` phrasings replaced
    by their group (a tools section: the tools; a skill catalogue: its sorted entries);
    plus the ids of the fixed sections in order. Order of movable sections, delimiters,
    title synonyms, phrasings, tool formats and placement do not show.
    """
    site = locate(record)
    if isinstance(site, str):
        return None
    prompt = site.prompt
    pbank = load_bank("prompt_paraphrase", tuple(banks))
    tbank = load_bank("prompt_titles", tuple(title_banks))
    tools_at = dict(find_tool_sections(record, prompt))
    cat = find_catalog(record, prompt)
    sections: dict[str, dict] = {}
    for i, s in enumerate(prompt["sections"]):
        if i in tools_at:
            body: Any = {"tools": [_fn(t) for t in record["tools"]]}
        elif cat is not None and cat[0] == i:
            body = {"skills": sorted(cat.entries), "text": pbank.canonical(cat.before + "\0" + cat.after)}
        else:
            body = pbank.canonical(s.get("body") or "")
        title = s.get("title") or ""
        gi = tbank.group_of(title)
        sections[s["id"]] = {"title": f"\u27e6{tbank.groups[gi].id}\u27e7" if gi is not None else title.casefold(),
                             "body": body, "movable": bool(s.get("movable", False))}
    return {"fixed": [s["id"] for s in prompt["sections"] if not s.get("movable", False)], "sections": sections}


# =========================================================================== prompt.reorder


def _free_sections(secs: list[dict]) -> list[int]:
    """Indices of the movable sections that no text pins (:func:`transforms.skill_functional.order_pins`: the
    preamble or a section that points to the next one, a sequence title or opening, "above", a shared term)."""
    head = next((s.get("body") or "" for s in secs if s["id"] == PREAMBLE_ID), "")
    others = [i for i, s in enumerate(secs) if s["id"] != PREAMBLE_ID]
    pins = order_pins(head, [(secs[i].get("title") or "", secs[i].get("body") or "") for i in others])
    pinned = {others[k] for k in pins}
    return [i for i in others if secs[i].get("movable", False) and i not in pinned]


@register
@dataclasses.dataclass(frozen=True)
class PromptReorder(Transform):
    """Shuffle the movable sections of the prompt; fixed sections keep their places."""

    name: ClassVar[str] = "prompt.reorder"
    family: ClassVar[str] = "prompt"

    def sample(self, record: Record, rng: random.Random) -> dict | Skip:
        site = _site(record)
        if isinstance(site, Skip):
            return site
        secs = site.prompt["sections"]
        runs = movable_runs(_free_sections(secs))
        if not runs:
            return Skip("fewer than two movable sections side by side that no text pins (a pointer such as "
                        "'above', 'the following' or a closing colon, a sequence title, a shared term)")
        ids = [s["id"] for s in secs]
        for _ in range(4):
            order = ids[:]
            for run in runs:
                moved = [ids[i] for i in run]
                rng.shuffle(moved)
                for i, sid in zip(run, moved):
                    order[i] = sid
            if order != ids:
                return {"order": order}
        return Skip("drew the current order")

    def apply(self, record: Record, params: dict) -> Record:
        site = locate(record)
        if isinstance(site, str):
            raise ValueError(f"prompt.reorder: {site}")
        secs = {s["id"]: s for s in site.prompt["sections"]}
        ids = [s["id"] for s in site.prompt["sections"]]
        order = params["order"]
        if sorted(order) != sorted(ids):
            raise ValueError(f"prompt.reorder: order {order} does not list the sections {ids} once each")
        for i, sid in enumerate(ids):
            if not secs[sid].get("movable", False) and order[i] != sid:
                raise ValueError(f"prompt.reorder: section {sid!r} is fixed but the order moves it")
        prompt = _copy_prompt(site.prompt)
        prompt["sections"] = [dict(secs[sid]) for sid in order]
        return commit(record, site, prompt)


# =========================================================================== prompt.delimiters

_TAG_SAFE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


def _style_fits(sections: list[dict], style: str, tag: str) -> bool:
    """Whether ``style`` can delimit ``sections``: every section but the preamble has a one-line title (untitled
    paragraphs of an unstructured message get no delimiters: a tag or heading would be a label nobody wrote),
    and its id or title is a tag name for XML."""
    secs = [s for s in sections if s["id"] != PREAMBLE_ID]
    if not all((s.get("title") or "").strip() and "\n" not in s["title"] for s in secs):
        return False
    if style == "xml":
        if tag == "id":
            return all(_TAG_SAFE.match(s["id"]) for s in secs)
        return all(_TAG_SAFE.match((s.get("title") or "").lower().replace(" ", "_")) for s in secs)
    return True


@register
@dataclasses.dataclass(frozen=True)
class PromptDelimiters(Transform):
    """Re-render the prompt with other section delimiters: Markdown headings, XML tags, [BEGIN OF X] blocks, caps headers.

    Only templates that add nothing but delimiters are replaced (see
    :func:`hsa.prompt_model.is_structural`); others pass through with a skip.
    """

    name: ClassVar[str] = "prompt.delimiters"
    family: ClassVar[str] = "prompt"

    styles: tuple[str, ...] = DELIMITER_STYLES
    levels: tuple[int, ...] = (1, 2, 3)
    xml_tags: tuple[str, ...] = ("id", "title")

    def __post_init__(self):
        check_choices("styles", self.styles, DELIMITER_STYLES)
        check_choices("xml_tags", self.xml_tags, ("id", "title"))
        if not self.levels or any(not isinstance(lv, int) or not 1 <= lv <= 6 for lv in self.levels):
            raise ValueError(f"levels must be Markdown heading levels 1-6 (got {list(self.levels)})")

    def sample(self, record: Record, rng: random.Random) -> dict | Skip:
        site = _site(record)
        if isinstance(site, Skip):
            return site
        prompt = site.prompt
        if not is_structural(prompt["template"], prompt["sections"]):
            return Skip("the template has text of its own beyond section delimiters")
        current = _rendered(prompt)
        text = current[0]
        end = text[len(text.rstrip("\n")):]
        options = []
        for style in self.styles:
            if style == "markdown":
                options += [{"style": style, "level": lv} for lv in self.levels]
            elif style == "xml":
                options += [{"style": style, "tag": tag} for tag in self.xml_tags]
            else:
                options.append({"style": style})
        rng.shuffle(options)
        for opt in options:
            if not _style_fits(prompt["sections"], opt["style"], opt.get("tag", "id")):
                continue
            params = {**opt, "gap": "\n\n", "end": end}
            candidate = {**prompt, "template": _template(params)}
            if _rendered(candidate) != current:
                return params
        return Skip("no other delimiter style fits the sections")

    def apply(self, record: Record, params: dict) -> Record:
        site = locate(record)
        if isinstance(site, str):
            raise ValueError(f"prompt.delimiters: {site}")
        prompt = _copy_prompt(site.prompt)
        prompt["template"] = _template(params)
        return commit(record, site, prompt)


def _template(params: dict) -> str:
    return make_template(params["style"], gap=params.get("gap", "\n\n"), end=params.get("end", "\n"),
                         level=params.get("level", 2), tag=params.get("tag", "id"))


# =========================================================================== prompt.titles


def _case_like(model: str, phrase: str) -> str:
    if model.isupper():
        return phrase.upper()
    words = model.split()
    if len(words) > 1 and all(w[:1].isupper() for w in words):
        return " ".join(w[:1].upper() + w[1:] for w in phrase.split())
    if model[:1].islower():
        return phrase[:1].lower() + phrase[1:]
    return phrase[:1].upper() + phrase[1:]


@register
@dataclasses.dataclass(frozen=True)
class PromptTitles(Transform):
    """Replace section titles (each with probability ``p``) by synonyms from the ``prompt_titles`` bank, keeping their case style."""

    name: ClassVar[str] = "prompt.titles"
    family: ClassVar[str] = "prompt"

    p: float = 0.7
    banks: tuple[str, ...] = ()

    def __post_init__(self):
        check_probability(self.p)
        _bank("prompt_titles", self.banks)

    def sample(self, record: Record, rng: random.Random) -> dict | Skip:
        site = _site(record)
        if isinstance(site, Skip):
            return site
        bank = _bank("prompt_titles", self.banks)
        titles: dict[str, str] = {}
        for s in site.prompt["sections"]:
            title = s.get("title") or ""
            gi = bank.group_of(title)
            if gi is None or rng.random() >= self.p:
                continue
            others = [p for p in bank.groups[gi].phrasings if p.casefold() != title.casefold()]
            if others:
                titles[s["id"]] = _case_like(title, rng.choice(others))
        if not titles:
            return Skip("no title in the bank, or none drawn")
        candidate = _copy_prompt(site.prompt)
        for s in candidate["sections"]:
            s["title"] = titles.get(s["id"], s.get("title"))
        if _rendered(candidate) == _rendered(site.prompt):
            return Skip("the template does not render section titles")
        return {"titles": titles}

    def apply(self, record: Record, params: dict) -> Record:
        site = locate(record)
        if isinstance(site, str):
            raise ValueError(f"prompt.titles: {site}")
        prompt = _copy_prompt(site.prompt)
        ids = {s["id"] for s in prompt["sections"]}
        missing = sorted(set(params["titles"]) - ids)
        if missing:
            raise ValueError(f"prompt.titles: sections {missing} are not in the prompt (have {sorted(ids)})")
        for s in prompt["sections"]:
            if s["id"] in params["titles"]:
                s["title"] = params["titles"][s["id"]]
        return commit(record, site, prompt)


# =========================================================================== prompt.paraphrase


def _derived_sections(record: Record, prompt: dict) -> set[int]:
    """Sections rendered from harness data (tools, skill catalogue): their wording is not free text."""
    out = {i for i, _ in find_tool_sections(record, prompt)}
    cat = find_catalog(record, prompt)
    if cat is not None:
        out.add(cat[0])
    return out


@register
@dataclasses.dataclass(frozen=True)
class PromptParaphrase(Transform):
    """Swap instruction sentences (each with probability ``p``) for equivalent phrasings from the ``prompt_paraphrase`` bank.

    ``banks`` adds YAML files of phrasing groups (see docs/transforms-prompt.md). Sections
    rendered from the tools or the skill catalogue are left alone.
    """

    name: ClassVar[str] = "prompt.paraphrase"
    family: ClassVar[str] = "prompt"

    p: float = 0.5
    banks: tuple[str, ...] = ()

    def __post_init__(self):
        check_probability(self.p)
        _bank("prompt_paraphrase", self.banks)

    def sample(self, record: Record, rng: random.Random) -> dict | Skip:
        site = _site(record)
        if isinstance(site, Skip):
            return site
        bank = _bank("prompt_paraphrase", self.banks)
        derived = _derived_sections(record, site.prompt)
        out: dict[str, list[int]] = {}
        for i, s in enumerate(site.prompt["sections"]):
            body = s.get("body") or ""
            if i in derived:
                continue
            matches = bank.find(body)
            if not matches:
                continue
            choices = []
            for m in matches:
                n = len(bank.groups[m.group].phrasings)
                if rng.random() < self.p:
                    choices.append(rng.choice([k for k in range(n) if k != m.phrasing]))
                else:
                    choices.append(m.phrasing)
            if choices == [m.phrasing for m in matches]:
                continue
            new = bank.substitute(body, choices, matches)
            if bank.canonical(new) != bank.canonical(body) or paraphrase_changes(body, new):
                continue  # a phrasing that overlaps another group, or breaks the meaning contract in its context
            out[s["id"]] = choices
        if not out:
            return Skip("no bank phrasing in the prompt, or none drawn")
        return {"sections": out}

    def apply(self, record: Record, params: dict) -> Record:
        site = locate(record)
        if isinstance(site, str):
            raise ValueError(f"prompt.paraphrase: {site}")
        bank = _bank("prompt_paraphrase", self.banks)
        prompt = _copy_prompt(site.prompt)
        by_id = {s["id"]: s for s in prompt["sections"]}
        for sid, choices in params["sections"].items():
            if sid not in by_id:
                raise ValueError(f"prompt.paraphrase: section {sid!r} is not in the prompt")
            by_id[sid]["body"] = bank.substitute(by_id[sid].get("body") or "", list(choices))
        return commit(record, site, prompt)


# =========================================================================== prompt.tool_format


@register
@dataclasses.dataclass(frozen=True)
class PromptToolFormat(Transform):
    """Re-render the tools section of the prompt in another format: JSON, YAML, TypeScript namespace, Python signatures, Markdown table.

    Applies when a prompt section is exactly the record's tools in one of
    :data:`TOOL_FORMATS` (harnesses that render tools into the prompt themselves).
    """

    name: ClassVar[str] = "prompt.tool_format"
    family: ClassVar[str] = "prompt"

    formats: tuple[str, ...] = TOOL_FORMATS

    def __post_init__(self):
        check_choices("formats", self.formats, TOOL_FORMATS)

    def sample(self, record: Record, rng: random.Random) -> dict | Skip:
        site = _site(record)
        if isinstance(site, Skip):
            return site
        found = find_tool_sections(record, site.prompt)
        if not found:
            return Skip("no prompt section renders the tools in a known format")
        index, current = found[0]
        options = [f for f in self.formats if f != current
                   and (f in ("json", "yaml") or render_tools(record["tools"], f) is not None)]
        if not options:
            return Skip("no other tool format can hold these tools")
        return {"section": site.prompt["sections"][index]["id"], "format": rng.choice(options)}

    def apply(self, record: Record, params: dict) -> Record:
        site = locate(record)
        if isinstance(site, str):
            raise ValueError(f"prompt.tool_format: {site}")
        found = {site.prompt["sections"][i]["id"]: i for i, _ in find_tool_sections(record, site.prompt)}
        if params["section"] not in found:
            raise ValueError(f"prompt.tool_format: section {params['section']!r} does not render the tools")
        body = render_tools(record["tools"], params["format"])
        if body is None:
            raise ValueError(f"prompt.tool_format: the tools cannot be written as {params['format']}")
        prompt = _copy_prompt(site.prompt)
        prompt["sections"][found[params["section"]]]["body"] = body
        return commit(record, site, prompt)


# =========================================================================== prompt.placement

PLACEMENT_KINDS = ("skills", "tools")


def _judged_by_hook(record: Record, index: int) -> bool:
    """True when a recorded hook payload holds the text of message ``index`` (a hook judged the viewer's words).

    Prefixing a catalogue to that message would make the payload and the message disagree.
    """
    text = record["messages"][index].get("content")
    for ev in record.get("hook_events") or ():
        payload = ev.get("payload")
        if isinstance(payload, dict) and any(v == text for v in payload.values()):
            return True
    return False


@register
@dataclasses.dataclass(frozen=True)
class PromptPlacement(Transform):
    """Move the skill or tool catalogue between the system message and the start of the first user message.

    The moved section keeps its place among the prompt's sections with
    ``"placement": "user"``; the system message is rendered from the others and the
    first user message starts with the moved sections, rendered by the same template.
    """

    name: ClassVar[str] = "prompt.placement"
    family: ClassVar[str] = "prompt"

    kinds: tuple[str, ...] = PLACEMENT_KINDS

    def __post_init__(self):
        check_choices("kinds", self.kinds, PLACEMENT_KINDS)

    def sample(self, record: Record, rng: random.Random) -> dict | Skip:
        site = _site(record)
        if isinstance(site, Skip):
            return site
        secs = site.prompt["sections"]
        found: list[int] = []
        if "skills" in self.kinds:
            cat = find_catalog(record, site.prompt)
            if cat is not None:
                found.append(cat[0])
        if "tools" in self.kinds:
            found += [i for i, _ in find_tool_sections(record, site.prompt)]
        if not found:
            return Skip("no skill or tool catalogue in the prompt")
        options = []
        in_system = [i for i, s in enumerate(secs) if s.get("placement", "system") != "user"]
        judged = site.user_index is not None and _judged_by_hook(record, site.user_index)
        for i in found:
            if secs[i].get("placement", "system") == "user":
                options.append({"section": secs[i]["id"], "to": "system"})
            elif site.user_index is not None and len(in_system) > 1 and not judged:
                options.append({"section": secs[i]["id"], "to": "user"})
        if not options:
            return Skip("no user message to hold the catalogue (none with text, or a hook judged its text)")
        return rng.choice(options)

    def apply(self, record: Record, params: dict) -> Record:
        site = locate(record)
        if isinstance(site, str):
            raise ValueError(f"prompt.placement: {site}")
        if params["to"] not in ("system", "user"):
            raise ValueError(f"prompt.placement: 'to' must be 'system' or 'user' (got {params['to']!r})")
        prompt = _copy_prompt(site.prompt)
        sec = next((s for s in prompt["sections"] if s["id"] == params["section"]), None)
        if sec is None:
            raise ValueError(f"prompt.placement: section {params['section']!r} is not in the prompt")
        if params["to"] == "user":
            sec["placement"] = "user"
        else:
            sec.pop("placement", None)
        return commit(record, site, prompt)
