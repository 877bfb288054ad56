"""docs/transforms-skill.md and docs/transforms-prompt.md: their Python examples run as written."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


@pytest.mark.parametrize("doc", ["transforms-skill.md", "transforms-prompt.md"])
def test_doc_examples_run(doc, monkeypatch):
    """Every python block of the chapter runs, in order, in one namespace, from the repository root."""
    text = (ROOT / "docs" / doc).read_text(encoding="utf-8")
    blocks = _BLOCK.findall(text)
    assert len(blocks) >= 4
    monkeypatch.chdir(ROOT)
    namespace: dict = {"__name__": f"doc_{doc}"}
    for i, block in enumerate(blocks):
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                exec(compile(block, f"{doc}[block {i}]", "exec"), namespace)  # noqa: S102 - our own docs
            except Exception as exc:  # pragma: no cover - the message shows which block failed
                pytest.fail(f"{doc} block {i} failed: {type(exc).__name__}: {exc}\n{block}")
    assert "THROUGHPUT_" not in text, "fill in the throughput table"
    assert os.path.isfile(ROOT / "docs" / "catalogue.md")
