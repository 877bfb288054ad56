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
    heading_levels,
    make_template,
    render,
    system_sections,
    user_context,
)
from hsa.records import Record
from hsa.transform import Facts, HarnessView, Skip, Transform, check_choices, check_probability, register
from transforms._promptsite import harness_prompt
from transforms._toollisting import TOOL_FORMATS, listing_function, render_tools
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



def _bank(name: str, extra: tuple[str, ...]):
    try:
        return load_bank(name, tuple(extra))
    except BankError as exc:
        raise ValueError(str(exc)) from None


def _site(record: Record) -> PromptSite | Skip:
    site = locate(record)
    return Skip(site) if isinstance(site, str) else site


def _prompt(harness: HarnessView, facts: Facts) -> dict | Skip:
    """The prompt a sampler on the harness draws from (:func:`transforms._promptsite.harness_prompt`), or the skip
    that says why there is none: :func:`_site` of the samplers on the harness."""
    prompt = harness_prompt(harness, facts)
    return Skip(prompt) if isinstance(prompt, str) else prompt


def _copy_prompt(prompt: dict) -> dict:
    return {**prompt, "sections": [dict(s) for s in prompt["sections"]]}


def _rendered(prompt: dict) -> tuple[str, str]:
    return render(prompt["template"], system_sections(prompt)), user_context(prompt)


# =========================================================================== tools rendered into the prompt


_FORMAT_PREFIX = {"json": ('[\n  {\n    "name": ',), "yaml": ("- name: ",), "typescript": ("namespace functions {",),
                  "python": ("def ", "class "), "markdown": ("| Tool | Description | Parameters |",)}


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
            body: Any = {"tools": [listing_function(t) for t in record["tools"]]}
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

    def sample_harness(self, harness: HarnessView, facts: Facts, rng: random.Random) -> dict | Skip:
        prompt = _prompt(harness, facts)
        if isinstance(prompt, Skip):
            return prompt
        secs = prompt["sections"]
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

    def sample_harness(self, harness: HarnessView, facts: Facts, rng: random.Random) -> dict | Skip:
        prompt = _prompt(harness, facts)
        if isinstance(prompt, Skip):
            return prompt
        if not is_structural(prompt["template"], prompt["sections"]):
            return Skip("the template has text of its own beyond section delimiters")
        current = _rendered(prompt)
        text = current[0]
        end = text[len(text.rstrip("\n")):]
        options = []
        levels = _levels_in_hierarchy(prompt, self.levels)
        for style in self.styles:
            if style == "markdown":
                options += [{"style": style, "level": lv} for lv in levels]
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


def _levels_in_hierarchy(prompt: dict, levels: tuple[int, ...]) -> list[int]:
    """The Markdown levels of ``levels`` at which the sections' headings keep the prompt's heading hierarchy: below
    every heading of the text above them ("# Airline Agent Policy" stays the only level-1 heading, so its sections
    are never "# Domain Basic") and above every heading inside their bodies; when the sections already are Markdown
    headings of some level, each other heading keeps the same side of them."""
    secs = prompt["sections"]
    outer = set().union(*(heading_levels(s.get("body") or "") for s in secs if s["id"] == PREAMBLE_ID))
    inner = set().union(*(heading_levels(s.get("body") or "") for s in secs if s["id"] != PREAMBLE_ID))
    marked = render(prompt["template"], [{**s, "title": "\x00T\x00", "body": ""} for s in secs
                                          if s["id"] != PREAMBLE_ID][:1])
    now = re.match(r"^(#{1,6}) \x00T\x00", marked)
    if now is not None:  # today's level: keep every other heading on its side of it
        current = len(now.group(1))
        return [lv for lv in levels if all((lv < h) == (current < h) and lv != h for h in outer | inner)]
    return [lv for lv in levels if all(lv > h for h in outer) and all(lv < h for h in inner)]


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

    def sample_harness(self, harness: HarnessView, facts: Facts, rng: random.Random) -> dict | Skip:
        prompt = _prompt(harness, facts)
        if isinstance(prompt, Skip):
            return prompt
        bank = _bank("prompt_titles", self.banks)
        titles: dict[str, str] = {}
        for s in prompt["sections"]:
            title = s.get("title") or ""
            gi = bank.group_of(title)
            if gi is None or rng.random() >= self.p:
                continue
            others = [p for p in bank.groups[gi].phrasings if p.casefold() != title.casefold()]
            if others:
                titles[s["id"]] = _case_like(title, rng.choice(others))
        if not titles:
            return Skip("no title in the bank, or none drawn")
        candidate = _copy_prompt(prompt)
        for s in candidate["sections"]:
            s["title"] = titles.get(s["id"], s.get("title"))
        if _rendered(candidate) == _rendered(prompt):
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

    def sample_harness(self, harness: HarnessView, facts: Facts, rng: random.Random) -> dict | Skip:
        prompt = _prompt(harness, facts)
        if isinstance(prompt, Skip):
            return prompt
        bank = _bank("prompt_paraphrase", self.banks)
        derived = _derived_sections(harness, prompt)
        out: dict[str, list[int]] = {}
        for i, s in enumerate(prompt["sections"]):
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

    def sample_harness(self, harness: HarnessView, facts: Facts, rng: random.Random) -> dict | Skip:
        prompt = _prompt(harness, facts)
        if isinstance(prompt, Skip):
            return prompt
        found = find_tool_sections(harness, prompt)
        if not found:
            return Skip("no prompt section renders the tools in a known format")
        index, current = found[0]
        options = [f for f in self.formats if f != current
                   and (f in ("json", "yaml") or render_tools(harness["tools"], f) is not None)]
        if not options:
            return Skip("no other tool format can hold these tools")
        return {"section": prompt["sections"][index]["id"], "format": rng.choice(options)}

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


@register
@dataclasses.dataclass(frozen=True)
class PromptPlacement(Transform):
    """Move the skill or tool catalogue between the system message and the user turn.

    The moved section keeps its place among the prompt's sections with
    ``"placement": "user"``; the system message is rendered from the others, and the
    moved sections, rendered by the same template, form a context message of their own
    (role ``user``) right before the first user message. The user's own words are never
    changed (:func:`hsa.prompt_model.commit`).
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
        for i in found:
            if secs[i].get("placement", "system") == "user":
                options.append({"section": secs[i]["id"], "to": "system"})
            elif site.user_index is not None and len(in_system) > 1:
                options.append({"section": secs[i]["id"], "to": "user"})
        if not options:
            return Skip("no user message to put the catalogue before (none with text)")
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
