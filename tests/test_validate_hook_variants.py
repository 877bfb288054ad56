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
