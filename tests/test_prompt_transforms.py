"""Before/after tests of the prompt family, the canonical form, and records without a prompt."""

from __future__ import annotations

import json
import random

import pytest

from hsa.pipeline import augment
from hsa.prompt_model import check_sync, locate, render, system_sections
from hsa.records import normalize
from hsa.transform import Skip, run
from hsa.invariants import calls_of, check_variant
from transforms import prompt as P
from transforms.phrasebank import BankError, load_bank


def _rec(raw: dict) -> dict:
    return normalize(json.loads(json.dumps(raw)))


def with_tools_section(raw: dict, fmt: str = "json", placement: str | None = None) -> dict:
    """A fixture record whose prompt also renders its tools (as harnesses that list tools in the prompt do)."""
    rec = _rec(raw)
    body = P.render_tools(rec["tools"], fmt)
    assert body is not None
    sec = {"id": "tools", "title": "Tools", "body": body, "movable": True}
    if placement:
        sec["placement"] = placement
    rec["prompt"]["sections"].insert(3, sec)
    rec["messages"][0]["content"] = render(rec["prompt"]["template"], system_sections(rec["prompt"]))
    assert check_sync(rec) is None
    return rec


def _run(t, rec, seed=0):
    out, applied, skipped = run(t, rec, random.Random(seed))
    return out, applied, skipped


def _assert_preserved(source, variant):
    """Invariants that every prompt transform keeps: calls, verification, sync, canonical form."""
    assert calls_of(variant) == calls_of(source)
    assert check_variant(source, variant) == []
    assert check_sync(variant) is None
    assert P.canonical_prompt(variant) == P.canonical_prompt(source)


# --------------------------------------------------------------------------- prompt.reorder


def test_reorder_moves_only_movable_sections(fixture_records):
    """prompt.reorder permutes room/products/skills/rules; persona stays first and output last."""
    rec = _rec(fixture_records[0])
    out, applied, _ = _run(P.PromptReorder(), rec, seed=3)
    order = applied[0].params["order"]
    assert order[0] == "persona" and order[-1] == "output" and order != [s["id"] for s in rec["prompt"]["sections"]]
    assert [s["id"] for s in out["prompt"]["sections"]] == order
    system = out["messages"][0]["content"]
    assert [system.index(f"<{sid}>") for sid in order] == sorted(system.index(f"<{sid}>") for sid in order)
    _assert_preserved(rec, out)


def test_reorder_refuses_to_move_a_fixed_section(fixture_records):
    """apply checks that fixed sections keep their index."""
    rec = _rec(fixture_records[0])
    ids = [s["id"] for s in rec["prompt"]["sections"]]
    with pytest.raises(ValueError, match="'persona' is fixed"):
        P.PromptReorder().apply(rec, {"order": ids[1:2] + ids[:1] + ids[2:]})


# --------------------------------------------------------------------------- prompt.delimiters


def test_delimiters_before_after():
    """An XML-tagged prompt becomes [BEGIN OF X] blocks; sections unchanged, template replaced."""
    rec = _rec({"id": "d", "tools": [], "messages": [
        {"role": "system", "content": "<role>\nA host.\n</role>\n\n<rules>\nBe brief.\n</rules>\n"},
        {"role": "user", "content": "hi"}]})
    t = P.PromptDelimiters(styles=("bracket",))
    out, applied, _ = _run(t, rec)
    assert out["messages"][0]["content"] == ("[BEGIN OF ROLE]\nA host.\n[END OF ROLE]\n\n"
                                             "[BEGIN OF RULES]\nBe brief.\n[END OF RULES]\n")
    assert [s["body"] for s in out["prompt"]["sections"]] == ["A host.", "Be brief."]
    _assert_preserved(rec, out)


@pytest.mark.parametrize("style", ["markdown", "xml", "bracket", "caps", "caps_colon", "caps_line"])
def test_every_delimiter_style_applies_to_fixtures(fixture_records, style):
    """Each style renders the fixture prompts (from any of their three templates) and keeps the invariants."""
    t = P.PromptDelimiters(styles=(style,))
    applied = 0
    for i in range(0, 300, 37):
        rec = _rec(fixture_records[i])
        out, a, skipped = _run(t, rec, seed=i)
        applied += bool(a)
        _assert_preserved(rec, out)
    assert applied >= 6


def test_delimiters_leave_templates_with_their_own_text():
    """A template that adds words of its own is not replaced (they would be lost)."""
    rec = _rec({"id": "d", "tools": [], "prompt": {
        "sections": [{"id": "a", "title": "A", "body": "x"}],
        "template": "You are a bot.\n{% for s in sections %}{{ s.body }}{% endfor %}"},
        "messages": [{"role": "system", "content": "You are a bot.\nx"}, {"role": "user", "content": "hi"}]})
    out, applied, skipped = _run(P.PromptDelimiters(), rec)
    assert not applied and skipped == [("prompt.delimiters", "the template has text of its own beyond section delimiters")]
    assert out == rec


# --------------------------------------------------------------------------- prompt.titles


def test_titles_keep_case_style(fixture_records):
    """Titles are replaced by bank synonyms in the original's case (Markdown template: sentence case)."""
    raw = next(r for r in fixture_records if r["prompt"]["template"].startswith("{% for s in sections %}## "))
    rec = _rec(raw)
    out, applied, _ = _run(P.PromptTitles(p=1.0), rec, seed=1)
    bank = load_bank("prompt_titles")
    for old, new in zip(rec["prompt"]["sections"], out["prompt"]["sections"]):
        assert new["title"] != old["title"]
        assert bank.group_of(new["title"]) == bank.group_of(old["title"])
        assert new["title"][0].isupper() and new["title"][1:] == new["title"][1:].lower()  # sentence case kept
        assert f"## {new['title']}\n" in out["messages"][0]["content"]
    _assert_preserved(rec, out)


def test_titles_skip_when_the_template_shows_no_titles(fixture_records):
    """With the XML template (ids as tags) a title change would be invisible: skipped with that reason."""
    raw = next(r for r in fixture_records if r["prompt"]["template"].startswith("{% for s in sections %}<"))
    out, applied, skipped = _run(P.PromptTitles(p=1.0), _rec(raw))
    assert skipped == [("prompt.titles", "the template does not render section titles")]


def test_titles_follow_xml_title_tags(fixture_records):
    """After delimiters switch to XML tags named by titles, a title change renames the tag."""
    rec = _rec(fixture_records[0])
    rec, _, _ = _run(P.PromptDelimiters(styles=("xml",), xml_tags=("title",)), rec)
    assert "<room_context>" in rec["messages"][0]["content"]
    out, applied, _ = _run(P.PromptTitles(p=1.0), rec, seed=2)
    new = {s["id"]: s["title"] for s in out["prompt"]["sections"]}
    assert f"<{new['room'].lower().replace(' ', '_')}>" in out["messages"][0]["content"]
    _assert_preserved(rec, out)


# --------------------------------------------------------------------------- prompt.paraphrase


def test_paraphrase_before_after():
    """Bank phrasings are swapped for equivalent ones, slots carried across; other text untouched."""
    text = ("## Rules\n- Never state a price, stock level or delivery time that no tool returned.\n"
            "- Resolve link numbers with `get_item`.\n- Keep calm.\n")
    rec = _rec({"id": "p", "tools": [], "messages": [{"role": "system", "content": text},
                                                      {"role": "user", "content": "hi"}]})
    out, applied, _ = _run(P.PromptParaphrase(p=1.0), rec, seed=4)
    new = out["messages"][0]["content"]
    assert "- Keep calm.\n" in new and "`get_item`" in new
    assert "Never state a price, stock level or delivery time that no tool returned." not in new
    assert "Resolve link numbers with `get_item`." not in new
    _assert_preserved(rec, out)


def test_paraphrase_leaves_catalogues_alone(fixture_records):
    """The skill catalogue is harness data: its descriptions are never paraphrased."""
    for i in range(0, 300, 50):
        rec = _rec(fixture_records[i])
        out, applied, _ = _run(P.PromptParaphrase(p=1.0), rec, seed=i)
        assert "skills" not in applied[0].params["sections"]
        _assert_preserved(rec, out)


def test_user_phrase_bank_extends_the_builtin(tmp_path):
    """A user YAML file adds phrasing groups; a bad file fails when the transform is built, naming the problem."""
    bank = tmp_path / "mine.yaml"
    bank.write_text("version: 1\ngroups:\n  - id: greet\n    phrasings: [Greet the user., Say hello to the user.]\n")
    t = P.PromptParaphrase(p=1.0, banks=(str(bank),))
    rec = _rec({"id": "b", "tools": [], "messages": [{"role": "system", "content": "## Task\nGreet the user.\n"},
                                                      {"role": "user", "content": "hi"}]})
    out, applied, _ = _run(t, rec)
    assert out["messages"][0]["content"] == "## Task\nSay hello to the user.\n"
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\ngroups:\n  - id: x\n    phrasings: [Only one.]\n")
    with pytest.raises(ValueError, match="at least two phrasings"):
        P.PromptParaphrase(banks=(str(bad),))
    dup = tmp_path / "dup.yaml"
    dup.write_text("version: 1\ngroups:\n  - id: host-intro\n    phrasings: [A b., C d.]\n")
    with pytest.raises(ValueError, match="more than once"):
        P.PromptParaphrase(banks=(str(dup),))


@pytest.mark.parametrize("phrasings,msg", [
    (["Call {a} now.", "Use {b} now."], "different placeholders"),
    (["Never call {a} now.", "Do not call {a} now."], "drops a negation 'never'"),
    (["Quote times only from {a}.", "Times come only from {a}."], "instructions instead of"),
    (["Reply in at most {n} characters, no lists.", "Reply in at most {n} characters, without lists."],
     "drops a negation 'no'"),
    (["Call { now.", "Use now."], "unbalanced brace"),
])
def test_bank_errors_say_what_to_fix(tmp_path, phrasings, msg):
    """Bank files with unusable phrasings are refused with the reason, phrasings that break the meaning contract
    too (a negation swapped, an instruction turned into a statement)."""
    f = tmp_path / "b.yaml"
    f.write_text(json.dumps({"version": 1, "groups": [{"id": "g", "phrasings": phrasings}]}))
    with pytest.raises(BankError, match=msg):
        load_bank("prompt_paraphrase", (str(f),))


# --------------------------------------------------------------------------- prompt.tool_format


@pytest.mark.parametrize("fmt", P.TOOL_FORMATS)
def test_tool_format_rerenders_the_tools_section(fixture_records, fmt):
    """A tools section in any format is re-rendered in another; the canonical form (the tools) is unchanged."""
    rec = with_tools_section(fixture_records[5], fmt)
    assert P.find_tool_sections(rec, rec["prompt"]) == [(3, fmt)]
    out, applied, _ = _run(P.PromptToolFormat(), rec, seed=1)
    new = applied[0].params["format"]
    assert new != fmt
    assert out["prompt"]["sections"][3]["body"] == P.render_tools(rec["tools"], new)
    assert P.render_tools(rec["tools"], new) in out["messages"][0]["content"]
    _assert_preserved(rec, out)


def test_tool_formats_before_after():
    """Each format renders one small tool as expected."""
    tool = {"type": "function", "function": {"name": "get_item", "description": "Get an item.", "parameters": {
        "type": "object", "properties": {"item_id": {"type": "integer", "description": "The id"},
                                         "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["item_id"]}}}
    tools = _rec({"messages": [], "tools": [tool]})["tools"]
    assert P.render_tools(tools, "typescript") == (
        "namespace functions {\n\n// Get an item.\ntype get_item = (_: {\n  // The id\n  item_id: number, // integer\n"
        "  tags?: string[],\n}) => any;\n\n} // namespace functions")
    assert P.render_tools(tools, "python") == (
        'def get_item(item_id: int, tags: list[str] | None = None) -> dict:\n    """Get an item.\n\n    Args:\n'
        '        item_id: The id\n    """')
    assert P.render_tools(tools, "markdown") == (
        "| Tool | Description | Parameters |\n| --- | --- | --- |\n"
        "| `get_item` | Get an item. | `item_id` (integer; required): The id<br>`tags` (array of string) |")
    assert P.render_tools(tools, "yaml").startswith("- name: get_item\n  description: Get an item.\n")
    assert json.loads(P.render_tools(tools, "json"))[0]["name"] == "get_item"


def test_tool_format_skips_without_a_tools_section(fixture_records):
    """The fixture prompts do not list tools: the transform skips and says so."""
    out, applied, skipped = _run(P.PromptToolFormat(), _rec(fixture_records[0]))
    assert skipped == [("prompt.tool_format", "no prompt section renders the tools in a known format")]


# --------------------------------------------------------------------------- prompt.placement


def test_placement_moves_the_skill_catalogue_to_the_user_message_and_back(fixture_records):
    """The catalogue leaves the system message for a context message before the first user message, whose text stays
    exactly as written; a second move restores it."""
    raw = next(r for r in fixture_records if not r["hook_events"])
    rec = _rec(raw)
    out, applied, _ = _run(P.PromptPlacement(kinds=("skills",)), rec)
    assert applied[0].params == {"section": "skills", "to": "user"}
    cat = rec["prompt"]["sections"][3]["body"]
    assert cat not in out["messages"][0]["content"]
    assert out["messages"][1] == {"role": "user", "content": "<skills>\n" + cat + "\n</skills>"}
    assert out["messages"][2:] == rec["messages"][1:]
    _assert_preserved(rec, out)
    back, applied, _ = _run(P.PromptPlacement(kinds=("skills",)), out)
    assert applied[0].params == {"section": "skills", "to": "system"}
    assert [m["content"] for m in back["messages"]] == [m["content"] for m in rec["messages"]]


def test_placement_moves_a_tools_section(fixture_records):
    """The tool listing can move too."""
    raw = next(r for r in fixture_records if not r["hook_events"])
    rec = with_tools_section(raw)
    out, applied, _ = _run(P.PromptPlacement(kinds=("tools",)), rec)
    assert applied[0].params == {"section": "tools", "to": "user"}
    assert out["messages"][1]["content"].startswith("<tools>\n[")
    _assert_preserved(rec, out)


def test_placement_keeps_the_user_words_a_hook_judged(fixture_records):
    """A user message that a hook payload quotes stays exactly as written (before: the record was skipped, and other
    records had the catalogue prepended to their user's words); the hook events move with their messages."""
    raw = next(r for r in fixture_records if any(e["message_index"] == 2 for e in r["hook_events"]))
    rec = _rec(raw)
    out, applied, _ = _run(P.PromptPlacement(kinds=("skills",)), rec)
    assert applied and out["messages"][2:] == rec["messages"][1:]
    assert [e["message_index"] for e in out["hook_events"]] == [e["message_index"] + 1 for e in rec["hook_events"]]
    _assert_preserved(rec, out)


# --------------------------------------------------------------------------- records without a prompt


def test_plain_records_are_imported_and_gain_a_prompt(fixture_records):
    """Without a 'prompt' the system message is split; the variant stores the prompt it was rendered from."""
    raw = json.loads(json.dumps(fixture_records[7]))
    del raw["prompt"]
    rec = _rec(raw)
    out, applied, _ = _run(P.PromptReorder(), rec, seed=7)
    assert applied and "prompt" in out and check_sync(out) is None
    assert P.canonical_prompt(out) == P.canonical_prompt(rec)
    assert check_variant(rec, out) == []


def test_unsplittable_records_pass_through_and_are_counted(tmp_path):
    """A system message that cannot be split (content parts, not text): every prompt transform skips, the record is
    copied, the manifest counts it."""
    lines = [json.dumps({"id": f"p{i}", "tools": [], "messages": [
        {"role": "system", "content": [{"type": "text", "text": "You are a helpful assistant."}]},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"}]}) for i in range(3)]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(lines) + "\n")
    from hsa.recipes import load_recipe

    manifest = augment([src], tmp_path / "out", load_recipe("prompt"), variants=2, progress=False)
    assert manifest["counts"]["rows_written"] == 6 and manifest["counts"]["unchanged_variants"] == 6
    reasons = {name: t["skipped"] for name, t in manifest["transforms"].items()}
    assert any("not plain text" in r for r in reasons["prompt.reorder"])


# --------------------------------------------------------------------------- canonical form


def test_canonical_form_sees_content_changes(fixture_records):
    """The canonical form is not blind: editing a body, a title outside the bank or a fixed order changes it."""
    rec = _rec(fixture_records[0])
    base = P.canonical_prompt(rec)
    edited = _rec(fixture_records[0])
    edited["prompt"]["sections"][4]["body"] += "\n- One more rule."
    edited["messages"][0]["content"] = render(edited["prompt"]["template"], edited["prompt"]["sections"])
    assert P.canonical_prompt(edited) != base
    retitled = _rec(fixture_records[0])
    retitled["prompt"]["sections"][1]["title"] = "Weather"
    retitled["messages"][0]["content"] = render(retitled["prompt"]["template"], retitled["prompt"]["sections"])
    assert P.canonical_prompt(retitled) != base
    swapped = _rec(fixture_records[0])
    secs = swapped["prompt"]["sections"]
    secs[0], secs[-1] = secs[-1], secs[0]
    assert P.canonical_prompt(swapped) is None  # the system message no longer renders from the prompt
    swapped["messages"][0]["content"] = render(swapped["prompt"]["template"], secs)
    assert P.canonical_prompt(swapped)["fixed"] != base["fixed"]


def test_canonical_form_is_none_without_a_prompt():
    """A record whose prompt cannot be located has no canonical prompt."""
    rec = _rec({"messages": [{"role": "user", "content": "hi"}], "tools": []})
    assert P.canonical_prompt(rec) is None
    assert isinstance(locate(rec), str)


@pytest.mark.parametrize("cls", [P.PromptReorder, P.PromptDelimiters, P.PromptTitles, P.PromptParaphrase,
                                 P.PromptToolFormat, P.PromptPlacement])
def test_every_prompt_transform_skips_without_a_prompt(cls):
    """No system message and no prompt: a Skip with the reason, never an error."""
    rec = _rec({"messages": [{"role": "user", "content": "hi"}], "tools": []})
    params = cls().sample(rec, random.Random(0))
    assert isinstance(params, Skip) and "no system message" in params.reason
