"""``hsa validate`` on exported variants of the ``hooks`` recipe: a hook whose messages hook.message_format reworded
on purpose is compared with its messages masked, as ``hsa augment`` compared it (issue 28 found 2 of 6 rows flagged)."""

from __future__ import annotations

from hsa.cli import main
from hsa.validate import validate_path
from tests.conftest import FIXTURES


def test_reworded_hook_messages_are_not_violations(tmp_path):
    """Rows whose hooks were reworded validate cleanly from the export (no source rows: sources are mapped back)."""
    src = tmp_path / "in.jsonl"
    src.write_text("".join(FIXTURES.read_text(encoding="utf-8").splitlines(keepends=True)[:3]), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["augment", str(src), "--out", str(out), "--recipe", "hooks", "--variants", "2", "--seed", "0",
                 "--workers", "1", "--quiet"]) == 0
    assert main(["export", str(out), "--out", str(tmp_path / "v.jsonl")]) == 0
    rows = (tmp_path / "v.jsonl").read_text(encoding="utf-8")
    assert "hook messages reworded by hook.message_format" in rows  # the case is there
    for path in (tmp_path / "v.jsonl", out):
        report = validate_path(path)
        assert report.variants == 6 and not report.violations, report.lines


def test_a_row_without_its_source_is_undone_once(tmp_path, monkeypatch):
    """A variant row whose source is not in the input: validate undoes its mapping once (to get the source), and
    invariant 8 reads that undo instead of repeating it; nothing of the row stays in the worker context."""
    import hsa.renames as renames
    from hsa.context import current

    src = tmp_path / "in.jsonl"
    src.write_text("".join(FIXTURES.read_text(encoding="utf-8").splitlines(keepends=True)[:2]), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["augment", str(src), "--out", str(out), "--variants", "2", "--seed", "0", "--workers", "1",
                 "--quiet"]) == 0
    assert main(["export", str(out), "--out", str(tmp_path / "v.jsonl")]) == 0
    calls = []
    real = renames.undo
    monkeypatch.setattr(renames, "undo", lambda record, n: calls.append(n) or real(record, n))
    report = validate_path(tmp_path / "v.jsonl")
    assert report.variants == 4 and not report.violations, report.lines
    assert len(calls) == 4 and all(calls)
    assert current().last_undo == []
