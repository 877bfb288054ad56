"""The text transforms on real text: public MCP tool lists (fixtures/mcp), agent system prompts (fixtures/prompts)
and Agent Skills (fixtures/skills). Each test pins a finding of issues 27 (items 5, 6) and 33 (items 1, 2, 6, 8, 9)
that the code before the fix failed."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from pathlib import Path

import pytest

from hsa.prompt_model import locate
from hsa.records import normalize
from hsa.skills_dir import read_skills_dir
from transforms import prompt as P
from transforms import skill as S
from transforms import tool as T
from transforms import tool_functional

ROOT = Path(__file__).resolve().parents[1]
MCP = ROOT / "fixtures" / "mcp"
PROMPTS = ROOT / "fixtures" / "prompts" / "records.jsonl"
SKILLS = ROOT / "fixtures" / "skills"
LIVESTREAM = ROOT / "fixtures" / "livestream" / "trajectories.jsonl"


def _mcp_records() -> list[dict]:
    return [normalize(json.loads(line)) for line in (MCP / "records.jsonl").read_text(encoding="utf-8").splitlines()]


def _prompt_records() -> dict[str, dict]:
    recs = [normalize(json.loads(line)) for line in PROMPTS.read_text(encoding="utf-8").splitlines()]
    return {r["id"]: r for r in recs}


def _skills() -> list[dict]:
    return [{k: s[k] for k in ("name", "description", "content")}
            for s in read_skills_dir(SKILLS, dialect="agentskills")]


def _described(records) -> list[tuple[dict, str, str | None, str]]:
    return [(rec, tool, at, text) for rec in records for tool, at, text in tool_functional.descriptions(rec)]


_TIME_WORDS = re.compile(r"(?i)\b(current|currently|present|today's|the day's|already|previously|was|were|has been|"
                         r"have been|now)\b")


# --------------------------------------------------------------------------- issue 27 item 5: paraphrase


def test_describe_never_swaps_time_tense_or_verb_senses_on_mcp_servers():
    """tool.describe on the nine MCP servers: time and tense words stay as written ("Get current time" never
    becomes "Get the day's time", "Your current thinking step" never "Your today's ..."), "already" stays, and
    "Add new observations to existing entities" keeps its verb (before: "Make new observations to ...")."""
    records = _mcp_records()
    changed = 0
    for seed in range(40):
        for rec in records:
            params = T.Describe(p=1.0, modes=("paraphrase",)).sample(rec, random.Random(seed))
            for e in params["texts"] if isinstance(params, dict) else ():
                old = next(t for tl, at, t in tool_functional.descriptions(rec) if tl == e["tool"] and at == e["at"])
                changed += 1
                assert Counter(w.lower() for w in _TIME_WORDS.findall(old)) == \
                    Counter(w.lower() for w in _TIME_WORDS.findall(e["text"])), (old, e["text"])
                if old.startswith("Add new observations"):
                    assert e["text"].startswith("Add new observations"), e["text"]
    assert changed > 100  # the transform still varies these descriptions


@pytest.mark.parametrize("old", [
    "Get current time in a specific timezone",
    "Your current thinking step, which can include:",
    "Fails if the directory already exists.",
])
def test_paraphrase_keeps_time_words_in_real_descriptions(old):
    """The bank phrases that swapped time words (current / today's / the day's, already / previously) are gone:
    no draw changes one."""
    for seed in range(60):
        new = T.paraphrase(old, random.Random(seed), rate=1.0)
        assert _TIME_WORDS.findall(new) == _TIME_WORDS.findall(old), new


# --------------------------------------------------------------------------- issue 27 item 6: shortening


def _tool(rec_name: str, tool: str) -> str:
    data = json.loads((MCP / f"{rec_name}.json").read_text(encoding="utf-8"))
    return next(t["description"] for t in data["tools"] if t["name"] == tool)


def test_shorten_keeps_or_drops_each_list_whole():
    """sequential-thinking's description: every list (its "You should:" list of 11 items, "When to use this
    tool:", "Key features:") is kept whole with the line that introduces it, or dropped whole (before: items 1, 4
    and 10 of 11 were kept)."""
    desc = _tool("sequential-thinking", "sequentialthinking")
    short = T.shorten(desc, 8)
    assert short != desc and len(short) < len(desc)
    for intro in ("You should:", "When to use this tool:", "Key features:", "Parameters explained:"):
        block = desc.split(intro, 1)[1].split("\n\n", 1)[0]
        items = [line for line in block.splitlines() if line.strip()]
        kept = [i for i in items if i in short]
        assert kept == [] or (kept == items and intro in short), (intro, len(kept), len(items))
    assert "1. Start with an initial estimate" in short and "11. Only set nextThoughtNeeded" in short


def test_shorten_never_drops_a_warning():
    """A sentence that warns is never dropped: Playwright's "Unsafe: executes arbitrary JavaScript ..." stays, and
    so do Note / Warning / Deprecated / Important sentences."""
    desc = _tool("playwright", "browser_run_code_unsafe")
    assert "Unsafe: executes arbitrary JavaScript" in T.shorten(desc, 4)
    for word in ("Note", "Warning", "Deprecated", "Important"):
        text = f"Reads a file from disk. {word}: large files are streamed. Returns the text."
        assert f"{word}: large files are streamed." in T.shorten(text, 4)
    for rec, tool, at, text in _described(_mcp_records()):
        short = T.shorten(text, 8)
        for sentence in re.split(r"(?<=[.!?])\s+", text):
            if re.search(r"(?i)\b(unsafe|warning|deprecated|important|note)\b", sentence):
                assert sentence.strip() in short, (tool, sentence)


# --------------------------------------------------------------------------- issue 33 item 1: order safety


def _skill_record(names: tuple[str, ...] | None = None) -> dict:
    skills = [s for s in _skills() if names is None or s["name"] in names]
    return normalize({"id": "skills", "tools": [], "skills": skills, "messages": [
        {"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "hi"}]})


def _headings(content: str, level: int = 2) -> list[str]:
    return [line[level + 1:].strip() for line in content.splitlines() if re.match(rf"^#{{{level}}} ", line)]


def test_restructure_keeps_pointed_sections_and_definitions_in_order():
    """skill.restructure on the real skills: "First, undertake this task:" (above the first heading) is always
    followed by ALGORITHMIC PHILOSOPHY CREATION; frontend-design's "Restraint and self-critique" ("Let the
    signature element be ...") never moves above the Process section that defines the signature; "When to Use" and
    "Purpose" stay first. Before, all three moved."""
    rec = _skill_record()
    t = S.SkillRestructure(p=1.0, headings=("atx",), bullets=("-",), ordered=(".",))
    moved = 0
    for seed in range(40):
        params = t.sample(rec, random.Random(seed))
        out = t.apply(rec, params)
        by = {s["name"]: s["content"] for s in out["skills"]}
        before = {s["name"]: s["content"] for s in rec["skills"]}
        moved += sum(_headings(by[n]) != _headings(before[n]) for n in by)
        art = by["algorithmic-art"]
        assert art.split("First, undertake this task:", 1)[1].lstrip().startswith("## ALGORITHMIC PHILOSOPHY CREATION")
        fd = _headings(by["frontend-design"])
        assert fd.index("Process: brainstorm, explore, plan, critique, build, critique again") < \
            fd.index("Restraint and self-critique")
        assert _headings(by["systematic-debugging"])[:3] == _headings(before["systematic-debugging"])[:3]
        assert _headings(by["theme-factory"])[0] == "Purpose"
        assert _headings(by["test-driven-development"])[1] == "When to Use"
    assert moved > 0  # independent sections still move


def test_prompt_reorder_keeps_pointed_sections():
    """prompt.reorder follows the same rule on real prompts: Gemini CLI's "Outside of Sandbox" (per the "rule
    above") keeps its place, tau-bench's Book / Modify / Cancel flight sections still move."""
    recs = _prompt_records()
    gem, tau = recs["prompt-gemini-cli"], recs["prompt-tau-airline"]
    assert isinstance(P.PromptReorder().sample(gem, random.Random(0)), T.Skip)
    orders = {tuple(P.PromptReorder().sample(tau, random.Random(s))["order"]) for s in range(20)}
    assert len(orders) > 1 and all(o[:2] == ("_preamble", "domain_basic") and o[-1] == "refund" for o in orders)


# --------------------------------------------------------------------------- issue 33 item 2: the contract


def _fixture_prompt_variants(seeds=range(8)):
    recs = [normalize(json.loads(line)) for line in LIVESTREAM.read_text(encoding="utf-8").splitlines()[:60]]
    for rec in recs:
        for seed in seeds:
            out, applied, _ = _run(P.PromptParaphrase(p=1.0), rec, seed)
            if applied:
                yield rec, out


def _run(t, rec, seed):
    from hsa.transform import run

    return run(t, rec, random.Random(seed))


def test_paraphrase_keeps_prohibitions_limits_and_instructions():
    """prompt.paraphrase on the live-commerce fixtures: "no headings or lists" and the whole-reply limit stay,
    "No absolute claims" never weakens to "Avoid", "Quote delivery times only from" never becomes the statement
    "Delivery times come only from", and every "If a viewer posts ..." keeps its condition."""
    n = 0
    for rec, out in _fixture_prompt_variants():
        n += 1
        old, new = rec["messages"][0]["content"], out["messages"][0]["content"]
        assert "Avoid absolute claims" not in new and "Delivery times come only" not in new
        assert "sentences of at most" not in new  # the limit read per sentence
        assert new.count("no headings or lists") == old.count("no headings or lists")
        assert new.count("at most") == old.count("at most") and new.count("If a viewer") >= 0
        assert len(re.findall(r"\bno\b|\bnot\b|\bnever\b", new, re.I)) == \
            len(re.findall(r"\bno\b|\bnot\b|\bnever\b", old, re.I))
    assert n > 100


def test_meaning_checker_rejects_lost_negations_numbers_lists_and_modals():
    """The shared rule checker: a rewrite that drops a negation, a number, a list item or a modal, swaps a time
    word, or turns an instruction into a statement is rejected; a synonym swap passes."""
    from transforms.meaning import paraphrase_changes, shortening_changes

    assert paraphrase_changes("No absolute claims such as X.", "Avoid absolute claims such as X.")
    assert paraphrase_changes("Reply in at most 200 characters.", "Reply in at most 280 characters.")
    assert paraphrase_changes("You must list the details.", "You may list the details.")
    assert paraphrase_changes("Quote times only from A.", "Times come only from A.")
    assert paraphrase_changes("Get current time.", "Get the day's time.")
    assert paraphrase_changes("Steps:\n- a\n- b", "Steps:\n- a")
    assert paraphrase_changes("Get the weather.", "Fetch the weather.") == []
    assert shortening_changes("Run code. Unsafe: runs anything.", "Run code.")
    assert shortening_changes("Do this:\n1. a\n2. b\n3. c", "Do this:\n1. a\n3. c")


# --------------------------------------------------------------------------- issue 33 item 9: transforms fire


def test_prompt_transforms_fire_on_real_prompts():
    """prompt.paraphrase changes tau-bench's airline policy and at least 10 of the 14 public agent prompts (before:
    none; the bank matched nothing real and six prompts were never split); every prompt splits into sections that
    render it back exactly, the one-sentence SWE-agent prompt too. Every rewrite keeps the meaning contract:
    the checker finds no lost negation, modal, number, time word, list item or instruction in it."""
    from transforms.meaning import paraphrase_changes

    recs = _prompt_records()
    fired = set()
    for rid, rec in recs.items():
        assert not isinstance(locate(rec), str), rid
        for seed in range(6):
            out, applied, _ = _run(P.PromptParaphrase(p=1.0), rec, seed)
            old, new = rec["messages"][0]["content"], out["messages"][0]["content"]
            if applied and new != old:
                assert paraphrase_changes(old, new) == [], (rid, seed)
                fired.add(rid)
                break
    assert "prompt-tau-airline" in fired and "prompt-swe-agent" in fired and len(fired) >= 10, sorted(fired)


def test_titles_fire_on_real_prompts():
    """prompt.titles renames real section titles (tau-bench's Domain Basic, Book flight; Gemini CLI's Core
    Mandates) from the title bank."""
    recs = _prompt_records()
    for rid in ("prompt-tau-airline", "prompt-tau-retail", "prompt-gemini-cli"):
        out, applied, _ = _run(P.PromptTitles(p=1.0), recs[rid], 0)
        assert applied and out["messages"][0]["content"] != recs[rid]["messages"][0]["content"], rid


def test_skill_describe_varies_real_descriptions():
    """skill.describe rewrites at least 10 of the 14 real skill descriptions (before: one, algorithmic-art, by
    reordering a list), and keeps every negation, modal and number."""
    from transforms.meaning import paraphrase_changes

    rec = _skill_record()
    changed = set()
    for seed in range(10):
        params = S.SkillDescribe(p=1.0).sample(rec, random.Random(seed))
        for name, new in (params.get("descriptions") or {}).items() if isinstance(params, dict) else ():
            old = next(s["description"] for s in rec["skills"] if s["name"] == name)
            assert paraphrase_changes(old, new) == [], (old, new)
            changed.add(name)
    assert len(changed) >= 10, sorted(changed)


# --------------------------------------------------------------------------- issue 33 item 6: tool listings


def _listed_records() -> dict[str, dict]:
    recs = {rid: r for rid, r in _prompt_records().items() if r["tools"]}
    recs.update({r["id"]: r for r in _mcp_records()})
    return recs


def test_every_listing_shows_every_fact_of_the_schemas():
    """Every tool format that can be drawn shows every fact of the schemas (types, required, enums, defaults,
    limits, descriptions, nested objects and array items) on tau-bench's, SWE-agent's, smolagents', the OpenAI
    Agents SDK's and nine MCP servers' tools; before, Python and Markdown dropped enums and nested items
    ("flight_type: str", "flights: list"), TypeScript wrote integer as a bare number."""
    from transforms._toollisting import listing_function, listing_misses

    drawn = Counter()
    for rid, rec in _listed_records().items():
        fns = [listing_function(t) for t in rec["tools"]]
        for fmt in P.TOOL_FORMATS:
            text = P.render_tools(rec["tools"], fmt)
            if text is None:
                continue
            drawn[fmt] += 1
            assert listing_misses(fns, fmt, text) == [], (rid, fmt)
    assert drawn["python"] >= 12 and drawn["typescript"] >= 12 and drawn["markdown"] >= 9, drawn


def test_tau_listing_keeps_enums_nested_items_and_integers():
    """tau-bench's book_reservation in each notation: cabin's enum, the flights' item fields, integer baggage counts,
    and no "'sara_doe_496'.;" artefact in the Markdown table."""
    tools = _prompt_records()["prompt-tau-airline"]["tools"]
    book = [t for t in tools if t["name"] == "book_reservation"]
    ts, py, md = (P.render_tools(book, f) for f in ("typescript", "python", "markdown"))
    assert 'cabin: "basic_economy" | "economy" | "business",' in ts and "total_baggages: number, // integer" in ts
    assert 'cabin: Literal["basic_economy", "economy", "business"]' in py and "flight_number: str" in py
    assert "flights: list[BookReservationFlightsItem]" in py and "total_baggages: int" in py
    assert "\n        flight_type:\n" not in py  # no empty Args line for a parameter without a description
    assert '`cabin` (string; required; one of `"basic_economy"`, `"economy"`, `"business"`)' in md
    assert "`flights[].flight_number` (string; required): Flight number, such as 'HAT001'." in md
    assert "'.;" not in md


def test_tool_format_varies_a_tau_listing_without_losing_facts():
    """prompt.tool_format on tau-bench's policy with its tools listed as JSON (as a harness that lists tools in the
    prompt does): every format it draws is one of the complete ones, and the canonical prompt is unchanged."""
    raw = next(json.loads(line) for line in PROMPTS.read_text(encoding="utf-8").splitlines()
               if json.loads(line)["id"] == "prompt-tau-airline")
    tools = normalize(raw)["tools"]
    raw["messages"][0]["content"] += "\n## Tools\n\n" + P.render_tools(tools, "json") + "\n"
    listed = normalize(raw)
    formats = set()
    for seed in range(12):
        out, applied, _ = _run(P.PromptToolFormat(), listed, seed)
        assert applied and P.canonical_prompt(out) == P.canonical_prompt(listed)
        formats.add(applied[0].params["format"])
    assert formats == {"yaml", "typescript", "python", "markdown"}


# --------------------------------------------------------------------------- issue 33 item 8: levels and placement


def test_delimiters_keep_the_heading_hierarchy():
    """prompt.delimiters on tau-bench's policy never puts a section at the level of "# Airline Agent Policy"
    (before: "# Domain Basic"), and on Gemini CLI never above the "## Software Engineering Tasks" inside a section;
    other styles still apply."""
    recs = _prompt_records()
    styles = Counter()
    for seed in range(30):
        for rid in ("prompt-tau-airline", "prompt-gemini-cli", "prompt-openhands-codeact"):
            out, applied, _ = _run(P.PromptDelimiters(), recs[rid], seed)
            text = out["messages"][0]["content"]
            if rid == "prompt-tau-airline":
                assert re.findall(r"(?m)^# .*$", text) == ["# Airline Agent Policy"], applied
            if applied and applied[0].params["style"] == "markdown":
                styles[(rid, applied[0].params["level"])] += 1
                assert rid != "prompt-openhands-codeact"  # a body holds a level-1 heading: no level fits above it
                if rid == "prompt-gemini-cli":
                    assert applied[0].params["level"] == 1
    assert styles[("prompt-tau-airline", 3)] > 0


def test_placement_never_touches_the_users_words():
    """prompt.placement on Gemini CLI's prompt with the real skills: the catalogue goes to a context message of its
    own before the user's message, which stays exactly as written (before: "## Available Agent Skills ..." was
    prepended to it); moving it back restores the record."""
    rec = _prompt_records()["prompt-gemini-cli"]
    out, applied, _ = _run(P.PromptPlacement(kinds=("skills",)), rec, 0)
    assert applied and applied[0].params["to"] == "user"
    assert out["messages"][1]["role"] == "user" and "<available_skills>" in out["messages"][1]["content"]
    assert out["messages"][2] == rec["messages"][1]
    assert "<available_skills>" not in out["messages"][0]["content"]
    back, applied, _ = _run(P.PromptPlacement(kinds=("skills",)), out, 0)
    assert applied[0].params["to"] == "system" and back["messages"] == rec["messages"]


# --------------------------------------------------------------------------- issue 33 item 9: catalogues


def test_catalog_reads_an_available_skills_block_with_each_value_on_its_own_line():
    """skill.catalog finds and re-renders an <available_skills> block that puts each name, description and location
    on its own line (the layout of Claude Code and many open agents; before: skipped as no catalogue), with the
    fourteen real skills."""
    skills = _skills()
    block = "<available_skills>\n" + "".join(
        f"<skill>\n<name>\n{s['name']}\n</name>\n<description>\n{s['description']}\n</description>\n"
        f"<location>\nuser\n</location>\n</skill>\n" for s in skills) + "</available_skills>"
    rec = normalize({"id": "cc", "tools": [], "skills": skills, "messages": [
        {"role": "system", "content": "You are a coding agent.\n\n## Skills\n\n" + block + "\n\n## Rules\n\nBe brief.\n"},
        {"role": "user", "content": "Make me a GIF for Slack."}]})
    site = locate(rec)
    cat = S.find_catalog(rec, site.prompt)
    assert cat is not None and cat.style == "available_skills" and len(cat.names) == 14
    out, applied, _ = _run(S.SkillCatalog(styles=("available_skills",), distractors=(0, 0)), rec, 1)
    assert applied and out["messages"][0]["content"] != rec["messages"][0]["content"]
    assert "<name>\nskill-creator\n</name>" in out["messages"][0]["content"]
    assert sorted(S.find_catalog(out, locate(out).prompt).entries) == sorted(cat.entries)


def test_stats_report_prompt_coverage_on_real_prompts(tmp_path):
    """hsa stats says how many variants kept the source's prompt word for word and on how many sources each
    transform fired: on the fourteen real prompts with the prompt recipe, fewer than half of the variants keep
    their prompt (before: 33 of 56, and paraphrase fired on none)."""
    from hsa import augment
    from hsa.recipes import load_recipe
    from hsa.stats import compute_stats, render_text

    manifest = augment([PROMPTS], tmp_path / "out", load_recipe("prompt"), variants=4, progress=False)
    stats = compute_stats(tmp_path / "out")
    assert stats["prompt_unchanged_variants"] == manifest["counts"]["prompt_unchanged_variants"]
    assert stats["prompt_unchanged_variants"] < 28  # of 56
    assert stats["transform_sources"]["prompt.paraphrase"] >= 10
    assert "prompt as in the source: " in render_text(stats)
