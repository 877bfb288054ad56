"""Before/after tests of the skill family: rename, describe, restructure, catalog."""

from __future__ import annotations

import json
import random

import pytest

from hsa.names import find_tokens
from hsa.prompt_model import check_sync, locate
from hsa.records import normalize
from hsa.renames import canonicalize, hook_literals, text_fields
from hsa.skills_dir import is_legal_skill_name
from hsa.transform import run
from hsa.invariants import calls_of, check_variant
from transforms import skill as S
from transforms import skill_functional
from transforms.prompt import canonical_prompt


def _rec(raw: dict) -> dict:
    return normalize(json.loads(json.dumps(raw)))


def _run(t, rec, seed=0):
    return run(t, rec, random.Random(seed))


def _non_skill_calls(rec):
    st = rec["skill_tool"]["name"]
    return [c for c in calls_of(rec) if c["name"] != st]


# --------------------------------------------------------------------------- skill.rename


def test_rename_reaches_every_reference(fixture_records):
    """A renamed skill is renamed in definitions, skill-tool calls, catalogue, rules, other skills and hooks."""
    raw = next(r for r in fixture_records if any(h["name"] == "require_reply_skill" for h in r["hooks"])
               and "item_qa" in {s["name"] for s in r["skills"]} and "size_advisor" in {s["name"] for s in r["skills"]})
    rec = _rec(raw)
    out = S.SkillRename().apply(rec, {"renames": {"item_qa": "product_help", "size_advisor": "fit-guide"}})
    names = {s["name"] for s in out["skills"]}
    assert {"product_help", "fit-guide"} <= names and not {"item_qa", "size_advisor"} & names
    for text in text_fields(out):
        assert not find_tokens(text, ["item_qa", "size_advisor"]), text[:120]
    assert "product_help" in out["messages"][0]["content"]
    assert "`fit-guide`" in next(s["content"] for s in out["skills"] if s["name"] == "product_help")
    assert "product_help" in hook_literals(out) and "item_qa" not in hook_literals(out)
    assert out["mapping"][-1] == {"op": "skills", "map": {"item_qa": "product_help", "size_advisor": "fit-guide"},
                                  "tool": "load_skill", "argument": "skill"}
    assert _non_skill_calls(out) == _non_skill_calls(rec)
    assert check_variant(rec, out) == [] and check_sync(out) is None
    assert calls_of(canonicalize(out)) == calls_of(rec)


@pytest.mark.parametrize("style,check", [
    ("kebab", lambda old, new: new == old.replace("_", "-")),
    ("opaque", lambda old, new: new.startswith("skill_") and len(new) == 10 and any(c.isdigit() for c in new)),
    ("synonym", lambda old, new: new != old and len(new.split("_")) == len(old.split("_"))),
])
def test_rename_styles(fixture_records, style, check):
    """Each style gives names of its shape, legal in the HAT dialect, distinct from every token of the record."""
    rec = _rec(fixture_records[1])
    out, applied, _ = _run(S.SkillRename(styles=(style,)), rec, seed=5)
    renames = applied[0].params["renames"]
    assert renames
    for old, new in renames.items():
        assert check(old, new), (old, new)
        assert is_legal_skill_name(new, "hat")
    assert len(set(renames.values())) == len(renames)
    assert check_variant(rec, out) == []


def test_rename_keeps_agent_skills_names_legal():
    """Names that follow the open spec get spec names (kebab, skill-xxxx), never underscores."""
    rec = _rec({"id": "a", "tools": [{"name": "load_skill", "parameters": {"type": "object", "properties": {
        "skill": {"type": "string", "enum": ["pdf-tools", "code-review"]}}}}],
        "skills": [{"name": "pdf-tools", "description": "PDFs.", "content": "# PDF"},
                   {"name": "code-review", "description": "Reviews.", "content": "# Review"}],
        "messages": [{"role": "user", "content": "review this"},
                     {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {
                         "name": "load_skill", "arguments": {"skill": "code-review"}}}]},
                     {"role": "tool", "tool_call_id": "c", "content": "# Review"}]})
    for seed in range(6):
        out, applied, _ = _run(S.SkillRename(styles=("snake", "opaque", "synonym")), rec, seed=seed)
        for new in (applied[0].params["renames"].values() if applied else ()):
            assert is_legal_skill_name(new, "agentskills"), new
        assert check_variant(rec, out) == []
        assert out["tools"][0]["parameters"]["properties"]["skill"]["enum"] == [s["name"] for s in out["skills"]]


def test_rename_leaves_plain_word_names_mentioned_in_prose():
    """A skill named by a plain word that also occurs in the text keeps its name (whole-token rewrite is ambiguous)."""
    rec = _rec({"id": "w", "tools": [], "skills": [
        {"name": "welcome", "description": "Say welcome.", "content": "Welcome them."},
        {"name": "size_advisor", "description": "Sizes.", "content": "# Size"}],
        "messages": [{"role": "user", "content": "hi"}]})
    out, applied, _ = _run(S.SkillRename(styles=("opaque",)), rec)
    assert set(applied[0].params["renames"]) == {"size_advisor"}


def test_rename_refuses_unknown_skills(fixture_records):
    """apply names the missing skills."""
    with pytest.raises(ValueError, match="not in the record"):
        S.SkillRename().apply(_rec(fixture_records[0]), {"renames": {"nope": "x"}})


# --------------------------------------------------------------------------- skill.describe


def test_enumerations_reorder_and_canonicalise():
    """Three-item enumerations are reordered; two-item and longer phrases are left alone; the canonical form agrees."""
    text = "Answer questions about coupons, discounts and final prices."
    assert S.reorder_enumerations(text, [[2, 0, 1]]) == "Answer questions about final prices, coupons and discounts."
    assert S.reorder_enumerations("Handle returns, exchanges, refunds and problems with an order.", []) == \
        "Handle returns, exchanges, refunds and problems with an order."
    assert S.description_canonical(text) == S.description_canonical(
        "Use this skill for questions about discounts, final prices and coupons.")
    assert S.description_canonical(text) != S.description_canonical("Answer questions about coupons.")


def test_describe_updates_the_catalogue(fixture_records):
    """New descriptions appear in the skills, in the catalogue section and in the system message; nothing else changes."""
    rec = _rec(fixture_records[0])
    out, applied, _ = _run(S.SkillDescribe(p=1.0), rec, seed=2)
    new = applied[0].params["descriptions"]
    assert len(new) >= 5
    for s in out["skills"]:
        if s["name"] in new:
            assert s["description"] == new[s["name"]]
            assert f"- {s['name']}: {new[s['name']]}" in out["messages"][0]["content"]
            old = next(o["description"] for o in rec["skills"] if o["name"] == s["name"])
            assert S.description_canonical(old) == S.description_canonical(new[s["name"]])
    assert calls_of(out) == calls_of(rec) and check_variant(rec, out) == [] and check_sync(out) is None
    assert [m for m in out["messages"][1:]] == [m for m in rec["messages"][1:]]


def test_describe_leaves_descriptions_quoted_outside_a_catalogue():
    """Without a catalogue, a description that occurs in a message is not changed (it would go stale)."""
    rec = _rec({"id": "q", "tools": [], "skills": [
        {"name": "promo_qa", "description": "Answer questions about coupons, discounts and final prices.",
         "content": "# Promo"}],
        "messages": [{"role": "user", "content": "What does 'Answer questions about coupons, discounts and final "
                                                 "prices.' mean?"}]})
    out, applied, skipped = _run(S.SkillDescribe(p=1.0), rec)
    assert not applied and out == rec


# --------------------------------------------------------------------------- skill.restructure

BODY = """# Item QA

## When to use
A viewer asks about a product.

## Steps
1. Resolve the link.
2. Quote one highlight.
- never guess

## Reply style
Two sentences."""


def test_restructure_before_after():
    """Sections reordered ("When to use" stays first), headings setext / closed ATX, bullets and ordered delimiters
    switched: exact text."""
    out = S.restructure_markdown(BODY, {"order": [0, 2, 1], "heading": "setext", "bullet": "*", "ordered": ")"})
    assert out == """Item QA
=======

When to use
-----------
A viewer asks about a product.

Reply style
-----------
Two sentences.

Steps
-----
1) Resolve the link.
2) Quote one highlight.
* never guess"""
    assert S.skill_canonical(out) == S.skill_canonical(BODY)
    closed = S.restructure_markdown(BODY, {"heading": "atx_closed"})
    assert closed.splitlines()[0] == "# Item QA #" and "## Steps ##" in closed
    assert S.restructure_markdown(out, {"heading": "atx", "bullet": "-", "ordered": ".",
                                        "order": [0, 2, 1]}) == BODY


def test_restructure_keeps_anchored_sections_in_place():
    """A section that refers to the one above, or a numbered title, keeps its position."""
    text = "## Setup\nInstall it.\n\n## Use\nAs described above, run it.\n\n## Notes\nNone.\n\n## Step 2\nDone."
    plan = S.markdown_plan(text)
    assert plan["sections"] == 4 and plan["movable"] == [0, 2]
    with pytest.raises(ValueError, match="anchored"):
        S.restructure_markdown(text, {"order": [1, 0, 2, 3]})


def test_restructure_frontmatter_and_fences():
    """Frontmatter keys are reordered as whole entries; list markers inside code fences are left alone."""
    text = "---\nname: x\ndescription: y\nmetadata:\n  a: b\n---\n# T\n\n```\n- not a list\n```\n- item\n"
    out = S.restructure_markdown(text, {"frontmatter": [2, 0, 1], "bullet": "+"})
    assert out == "---\nmetadata:\n  a: b\nname: x\ndescription: y\n---\n# T\n\n```\n- not a list\n```\n+ item\n"
    assert S.skill_canonical(out) == S.skill_canonical(text)


def test_restructure_rewrites_loaded_skill_results(fixture_records):
    """Tool results that returned a skill body carry the new body; the canonical body is unchanged."""
    rec = _rec(fixture_records[0])
    out, applied, _ = _run(S.SkillRestructure(), rec, seed=1)
    changed = applied[0].params["skills"]
    loaded = S.skill_results(out)
    assert loaded
    bodies = {s["name"]: s["content"] for s in out["skills"]}
    for i, name in loaded:
        assert out["messages"][i]["content"] == bodies[name]
    for old, new in zip(rec["skills"], out["skills"]):
        assert S.skill_canonical(old["content"]) == S.skill_canonical(new["content"])
        assert (old["content"] != new["content"]) == (old["name"] in changed)
    assert calls_of(out) == calls_of(rec) and check_variant(rec, out) == []


@pytest.mark.parametrize("i", range(0, 300, 30))
def test_restructure_preserves_every_fixture_skill(fixture_records, i):
    """On fixture records every skill body keeps its canonical form and every load result follows."""
    rec = _rec(fixture_records[i])
    out, applied, _ = _run(S.SkillRestructure(), rec, seed=i)
    for old, new in zip(rec["skills"], out["skills"]):
        assert S.skill_canonical(old["content"]) == S.skill_canonical(new["content"])
    assert check_variant(rec, out) == []


# --------------------------------------------------------------------------- skill.catalog


@pytest.mark.parametrize("style", S.CATALOG_STYLES)
def test_catalog_styles_round_trip(style):
    """Each catalogue style parses back to its entries."""
    entries = [("item_qa", "Answer questions."), ("promo-qa", "Coupons, discounts.")]
    body = S.render_catalog(entries, style)
    assert S.parse_catalog(body) == (style, entries)


def test_catalog_before_after(fixture_records):
    """Distractors join the skills and the catalogue, the order is shuffled, the style changes; calls untouched."""
    rec = _rec(fixture_records[0])
    out, applied, _ = _run(S.SkillCatalog(styles=("table",), distractors=(2, 2)), rec, seed=3)
    p = applied[0].params
    assert p["style"] == "table" and len(p["distractors"]) == 2
    added = {d["name"] for d in p["distractors"]}
    assert added <= {s["name"] for s in out["skills"]}
    body = out["prompt"]["sections"][3]["body"]
    assert body.startswith("| Skill | Description |\n| --- | --- |\n")
    assert [n for n, _ in S.parse_catalog(body)[1]] == p["order"]
    assert body in out["messages"][0]["content"]
    assert calls_of(out) == calls_of(rec) and check_variant(rec, out) == [] and check_sync(out) is None
    pool = {d["name"] for d in S.load_distractors()}
    assert added <= pool


def test_catalog_adds_distractors_to_the_skill_enum(fixture_records):
    """When the skill tool enumerates skill names, distractors are added to the enum (calls still validate)."""
    raw = json.loads(json.dumps(fixture_records[0]))
    for t in raw["tools"]:
        if t["function"]["name"] == "load_skill":
            t["function"]["parameters"]["properties"]["skill"]["enum"] = [s["name"] for s in raw["skills"]]
    rec = _rec(raw)
    out, applied, _ = _run(S.SkillCatalog(distractors=(1, 1)), rec, seed=0)
    enum = next(t for t in out["tools"] if t["name"] == "load_skill")["parameters"]["properties"]["skill"]["enum"]
    assert enum == [s["name"] for s in out["skills"]]
    assert check_variant(rec, out) == []


def test_catalog_skips_without_catalogue():
    """No catalogue section in the prompt: skipped with the reason."""
    rec = _rec({"id": "n", "tools": [], "skills": [{"name": "a_b", "description": "x", "content": "y"}],
                "messages": [{"role": "system", "content": "## Rules\nBe nice.\n"}, {"role": "user", "content": "hi"}]})
    out, applied, skipped = _run(S.SkillCatalog(), rec)
    assert skipped == [("skill.catalog", "no skill catalogue in the prompt (no section lists the record's skills with "
                                          "their descriptions)")] and out == rec


def test_skill_transforms_keep_the_prompt_in_sync_on_plain_records(fixture_records):
    """A record without 'prompt' gets its catalogue found by the importer; the variant stores the prompt."""
    raw = json.loads(json.dumps(fixture_records[4]))
    del raw["prompt"]
    rec = _rec(raw)
    for t in (S.SkillDescribe(p=1.0), S.SkillCatalog(distractors=(1, 1)), S.SkillRename()):
        out, applied, _ = _run(t, rec, seed=4)
        assert applied and check_variant(rec, out) == []
        if "prompt" in out:
            assert check_sync(out) is None and not isinstance(locate(out), str)
    out, _, _ = _run(S.SkillRestructure(), rec, seed=4)
    assert canonical_prompt(out) == canonical_prompt(rec)


# --------------------------------------------------------------------------- real Agent Skills prompts (issue 21)


def _agent_raw(layout="list", system=lambda text: text, skills=lambda s: s):
    from hsa.skills_dir import parse_skill_md
    from tests.skills_support import SKILLS, catalogue_record

    raw = catalogue_record(layout=layout)
    raw["skills"] = [skills(parse_skill_md(f["SKILL.md"])) for f in SKILLS.values()]
    raw["messages"][0]["content"] = system(raw["messages"][0]["content"])
    return raw


def _agent_record(layout="list", **kw):
    return _rec(_agent_raw(layout, **kw))


def test_catalogue_found_under_a_heading_followed_by_a_blank_line():
    """'## Skills' + blank line + '- a: ...' is a catalogue: catalog, describe and placement all find it."""
    from transforms.prompt import PromptPlacement

    rec = _agent_record()
    site = locate(rec)
    assert site.prompt["sections"][2]["body"].startswith("- webapp-testing: ")  # the blank line is layout
    cat = S.find_catalog(rec, site.prompt)
    assert cat is not None and cat.style == "list" and len(cat.names) == 5
    out, applied, skipped = _run(S.SkillCatalog(styles=("table",), distractors=(0, 0)), rec)
    assert applied and "## Skills\n\n| Skill | Description |" in out["messages"][0]["content"]
    assert check_variant(rec, out) == [] and check_sync(out) is None
    out, applied, skipped = _run(PromptPlacement(), rec)
    assert applied, skipped
    # a section with the blank line while the others have none: the catalogue is found inside the body
    mixed = _agent_record(system=lambda text: text.replace("## Rules\n\n", "## Rules\n"))
    cat = S.find_catalog(mixed, locate(mixed).prompt)
    assert cat is not None and cat.before == "\n"


def test_catalogue_with_an_intro_line_keeps_it():
    """Text before and after the entries in the catalogue's section stays as it was."""
    rec = _agent_record(system=lambda t: t.replace("## Skills\n\n", "## Skills\n\nThese skills are installed:\n\n"))
    out, applied, _ = _run(S.SkillCatalog(styles=("xml",), distractors=(0, 0)), rec)
    assert "## Skills\n\nThese skills are installed:\n\n<skill name=" in out["messages"][0]["content"]
    assert check_variant(rec, out) == []


def test_available_skills_xml_catalogue():
    """<available_skills><skill><name/><description/><location/></skill>...: found, re-rendered in its own layout."""
    rec = _agent_record("available_skills")
    cat = S.find_catalog(rec, locate(rec).prompt)
    assert cat is not None and cat.style == "available_skills" and cat.names[0] == "webapp-testing"
    assert cat.layout["extras"]["docx"] == [["\n    ", "location", "skills/docx/SKILL.md"]]
    assert S.render_catalog(cat.entries, cat.style, cat.layout) in rec["messages"][0]["content"]
    out, applied, _ = _run(S.SkillCatalog(distractors=(1, 1)), rec, seed=3)
    p = applied[0].params
    assert p["style"] == "available_skills"  # locations cannot be written in another style
    text = out["messages"][0]["content"]
    assert text.count("<location>") == 5 and f"<name>{p['distractors'][0]['name']}</name>" in text
    assert check_variant(rec, out) == [] and check_sync(out) is None
    out, applied, _ = _run(S.SkillDescribe(p=1.0), rec, seed=0)
    for name, desc in applied[0].params["descriptions"].items():
        assert f"<name>{name}</name>\n    <description>{desc}</description>" in out["messages"][0]["content"]
    out = S.SkillRename().apply(rec, {"renames": {"docx": "word-docs"}})
    assert "<location>skills/word-docs/SKILL.md</location>" in out["messages"][0]["content"]
    one_line = "<available_skills><skill><name>docx</name><description>{}</description></skill></available_skills>"
    desc = next(s["description"] for s in rec["skills"] if s["name"] == "docx")
    assert S.parse_catalog(one_line.format(desc)) == ("available_skills", [("docx", desc)])


def test_catalogue_miss_says_why():
    """A section that lists skills with stale descriptions is named in the skip reason."""
    rec = _agent_record(skills=lambda s: dict(s, description="Changed.") if s["name"] == "docx" else s)
    _, applied, skipped = _run(S.SkillCatalog(), rec)
    assert not applied
    assert skipped[0][1] == ("no skill catalogue: section 'Skills' lists skills (list) but gives 'docx' a description "
                             "other than the skill's")


COAUTHOR = """# Doc Co-Authoring

## Overview
Three stages take a draft to a finished document.

## Stage 1: Context Gathering
Ask what the document is for and who reads it.

## Stage 2: Reader Testing
Give the draft to a fresh reader and note what confuses them.

## Tips
Keep paragraphs short.

## Common pitfalls
Long introductions lose readers.

## Final Review
When Reader Testing passes: read the whole document aloud once more.
"""


@pytest.mark.parametrize("skill,section,why", [
    ("skill-creator", "Improving the skill", "opens with"),
    ("theme-factory", "Application Process", "opens with"),
])
def test_restructure_keeps_sequenced_sections_of_real_skills(skill, section, why):
    """'You've run the test cases...' and 'After a preferred theme is selected' keep their places; so do their neighbours' runs."""
    from hsa.skills_dir import parse_skill_md
    from tests.skills_support import SKILLS

    body = parse_skill_md(SKILLS[skill]["SKILL.md"])["content"]
    plan = S.markdown_plan(body)
    titles = [e["title"] for e in skill_functional._elements(body) if e["kind"] == "heading"][1:]
    k = titles.index(section)
    assert k not in plan["movable"] and plan["anchored"][k].startswith(why)
    assert all(k not in run for run in plan["runs"])


def test_restructure_never_moves_a_section_past_a_stage():
    """Final Review (after Stage 2) and the Overview stay; Tips and pitfalls swap only between Stage 2 and the end."""
    plan = S.markdown_plan(COAUTHOR)
    assert plan["movable"] == [3, 4] and plan["runs"] == [[3, 4]]
    assert plan["anchored"][5].startswith("title 'Final Review'") and "overview" in plan["anchored"][0].lower()
    assert plan["anchored"][2].startswith("title")
    with pytest.raises(ValueError, match="anchored"):
        S.restructure_markdown(COAUTHOR, {"order": [0, 1, 2, 5, 4, 3]})
    for seed in range(20):
        params = S.SkillRestructure(headings=("atx",)).sample(
            _rec({"id": "c", "tools": [], "skills": [{"name": "doc-coauthoring", "description": "x",
                                                     "content": COAUTHOR}], "messages": []}), random.Random(seed))
        order = params["skills"]["doc-coauthoring"].get("order") if isinstance(params, dict) else None
        assert order in (None, [0, 1, 2, 3, 4, 5], [0, 1, 2, 4, 3, 5])


def test_restructure_anchors_sections_named_by_others():
    """A section whose title another section names keeps its place, and so does the one naming it."""
    text = ("# T\n\n## Usage Instructions\nPick a theme.\n\n## Colors\nNavy.\n\n## Fonts\nSerif.\n\n"
            "## Notes\nFollow the usage instructions first.\n")
    plan = S.markdown_plan(text)
    assert plan["anchored"] == {0: "section 'Notes' names it", 3: "names section 'Usage Instructions'"}
    assert plan["runs"] == [[1, 2]]


def test_describe_reorders_whole_list_items_only():
    """'tables of contents, headings, ...': the first item may start left of 'contents', so the list stays (issue 21)."""
    text = ("Create, read or edit Word documents, including tables of contents, headings, page numbers, "
            "or letterheads.")
    assert S.reorder_enumerations(text, []) == text
    crossed = text.replace("tables of contents, headings, page numbers, or letterheads",
                           "tables of headings, page numbers, letterheads, or contents")
    assert S.description_canonical(crossed) != S.description_canonical(text)
    brand = "Use it when brand colors, style guidelines, visual formatting, or design standards apply."
    assert S.reorder_enumerations(brand, []) == brand
    ok = "Answer questions about a product's features, material, price and reviews."
    assert S.reorder_enumerations(ok, [[3, 2, 1, 0]]) == \
        "Answer questions about a product's reviews, price, material and features."
    rec = _agent_record()
    for seed in range(10):
        _, applied, _ = _run(S.SkillDescribe(p=1.0), rec, seed=seed)
        for name, new in (applied[0].params["descriptions"].items() if applied else ()):
            assert "tables of contents" in new or name != "docx", new


@pytest.mark.parametrize("style,old,seed,new", [
    ("reorder", "brand-guidelines", 0, "guidelines-brand"),
    ("abbreviate", "internal-comms", 0, "internal-communications"),
    ("abbreviate", "algorithmic-art", 0, "algo-art"),
    ("verb_noun", "mcp-builder", 0, "build-mcp"),
    ("verb_noun", "webapp-testing", 0, "test-webapp"),
    ("verb_noun", "slack-gif-creator", 0, "create-slack-gif"),
    ("verb_noun", "pdf", 0, "pdf"),
    ("kebab", "item_qa", 0, "item-qa"),
])
def test_agent_skills_name_styles(style, old, seed, new):
    """Kebab variants people give skills: reordered words, long/short forms, verb-noun swaps (issue 21)."""
    assert S.new_skill_name(old, style, random.Random(seed), dialect="agentskills") == new


def test_general_synonyms_and_verb_to_noun():
    """The synonym bank holds general words of skill names, one word per rename; a leading verb becomes an agent
    noun or gerund at the end."""
    out = {S.new_skill_name("skill-creator", "synonym", random.Random(i), dialect="agentskills") for i in range(20)}
    assert out == {"skill-builder", "skill-maker"}, out
    out = {S.new_skill_name("brand-guidelines", "synonym", random.Random(i), dialect="agentskills") for i in range(30)}
    assert out == {"branding-guidelines", "brand-guide", "brand-standards"}, out
    assert S.new_skill_name("create-skill", "verb_noun", random.Random(0), dialect="agentskills") in (
        "skill-creator", "skill-creating")


def test_rename_p1_renames_every_eligible_agent_skill():
    """With p=1 the catalogue always changes, in one style; mix_styles gives every free skill a name of its own."""
    rec = _agent_record()
    for seed in range(10):
        _, applied, _ = _run(S.SkillRename(p=1.0), rec, seed=seed)
        renames = applied[0].params["renames"]
        assert set(renames) <= {"webapp-testing", "brand-guidelines", "skill-creator", "theme-factory"}, seed
        assert renames and all(is_legal_skill_name(n, "agentskills") for n in renames.values())
        _, applied, _ = _run(S.SkillRename(p=1.0, mix_styles=True, styles=S.SKILL_NAME_STYLES), rec, seed=seed)
        assert set(applied[0].params["renames"]) == {"webapp-testing", "brand-guidelines", "skill-creator",
                                                     "theme-factory"}, seed
    _, applied, _ = _run(S.SkillRename(p=1.0, styles=("kebab",)), rec)
    assert not applied  # kebab alone cannot change kebab names: said below


def test_skip_reasons_name_the_skill_and_the_cause():
    """One clause per cause, naming the skills: plain words apart from style misses and undrawn skills."""
    rec = _agent_record()
    _, applied, skipped = _run(S.SkillRename(p=1.0, styles=("kebab",)), rec)
    why = skipped[0][1]
    assert why.startswith("no skill renamed: ")
    assert "'docx': a plain word that also occurs in the text" in why
    assert "'webapp-testing', 'brand-guidelines', 'skill-creator', 'theme-factory': no style of kebab gives" in why
    _, _, skipped = _run(S.SkillRename(p=0.0), rec)
    assert skipped[0][1] == "no skill renamed: the catalogue was not drawn (p=0.0)"
    _, _, skipped = _run(S.SkillRename(p=0.0, mix_styles=True), rec)
    assert skipped[0][1] == ("no skill renamed: 'webapp-testing', 'brand-guidelines', 'skill-creator', "
                             "'theme-factory', 'docx': not drawn (p=0.0)")
    _, _, skipped = _run(S.SkillRename(styles=("snake",)), rec)
    assert "style snake does not apply" in skipped[0][1]
    plain = _rec({"id": "q", "tools": [], "skills": [
        {"name": "promo_qa", "description": "Answer questions about coupons, discounts and final prices.",
         "content": "# Promo"}],
        "messages": [{"role": "system", "content": "## Rules\nBe nice.\n\n## Output\nShort."},
                     {"role": "user", "content": "What does 'Answer questions about coupons, discounts and final "
                                                 "prices.' mean?"}]})
    _, _, skipped = _run(S.SkillDescribe(p=1.0), plain)
    assert skipped[0][1] == ("no description changed: 'promo_qa': the description is quoted in text that no "
                             "catalogue explains (no skill catalogue in the prompt (no section lists the record's "
                             "skills with their descriptions))")
