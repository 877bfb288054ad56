"""docs/writing-transforms.md: its example transform and tests run as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.entry_points_support import env_with, installed_checkout

DOC = Path(__file__).resolve().parents[1] / "docs" / "writing-transforms.md"
_BLOCK = re.compile(r"```python\n# file: (?P<name>[\w.]+)\n(?P<body>.*?)```", re.S)


def _files() -> dict[str, str]:
    return {m["name"]: m["body"] for m in _BLOCK.finditer(DOC.read_text(encoding="utf-8"))}


def test_doc_holds_the_example_module_and_its_tests():
    """The chapter carries the transform module, a before/after test and a property test."""
    files = _files()
    assert set(files) == {"vendor_prefix.py", "test_vendor_prefix_before_after.py", "test_vendor_prefix_properties.py"}
    assert "@register" in files["vendor_prefix.py"] and "hsa_records" in files["test_vendor_prefix_before_after.py"]
    assert "assert_task_preserving" in files["test_vendor_prefix_properties.py"]


def test_doc_example_runs_and_its_tests_pass(tmp_path):
    """The extracted example and its tests pass under pytest in a fresh process (the hsa plugin gives hsa_records)."""
    for name, body in _files().items():
        (tmp_path / name).write_text(body, encoding="utf-8")
    env = env_with(tmp_path, installed_checkout(tmp_path / "install"))  # this checkout, as installed
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert re.search(r"\b6 passed\b", proc.stdout), proc.stdout[-2000:]
