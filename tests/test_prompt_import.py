"""The prompt importer and renderer: splitting system messages, delimiter templates, sandboxing, locate/commit."""

from __future__ import annotations

import json

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from hsa.prompt_model import (
    DELIMITER_STYLES,
    PREAMBLE_ID,
    PromptRenderError,
    PromptSite,
    check_sync,
    commit,
    is_structural,
    locate,
    make_template,
    render,
    split_system,
)
from hsa.records import normalize

FIXTURE_TEMPLATES = {
    "markdown": "{% for s in sections %}## {{ s.title }}\n{{ s.body }}\n\n{% endfor %}",
    "xml": "{% for s in sections %}<{{ s.id }}>\n{{ s.body }}\n</{{ s.id }}>\n{% if not loop.last %}\n{% endif %}{% endfor %}",
    "caps": "{% for s in sections %}[{{ s.title | upper }}]\n{{ s.body }}\n{% if not loop.last %}\n{% endif %}{% endfor %}",
}


def _record(system: str, **extra) -> dict:
    return normalize({"id": "r", "messages": [{"role": "system", "content": system},
                                              {"role": "user", "content": "hi"}], "tools": [], **extra})


# --------------------------------------------------------------------------- split_system, before/after


def test_split_markdown_headings():
    """Markdown headings become sections; text before the first heading is a fixed preamble."""
    text = "You are a bot.\n\n## Rules\n- be nice\n- be brief\n\n## Tools\nuse them\n\n## Output\nplain text\n"
    p = split_system(text)
    assert [(s["id"], s["title"], s["body"], s["movable"]) for s in p["sections"]] == [
        (PREAMBLE_ID, "", "You are a bot.", False),
        ("rules", "Rules", "- be nice\n- be brief", False),
        ("tools", "Tools", "use them", True),
        ("output", "Output", "plain text", False)]
    assert render(p["template"], p["sections"]) == text


def test_split_xml_tags():
    """XML blocks become sections named by their tag, with a readable title."""
    text = "<role>\nA helper.\n</role>\n\n<tool_rules>\nCall tools.\n</tool_rules>"
    p = split_system(text)
    assert [(s["id"], s["title"], s["body"]) for s in p["sections"]] == [
        ("role", "Role", "A helper."), ("tool_rules", "Tool rules", "Call tools.")]
    assert render(p["template"], p["sections"]) == text


def test_split_begin_end_blocks():
    """[BEGIN OF X] / [END OF X] blocks (xLAM style) become sections; upper-case titles keep the upper filter."""
    text = ("[BEGIN OF TASK INSTRUCTION]\nAnswer with calls.\n[END OF TASK INSTRUCTION]\n\n"
            "[BEGIN OF FORMAT INSTRUCTION]\nJSON only.\n[END OF FORMAT INSTRUCTION]\n")
    p = split_system(text)
    assert [(s["id"], s["title"]) for s in p["sections"]] == [("task_instruction", "TASK INSTRUCTION"),
                                                             ("format_instruction", "FORMAT INSTRUCTION")]
    assert "| upper" in p["template"]
    assert render(p["template"], p["sections"]) == text


@pytest.mark.parametrize("text", [
    "[PERSONA]\nA host.\n\n[RULES]\nNo lies.\n",
    "PERSONA:\nA host.\n\nRULES:\nNo lies.",
    "PERSONA\nA host.\n\nRULES\nNo lies.\n",
])
def test_split_caps_headers(text):
    """All-caps headers, bracketed, with a colon or alone after a blank line, split the message exactly."""
    p = split_system(text)
    assert [s["title"] for s in p["sections"]] == ["PERSONA", "RULES"]
    assert [s["body"] for s in p["sections"]] == ["A host.", "No lies."]
    assert render(p["template"], p["sections"]) == text


def test_split_ignores_headings_inside_code_fences():
    """A '# comment' inside a fenced code block is body text, not a heading."""
    text = "## Example\n```\n# not a heading\nx = 1\n```\n\n## Notes\nok"
    p = split_system(text)
    assert [s["title"] for s in p["sections"]] == ["Example", "Notes"]
    assert "# not a heading" in p["sections"][0]["body"]


@pytest.mark.parametrize("text,why", [
    ("", "empty"),
    ("  \n\n ", "empty"),
])
def test_split_says_why_it_cannot(text, why):
    """A message that cannot be split yields a reason, not a guess."""
    out = split_system(text)
    assert isinstance(out, str) and why in out


@pytest.mark.parametrize("text,bodies", [
    ("You are a helpful assistant.", ["You are a helpful assistant."]),
    ("## A\nbody\n\n## B\nbody\n\ntrailing words after\n\n\n## C\nx",
     ["## A\nbody", "## B\nbody", "trailing words after\n\n\n## C\nx"]),
    ("Act as an expert.\nBe brief.\n\nIf unsure, ask.\n\n```\na\n\nb\n```\n", ["Act as an expert.\nBe brief.",
                                                                              "If unsure, ask.\n\n```\na\n\nb\n```"]),
])
def test_unstructured_messages_split_into_fixed_paragraphs(text, bodies):
    """A one-sentence or unstructured message becomes untitled, fixed paragraph sections that render it back
    exactly (before: "no section structure", so no prompt transform could apply); blank lines inside a code
    fence or runs of two blank lines do not split."""
    out = split_system(text)
    assert [s["body"] for s in out["sections"]] == bodies
    assert not any(s["movable"] or s["title"] for s in out["sections"])
    assert render(out["template"], out["sections"]) == text


def test_fixture_system_messages_split_into_their_own_sections(fixture_records):
    """Every fixture system message (three template styles) splits into the fixture's section bodies."""
    for raw in fixture_records:
        p = split_system(raw["messages"][0]["content"])
        assert not isinstance(p, str), p
        assert [s["body"] for s in p["sections"]] == [s["body"] for s in raw["prompt"]["sections"]]
        assert [s["movable"] for s in p["sections"]] == [s["movable"] for s in raw["prompt"]["sections"]]


# --------------------------------------------------------------------------- templates

_TITLE = st.text("abcdefghij ", min_size=2, max_size=12).map(str.strip).filter(lambda t: len(t) >= 2)
_BODY = st.lists(st.text("abc xyz-.,:", min_size=1, max_size=20).map(str.strip).filter(bool), min_size=1,
                 max_size=3).map("\n".join)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(DELIMITER_STYLES), st.lists(st.tuples(_TITLE, _BODY), min_size=1, max_size=5),
       st.sampled_from(["\n\n", "\n"]), st.sampled_from(["", "\n", "\n\n"]), st.booleans())
def test_every_delimiter_style_splits_back(style, parts, gap, end, preamble):
    """Sections rendered in any delimiter style (with a preamble, any gap and ending) split back to the same bodies."""
    assume(style != "caps_line" or gap == "\n\n")  # a bare caps line counts as a header only after a blank line
    sections = [{"id": PREAMBLE_ID, "title": "", "body": "Intro text.", "movable": False}] if preamble else []
    for i, (title, body) in enumerate(parts):
        sections.append({"id": f"s_{i}", "title": title.upper() if style != "markdown" else title, "body": body})
    text = render(make_template(style, gap=gap, end=end), sections)
    p = split_system(text)
    assert not isinstance(p, str), (p, text)
    assert [s["body"] for s in p["sections"]] == [s["body"] for s in sections]
    assert render(p["template"], p["sections"]) == text


def test_make_template_rejects_bad_options():
    """Unknown styles and non-newline gaps are refused with the accepted values."""
    with pytest.raises(ValueError, match="markdown, xml"):
        make_template("html")
    with pytest.raises(ValueError, match="newlines"):
        make_template("xml", gap=" | ")
    with pytest.raises(ValueError, match="1-6"):
        make_template("markdown", level=7)


def test_structural_templates():
    """Fixture templates and made templates are structural; one with its own words or a repeated body is not."""
    secs = [{"id": "a", "title": "A", "body": "x"}, {"id": "b", "title": "B", "body": "y"}]
    for t in FIXTURE_TEMPLATES.values():
        assert is_structural(t, secs)
    for style in DELIMITER_STYLES:
        assert is_structural(make_template(style), secs)
    assert not is_structural("You are a bot.\n{% for s in sections %}{{ s.body }}{% endfor %}", secs)
    assert not is_structural("{% for s in sections %}{{ s.body }}{{ s.body }}{% endfor %}", secs)
    assert not is_structural("{{ sections[1].body }}{{ sections[0].body }}", secs)


def test_rendering_is_sandboxed():
    """A template that reaches for Python internals fails with PromptRenderError instead of running."""
    evil = "{{ sections.__class__.__mro__[1].__subclasses__() }}"
    with pytest.raises(PromptRenderError, match="does not render"):
        render(evil, [])
    with pytest.raises(PromptRenderError, match="does not compile"):
        render("{% for %}", [])


# --------------------------------------------------------------------------- locate / commit


def test_locate_prefers_the_records_prompt(fixture_records):
    """A record with a prompt is located as is; without one its system message is imported."""
    rec = normalize(json.loads(json.dumps(fixture_records[0])))
    site = locate(rec)
    assert isinstance(site, PromptSite) and not site.imported and site.system_index == 0 and site.user_index == 1
    del rec["prompt"]
    site = locate(rec)
    assert isinstance(site, PromptSite) and site.imported
    assert [s["body"] for s in site.prompt["sections"]] == [s["body"] for s in fixture_records[0]["prompt"]["sections"]]


@pytest.mark.parametrize("change,reason", [
    (lambda r: r["messages"][0].update(content="edited by hand"), "not the prompt template rendered"),
    (lambda r: r["prompt"].pop("template"), "no template"),
    (lambda r: r["prompt"]["sections"].append(dict(r["prompt"]["sections"][0])), "duplicate section ids"),
])
def test_locate_refuses_a_prompt_out_of_sync(fixture_records, change, reason):
    """A prompt that does not render the system message is not used (transforms skip with this reason)."""
    rec = normalize(json.loads(json.dumps(fixture_records[0])))
    change(rec)
    assert reason in locate(rec)


def test_locate_without_system_message():
    """A record with neither a prompt nor a system message has nothing to split."""
    rec = normalize({"messages": [{"role": "user", "content": "hi"}], "tools": []})
    assert "no system message" in locate(rec)


def test_commit_renders_system_and_a_context_message():
    """commit stores the prompt, re-renders the system message and puts user-placed sections in a context message
    of their own before the user's message, whose text stays exactly as written (before: the sections were
    prepended to it); hook events after it move with their messages."""
    rec = _record("## A\nalpha\n\n## B\nbeta\n")
    rec["hook_events"] = [{"hook": "h", "message_index": 1}]
    site = locate(rec)
    prompt = {**site.prompt, "sections": [dict(s) for s in site.prompt["sections"]]}
    prompt["sections"][1]["placement"] = "user"
    out = commit(rec, site, prompt)
    assert [(m["role"], m["content"]) for m in out["messages"][:3]] == [
        ("system", "## A\nalpha\n"), ("user", "## B\nbeta"), ("user", "hi")]
    assert out["hook_events"] == [{"hook": "h", "message_index": 2}]
    assert check_sync(out) is None and locate(out).user_index == 2 and locate(out).context_index == 1
    assert rec["messages"][1]["content"] == "hi"  # input untouched
    back = dict(prompt, sections=[{k: v for k, v in s.items() if k != "placement"} for s in prompt["sections"]])
    again = commit(out, locate(out), back)
    assert [m["content"] for m in again["messages"]] == [m["content"] for m in rec["messages"]]
    assert again["hook_events"] == rec["hook_events"]


def test_split_keeps_a_blank_line_after_headings_as_layout():
    """'## Skills' + blank line: the body starts at the text, the template holds the blank line (issue 21)."""
    text = "You are a bot.\n\n## Rules\n\nBe nice.\n\n## Skills\n\n- a_b: Do a.\n- c_d: Do c.\n"
    p = split_system(text)
    assert [s["body"] for s in p["sections"]] == ["You are a bot.", "Be nice.", "- a_b: Do a.\n- c_d: Do c."]
    assert render(p["template"], p["sections"]) == text
    mixed = text.replace("## Rules\n\n", "## Rules\n")
    p = split_system(mixed)
    assert p["sections"][2]["body"].startswith("\n- a_b") and render(p["template"], p["sections"]) == mixed
    with pytest.raises(ValueError, match="head must be a run of newlines"):
        make_template("markdown", head="")
