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

README.md and docs/quickstart.md both augment the bundled fixtures and export, map back and validate the
result with the same commands (about 2 CPU minutes a page). Those commands run once per test session: the
result of ``hsa augment``, ``hsa canonicalize`` and ``hsa validate`` (exit status, output, and the files it
wrote) is kept in a session-scoped cache keyed on the exact command line (as bash splits it, comments left
out), every cwd-relative path it names (the sha256 of the file, or of every file of the folder, or its
absence) and hsa's version, and a later page that runs the same command on the same inputs gets that result
(hsa's output is byte-identical for the same input, recipe and seed: docs/design.md). Every command of every
page still runs as written at least once per session and every output shown is checked on each page; the
cache is shared by pytest-xdist's workers through a lock, and a command that fails is never reused. A bash
block is run line by line (for the cache) only when each of its lines is one plain command (its
``source .venv/bin/activate`` changes nothing: that interpreter's bin is first on PATH for every line).
"""

from __future__ import annotations

import doctest
import fcntl
import hashlib
import json
import os
import shlex
import shutil
import re
import subprocess
import sys
from contextlib import contextmanager
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


#: hsa subcommands whose result a later page may reuse (the module docstring): the ones that cost minutes
_CACHED = ("augment", "canonicalize", "validate")
_KEYWORDS = {"if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac", "function",
             "cd", "export", "set", "unset", "alias", "pushd", "popd"}


def _argv(command: str) -> list[str] | None:
    """The command as bash splits it (comments left out); None when it is not one plain command: a pipe, list,
    redirection, subshell, expansion, continuation, heredoc, assignment, control word or change of folder."""
    if command.rstrip().endswith("\\"):
        return None
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        argv = list(lexer)
    except ValueError:
        return None
    if any(t and set(t) <= set("();<>|&") or "$" in t or "`" in t for t in argv):
        return None
    if argv and (argv[0] in _KEYWORDS or re.match(r"\w+=", argv[0])):
        return None
    return argv


def _plain_lines(block: str) -> list[str] | None:
    """The lines of a bash block when each is one plain command, else None (the block runs whole)."""
    lines = [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return lines if lines and all(_argv(line) is not None for line in lines) else None


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    if path.is_file():
        with path.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()
    for sub in sorted(p for p in path.rglob("*") if p.is_file()):
        h.update(f"{sub.relative_to(path).as_posix()}\0{_digest(sub)}\n".encode())
    return h.hexdigest()


def _key(argv: list[str], workdir: Path) -> str:
    """The exact command line, the sha256 of every cwd-relative path it names (or its absence), hsa's version."""
    from importlib.metadata import version

    inputs = {}
    for token in argv[1:]:
        for value in {token, token.split("=", 1)[-1]}:
            if value and not value.startswith("-") and not os.path.isabs(value):
                target = workdir / value
                inputs[value] = _digest(target) if target.exists() else None
    text = json.dumps({"argv": argv, "inputs": inputs, "hsa": version("hsa")}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _snapshot(workdir: Path) -> dict[str, tuple[int, int]]:
    """(size, mtime) of every file the runs wrote: the links into the checkout are not followed."""
    out = {}
    for folder, dirs, files in os.walk(workdir):
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                st = os.stat(path)
                out[os.path.relpath(path, workdir)] = (st.st_size, st.st_mtime_ns)
    return out


@contextmanager
def _locked(path: Path):
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _run(command: str, workdir: Path, cache: Path | None) -> subprocess.CompletedProcess:
    """Run one command; ``hsa augment|canonicalize|validate`` once per session for the same command and inputs."""
    argv = _argv(command)
    if cache is None or not argv or argv[0] != "hsa" or len(argv) < 2 or argv[1] not in _CACHED:
        return _shell(command, workdir)
    entry = cache / _key(argv, workdir)
    with _locked(cache / f"{entry.name}.lock"):
        done = entry / "result.json"
        if done.is_file():
            result = json.loads(done.read_text(encoding="utf-8"))
            for rel in result["wrote"]:
                (workdir / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(entry / "files" / rel, workdir / rel)
            return subprocess.CompletedProcess(command, result["returncode"], result["stdout"])
        before = _snapshot(workdir)
        proc = _shell(command, workdir)
        after = _snapshot(workdir)
        if proc.returncode == 0 and set(before) <= set(after):
            wrote = sorted(rel for rel, stat in after.items() if before.get(rel) != stat)
            entry.mkdir()
            for rel in wrote:
                (entry / "files" / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(workdir / rel, entry / "files" / rel)
            done.write_text(json.dumps({"returncode": 0, "stdout": proc.stdout, "wrote": wrote}), encoding="utf-8")
        return proc


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


def _evaluators(workdir: Path, cache: Path | None = None):
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
        lines = _plain_lines(example.parsed) if cache is not None else None
        for command in lines or [example.parsed]:
            proc = _run(command, workdir, cache) if lines else _shell(command, workdir)
            if proc.returncode:
                return f"$ {command}\nexit status {proc.returncode}:\n{proc.stdout[-4000:]}"
        return None

    def run_console(example) -> str | None:
        for command, want in _commands(example.parsed):
            if command.strip().startswith("source "):  # the interpreter's bin is on PATH already
                continue
            proc = _run(command, workdir, cache)
            got = _without_environment_notes(proc.stdout)
            if proc.returncode:
                return f"$ {command}\nexit status {proc.returncode}:\n{got[-4000:]}"
            if want and not checker.check_output(want, got, _FLAGS):
                return f"$ {command}\n" + checker.output_difference(doctest.Example(command, want), got, _FLAGS)
        return None

    return write_file, run_bash, run_console


#: Lines the environment, not hsa, prints the first time a library runs on a machine (a fresh CI machine: the
#: first command that imports matplotlib builds its font cache and says so on stderr).
_ENVIRONMENT_NOTES = ("Matplotlib is building the font cache",)


def _without_environment_notes(text: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith(_ENVIRONMENT_NOTES))


def _workdir(tmp_path: Path) -> Path:
    for name in ("fixtures", "examples", "trainers"):
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    (tmp_path / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    return tmp_path


def run_page(page: str, tmp_path: Path, monkeypatch,
             cache: Path | None = None) -> tuple[list[int], list[tuple[int, str]]]:
    """Run every block of ``page``; return the lines of the blocks run and the (line, reason) of those skipped."""
    from sybil import Sybil
    from sybil.parsers.markdown import CodeBlockParser, PythonCodeBlockParser, SkipParser

    workdir = _workdir(tmp_path)
    write_file, run_bash, run_console = _evaluators(workdir, cache)
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


@pytest.fixture(scope="session")
def command_cache(tmp_path_factory) -> Path:
    """The session's cache of command results (the module docstring), shared by pytest-xdist's workers."""
    base = tmp_path_factory.getbasetemp()
    path = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "docs-command-cache"
    path.mkdir(exist_ok=True)
    return path


@pytest.mark.parametrize("page", PAGES)
def test_page_code_blocks_run_as_written(page, tmp_path, monkeypatch, command_cache):
    """Every block of the page runs in order and prints what the page shows; skips name their reason."""
    ran, skipped = run_page(page, tmp_path, monkeypatch, command_cache)
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


def test_command_cache_key_follows_command_and_inputs(tmp_path):
    """The cache key changes with the command line and with each input it names (content, or absence), not with
    comments; blocks with pipes, expansions or changes of folder run whole."""
    (tmp_path / "in.jsonl").write_text("a\n", encoding="utf-8")
    key = _key(_argv("hsa validate in.jsonl   # a comment; with `ticks`"), tmp_path)
    assert key == _key(_argv("hsa validate in.jsonl"), tmp_path)
    assert key != _key(_argv("hsa validate in.jsonl --strict"), tmp_path)
    (tmp_path / "in.jsonl").write_text("b\n", encoding="utf-8")
    assert key != _key(_argv("hsa validate in.jsonl"), tmp_path)
    out = _key(_argv("hsa augment in.jsonl --out shards/"), tmp_path)
    (tmp_path / "shards").mkdir()
    assert out != _key(_argv("hsa augment in.jsonl --out shards/"), tmp_path)
    for block in ("hsa validate a.jsonl | head", "cd x\nhsa validate a.jsonl", "echo $HOME", "X=1 hsa validate a",
                  "hsa augment a \\\n  --out b", "hsa validate a && hsa validate b"):
        assert _plain_lines(block) is None, block
    assert _plain_lines("hsa export s/ --out v.jsonl\n# note\nhsa validate v.jsonl") == [
        "hsa export s/ --out v.jsonl", "hsa validate v.jsonl"]
