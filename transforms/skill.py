"""Skill transforms: the ``skill`` family.

Skills are Markdown modules the model loads with the skill tool (``load_skill(skill=...)``).
A model trained on one harness memorises their names, their descriptions, the layout of
their bodies and of the catalogue that lists them; these transforms vary all four and
keep everything that refers to a skill consistent:

* ``skill.rename`` goes through :func:`hsa.renames.rename_skills` (definitions, skill-tool
  arguments and schema, texts as whole tokens — prompt catalogue, other skills, messages —
  hook literals and payloads) and records the ``skills`` mapping step;
* ``skill.describe`` and ``skill.catalog`` re-render the catalogue section of the prompt and
  the system message it is part of (:mod:`hsa.prompt_model`);
* ``skill.restructure`` rewrites the tool results that returned a skill's body.

Tool calls are never touched, except the skill tool's argument under ``skill.rename``. The
transforms draw their params here; the catalogue, Markdown and result work they call is in
:mod:`transforms.skill_functional`.
"""

from __future__ import annotations

import dataclasses
import random
import re
import string
from functools import lru_cache
from typing import Any, ClassVar

from hsa.names import find_tokens, is_identifier_like, split_words
from hsa.prompt_model import PromptSite, commit, locate
from hsa.records import Record
from hsa.renames import hook_literals, record_words, text_fields
from hsa.skills_dir import is_legal_skill_name, skill_dialect
from hsa.transform import Facts, HarnessView, Skip, Transform, check_choices, check_probability, register
from transforms import skill_functional as F
from transforms._banks import group_table
from transforms._domains import harness_domain
from transforms._promptsite import harness_prompt
from transforms._skillpool import as_distractor, skill_candidates
from transforms.meaning import paraphrase_changes
from transforms.phrasebank import BankError, load_bank
from transforms.skill_functional import (
    BULLETS,
    CATALOG_STYLES,
    DEFAULT_ANCHORS,
    HEADING_STYLES,
    ORDERED_DELIMITERS,
    Catalog,
    catalog_miss,
    catalog_style_ok,
    description_canonical,
    find_catalog,
    load_distractors,
    markdown_plan,
    parse_catalog,
    render_catalog,
    reorder_enumerations,
    restructure_markdown,
    skill_canonical,
    skill_results,
)

__all__ = [
    "SkillRename",
    "words_in_texts",
    "SkillDescribe",
    "SkillRestructure",
    "SkillCatalog",
    "SKILL_NAME_STYLES",
    "DEFAULT_SKILL_STYLES",
    "CATALOG_STYLES",
    "HEADING_STYLES",
    "new_skill_name",
    "render_catalog",
    "parse_catalog",
    "find_catalog",
    "catalog_miss",
    "Catalog",
    "skill_results",
    "restructure_markdown",
    "markdown_plan",
    "skill_canonical",
    "description_canonical",
    "reorder_enumerations",
    "load_distractors",
]

SKILL_NAME_STYLES = ("kebab", "snake", "opaque", "synonym", "reorder", "abbreviate", "verb_noun")

#: The styles ``skill.rename`` draws from unless told otherwise: the ones that keep a name's meaning and read like
#: a team's rename. ``opaque`` (random ids, a mask) and ``reorder`` (a word-order swap, ``guidelines-brand``) are
#: noise for users who ask for it.
DEFAULT_SKILL_STYLES = ("kebab", "snake", "synonym", "abbreviate", "verb_noun")

#: Skill-name styles that are a convention: in a coherent draw every skill of the catalogue takes it together.
_SKILL_CONVENTIONS = ("kebab", "snake")


# =========================================================================== names


def _opaque(rng: random.Random, sep: str, length: int) -> str:
    chars = string.ascii_lowercase + string.digits
    body = "".join(rng.choice(chars) for _ in range(length))
    if not any(c.isdigit() for c in body):  # "skill_a34b": a digit keeps it from reading as a word
        i = rng.randrange(length)
        body = body[:i] + rng.choice(string.digits) + body[i + 1:]
    return f"skill{sep}{body}"


def new_skill_name(old: str, style: str, rng: random.Random, *, dialect: str = "hat",
                   synonyms: dict[str, tuple[str, ...]] | None = None, opaque_len: int = 4) -> str:
    """A new name for skill ``old`` in ``style`` (see :data:`SKILL_NAME_STYLES`); may equal ``old``.

    ``kebab`` and ``snake`` re-join the name's words; ``opaque`` draws an id such as
    ``skill_a34b``; ``synonym`` swaps words for synonyms from the ``skill_synonyms`` bank
    (live-commerce and general words: ``frontend-design`` -> ``ui-styling``);
    ``reorder`` changes the order of the words (``brand-guidelines`` -> ``guidelines-brand``);
    ``abbreviate`` swaps words for their long or short form from the ``skill_abbreviations``
    bank (``internal-comms`` -> ``internal-communications``); ``verb_noun`` turns an agent
    noun or gerund at the end into a verb at the front and back (``mcp-builder`` ->
    ``build-mcp``, ``create-skill`` -> ``skill-creator``; ``skill_verbs`` bank). All but
    kebab and snake keep the name's separator (hyphens for Agent Skills names).
    """
    words = split_words(old)
    sep = "-" if "-" in old or dialect == "agentskills" else "_"
    if style == "kebab":
        return "-".join(words) or old
    if style == "snake":
        return "_".join(words) or old
    if style == "opaque":
        return _opaque(rng, "-" if dialect == "agentskills" else "_", opaque_len)
    if style == "synonym":  # one word: a rename that swaps every word drifts (new_viewer_welcome -> first_audience_greeting)
        table = synonyms if synonyms is not None else _synonym_table(())
        spots = [i for i, w in enumerate(words) if any(a != w for a in table.get(w, ()))]
        if not spots:
            return old
        i = rng.choice(spots)
        swapped = list(words)
        swapped[i] = rng.choice([a for a in table[words[i]] if a != words[i]])
        return sep.join(swapped)
    if style == "reorder":
        if len(words) < 2:
            return old
        order = list(range(len(words)))
        while order == sorted(order):
            rng.shuffle(order)
        return sep.join(words[i] for i in order)
    if style == "abbreviate":
        table = _word_table("skill_abbreviations")
        return sep.join(rng.choice(table[w]) if w in table else w for w in words) or old
    if style == "verb_noun":
        forms = _verb_forms()
        if len(words) >= 2 and words[-1] in forms and forms[words[-1]][1] != "verb":
            return sep.join([forms[words[-1]][0]] + words[:-1])
        if len(words) >= 2 and words[0] in forms and forms[words[0]][1] == "verb":
            verb = words[0]
            nouns = [w for w, (v, kind) in forms.items() if v == verb and kind != "verb"]
            return sep.join(words[1:] + [rng.choice(sorted(nouns))])
        return old
    raise ValueError(f"unknown skill name style {style!r}; expected one of {', '.join(SKILL_NAME_STYLES)}")


@lru_cache(maxsize=16)
def _synonym_table(extra: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    return group_table(g.phrasings for g in load_bank("skill_synonyms", extra).groups)


@lru_cache(maxsize=4)
def _word_table(bank_name: str) -> dict[str, tuple[str, ...]]:
    """Word -> the other words of its groups in a built-in bank of single words."""
    return group_table(g.phrasings for g in load_bank(bank_name).groups)


@lru_cache(maxsize=1)
def _verb_forms() -> dict[str, tuple[str, str]]:
    """Word -> (verb, kind) for the ``skill_verbs`` bank: kind is ``verb``, ``agent`` or ``gerund``."""
    out: dict[str, tuple[str, str]] = {}
    for g in load_bank("skill_verbs").groups:
        verb, agent, gerund = g.phrasings[:3]
        for w, kind in ((verb, "verb"), (agent, "agent"), (gerund, "gerund")):
            out.setdefault(w, (verb, kind))
    return out


def _names_list(names: list[str], most: int = 6) -> str:
    """``'a', 'b' and 3 more``: skill names in a skip reason."""
    shown = ", ".join(repr(n) for n in names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


# =========================================================================== skill.rename


def words_in_texts(record: Record, names: tuple[str, ...]) -> list[str]:
    """The ``names`` that occur as whole tokens in the record's free text, sorted (a question ``skill.rename`` asks:
    a plain-word skill name used in the prose keeps its name)."""
    found: set[str] = set()
    for text in text_fields(record):
        found.update(find_tokens(text, list(names)))
    return sorted(found)


@register
@dataclasses.dataclass(frozen=True)
class SkillRename(Transform):
    """Rename skills in a style drawn from ``styles`` (see :func:`new_skill_name`), one style per catalogue.

    Coherent by default: the catalogue draws one style; a convention (``kebab``, ``snake``) renames every skill
    together with probability ``p``, another style renames each skill with probability ``p``, falling back to
    the other non-convention styles (in random order) where the drawn one cannot change a name (``abbreviate`` on
    ``pdf``), so the catalogue keeps one convention. ``mix_styles`` draws per skill instead (the drawn style first,
    then any other). The default styles keep a name's meaning (:data:`DEFAULT_SKILL_STYLES`); ``opaque`` and
    ``reorder`` are there for users who want noise.

    New names are legal in the record's skill-name dialect (Agent Skills when every name
    follows the open specification, else HAT, which allows underscores) and collide with
    no token of the record. A skill whose name is a plain word that also occurs in free
    text, or that is also a tool or parameter name, keeps its name (a whole-token rewrite
    would reach the other meaning too).
    """

    name: ClassVar[str] = "skill.rename"
    family: ClassVar[str] = "skill"

    styles: tuple[str, ...] = DEFAULT_SKILL_STYLES
    p: float = 1.0
    opaque_len: int = 4
    banks: tuple[str, ...] = ()
    mix_styles: bool = False

    def __post_init__(self):
        check_choices("styles", self.styles, SKILL_NAME_STYLES)
        check_probability(self.p)
        if not 2 <= self.opaque_len <= 16:
            raise ValueError(f"opaque_len must be within [2, 16] (got {self.opaque_len!r})")
        if "synonym" in self.styles:
            try:
                _synonym_table(tuple(self.banks))
            except BankError as exc:
                raise ValueError(str(exc)) from None

    def sample_harness(self, harness: HarnessView, facts: Facts, rng: random.Random) -> dict | Skip:
        skills = harness.get("skills") or []
        names = [s["name"] for s in skills]
        if not names:
            return Skip("no skills")
        dialect = skill_dialect(names)
        reserved = {t["name"] for t in harness["tools"]} | F.declared_params(harness)
        plain = [n for n in names if not is_identifier_like(n)]
        ambiguous = set(facts.ask(words_in_texts, tuple(plain))) if plain else set()
        tokens = facts.ask_set(record_words)  # a new name is none of the record's tokens and no hook literal
        literals = hook_literals(harness)
        synonyms = _synonym_table(tuple(self.banks)) if "synonym" in self.styles else {}
        styles = [s for s in self.styles if s != "snake" or dialect == "hat"]
        renames: dict[str, str] = {}
        causes: dict[str, list[str]] = {}

        def attempt(old: str, order: list[str]) -> str:
            for style in order:
                for _ in range(1 if style in _SKILL_CONVENTIONS else 8):
                    cand = new_skill_name(old, style, rng, dialect=dialect, synonyms=synonyms,
                                          opaque_len=self.opaque_len)
                    if (cand != old and cand not in literals and cand not in tokens
                            and cand not in renames.values() and is_legal_skill_name(cand, dialect)):
                        return cand
            return old

        def renamable(old: str) -> bool:
            if old in reserved:
                causes.setdefault("also a tool or parameter name", []).append(old)
            elif old in ambiguous:
                causes.setdefault("a plain word that also occurs in the text (a whole-token rewrite would reach "
                                  "the prose)", []).append(old)
            elif not styles:
                causes.setdefault("Agent Skills names hold no underscores: style snake does not apply", []).append(old)
            else:
                return True
            return False

        if self.mix_styles:
            for old in names:
                if rng.random() >= self.p:
                    causes.setdefault(f"not drawn (p={self.p})", []).append(old)
                    continue
                if not renamable(old):
                    continue
                order = styles[:]
                rng.shuffle(order)  # the drawn style first, then the others: a style that cannot change the name
                new = attempt(old, order)  # (kebab on a kebab name, verb_noun without a verb) gives way to the next
                if new != old:
                    renames[old] = new
                else:
                    causes.setdefault(f"no style of {', '.join(styles)} gives a new name that is free and legal",
                                      []).append(old)
        elif styles:
            if rng.random() >= self.p:
                return Skip(f"no skill renamed: the catalogue was not drawn (p={self.p})")
            first = rng.choice(styles)
            rest = [s for s in styles if s != first]
            rng.shuffle(rest)
            drawn = {old: rng.random() < self.p for old in names}
            eligible = [old for old in names if renamable(old)]
            for style in [first, *rest]:
                if style in _SKILL_CONVENTIONS:
                    table = {old: attempt(old, [style]) for old in eligible}
                    clash = [k for k, v in table.items()
                             if v == k and new_skill_name(k, style, rng, dialect=dialect) != k]
                    changed = {k: v for k, v in table.items() if v != k}
                    if clash:  # a skill that cannot take the convention: the catalogue keeps its own
                        causes.setdefault(f"cannot take the catalogue's {style} style (the new name is taken or "
                                          "illegal)", []).extend(clash)
                        continue
                else:
                    changed = {}
                    for old in eligible:
                        if drawn[old]:
                            new = attempt(old, [style])
                            if new != old:
                                changed[old] = new
                if changed:
                    renames.update(changed)
                    break
            else:
                if eligible:
                    causes.setdefault(f"no style of {', '.join(styles)} gives new names that are free and legal",
                                      []).extend(eligible)
        else:
            for old in names:
                renamable(old)
        if not renames:
            return Skip("no skill renamed: " + "; ".join(f"{_names_list(ns)}: {cause}" for cause, ns in causes.items()))
        return {"renames": renames}

    def mapping_steps(self, harness: HarnessView, params: dict) -> list[dict]:
        known = {s["name"] for s in harness.get("skills") or ()}
        missing = sorted(set(params["renames"]) - known)
        if missing:
            raise ValueError(f"skill.rename: skills {missing} are not in the record (have {sorted(known)})")
        return [{"op": "skills", "map": params["renames"]}]


# =========================================================================== skill.describe

@register
@dataclasses.dataclass(frozen=True)
class SkillDescribe(Transform):
    """Paraphrase skill descriptions (each with probability ``p``) from the ``skill_descriptions`` bank, and reorder enumerations.

    The catalogue section of the prompt follows, and the system message is rendered
    again. A description that occurs in other text the catalogue does not explain is
    left alone.
    """

    name: ClassVar[str] = "skill.describe"
    family: ClassVar[str] = "skill"

    p: float = 0.7
    reorder: bool = True
    banks: tuple[str, ...] = ()

    def __post_init__(self):
        check_probability(self.p)
        try:
            load_bank("skill_descriptions", tuple(self.banks))
        except BankError as exc:
            raise ValueError(str(exc)) from None

    def sample_harness(self, harness: HarnessView, facts: Facts, rng: random.Random) -> dict | Skip:
        skills = [s for s in harness.get("skills") or () if isinstance(s.get("description"), str)]
        if not skills:
            return Skip("no skill descriptions")
        bank = load_bank("skill_descriptions", tuple(self.banks))
        prompt = harness_prompt(harness, facts)
        cat = find_catalog(harness, prompt) if isinstance(prompt, dict) else None
        listed = set(cat.names) if cat else set()
        out: dict[str, str] = {}
        causes: dict[str, list[str]] = {}
        for s in skills:
            if rng.random() >= self.p:
                causes.setdefault(f"not drawn (p={self.p})", []).append(s["name"])
                continue
            old = s["description"]
            matches = bank.find(old)
            choices = []
            for m in matches:
                n = len(bank.groups[m.group].phrasings)
                others = [i for i in range(n) if i != m.phrasing]
                choices.append(rng.choice(others) if others else m.phrasing)
            new = bank.substitute(old, choices, matches) if matches else old
            if self.reorder:
                orders = []
                for _, items in F.enumerations(new):
                    order = list(range(len(items)))
                    rng.shuffle(order)
                    if " " in items[order[0]]:  # a list is read from a one-word first item: keep one there
                        j = next((j for j, i in enumerate(order) if " " not in items[i]), 0)
                        order[0], order[j] = order[j], order[0]
                    orders.append(order)
                new = reorder_enumerations(new, orders)
            if new == old or not new.strip():
                causes.setdefault("no bank phrasing and no list of three or more whole items in the description",
                                  []).append(s["name"])
                continue
            if description_canonical(new, self.banks) != description_canonical(old, self.banks):
                causes.setdefault("the new wording is not provably equivalent (it overlaps another phrasing group)",
                                  []).append(s["name"])
                continue
            if paraphrase_changes(old, new):
                causes.setdefault("the new wording would change a negation, modal, number, time word or list "
                                  "(the meaning contract)", []).append(s["name"])
                continue
            if s["name"] not in listed and facts.ask(F.mentioned_outside, old):
                miss = catalog_miss(harness, prompt)
                causes.setdefault(f"the description is quoted in text that no catalogue explains ({miss})",
                                  []).append(s["name"])
                continue
            out[s["name"]] = new
        if not out:
            return Skip("no description changed: " + "; ".join(f"{_names_list(ns)}: {c}" for c, ns in causes.items()))
        return {"descriptions": out}

    def apply(self, record: Record, params: dict) -> Record:
        new = params["descriptions"]
        known = {s["name"] for s in record.get("skills") or ()}
        missing = sorted(set(new) - known)
        if missing:
            raise ValueError(f"skill.describe: skills {missing} are not in the record (have {sorted(known)})")
        site = locate(record)
        cat = find_catalog(record, site.prompt) if isinstance(site, PromptSite) else None
        out = dict(record)  # parts are shared with the input, copied where they change
        if record.get("skills"):
            out["skills"] = [F.with_key(s, "description", new[s["name"]]) if s["name"] in new else s
                             for s in record["skills"]]
        if cat is None:
            return out
        descs = {s["name"]: s["description"] for s in out["skills"]}
        entries = [(n, descs[n]) for n in cat.names]
        if not catalog_style_ok(entries, cat.style):
            raise ValueError(f"skill.describe: a new description cannot be written in the {cat.style} catalogue")
        return commit(out, site, F.with_catalog(site.prompt, cat, render_catalog(entries, cat.style, cat.layout)))


# =========================================================================== skill.restructure

@register
@dataclasses.dataclass(frozen=True)
class SkillRestructure(Transform):
    """Re-lay skill bodies (each with probability ``p``): independent sections reordered, heading, list and frontmatter-key styles changed.

    The text of every section is preserved; tool results that returned the old body
    are rewritten to the new one.
    """

    name: ClassVar[str] = "skill.restructure"
    family: ClassVar[str] = "skill"

    p: float = 1.0
    reorder: bool = True
    headings: tuple[str, ...] = HEADING_STYLES
    bullets: tuple[str, ...] = BULLETS
    ordered: tuple[str, ...] = ORDERED_DELIMITERS
    anchors: tuple[str, ...] = DEFAULT_ANCHORS

    def __post_init__(self):
        check_probability(self.p)
        check_choices("headings", self.headings, HEADING_STYLES)
        check_choices("bullets", self.bullets, BULLETS)
        check_choices("ordered", self.ordered, ORDERED_DELIMITERS)

    def sample_harness(self, harness: HarnessView, facts: Facts, rng: random.Random) -> dict | Skip:
        skills = [s for s in harness.get("skills") or () if isinstance(s.get("content"), str) and s["content"]]
        if not skills:
            return Skip("no skill content")
        out: dict[str, dict] = {}
        causes: dict[str, list[str]] = {}
        for s in skills:
            if rng.random() >= self.p:
                causes.setdefault(f"not drawn (p={self.p})", []).append(s["name"])
                continue
            plan = markdown_plan(s["content"], self.anchors)
            params: dict[str, Any] = {}
            if self.reorder and plan["runs"]:
                order = list(range(plan["sections"]))
                for run in plan["runs"]:
                    shuffled = run[:]
                    rng.shuffle(shuffled)
                    for k, v in zip(run, shuffled):
                        order[k] = v
                params["order"] = order
            if plan["headings"]:
                params["heading"] = rng.choice(self.headings)
            if plan["bullets"]:
                params["bullet"] = rng.choice(self.bullets)
            if plan["ordered"]:
                params["ordered"] = rng.choice(self.ordered)
            if plan["frontmatter"] >= 2:
                keys = list(range(plan["frontmatter"]))
                rng.shuffle(keys)
                params["frontmatter"] = keys
            if not params:
                causes.setdefault("no headings, lists, frontmatter keys or movable sections", []).append(s["name"])
                continue
            new = restructure_markdown(s["content"], params, self.anchors)
            if new != s["content"] and skill_canonical(new) != skill_canonical(s["content"]) and "order" in params:
                del params["order"]  # a move that would merge a heading into a paragraph: keep the order
                new = restructure_markdown(s["content"], params, self.anchors)
            if new != s["content"] and skill_canonical(new) == skill_canonical(s["content"]):
                out[s["name"]] = params
            else:
                causes.setdefault("the drawn layout is the one it has", []).append(s["name"])
        if not out:
            return Skip("no skill body changed: " + "; ".join(f"{_names_list(ns)}: {c}" for c, ns in causes.items()))
        return {"skills": out}

    def apply(self, record: Record, params: dict) -> Record:
        out = dict(record)  # parts are shared with the input, copied where they change
        if record.get("skills"):
            out["skills"] = [dict(s) if s["name"] in params["skills"] else s for s in record["skills"]]
        out["messages"] = [dict(m) for m in record["messages"]]  # replace_in_results sets contents
        by_name = {s["name"]: s for s in out.get("skills") or ()}
        missing = sorted(set(params["skills"]) - set(by_name))
        if missing:
            raise ValueError(f"skill.restructure: skills {missing} are not in the record (have {sorted(by_name)})")
        for name, p in params["skills"].items():
            skill = by_name[name]
            old = skill["content"]
            new = restructure_markdown(old, p, self.anchors)
            skill["content"] = new
            F.replace_in_results(out, name, old, new)
        return out


# =========================================================================== skill.catalog


@register
@dataclasses.dataclass(frozen=True)
class SkillCatalog(Transform):
    """Re-render the skill catalogue of the prompt: order shuffled, distractors added, list/table/XML/available_skills.

    Distractors (``skill_distractors`` bank, extendable with ``banks``) are skills of the
    harness's own domain (or the one it specialises; ``general`` ones for a harness of no known
    domain) that are near no real skill — no word of their name in a real skill's name or
    description, no large overlap of their words — written like their neighbours: the real skills'
    naming style, and the long or one-line description nearer in length to theirs
    (:mod:`transforms._skillpool`). They are added to the harness and to the catalogue; the
    trajectory never loads them. Records whose prompt has no catalogue section pass through with a skip.
    """

    name: ClassVar[str] = "skill.catalog"
    family: ClassVar[str] = "skill"

    styles: tuple[str, ...] = CATALOG_STYLES
    shuffle: bool = True
    distractors: tuple[int, int] = (0, 2)
    banks: tuple[str, ...] = ()

    def __post_init__(self):
        check_choices("styles", self.styles, CATALOG_STYLES)
        lo, hi = self.distractors
        if not 0 <= lo <= hi:
            raise ValueError(f"distractors must be [lo, hi] with 0 <= lo <= hi (got {list(self.distractors)})")
        load_distractors(tuple(self.banks))

    def sample_harness(self, harness: HarnessView, facts: Facts, rng: random.Random) -> dict | Skip:
        prompt = harness_prompt(harness, facts)
        if isinstance(prompt, str):
            return Skip(prompt)
        cat = find_catalog(harness, prompt)
        if cat is None:
            return Skip(catalog_miss(harness, prompt))
        index, current, names = cat.index, cat.style, cat.names
        dialect = skill_dialect(s["name"] for s in harness["skills"])
        tokens = facts.ask_set(record_words)
        literals = hook_literals(harness)
        lo, hi = self.distractors
        pool = skill_candidates(harness, load_distractors(tuple(self.banks)), facts.ask(harness_domain))
        k = min(rng.randint(lo, hi), len(pool))
        extra = []
        for d in rng.sample(pool, len(pool)):
            if len(extra) >= k:
                break
            skill = as_distractor(d, harness, dialect)
            if skill is None or skill["name"] in tokens or skill["name"] in literals:
                continue
            extra.append(skill)
        order = names + [d["name"] for d in extra]
        if self.shuffle:
            rng.shuffle(order)
        descs = {s["name"]: s.get("description", "") for s in harness["skills"]} | \
            {d["name"]: d["description"] for d in extra}
        entries = [(n, descs[n]) for n in order]
        styles = [s for s in self.styles if catalog_style_ok(entries, s)]
        extras = sorted({tag for x in ((cat.layout or {}).get("extras") or {}).values() for _, tag, _ in x})
        if extras:  # <location> and other children: no other style can hold them
            styles = [s for s in styles if s == current]
        if not styles:
            return Skip("no catalogue style can hold the descriptions" + (
                f" (the {current} catalogue carries <{'>, <'.join(extras)}> elements, kept only in its own style)"
                if extras else ""))
        style = rng.choice(styles)
        if style == current and order == names and not extra:
            return Skip("catalogue unchanged (same style and order drawn, no distractor)")
        return {"section": prompt["sections"][index]["id"], "style": style, "order": order,
                "distractors": extra}

    def apply(self, record: Record, params: dict) -> Record:
        site = locate(record)
        if not isinstance(site, PromptSite):
            raise ValueError(f"skill.catalog: {site}")
        cat = find_catalog(record, site.prompt)
        if cat is None or site.prompt["sections"][cat[0]]["id"] != params["section"]:
            raise ValueError(f"skill.catalog: section {params['section']!r} is not the record's skill catalogue")
        out = dict(record)  # parts are shared with the input, copied where they change
        have = {s["name"] for s in out["skills"]}
        clash = [d["name"] for d in params["distractors"] if d["name"] in have]
        if clash:
            raise ValueError(f"skill.catalog: distractors {clash} are already skills of the record")
        out["skills"] = record["skills"] + [dict(d) for d in params["distractors"]]
        schema = F.skill_arg_schema(out)
        if schema is not None and isinstance(schema.get("enum"), list):
            F.set_skill_arg_schema(out, F.with_key(schema, "enum", schema["enum"] + [d["name"] for d in params["distractors"]]))
        descs = {s["name"]: s.get("description", "") for s in out["skills"]}
        if sorted(params["order"]) != sorted(set(cat[2]) | {d["name"] for d in params["distractors"]}):
            raise ValueError("skill.catalog: order must list the catalogue's skills and the distractors once each")
        entries = [(n, descs[n]) for n in params["order"]]
        layout = cat.layout if params["style"] == cat.style else None
        if cat.layout and cat.layout.get("extras") and layout is None:
            raise ValueError(f"skill.catalog: the {cat.style} catalogue's extra elements cannot be written as "
                             f"{params['style']}")
        return commit(out, site, F.with_catalog(site.prompt, cat, render_catalog(entries, params["style"], layout)))
