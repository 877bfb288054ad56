"""End to end: hsa augment / export / canonicalize / validate / show on the fixtures and on bad input."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from hsa import Mapping, load_recipe
from hsa.cli import main
from hsa.io import iter_rows
from hsa.pipeline import AugmentError, augment
from tests.conftest import ROOT


def _hash_dir(d: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir()) if p.is_file()}


def test_augment_writes_a_dataset_manifest_and_rejects(tmp_path, small_jsonl):
    """augment writes load_from_disk shards, a manifest with counts and hashes, and a rejects file."""
    import datasets

    out = tmp_path / "out"
    assert main(["augment", str(small_jsonl), "--out", str(out), "--variants", "3", "--seed", "1", "--quiet"]) == 0
    ds = datasets.load_from_disk(str(out))
    assert ds.num_rows == 60
    row = ds[0]
    assert row["id"] == f"{row['source_id']}/1" and row["variant"] == 1
    assert isinstance(row["messages"], list) and isinstance(row["mapping"], dict)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["input_records"] == 20 == manifest["counts"]["sources_written"]
    assert manifest["inputs"][0]["sha256"] == hashlib.sha256(small_jsonl.read_bytes()).hexdigest()
    assert manifest["recipe"]["__version__"] == 1
    assert sum(s["rows"] for s in manifest["shards"]) == 60
    for s in manifest["shards"]:
        assert hashlib.sha256((out / s["file"]).read_bytes()).hexdigest() == s["sha256"]
    assert (out / "rejects.jsonl").read_text() == ""


def test_json_fields_round_trip_exactly(tmp_path, small_jsonl, fixture_records):
    """Rows hold the record's JSON exactly: no keys added by Arrow type unification."""
    out = tmp_path / "out"
    augment([small_jsonl], out, load_recipe("identity"), variants=1, call_arguments="keep")
    rows = list(iter_rows(out))
    for row, src in zip(rows, fixture_records[:20]):
        for key in ("messages", "tools", "skills", "prompt", "hooks", "hook_events", "meta"):
            assert row[key] == src[key], key
        assert json.dumps(row["tools"]) == json.dumps(src["tools"])


def test_determinism_across_workers_and_shard_sizes(tmp_path, small_jsonl):
    """Same input, recipe and seed give byte-identical shards for any worker count and shard size."""
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    recipe = load_recipe("default")
    augment([small_jsonl], a, recipe, variants=2, seed=5, shard_size=7)
    augment([small_jsonl], b, recipe, variants=2, seed=5, shard_size=7, workers=2, batch_size=3)
    augment([small_jsonl], c, recipe, variants=2, seed=5, shard_size=100)
    assert _hash_dir(a) == _hash_dir(b)
    rows_a = [r for r in iter_rows(a)]
    rows_c = [r for r in iter_rows(c)]
    assert rows_a == rows_c
    d = tmp_path / "d"
    augment([small_jsonl], d, recipe, variants=2, seed=6, shard_size=7)
    assert _hash_dir(a) != _hash_dir(d)


def test_identity_recipe_copies_records_unchanged(tmp_path, small_jsonl, fixture_records):
    """With the identity recipe and --call-arguments keep every variant equals its source (invariant 5)."""
    out = tmp_path / "out"
    augment([small_jsonl], out, load_recipe("identity"), variants=2, call_arguments="keep")
    main(["export", str(out), "--out", str(tmp_path / "v.jsonl")])
    for line in (tmp_path / "v.jsonl").read_text().splitlines():
        rec = json.loads(line)
        src = next(r for r in fixture_records if r["id"] == rec["source_id"])
        for k in ("id", "source_id", "variant", "slot", "transforms", "mapping", "notes"):
            rec.pop(k)
        src = {k: v for k, v in src.items() if k != "id"}
        assert rec == src


def test_variants_map_back_to_their_sources(tmp_path, small_jsonl, fixture_records):
    """Every variant's calls, mapped back with its mapping, equal the source's calls (invariant 2)."""
    out = tmp_path / "out"
    augment([small_jsonl], out, load_recipe("default"), variants=3, seed=2)
    by_id = {r["id"]: r for r in fixture_records}
    changed = 0
    for row in iter_rows(out):
        m = Mapping.from_dict(row["mapping"])
        src = by_id[row["source_id"]]
        src_calls = [c["function"] for msg in src["messages"] for c in msg.get("tool_calls") or []]
        var_calls = [c["function"] for msg in row["messages"] for c in msg.get("tool_calls") or []]
        assert len(src_calls) == len(var_calls)
        for s, v in zip(src_calls, var_calls):
            s_args = json.loads(s["arguments"]) if isinstance(s["arguments"], str) else s["arguments"]
            v_args = json.loads(v["arguments"]) if isinstance(v["arguments"], str) else v["arguments"]
            back = m.to_canonical({"name": v["name"], "arguments": v_args})
            assert back == {"name": s["name"], "arguments": s_args}
            changed += v["name"] != s["name"] or v_args != s_args
    assert changed > 0


def test_export_canonicalize_validate_show(tmp_path, small_jsonl, capsys):
    """The documented command sequence works and canonicalize restores the source calls and names."""
    out = tmp_path / "shards"
    assert main(["augment", str(small_jsonl), "--out", str(out), "--variants", "4", "--seed", "0", "--quiet"]) == 0
    assert main(["export", str(out), "--out", str(tmp_path / "variants.jsonl")]) == 0
    assert main(["canonicalize", str(tmp_path / "variants.jsonl"), "--out", str(tmp_path / "back.jsonl")]) == 0
    assert main(["validate", str(tmp_path / "variants.jsonl")]) == 0
    assert main(["validate", str(out)]) == 0
    assert main(["validate", str(tmp_path / "back.jsonl")]) == 0
    src = {json.loads(line)["id"]: json.loads(line) for line in small_jsonl.read_text().splitlines()}
    for line in (tmp_path / "back.jsonl").read_text().splitlines():
        rec = json.loads(line)
        s = src[rec["id"]]
        back_tools = {(t.get("function") or t)["name"] for t in rec["tools"]}
        assert {t["function"]["name"] for t in s["tools"]} <= back_tools  # distractor tools may remain
        calls = [c["function"]["name"] for m in rec["messages"] for c in m.get("tool_calls") or []]
        assert calls == [c["function"]["name"] for m in s["messages"] for c in m.get("tool_calls") or []]
    capsys.readouterr()
    first = json.loads(small_jsonl.read_text().splitlines()[0])["id"]
    assert main(["show", str(out), "--id", f"{first}/2", "--no-color"]) == 0
    shown = capsys.readouterr().out
    assert "--- source" in shown and f"+++ {first}/2" in shown
    assert main(["show", str(out), "--id", f"{first}/99", "--no-color"]) == 2
    assert "no row with id" in capsys.readouterr().err
    assert main(["export", str(out), "--out", "-"]) == 0  # '-' is standard output, not a file named '-'
    assert capsys.readouterr().out == (tmp_path / "variants.jsonl").read_text(encoding="utf-8")


def test_validate_fails_on_a_broken_variant(tmp_path, small_jsonl):
    """validate exits 1 and names the record when a call does not match its schema."""
    rec = json.loads(small_jsonl.read_text().splitlines()[0])
    for m in rec["messages"]:
        for c in m.get("tool_calls") or []:
            if c["function"]["name"] != "load_skill":
                c["function"]["arguments"] = json.dumps({"bogus": 1})
    p = tmp_path / "bad.jsonl"
    p.write_text(json.dumps(rec) + "\n")
    assert main(["validate", str(p)]) == 1


BAD_LINES = [
    (b'{"messages": [', "malformed JSON"),
    (b"[1, 2, 3]", "not an object"),
    (b'{"tools": []}', "missing messages"),
    (b'{"messages": [{"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "nope", "arguments": "{}"}}]}], "tools": []}',
     "undefined tool"),
    (b'{"messages": [{"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{\\"x\\": \\"a\\"}"}}]}], '
     b'"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}}}]}',
     "arguments do not validate"),
    (b'{"messages": [{"role": "user", "content": "caf\xe9"}]}', "not UTF-8"),
]


def test_bad_lines_are_rejected_with_line_numbers_and_the_run_goes_on(tmp_path, fixture_lines):
    """Each bad line goes to rejects.jsonl with its line number and reason; input = written + rejected."""
    lines = [fixture_lines[0].encode()] + [b for b, _ in BAD_LINES] + [fixture_lines[1].encode()]
    p = tmp_path / "mixed.jsonl"
    p.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "out"
    manifest = augment([p], out, load_recipe("default"), variants=2)
    c = manifest["counts"]
    assert c["input_records"] == 8 and c["sources_written"] == 2 and c["rejected"] == 6
    rejects = [json.loads(x) for x in (out / "rejects.jsonl").read_text().splitlines()]
    assert [(r["line"], r["reason"]) for r in rejects] == [(i + 2, reason) for i, (_, reason) in enumerate(BAD_LINES)]
    assert all(r["input"] == str(p) and r["detail"] for r in rejects)


def test_strict_stops_at_the_first_reject(tmp_path, fixture_lines):
    """--strict turns the first bad line into a fatal error naming file and line."""
    p = tmp_path / "mixed.jsonl"
    p.write_text(fixture_lines[0] + "\nnot json\n")
    with pytest.raises(AugmentError, match=r"mixed.jsonl:2: malformed JSON"):
        augment([p], tmp_path / "out", load_recipe("default"), strict=True)
    assert main(["augment", str(p), "--out", str(tmp_path / "o2"), "--strict", "--quiet"]) == 2


def test_empty_and_missing_inputs(tmp_path):
    """An empty file gives an empty dataset; a missing file is a clear error; a full output dir is refused."""
    import datasets

    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    out = tmp_path / "out"
    manifest = augment([empty], out, load_recipe("default"))
    assert manifest["counts"]["input_records"] == 0
    assert datasets.load_from_disk(str(out)).num_rows == 0
    with pytest.raises(AugmentError, match="does not exist"):
        augment([tmp_path / "nope.jsonl"], tmp_path / "o3", load_recipe("default"))
    with pytest.raises(AugmentError, match="not empty"):
        augment([empty], out, load_recipe("default"))
    augment([empty], out, load_recipe("default"), overwrite=True)


def test_duplicate_ids_are_rejected(tmp_path, fixture_lines):
    """A record id seen earlier in the input is rejected, so output ids stay unique."""
    p = tmp_path / "dup.jsonl"
    p.write_text(fixture_lines[0] + "\n" + fixture_lines[0] + "\n")
    manifest = augment([p], tmp_path / "out", load_recipe("default"), variants=1)
    assert manifest["counts"]["rejected"] == 1
    assert manifest["reject_reasons"] == {"duplicate id": 1}


def test_keep_original_and_hold_out(tmp_path, small_jsonl):
    """--keep-original writes variant 0 unchanged; --hold-out tool leaves tool names alone."""
    out = tmp_path / "out"
    assert main(["augment", str(small_jsonl), "--out", str(out), "--variants", "2", "--keep-original",
                 "--hold-out", "tool", "--quiet"]) == 0
    rows = list(iter_rows(out))
    assert len(rows) == 60
    assert [r["variant"] for r in rows[:3]] == [0, 1, 2]
    for r in rows:
        assert r["mapping"]["tools"] == {}
        assert all(t["name"] != "tool.rename" for t in r["transforms"])


def test_cli_help_is_fast_and_lists_commands():
    """`hsa --help` lists the commands without importing heavy libraries."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "hsa.cli", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0
    for cmd in ("augment", "export", "canonicalize", "validate", "show"):
        assert cmd in proc.stdout
    assert "datasets" not in proc.stderr and "pyarrow" not in proc.stderr


@pytest.mark.parametrize("form,kind", [("object", dict), ("string", str)])
def test_call_arguments_are_written_in_one_form(tmp_path, small_jsonl, form, kind):
    """--call-arguments object|string writes every call's arguments in that form (the fixtures mix both), and says so."""
    import datasets

    from hsa.pipeline import AugmentError, augment
    from hsa.recipes import load_recipe

    out = tmp_path / form
    manifest = augment([small_jsonl], out, load_recipe("default"), variants=2, keep_original=True,
                       call_arguments=form)
    assert manifest["call_arguments"] == form
    args = [c["function"]["arguments"] for r in datasets.load_from_disk(str(out)) for m in r["messages"]
            for c in m.get("tool_calls") or ()]
    assert args and all(isinstance(a, kind) for a in args)
    keep = [c["function"]["arguments"] for line in small_jsonl.read_text().splitlines()
            for m in json.loads(line)["messages"] for c in m.get("tool_calls") or ()]
    assert {type(a) for a in keep} == {str, dict}  # the input mixes both forms
    assert main(["validate", str(out)]) == 0
    with pytest.raises(AugmentError, match="--call-arguments must be one of"):
        augment([small_jsonl], tmp_path / "bad", load_recipe("default"), call_arguments="json")


def test_cli_default_writes_call_arguments_as_objects(tmp_path, small_jsonl):
    """`hsa augment` with no --call-arguments writes every call's arguments as an object (issue 16 item 12);
    --call-arguments keep still writes each record's own form."""
    import datasets

    out = tmp_path / "default"
    assert main(["augment", str(small_jsonl), "--out", str(out), "--variants", "1", "--keep-original", "--quiet"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["call_arguments"] == "object"
    args = [c["function"]["arguments"] for r in datasets.load_from_disk(str(out)) for m in r["messages"]
            for c in m.get("tool_calls") or ()]
    assert args and all(isinstance(a, dict) for a in args)
    kept = tmp_path / "keep"
    assert main(["augment", str(small_jsonl), "--out", str(kept), "--variants", "1", "--keep-original", "--quiet",
                 "--call-arguments", "keep"]) == 0
    args = [c["function"]["arguments"] for r in datasets.load_from_disk(str(kept)) for m in r["messages"]
            for c in m.get("tool_calls") or ()]
    assert {type(a) for a in args} == {str, dict}


def test_readme_mapping_example(tmp_path, fixture_lines):
    """The README's mapping snippet gives what its comments say on the README's own augment command."""
    import datasets

    import hsa

    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(fixture_lines[:2]) + "\n", encoding="utf-8")
    assert main(["augment", str(src), "--out", str(tmp_path / "shards"), "--variants", "2", "--seed", "0",
                 "--quiet"]) == 0
    row = datasets.load_from_disk(str(tmp_path / "shards"))[2]
    assert row["id"] == "ls-000002/1"
    m = hsa.Mapping.from_dict(row["mapping"])
    assert m.tool_names()["get_product_info_by_link_id"] == "GetProductInfoByLinkId"
    assert m.to_canonical({"name": "GetProductInfoByLinkId", "arguments": {"link_id": 3}}) == \
        {"name": "get_product_info_by_link_id", "arguments": {"link_id": 3}}


def test_replay_of_a_row_from_its_source_line(tmp_path, fixture_lines):
    """docs/format.md: hsa.replay on the source line as read gives the row's variant."""
    import datasets

    import hsa

    src = tmp_path / "in.jsonl"
    src.write_text(fixture_lines[0] + "\n", encoding="utf-8")
    assert main(["augment", str(src), "--out", str(tmp_path / "shards"), "--variants", "2", "--quiet"]) == 0
    for row in datasets.load_from_disk(str(tmp_path / "shards")):
        variant = hsa.denormalize(hsa.replay(json.loads(fixture_lines[0]), row["transforms"]), call_arguments="object")
        assert variant["tools"] == row["tools"] and variant["messages"] == row["messages"]


def test_failed_variants_are_counted_per_transform_and_family(fixture_lines):
    """A transform that raises is named with the failure; the manifest view sums it into its family."""
    import dataclasses
    from typing import ClassVar

    from hsa.io import InputLine
    from hsa.pipeline import augment_record
    from hsa.transform import Sequence, Transform

    @dataclasses.dataclass(frozen=True)
    class Explode(Transform):
        name: ClassVar[str] = "tool.explode_for_test"
        family: ClassVar[str] = "tool"

        def sample(self, record, rng):
            return {}

        def apply(self, record, params):
            raise ValueError("boom")

    recipe = Sequence([load_recipe("prompt"), Explode()])
    res = augment_record(InputLine("in.jsonl", 1, fixture_lines[0].encode()), recipe, seed=0, variants=3,
                         keep_original=False)
    assert res.stats.variants_failed == 3
    assert res.stats.failed == {("tool.explode_for_test", "transform error: ValueError"): 3}
    view = res.stats.to_dict()
    assert view["transforms"]["tool.explode_for_test"]["failed"] == {"transform error: ValueError": 3}
    assert view["families"]["tool"]["failed"] == 3
    assert res.rejects[0]["reason"] == "transform error: ValueError"


def test_a_byte_order_mark_and_crlf_line_ends_are_read(tmp_path, fixture_lines):
    """A UTF-8 BOM before the first line and Windows line ends give the same rows as the plain file."""
    plain = tmp_path / "plain.jsonl"
    plain.write_text("\n".join(fixture_lines[:3]) + "\n", encoding="utf-8")
    windows = tmp_path / "windows.jsonl"
    windows.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(fixture_lines[:3]).encode() + b"\r\n")
    a = augment([plain], tmp_path / "a", load_recipe("default"), variants=1)
    b = augment([windows], tmp_path / "b", load_recipe("default"), variants=1)
    assert b["counts"]["rejected"] == 0
    assert [s["sha256"] for s in a["shards"]] == [s["sha256"] for s in b["shards"]]


def test_manifest_counts_the_layouts_converted_on_input(tmp_path, fixture_lines):
    """Each record read from another layout is counted under that layout in the manifest and the summary."""
    xlam = {"query": "weather in Oslo?", "tools": [{"name": "w", "description": "weather", "parameters": {
        "city": {"type": "str", "description": "city"}}}], "answers": [{"name": "w", "arguments": {"city": "Oslo"}}]}
    legacy = {"messages": [{"role": "user", "content": "weather in Oslo?"},
                           {"role": "assistant", "content": None, "function_call": {"name": "w", "arguments": "{\"city\": \"Oslo\"}"}},
                           {"role": "function", "name": "w", "content": "cold"}],
              "functions": [{"name": "w", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]}
    src = tmp_path / "mixed.jsonl"
    src.write_text("\n".join([fixture_lines[0], json.dumps(xlam), json.dumps({**xlam, "query": "and Rome?"}),
                              json.dumps(legacy)]) + "\n")
    m = augment([src], tmp_path / "o", load_recipe("default"), variants=1)
    assert m["counts"]["sources_written"] == 4
    assert m["converted_layouts"] == {"converted OpenAI legacy function calling": 1,
                                      "converted from the query/tools/answers (xLAM) layout": 2}


def test_calls_in_an_unread_layout_are_noted_and_counted(tmp_path):
    """A record whose assistant text calls a declared tool like code or JSON, with no tool calls, gets a note and
    is counted in the manifest; a plain mention of the tool is not flagged."""
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}}]
    rows = [{"id": "a", "tools": tools, "messages": [{"role": "user", "content": "Oslo?"},
                                                     {"role": "assistant", "content": "get_weather(city='Oslo')"}]},
            {"id": "b", "tools": tools, "messages": [{"role": "user", "content": "Oslo?"},
                                                     {"role": "assistant", "content": "I can use get_weather."}]}]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    m = augment([src], tmp_path / "o", load_recipe("default"), variants=1, keep_original=True)
    assert m["records_with_unread_calls"] == 1
    notes = {r["id"]: r["notes"] for r in iter_rows(tmp_path / "o") if r["variant"] == 0}
    assert any(n.startswith("unread call: messages[1] calls 'get_weather'") for n in notes["a/0"])
    assert not any(n.startswith("unread call") for n in notes["b/0"])


def test_validate_says_how_records_were_read(tmp_path, capsys):
    """hsa validate on raw records lists the layouts converted on input and the records with unread calls,
    without failing on them."""
    xlam = {"query": "weather in Oslo?", "tools": [{"name": "w", "description": "weather", "parameters": {
        "city": {"type": "str", "description": "city"}}}], "answers": [{"name": "w", "arguments": {"city": "Oslo"}}]}
    unread = {"tools": [{"name": "w", "parameters": {"type": "object", "properties": {}}}],
              "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "w()"}]}
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(xlam) + "\n" + json.dumps(unread) + "\n")
    assert main(["validate", str(src)]) == 0
    err = capsys.readouterr().err
    assert "2 records checked: invariants 1-3 hold" in err
    assert "1 read from another layout: converted from the query/tools/answers (xLAM) layout" in err
    assert f"1 records call a tool in their assistant text in a layout hsa does not read (those calls stay text), " \
           f"first at {src}:2" in err


def test_show_finds_a_source_without_an_id_in_its_input(tmp_path, fixture_lines, capsys):
    """A record without an id gets one from its content; hsa show still finds its source line in the input."""
    raw = json.loads(fixture_lines[0])
    del raw["id"]
    src = tmp_path / "noid.jsonl"
    src.write_text(json.dumps(raw) + "\n")
    augment([src], tmp_path / "o", load_recipe("default"), variants=1)
    row_id = next(iter_rows(tmp_path / "o"))["id"]
    assert row_id.startswith("sha-")
    capsys.readouterr()
    assert main(["show", str(tmp_path / "o"), "--id", row_id, "--no-color"]) == 0
    out = capsys.readouterr().out
    assert "source not found" not in out and "--- source" in out




def test_records_without_tools_or_calls_are_counted_and_said(tmp_path, capsys):
    """An agent that writes its commands as text (SWE-agent's text mode: a fenced command after a thought) was read
    as plain chat with nothing said; the manifest counts such records and the summary says what they are."""
    from hsa.cli import main

    rows = [{"id": "text-agent", "messages": [
        {"role": "system", "content": "Reply with one bash command in a ```bash block."},
        {"role": "user", "content": "Fix the bug in a.py."},
        {"role": "assistant", "content": "THOUGHT: look first.\n\n```bash\nls\n```"},
        {"role": "user", "content": "a.py b.py"}]},
        {"id": "tools", "tools": [{"type": "function", "function": {"name": "ls", "parameters": {
            "type": "object", "properties": {}}}}], "messages": [{"role": "user", "content": "hi"},
                                                                {"role": "assistant", "content": "hello"}]}]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert main(["augment", str(src), "--out", str(tmp_path / "o"), "--variants", "1", "--workers", "1"]) == 0
    m = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert m["records_without_tools_or_calls"] == 1
    assert "1 record with neither tools nor tool calls: read as plain chat" in capsys.readouterr().out
