"""Issue 27 items 2, 7, 8 and issue 33 item 7 on real harnesses: enum values keep their meaning, tool.dialect keeps
every field a dialect defines, distractor tools and skills look like their neighbours and are refused when near."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from hsa.invariants import check_variant
from hsa.names import split_words
from hsa.recipes import load_recipe, recipe_from_dict, recipe_to_dict
from hsa.records import normalize
from hsa.renames import canonicalize, with_restore
from hsa.step_schemas import node_at
from hsa.transform import run
from tests.mcp_calls import all_with_calls, with_calls
from transforms.tool import Values
from transforms.tool_functional import string_enum


def _leaf(tree: dict, name: str) -> dict:
    """The first leaf named ``name`` of a recipe tree (as :func:`recipe_to_dict` writes it)."""
    if tree.get("transform") == name:
        return tree
    for child in [tree.get("child"), *(tree.get("transforms") or ())]:
        if isinstance(child, dict):
            found = _leaf(child, name)
            if found:
                return found
    return {}


def _value_changes(record: dict, variant: dict) -> list[tuple[str, str, str, list]]:
    """(tool as of the step, old, new, path) of every enum value a variant's own steps changed."""
    steps = variant["mapping"][len(record["mapping"]):]
    return [(s["tool"], old, new, s["path"]) for s in steps if s["op"] == "values" and s.get("texts", True)
            for old, new in s["map"]]


# --------------------------------------------------------------------------- item 2: values


def test_default_recipe_restyles_enum_values_and_never_masks_them():
    """The default recipe's tool.values changes case and separators only: every new value has the old one's words.

    Before: its styles were screaming, camel, kebab and mask, so 43 of 98 changed values on the nine servers were
    random strings (response-body -> lYNFw2LY) that nothing explained."""
    config = dict(_leaf(recipe_to_dict(load_recipe("default"))["transform"], "tool.values"))
    assert config, "the default recipe has a tool.values leaf"
    config["p"] = 1.0
    t = recipe_from_dict({"__version__": 1, "transform": config})
    changed = 0
    for raw in all_with_calls():
        record = normalize(raw)
        for seed in range(12):
            variant = run(t, record, random.Random(seed))[0]
            for tool, old, new, _ in _value_changes(record, variant):
                changed += 1
                assert [w.lower() for w in split_words(old)] == [w.lower() for w in split_words(new)], \
                    f"{record['id']} {tool}: {old!r} -> {new!r} is not a restyle"
    assert changed > 50


def test_an_enum_is_restyled_whole_in_one_style():
    """All the values of one enum that change take one style, as when a maintainer restyles an enum.

    Before: each value drew its own style and its own coin, so playwright's browser_network_request ``part``
    read "request-headers" -> "requestHeaders" beside "request-body" -> "REQUEST_BODY"."""
    t = Values(modes=("enum",), p=0.5)
    enums = 0
    for raw in all_with_calls():
        record = normalize(raw)
        for seed in range(12):
            variant = run(t, record, random.Random(seed))[0]
            by_enum: dict[tuple, set[str]] = {}
            for tool, old, new, path in _value_changes(record, variant):
                if old.lower() != new.lower() or len(split_words(old)) > 1:  # a style is visible in the value
                    by_enum.setdefault((tool, tuple(path)), set()).add(_style_of(new))
            for key, styles in by_enum.items():
                enums += 1
                assert len(styles - {"lower"}) <= 1, f"{record['id']} {key}: values restyled in {styles}"
    assert enums > 10


def _style_of(value: str) -> str:
    if "-" in value:
        return "kebab"
    if "_" in value:
        return "screaming" if value.isupper() else "snake"
    if value.isupper():
        return "screaming"
    if value[:1].isupper():
        return "pascal"
    return "camel" if any(c.isupper() for c in value) else "lower"


def test_masked_values_are_explained_in_the_parameter_description_in_enum_order():
    """Masking, when asked, explains every masked value where its parameter is described, listing the enum in order.

    Before: a masked value ("response-body" -> "lYNFw2LY") appeared in the enum with nothing saying what it
    meant, and a masked log level lost its place among error, warning, info, debug."""
    record = normalize(with_calls("playwright"))
    explained = 0
    for seed in range(8):
        variant, applied, _ = run(Values(modes=("enum",), styles=("mask",), p=1.0), record, random.Random(seed))
        assert check_variant(record, variant) == []
        assert canonicalize(variant)["tools"] == record["tools"]
        tools = {t["name"]: t for t in variant["tools"]}
        for tool, old, new, path in _value_changes(record, variant):
            schema = tools[tool]["parameters"]
            prop = tuple(path[:-1]) if path[-1] == "[]" else tuple(path)
            enum = string_enum(node_at(schema, tuple(path)))
            desc = node_at(schema, prop)["description"]
            desc = desc[desc.index("must be one of "):]  # the explanation: the last sentence
            assert f'"{new}" ({old})' in desc, f"{tool}.{path}: {new!r} is not explained in {desc!r}"
            listed = [v for v in enum if f'"{v}"' in desc]
            assert listed == enum and [desc.index(f'"{v}"') for v in enum] == sorted(desc.index(f'"{v}"') for v in enum)
            explained += 1
    assert explained > 20


def test_masked_log_level_keeps_its_rank_in_the_listing():
    """playwright's console level (error < warning < info < debug) lists the masked level where it ranks."""
    record = normalize(with_calls("playwright"))
    params = {"steps": [{"op": "values", "tool": "browser_console_messages", "path": ["level"],
                         "map": [["warning", "GRplb"]], "texts": True}],
              "explain": [{"tool": "browser_console_messages", "path": ["level"], "map": [["warning", "GRplb"]]}]}
    variant = Values(styles=("mask",)).apply(record, params)
    level = next(t for t in variant["tools"] if t["name"] == "browser_console_messages")["parameters"]["properties"]["level"]
    assert level["enum"] == ["error", "GRplb", "info", "debug"]
    assert level["description"].endswith('The value must be one of "error", "GRplb" (warning), "info", "debug".')
    call = next(c for m in variant["messages"] for c in m.get("tool_calls") or ()
                if c["function"]["name"] == "browser_console_messages")
    assert call["function"]["arguments"] == {"level": "GRplb"}
    assert check_variant(record, with_restore(record, variant)) == []


def test_phrase_values_keep_their_spelling():
    """everything's city enum (New York, Chicago, Los Angeles) is never restyled into newYork or los_angeles."""
    record = normalize(with_calls("everything"))
    for seed in range(10):
        variant = run(Values(modes=("enum",), p=1.0), record, random.Random(seed))[0]
        assert not [(old, new) for _, old, new, _ in _value_changes(record, variant) if " " in old]


# --------------------------------------------------------------------------- item 7: dialects


def _anthropic(raw: dict) -> dict:
    """``raw``'s MCP tools as Anthropic ``ToolParam`` s, as a harness on the Messages API writes them: the last with
    a cache breakpoint, strict tools with input examples."""
    out = json.loads(json.dumps(raw))
    tools = []
    for i, t in enumerate(raw["tools"]):
        a = {"name": t["name"], "description": t.get("description", ""), "input_schema": t["inputSchema"]}
        if i == 0:
            a["input_examples"] = [{}] if not t["inputSchema"].get("required") else []
            a["defer_loading"] = False
        if i == len(raw["tools"]) - 1:
            a["cache_control"] = {"type": "ephemeral"}
        tools.append(a)
    out["tools"] = tools
    out["id"] += "-anthropic"
    return out


def test_dialect_never_converts_a_record_into_its_own_dialect():
    """An MCP record is never "converted" to MCP (before: MCP was drawn for MCP records, and its only change was
    that execution went missing: 590 fields lost in 972 variants of the nine servers)."""
    from transforms.tool import Dialect

    t = Dialect(targets=("openai", "anthropic", "mcp"))
    for raw in all_with_calls():
        for rec in (normalize(raw), normalize(_anthropic(raw))):
            own = {x["dialect"] for x in rec["tools"]}
            for seed in range(6):
                params = t.sample(rec, random.Random(seed))
                assert {params["target"]} != own, f"{rec['id']}: converted into its own dialect {own}"


def test_conversion_keeps_every_field_the_target_defines_and_canonicalize_gives_back_the_rest():
    """Fields a target defines survive (MCP execution and icons into MCP, Anthropic strict into OpenAI, MCP
    outputSchema into Gemini's responseJsonSchema); the others are noted and come back on canonicalize."""
    from transforms.tool import Dialect, convert_tool

    raw = with_calls("everything")
    raw["tools"][0]["icons"] = [{"src": "https://example.com/echo.png", "mimeType": "image/png", "sizes": ["48x48"]}]
    raw["tools"][0]["_meta"] = {"com.example/owner": "demo"}
    record = normalize(raw)
    tool = record["tools"][0]
    same, dropped = convert_tool(tool, "mcp")
    assert same == tool and dropped == []  # before: execution and icons were dropped
    from hsa.tool_dialects import DIALECT_FIELDS  # imported here, so that main's code fails on the line above

    for target in ("openai", "anthropic", "gemini"):
        out, dropped = convert_tool(tool, target)
        assert set(out["extra"]) <= DIALECT_FIELDS[target]
        assert set(dropped) | set(out["extra"]) >= set(tool["extra"]) - {"outputSchema"}
    gem, _ = convert_tool(next(t for t in record["tools"] if "outputSchema" in t["extra"]), "gemini")
    assert "responseJsonSchema" in gem["extra"]
    strict = dict(tool, dialect="anthropic", extra={"strict": True, "cache_control": {"type": "ephemeral"}})
    assert convert_tool(strict, "openai")[0]["extra"] == {"strict": True}
    for source in (record, normalize(_anthropic(raw))):
        for seed in range(4):
            variant, applied, _ = run(Dialect(), source, random.Random(seed))
            assert applied and check_variant(source, variant) == []
            assert canonicalize(variant)["tools"] == source["tools"]
            lost = {k for a, b in zip(source["tools"], variant["tools"]) for k in a["extra"]
                    if k not in b["extra"] and k in DIALECT_FIELDS[b["dialect"]]}
            assert not lost, f"{variant['tools'][0]['dialect']} defines {lost} but the variant lost them"
            assert any("canonicalize gives them back" in n for n in variant["notes"])


# --------------------------------------------------------------------------- item 8: distractor tools


def _added(record: dict, variant: dict) -> list[dict]:
    names = {t["name"] for t in record["tools"]}
    return [t for t in variant["tools"] if t["name"] not in names]


def _keys(tool: dict) -> set[str]:
    keys = set(tool["extra"]) - {"__no_schema__"}
    return keys | ({"inputSchema.$schema"} if "$schema" in tool["parameters"] else set())


@pytest.mark.parametrize("server", ["everything", "filesystem", "playwright", "git", "time"])
def test_distractor_tools_have_every_key_and_the_naming_style_of_their_neighbours(server):
    """A distractor carries each field every real tool has (title, annotations, execution, outputSchema, $schema)
    and their naming style (kebab beside kebab). Before: 622 of 677 distractors on the nine servers lacked a key
    every neighbour had, and 73 were snake_case beside kebab-case or camelCase names."""
    from transforms._toolnames import detect_style
    from transforms.tool import Distractors

    record = normalize(with_calls(server))
    common = set.intersection(*(_keys(t) for t in record["tools"]))
    styles = {detect_style(t["name"]) for t in record["tools"] if len(split_words(t["name"])) > 1}
    seen = 0
    for seed in range(10):
        variant, applied, _ = run(Distractors(n=(1, 3)), record, random.Random(seed))
        if not applied:
            continue
        assert check_variant(record, variant) == []
        assert canonicalize(variant)["tools"] == record["tools"]
        for t in _added(record, variant):
            seen += 1
            assert common <= _keys(t), f"{t['name']} lacks {common - _keys(t)}"
            if len(styles) == 1 and len(split_words(t["name"])) > 1:
                assert detect_style(t["name"]) in styles, f"{t['name']} beside {styles} names"
    assert seen


def test_distractors_join_a_namespace_with_a_prefix_naming_their_own_server():
    """Beside mcp__filesystem__* tools a distractor is mcp__<its server>__<name>, never a bare name."""
    from transforms.tool import Distractors

    raw = with_calls("filesystem")
    renamed = {t["name"]: f"mcp__filesystem__{t['name']}" for t in raw["tools"]}
    text = json.dumps(raw)
    for old, new in sorted(renamed.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(f'"{old}"', f'"{new}"')
    record = normalize(json.loads(text))
    for seed in range(5):
        variant, applied, _ = run(Distractors(n=(1, 2)), record, random.Random(seed))
        for t in _added(record, variant):
            assert t["name"].startswith("mcp__") and not t["name"].startswith("mcp__filesystem__"), t["name"]
            assert check_variant(record, variant) == []


def test_weather_forecast_distractor_is_refused_beside_a_tool_whose_output_is_the_weather():
    """everything's get-structured-content returns temperature and "Weather conditions" (its outputSchema) for a
    city enum: relevance reads output schemas and enums, so get_weather_forecast is near it and never drawn.
    Before, relevance read neither output schemas nor a candidate's name words in the real tool (0.21: far)."""
    from transforms._banks import load_banks
    from transforms._domains import RELEVANCE_THRESHOLD, relevance
    from transforms.tool import Distractors

    record = normalize(with_calls("everything"))
    weather = next(t for t in load_banks(())["tools"] if t["name"] == "get_weather_forecast")
    real = next(t for t in record["tools"] if t["name"] == "get-structured-content")
    assert relevance(weather, real) >= RELEVANCE_THRESHOLD
    for seed in range(30):
        variant, _, _ = run(Distractors(n=(3, 3)), record, random.Random(seed))
        assert not any("weather" in t["name"] for t in _added(record, variant))


# --------------------------------------------------------------------------- issue 33 item 7: distractor skills

SKILLS_RECORDS = Path(__file__).resolve().parent.parent / "fixtures" / "harnesses" / "skills-structure" / "records.jsonl"
LIVE = Path(__file__).resolve().parent.parent / "fixtures" / "livestream" / "trajectories.jsonl"

#: A pdf skill written for this test (the public pdf skill's licence does not allow copying it): what such a
#: skill covers, form filling included.
PDF = {"name": "pdf", "description": "Work with PDF files: extract text and tables, create new PDFs, merge and split "
       "documents, and fill in PDF forms. Use when the user gives a .pdf file or asks for one.",
       "content": "# PDF\n\n## Forms\nFill a form with `python scripts/fill_form.py in.pdf data.json out.pdf`.\n"}


def _agent_skills(extra: dict | None = None) -> dict:
    """The Agent Skills catalogue record (fixtures/harnesses/skills-structure), with ``extra`` added to its skills
    and to its <available_skills> block."""
    raw = json.loads(SKILLS_RECORDS.read_text(encoding="utf-8").splitlines()[0])
    if extra:
        raw["skills"] = raw["skills"] + [extra]
        entry = (f"  <skill>\n    <name>{extra['name']}</name>\n    <description>{extra['description']}</description>\n"
                 f"    <location>skills/{extra['name']}/SKILL.md</location>\n  </skill>\n")
        system = raw["messages"][0]["content"]
        raw["messages"][0]["content"] = system.replace("</available_skills>", entry + "</available_skills>")
    return raw


def _added_skills(record: dict, variant: dict) -> list[dict]:
    names = {s["name"] for s in record.get("skills") or ()}
    return [s for s in variant.get("skills") or () if s["name"] not in names]


def test_distractor_skills_come_from_the_harness_domain():
    """A live-commerce catalogue gets live-commerce or retail distractors, never git_commit_message or poem_writing;
    the coding catalogue of Agent Skills gets coding ones. Before: 282 of 287 distractors were off-domain."""
    from transforms._domains import domain_applies, harness_domain
    from transforms.skill import SkillCatalog
    from transforms.skill_functional import load_distractors

    domains = {d["name"]: d.get("domain") for d in load_distractors()}
    t = SkillCatalog(distractors=(2, 2))
    lines = LIVE.read_text(encoding="utf-8").splitlines()[:6]
    seen = 0
    for raw in [json.loads(x) for x in lines] + [_agent_skills()]:
        record = normalize(raw)
        domain = harness_domain(record)
        assert domain in ("live_commerce", "coding")
        for seed in range(4):
            variant, applied, _ = run(t, record, random.Random(seed))
            for s in _added_skills(record, variant):
                seen += 1
                own = domains.get("_".join(split_words(s["name"])))
                assert own is not None and own != "general" and domain_applies(own, domain), \
                    f"{s['name']} ({own}) in a {domain} catalogue"
    assert seen >= 20


def test_a_distractor_skill_never_overlaps_a_real_skill(tmp_path):
    """pdf_form_filling is never added beside pdf, whose description already covers filling PDF forms."""
    from transforms.skill import SkillCatalog

    bank = tmp_path / "pdf_form_filling.yaml"  # a user's bank file: its skill states no domain, so it may join any
    bank.write_text("skills:\n  - name: pdf_form_filling\n    description: Fill in PDF forms from structured data.\n"
                    "    content: \"# PDF form filling\"\n", encoding="utf-8")
    record = normalize(_agent_skills(PDF))
    t = SkillCatalog(distractors=(2, 2), banks=(str(bank),))
    for seed in range(12):
        variant, _, _ = run(t, record, random.Random(seed))
        assert "pdf-form-filling" not in {s["name"] for s in _added_skills(record, variant)}
    from transforms._skillpool import near_skill  # imported here, so that main's code fails on the loop above

    form_filling = {"name": "pdf_form_filling", "description": "Fill in PDF forms from structured data.",
                    "content": "# PDF form filling\n\n## Steps\n1. List the form fields.\n"}
    assert near_skill(form_filling, [PDF]) == "pdf"


def test_distractor_skill_descriptions_are_as_long_as_their_neighbours():
    """Beside Agent Skills' 200-450-character descriptions a distractor's is within half to twice their median
    (before: 40-60 characters); beside the live room's one-liners it is a one-liner."""
    import statistics

    from transforms.skill import SkillCatalog

    t = SkillCatalog(distractors=(2, 2))
    for raw in (_agent_skills(), json.loads(LIVE.read_text(encoding="utf-8").splitlines()[0])):
        record = normalize(raw)
        median = statistics.median(len(s["description"]) for s in record["skills"])
        for seed in range(4):
            variant, _, _ = run(t, record, random.Random(seed))
            assert check_variant(record, variant) == []
            for s in _added_skills(record, variant):
                assert 0.5 <= len(s["description"]) / median <= 2.0, (s["name"], len(s["description"]), median)
                assert set(s) == {"name", "description", "content"}



# --------------------------------------------------------------------------- tool.nest: one container word


def test_nest_groups_a_variants_parameters_under_one_neutral_word():
    """tool.nest names its new objects with one word per variant, a word that says nothing of what they do.

    Before: each tool drew its own word, so one git server read options.repoPath, details.repoPath, spec.target,
    criteria.branchName and config.revision side by side, and browser_tabs' action became criteria.action."""
    from transforms.tool import Nest

    t = Nest(p=1.0)
    variants = 0
    for raw in all_with_calls():
        record = normalize(raw)
        for seed in range(8):
            variant = run(t, record, random.Random(seed))[0]
            steps = variant["mapping"][len(record["mapping"]):]
            words = {split_words(s["container"]["path"][-1])[0].lower() for s in steps if s.get("kind") == "regroup"}
            if len(steps) < 2:
                continue
            variants += 1
            assert not words & {"criteria", "filters"}, f"{record['id']} seed {seed}: {words}"
            assert len(words) == 1, f"{record['id']} seed {seed}: containers {words}"
    assert variants > 20
