"""``hsa audit``: every change of a sample of variants as old -> new pairs, grouped by kind."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from hsa.audit import KINDS, audit, changes, format_jsonl, format_text, text_pairs
from hsa.cli import main
from hsa.records import normalize
from hsa.recipes import load_recipe, recipe_from_dict
from hsa.transform import run

MCP = Path(__file__).resolve().parent.parent / "fixtures" / "mcp" / "records.jsonl"


def _mcp(name: str) -> dict:
    for line in MCP.read_text(encoding="utf-8").splitlines():
        raw = json.loads(line)
        if raw["id"] == f"mcp-{name}":
            return raw
    raise KeyError(name)


def _variant(raw: dict, recipe: dict, seed: int = 0) -> tuple[dict, dict]:
    record = normalize(raw)
    t = recipe_from_dict({"__version__": 1, "transform": recipe})
    return record, run(t, record, random.Random(seed))[0]


def test_pairs_follow_the_mapping_for_names_paths_and_values():
    """Tool and parameter renames, a nesting and an enum rename each give their old -> new pair."""
    raw = _mcp("everything")
    record = normalize(raw)
    variant = run(recipe_from_dict({"__version__": 1, "transform": {"transform": "meta.sequence", "transforms": [
        {"transform": "tool.rename", "styles": ["camel"], "p": 1.0},
        {"transform": "tool.values", "modes": ["enum"], "styles": ["screaming"], "p": 1.0},
    ]}}), record, random.Random(0))[0]
    found = changes(record, variant)
    names = {(c.old, c.new) for c in found if c.kind == "tool name"}
    assert ("get-annotated-message", "getAnnotatedMessage") in names
    values = {(c.where, c.old, c.new) for c in found if c.kind == "enum value"}
    assert ("get-annotated-message.messageType", '"error"', '"ERROR"') in values
    assert [c.kind for c in found] == sorted((c.kind for c in found), key=KINDS.index)


def test_nesting_reports_each_moved_parameter_and_nothing_for_children_of_a_renamed_object():
    """A parameter moved into a new object is reported; a child whose only change is its parent's name is not."""
    raw = {"id": "r", "messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {
        "name": "ship", "parameters": {"type": "object", "properties": {
            "address": {"type": "object", "properties": {"city": {"type": "string"}, "zip_code": {"type": "string"}}},
            "fast": {"type": "boolean"}, "note": {"type": "string"}}}}}]}
    record = normalize(raw)
    variant = normalize(raw)
    variant["tools"][0]["parameters"] = {"type": "object", "properties": {
        "Address": {"type": "object", "properties": {"city": {"type": "string"}, "zipCode": {"type": "string"}}},
        "opts": {"type": "object", "properties": {"fast": {"type": "boolean"}, "note": {"type": "string"}}}}}
    variant["mapping"] = [
        {"op": "params", "tool": "ship", "paths": [[["address"], ["Address"]], [["address", "zip_code"], ["Address", "zipCode"]],
                                                   [["fast"], ["opts", "fast"]], [["note"], ["opts", "note"]]]}]
    pairs = [(c.old, c.new) for c in changes(record, variant) if c.kind == "parameter name"]
    assert pairs == [("address", "Address"), ("address.zip_code", "Address.zipCode"), ("fast", "opts.fast"),
                     ("note", "opts.note")]
    assert not [c for c in changes(record, variant) if c.kind in ("added parameter", "removed parameter")]


def test_array_item_parameters_are_reported_only_when_their_own_name_changes():
    """playwright's browser_fill_form fields[].name -> fields[].Name is a pair; fields[].type, whose name is kept, is
    not (before: every item parameter of an array was reported, fields[].type -> fields[].type included)."""
    record = normalize(_mcp("playwright"))
    tool = next(t for t in record["tools"] if t["name"] == "browser_fill_form")
    variant = json.loads(json.dumps(record))
    items = next(t for t in variant["tools"] if t["name"] == "browser_fill_form")["parameters"]["properties"]["fields"]["items"]
    items["properties"]["Name"] = items["properties"].pop("name")
    items["required"] = ["Name" if r == "name" else r for r in items.get("required", [])]
    variant["mapping"] = [*record["mapping"], {"op": "params", "tool": tool["name"],
                                               "paths": [[["fields", "[]", "name"], ["fields", "[]", "Name"]]]}]
    pairs = [(c.old, c.new) for c in changes(record, variant) if c.kind == "parameter name"]
    assert pairs == [("fields[].name", "fields[].Name")]


def test_an_object_nested_inside_array_items_keeps_the_array():
    """memory's create_relations relations[].from -> relations[].Settings.From is a move, and relations itself is
    neither removed nor renamed (before: "relations -> (none)", a removed parameter that was not removed)."""
    record = normalize(_mcp("memory"))
    variant = json.loads(json.dumps(record))
    items = next(t for t in variant["tools"] if t["name"] == "create_relations")["parameters"]["properties"]["relations"]["items"]
    props = items["properties"]
    props["Settings"] = {"type": "object", "properties": {"From": props.pop("from"), "to": props.pop("to")}}
    items["required"] = ["Settings", *(r for r in items.get("required", []) if r not in ("from", "to"))]
    variant["mapping"] = [*record["mapping"], {"op": "params", "tool": "create_relations", "paths": [
        [["relations", "[]", "from"], ["relations", "[]", "Settings", "From"]],
        [["relations", "[]", "to"], ["relations", "[]", "Settings", "to"]]]}]
    found = [(c.kind, c.old, c.new) for c in changes(record, variant) if c.where.startswith("create_relations")]
    assert found == [("parameter name", "relations[].from", "relations[].Settings.From"),
                     ("parameter name", "relations[].to", "relations[].Settings.to")]


def test_a_flattened_object_is_reported_once_and_its_children_as_moves():
    """The live room's get_size_chart body.height_cm -> body_height_cm (a regroup that dissolves body): body is
    "flattened into its parent" (before: an IndexError that stopped hsa audit on the livestream fixture)."""
    raw = {"id": "r", "messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {
        "name": "get_size_chart", "parameters": {"type": "object", "properties": {
            "product_id": {"type": "string"},
            "body": {"type": "object", "description": "The viewer's measurements.", "properties": {
                "height_cm": {"type": "number"}, "weight_kg": {"type": "number"}}}}}}}]}
    record = normalize(raw)
    variant = normalize(raw)
    variant["tools"][0]["parameters"] = {"type": "object", "properties": {
        "product_id": {"type": "string"}, "body_height_cm": {"type": "number"}, "body_weight_kg": {"type": "number"}}}
    variant["mapping"] = [{"op": "params", "tool": "get_size_chart", "kind": "regroup",
                           "paths": [[["body", "height_cm"], ["body_height_cm"]], [["body", "weight_kg"], ["body_weight_kg"]]],
                           "container": {"path": ["body"], "schema": {"type": "object"}, "required": False}}]
    found = [(c.kind, c.old, c.new) for c in changes(record, variant)]
    assert found == [("parameter name", "body", "(flattened into its parent)"),
                     ("parameter name", "body.height_cm", "body_height_cm"),
                     ("parameter name", "body.weight_kg", "body_weight_kg"),
                     ("description", "The viewer's measurements.", "")]


def test_added_tools_and_shortened_descriptions_are_listed():
    """A distractor is an added tool; a shortened description gives the dropped sentence as its old side."""
    record, variant = _variant(_mcp("git"), {"transform": "meta.sequence", "transforms": [
        {"transform": "tool.distractors", "n": 2},
        {"transform": "tool.describe", "p": 1.0, "modes": ["shorten"]}]})
    found = changes(record, variant)
    added = [c for c in found if c.kind == "added tool"]
    assert len(added) == 2 and all(c.old == "" and c.new.startswith(c.where) for c in added)
    assert all(c.old != c.new for c in found)


def test_text_pairs_are_sentence_by_sentence():
    """A long text's change is reported as the changed sentence, not the whole text."""
    old = "Read a file. " * 20 + "Use the 'head' parameter to read the first lines."
    new = "Read a file. " * 20 + "Use the 'Head' parameter to read the first lines."
    assert text_pairs(old, new) == [("Use the 'head' parameter to read the first lines.",
                                     "Use the 'Head' parameter to read the first lines.")]
    assert text_pairs("same", "same") == []


@pytest.fixture(scope="module")
def augmented(tmp_path_factory):
    from hsa.pipeline import augment

    out = tmp_path_factory.mktemp("audit") / "out"
    augment([str(MCP)], out, load_recipe("tools"), variants=3, seed=1, progress=False)
    return out


def test_sample_is_deterministic_and_the_same_on_a_folder_and_its_export(augmented, tmp_path, capsys):
    """The same seed reads the same variants with the same pairs from the folder and from its JSONL export."""
    a = audit(augmented, sample=4, seed=3)
    b = audit(augmented, sample=4, seed=3)
    c = audit(augmented, sample=4, seed=4)
    assert a.read == b.read and a.changes == b.changes and len(a.read) == 4
    assert a.read != c.read
    exported = tmp_path / "rows.jsonl"
    assert main(["export", str(augmented), "--out", str(exported)]) == 0
    d = audit(exported, sample=4, seed=3)
    assert d.read == a.read and d.changes == a.changes
    assert a.total == 27


def test_kind_filter_samples_among_variants_that_have_the_kind(augmented):
    """``--kind`` keeps that kind only, and every variant read has at least one such change."""
    r = audit(augmented, sample=3, kinds=["added tool"])
    assert r.read and {c.kind for c in r.changes} == {"added tool"}
    assert set(r.read) == {c.id for c in r.changes}
    with pytest.raises(ValueError, match="unknown kind"):
        audit(augmented, kinds=["tool colour"])


def test_cli_text_and_jsonl(augmented, tmp_path, capsys):
    """``hsa audit`` prints the grouped report, or one labelled-ready JSON object a change."""
    assert main(["audit", str(augmented), "--sample", "2"]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"hsa audit {augmented}: 2 of 27 variants (seed 0)")
    assert "## tool name" in text or "## parameter name" in text  # which the 2 sampled variants hold follows the draws
    out = tmp_path / "labels.jsonl"
    assert main(["audit", str(augmented), "--sample", "2", "--format", "jsonl", "--out", str(out)]) == 0
    rows = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert rows and all(r["meaning_changed"] is None and r["kind"] in KINDS and r["source_id"].startswith("mcp-")
                        for r in rows)
    result = audit(augmented, sample=2)
    assert format_jsonl(result) == out.read_text(encoding="utf-8")
    assert format_text(result) + "\n" == text
    assert main(["audit", str(tmp_path / "nowhere")]) != 0
