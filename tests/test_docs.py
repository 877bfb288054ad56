"""The code blocks of the newcomer's docs run as written, in order, and the output they show is checked.

Runner: Sybil (https://sybil.readthedocs.io), a maintained library for testing the examples in
documentation. We chose it over pytest-markdown-docs, phmdoctest and pytest-examples because those run
Python blocks only, and these pages are mostly shell commands: Sybil parses the Markdown (code fences and
``<!-- skip: next "reason" -->`` comments) and lets each fence language have its own evaluator:

- ``python``: run in one namespace per page; a block that starts with ``>>>`` is a doctest (output checked);
- ``bash``: run with ``bash -e -o pipefail``; it must exit 0;
- ``console``: ``$ command`` lines, each followed by the output it must print (stdout and stderr), compared
  with doctest's checker (``...`` stands for any text, whitespace runs are equal);
- any fence whose first line is ``# file: NAME``: written to NAME (a recipe, a config) for later blocks.

Each page runs in a fresh folder that holds the checkout's ``fixtures``, ``examples`` and ``trainers`` (and
``.venv``, the interpreter running the tests), with that interpreter's ``bin`` first on PATH. A block that
needs a download or minutes of training is skipped, with the reason in its skip comment and in the block.
"""

from __future__ import annotations

import doctest
import os
import re
import subprocess
import sys
from pathlib import Path
from unittest import SkipTest

import pytest

sybil = pytest.importorskip("sybil")

ROOT = Path(__file__).resolve().parents[1]

#: The pages whose blocks run (the newcomer's path through them), in no particular order.
PAGES = ["README.md", "docs/quickstart.md", "docs/evaluation.md", "docs/cli.md"]

_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
_FILE = re.compile(r"\A#\s*file:\s*(?P<name>[\w./-]+)\s*\n")
_TIMEOUT = 900


def _env(workdir: Path) -> dict:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(NO_COLOR="1", COLUMNS="100", HOME=str(workdir), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    return env


def _shell(command: str, workdir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-e", "-o", "pipefail", "-c", command], cwd=workdir, env=_env(workdir),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=_TIMEOUT)


def _commands(source: str) -> list[tuple[str, str]]:
    """``(command, expected output)`` of a console block: ``$ `` lines (``\\`` continues one), then output."""
    out: list[tuple[str, list[str]]] = []
    lines = source.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            command = line[2:]
            while command.endswith("\\") and i + 1 < len(lines):
                i += 1
                command = command + "\n" + lines[i]  # bash reads the backslash-newline as one line
            out.append((command, []))
        elif out:
            out[-1][1].append(line)
        else:
            raise ValueError(f"a console block starts with {line!r}; expected '$ command'")
        i += 1
    return [(c, "\n".join(w).strip() + ("\n" if w else "")) for c, w in out]


def _evaluators(workdir: Path):
    checker = doctest.OutputChecker()

    def write_file(example) -> str | None:
        m = _FILE.match(example.parsed)
        if m:
            target = workdir / m["name"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(example.parsed[m.end():], encoding="utf-8")
        return None

    def run_bash(example) -> str | None:
        if _FILE.match(example.parsed):
            return write_file(example)
        proc = _shell(example.parsed, workdir)
        if proc.returncode:
            return f"exit status {proc.returncode}:\n{proc.stdout[-4000:]}"
        return None

    def run_console(example) -> str | None:
        for command, want in _commands(example.parsed):
            if command.strip().startswith("source "):  # the interpreter's bin is on PATH already
                continue
            proc = _shell(command, workdir)
            got = proc.stdout
            if proc.returncode:
                return f"$ {command}\nexit status {proc.returncode}:\n{got[-4000:]}"
            if want and not checker.check_output(want, got, _FLAGS):
                return f"$ {command}\n" + checker.output_difference(doctest.Example(command, want), got, _FLAGS)
        return None

    return write_file, run_bash, run_console


def _workdir(tmp_path: Path) -> Path:
    for name in ("fixtures", "examples", "trainers"):
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    (tmp_path / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    return tmp_path


def run_page(page: str, tmp_path: Path, monkeypatch) -> tuple[list[int], list[tuple[int, str]]]:
    """Run every block of ``page``; return the lines of the blocks run and the (line, reason) of those skipped."""
    from sybil import Sybil
    from sybil.parsers.markdown import CodeBlockParser, PythonCodeBlockParser, SkipParser

    workdir = _workdir(tmp_path)
    write_file, run_bash, run_console = _evaluators(workdir)
    parsers = [SkipParser(), PythonCodeBlockParser(doctest_optionflags=_FLAGS),
               CodeBlockParser("bash", run_bash), CodeBlockParser("console", run_console)]
    parsers += [CodeBlockParser(lang, write_file) for lang in ("yaml", "json", "toml", "jinja")]
    document = Sybil(parsers).parse(ROOT / page)
    monkeypatch.chdir(workdir)
    ran, skipped = [], []
    for example in document.examples():
        try:
            example.evaluate()
        except SkipTest as exc:
            skipped.append((example.line, str(exc)))
            continue
        ran.append(example.line)
    return ran, skipped


@pytest.mark.parametrize("page", PAGES)
def test_page_code_blocks_run_as_written(page, tmp_path, monkeypatch):
    """Every block of the page runs in order and prints what the page shows; skips name their reason."""
    ran, skipped = run_page(page, tmp_path, monkeypatch)
    assert ran, f"{page}: no code block ran"
    for line, reason in skipped:
        assert len(reason) > 10, f"{page}:{line}: a skipped block must say why (<!-- skip: next \"reason\" -->)"


def test_skipped_blocks_say_so_in_the_block():
    """A block the docs test does not run says so in its own text, not only in the hidden skip comment."""
    skip = re.compile(r"<!-- skip: next \"[^\"]+\" -->\n```\w*\n(?P<first>.*)\n")
    for page in PAGES:
        text = (ROOT / page).read_text(encoding="utf-8")
        for m in skip.finditer(text):
            assert "not run by the docs test" in m["first"], f"{page}: {m['first']!r}"
