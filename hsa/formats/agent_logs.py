"""What the agent-log importers share (:mod:`hsa.formats.claude_code`, :mod:`hsa.formats.codex`): finding the
log files of the paths given, and reading a log's JSON lines with errors that name the file and line."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

__all__ = ["log_files", "json_lines"]


def log_files(paths: Iterable[str | Path], error: type[Exception], *, what: str, home: str,
              recursive: bool = False, suffix: str = ".jsonl") -> list[Path]:
    """The logs of ``paths`` (files ending in ``suffix``): a file as it is, a folder's files (at any depth when
    ``recursive``), in path order. ``error`` is raised for a missing path or a folder without logs (``what``: the
    log's name, ``home``: where the agent keeps them)."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw).expanduser()
        if p.is_dir():
            found = sorted(p.rglob("*" + suffix) if recursive else p.glob("*" + suffix))
            if not found:
                raise error(f"{p}: a folder without {suffix} {what}s; {home}")
            out += found
        elif p.is_file():
            out.append(p)
        else:
            raise error(f"{p} does not exist; give a {what} {suffix} file or a folder of them")
    return out


def json_lines(path: Path, error: type[Exception], *, unit: str) -> Iterator[tuple[int, dict]]:
    """``(line number, object)`` of each non-blank line of ``path``; ``error`` names the file and line of one that
    is not JSON or not an object (``unit``: what a line holds, "event")."""
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as exc:
                raise error(f"{path}:{n}: not JSON ({exc}); the log has one JSON {unit} per line") from None
            if not isinstance(obj, dict):
                raise error(f"{path}:{n}: a {type(obj).__name__}, not an {unit} object")
            yield n, obj
