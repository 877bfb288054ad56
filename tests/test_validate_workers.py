"""``hsa validate --workers`` and ``hsa canonicalize --workers``: rows shared by worker processes (each source's rows on
one), the same report and the same file as one process, and a worker that dies is an error, never a partial answer."""

from __future__ import annotations

import json
import os

import pytest

import hsa.validate as validate
from hsa.cli import main
from hsa.pipeline.workers import CanonicalizeJob, route_by_hash
from hsa.validate import validate_path


@pytest.fixture(scope="module")
def variants(tmp_path_factory, fixture_lines) -> list[dict]:
    """Six fixture records, each as variant 0 and two variants, as ``hsa export`` writes them (no hook replay: the
    report's bookkeeping is what these tests are about, and hooks are the slow part)."""
    folder = tmp_path_factory.mktemp("validate-workers")
    (folder / "in.jsonl").write_text("\n".join(fixture_lines[:6]) + "\n", encoding="utf-8")
    assert main(["augment", str(folder / "in.jsonl"), "--out", str(folder / "out"), "--variants", "2",
                 "--keep-original", "--workers", "1", "--quiet", "--no-exec-hooks"]) == 0
    assert main(["export", str(folder / "out"), "--out", str(folder / "rows.jsonl")]) == 0
    return [json.loads(line) for line in (folder / "rows.jsonl").read_text(encoding="utf-8").splitlines()]


def _broken(rows: list[dict]) -> list[str]:
    """The rows with what each kind of check catches: a line that is not JSON, a source row whose user message
    was changed after its variants were made (its variants no longer map back to it), a variant without its
    source row before it (checked against what it maps back to), and a row without an id."""
    rows = [json.loads(json.dumps(r)) for r in rows]
    first = next(r for r in rows if r["variant"] == 0)
    user = next(m for m in first["messages"] if m["role"] == "user")
    user["content"] = "changed after the variants were made: " + str(user["content"])
    lone = [r for r in rows if r["source_id"] == rows[-1]["source_id"] and r["variant"] == 0]
    rows = [r for r in rows if r is not lone[0]]
    lines = [json.dumps(r) for r in rows]
    lines.insert(4, '{"broken')
    lines.append(json.dumps({"messages": [{"role": "user", "content": "hi"}], "tools": []}))
    return lines


def _report(path, workers: int, **kw) -> dict:
    r = validate_path(path, workers=workers, exec_hooks=False, **kw)
    return {"records": r.records, "variants": r.variants, "violations": dict(r.violations), "lines": r.lines,
            "converted": dict(r.converted), "unread": r.unread, "not_replayed": r.not_replayed}


def test_the_report_is_the_same_for_any_worker_count(variants, tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(_broken(variants)) + "\n", encoding="utf-8")
    one = _report(path, 1)
    assert one["records"] == len(variants) + 1 and one["variants"] == 12
    assert one["violations"].get("format") == 1 and any(line.startswith(f"{path}:5: [format]") for line in one["lines"])
    assert any(line.startswith((f"{path}:2: [", f"{path}:3: [")) for line in one["lines"]), one["lines"]
    # (the changed source row's variants, lines 2 and 3, no longer map back to it)
    assert _report(path, 2) == one == _report(path, 3)


def test_a_variant_finds_its_source_row_within_the_window_on_every_worker(variants, tmp_path, monkeypatch):
    """A variant is checked against its source row when fewer than _MAX_SOURCES source rows came between them;
    with a window of none it is checked against what it maps back to, and the changed source goes unseen."""
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(_broken(variants)) + "\n", encoding="utf-8")
    seen = _report(path, 1)
    monkeypatch.setattr(validate, "_MAX_SOURCES", 0)
    unseen = _report(path, 1)
    assert sum(unseen["violations"].values()) < sum(seen["violations"].values())
    assert _report(path, 2) == unseen  # the workers are forked: they read the same window


def test_rows_of_one_source_go_to_one_worker():
    keys = [CanonicalizeJob.key((i, i, {"source_id": f"s{i % 5}"})) for i in range(40)]
    for workers in (2, 3):
        got = route_by_hash(keys, workers)
        by_key: dict = {}
        for key, w in zip(keys, got):
            by_key.setdefault(key, set()).add(w)
        assert all(len(w) == 1 for w in by_key.values()) and len(set(got)) > 1
    assert route_by_hash([None] * 5, 2) == [0, 1, 0, 1, 0]


def test_canonicalize_writes_the_same_file_for_any_worker_count(variants, tmp_path, capsys):
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(_broken(variants)) + "\n", encoding="utf-8")
    out = {}
    for workers in (1, 2):
        target = tmp_path / f"back-{workers}.jsonl"
        assert main(["canonicalize", str(path), "--out", str(target), "--workers", str(workers)]) == 1
        out[workers] = target.read_bytes(), capsys.readouterr().err.replace(target.name, "back.jsonl")
    assert out[1] == out[2]
    assert f"{path}:5: cannot canonicalize: malformed JSON" in out[1][1]
    assert len(out[1][0].splitlines()) == len(variants)  # every row but the broken line


_WORK = CanonicalizeJob.work


def _dies_at_3(self, batch):
    for item in batch:
        if item[0] == 3:
            os._exit(3)  # as a kill or the OOM killer would end it
    return _WORK(self, batch)


def test_a_worker_that_dies_is_an_error_and_no_file(variants, tmp_path, capsys, monkeypatch):
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in variants) + "\n", encoding="utf-8")
    monkeypatch.setattr(CanonicalizeJob, "work", _dies_at_3, raising=True)
    target = tmp_path / "back.jsonl"
    assert main(["canonicalize", str(path), "--out", str(target), "--workers", "2"]) == 2
    err = capsys.readouterr().err
    assert "exit code 3" in err and "is not written" in err and not target.exists()
