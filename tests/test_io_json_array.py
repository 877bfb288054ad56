"""Inputs that hold one JSON array of records (how xLAM and many LLaMA-Factory datasets ship) instead of JSON Lines."""

from __future__ import annotations

import gzip
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hsa import load_recipe
from hsa.io import InputSource, JSONArrayError, iter_file_items, iter_json_array, json_layout
from hsa.pipeline import augment

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12)


@settings(max_examples=60, deadline=None)
@given(values=st.lists(JSON_VALUES, max_size=8), indent=st.sampled_from([None, 0, 2]),
       chunk=st.integers(1, 40))
def test_elements_equal_json_load_for_any_piece_size(tmp_path_factory, values, indent, chunk):
    """Streamed in pieces of any size (numbers and strings cut anywhere), the elements are json.load's."""
    path = tmp_path_factory.mktemp("arr") / "a.json"
    path.write_text(json.dumps(values, indent=indent), encoding="utf-8")
    assert [item.data for item in iter_json_array(path, chunk=chunk)] == values


def test_each_element_carries_the_line_it_starts_on(tmp_path):
    """Pretty-printed arrays report the line of each record's opening brace (what rejects.jsonl shows)."""
    path = tmp_path / "a.json"
    path.write_text('[\n  {"id": "a"},\n\n  {"id": "b",\n   "x": 1},  {"id": "c"}\n]\n', encoding="utf-8")
    assert [(i.line, i.data["id"]) for i in iter_json_array(path, chunk=5)] == [(2, "a"), (4, "b"), (5, "c")]


def test_a_broken_array_says_where_after_the_good_elements(tmp_path):
    """The elements before a syntax error are read; the error names the file, the line and what was expected."""
    path = tmp_path / "a.json"
    path.write_text('[{"id": "a"},\n {"id": "b"}\n {"id": "c"}]', encoding="utf-8")
    items = iter_json_array(path)
    assert [i.data["id"] for i in (next(items), next(items))] == ["a", "b"]
    with pytest.raises(JSONArrayError, match=r"a\.json:3: expected ',' or '\]' after element 2"):
        next(items)
    path.write_text('[{"id": "a"}, {"id": ', encoding="utf-8")
    with pytest.raises(JSONArrayError, match="element 2"):
        list(iter_json_array(path))


def test_detection_gzip_bom_and_empty_arrays(tmp_path, fixture_lines):
    """A gzipped array, one behind a byte order mark and an empty array are arrays; JSON Lines are not."""
    records = [json.loads(line) for line in fixture_lines[:2]]
    gz = tmp_path / "a.json.gz"
    with gzip.open(gz, "wt", encoding="utf-8") as f:
        json.dump(records, f)
    bom = tmp_path / "b.json"
    bom.write_bytes(b"\xef\xbb\xbf  \n" + json.dumps(records).encode())
    empty = tmp_path / "c.json"
    empty.write_text(" [ ] ")
    lines = tmp_path / "d.json"  # JSON Lines under a .json name, as many datasets are
    lines.write_text("\n".join(fixture_lines[:2]) + "\n")
    assert [json_layout(p) for p in (gz, bom, empty, lines)] == ["array", "array", "array", "lines"]
    assert [InputSource.resolve(p).kind for p in (gz, lines)] == ["json", "jsonl"]
    assert [i.data for i in iter_file_items(gz)] == [i.data for i in iter_file_items(bom)] == records
    assert list(iter_file_items(empty)) == []


def test_augmenting_an_array_equals_augmenting_its_lines(tmp_path, fixture_lines):
    """The same records as a JSON array or as JSON Lines give the same shard bytes."""
    plain = tmp_path / "a.jsonl"
    plain.write_text("\n".join(fixture_lines[:4]) + "\n")
    array = tmp_path / "a.json"
    array.write_text(json.dumps([json.loads(line) for line in fixture_lines[:4]], indent=2))
    a = augment([plain], tmp_path / "o1", load_recipe("default"), variants=1)
    b = augment([array], tmp_path / "o2", load_recipe("default"), variants=1)
    assert b["inputs"][0]["kind"] == "json" and b["counts"]["sources_written"] == 4
    assert [s["sha256"] for s in a["shards"]] == [s["sha256"] for s in b["shards"]]


def test_cli_reports_a_broken_array_without_a_traceback(tmp_path, capsys):
    """augment and validate stop on a broken array with one error line (file:line) and exit status 2."""
    from hsa.cli import main

    path = tmp_path / "broken.json"
    path.write_text('[{"id": "a", "messages": [{"role": "user", "content": "hi"}]},\n {"id": "b"\n')
    assert main(["augment", str(path), "--out", str(tmp_path / "o"), "--workers", "1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hsa: error: ") and f"{path}:2: expected element 2" in err and "--overwrite" in err
    assert main(["validate", str(path)]) == 2
    assert f"{path}:2: expected element 2" in capsys.readouterr().err


def test_pretty_printed_records_one_after_another(tmp_path, fixture_lines):
    """Objects written by `jq .` or json.dump(indent=2), one after the other, are records too; a broken one
    stops with its line."""
    records = [json.loads(line) for line in fixture_lines[:3]]
    path = tmp_path / "pretty.json"
    path.write_text("".join(json.dumps(r, indent=2) + "\n" for r in records))
    assert json_layout(path) == "values"
    assert [i.data for i in iter_file_items(path)] == records
    assert [i.data for i in iter_json_array(path, chunk=64, array=False)] == records
    starts = [i.line for i in iter_file_items(path)]
    assert starts[0] == 1 and starts[1] == 1 + json.dumps(records[0], indent=2).count("\n") + 1
    path.write_text('{\n  "id": "a"\n}\n{\n  "id": \n')
    items = iter_file_items(path)
    assert next(items).data == {"id": "a"}
    with pytest.raises(JSONArrayError, match=r"pretty\.json:4: expected record 2"):
        next(items)


def test_a_split_reads_a_folder_of_splits_and_names_a_hub_split(tmp_path):
    """InputSource.resolve(spec, split=...): a DatasetDict folder is an input only with a split; a hub spec
    without a split gets it, one with its own keeps that."""
    import datasets

    datasets.DatasetDict({"train": datasets.Dataset.from_list([{"messages": []}])}).save_to_disk(str(tmp_path / "dd"))
    with pytest.raises(FileNotFoundError, match="not a datasets.save_to_disk"):
        InputSource.resolve(tmp_path / "dd")
    src = InputSource.resolve(tmp_path / "dd", split="train")
    assert (src.kind, src.split) == ("dataset", "train") and [i.data for i in src.items()] == [{"messages": []}]
    assert InputSource.resolve("owner/name", split="test").spec == "owner/name:test"
    assert InputSource.resolve("owner/name:dev", split="test").spec == "owner/name:dev"
    assert InputSource.resolve("owner/name").spec == "owner/name"
