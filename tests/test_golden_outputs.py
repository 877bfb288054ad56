"""Behaviour pins: the sha256 of every built-in recipe's output on the bundled fixtures.

Refactors (module moves, caches, the harness pool's internals) must not change a byte of what hsa writes. This
test runs each recipe on a slice of fixtures/livestream through the command line (`hsa augment` then
`hsa export`, and `hsa canonicalize` of that export) and compares the sha256 of the written files with
tests/golden/outputs.json.

A change that is *meant* to change output (a fixed defect, a new default) updates the pins in the same commit:
`HSA_UPDATE_GOLDEN=1 pytest tests/test_golden_outputs.py`, and the commit message says why the bytes moved.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from hsa.cli import main
from hsa.recipes import builtin_recipes

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "fixtures" / "livestream" / "trajectories.jsonl"
PINS = Path(__file__).parent / "golden" / "outputs.json"
RECORDS = 24  # a slice: every record kind of the generator appears in its first two dozen lines
UPDATE = os.environ.get("HSA_UPDATE_GOLDEN") == "1"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _run(recipe: str, tmp: Path, extra: list[str]) -> dict[str, str]:
    src = tmp / "in.jsonl"
    lines = FIXTURE.read_text(encoding="utf-8").splitlines(keepends=True)[:RECORDS]
    src.write_text("".join(lines), encoding="utf-8")
    out = tmp / "shards"
    argv = ["augment", str(src), "--out", str(out), "--variants", "3", "--seed", "7", "--recipe", recipe,
            "--workers", "1", "--quiet", *extra]
    assert main(argv) == 0
    assert main(["export", str(out), "--out", str(tmp / "variants.jsonl")]) == 0
    assert main(["canonicalize", str(tmp / "variants.jsonl"), "--out", str(tmp / "back.jsonl")]) == 0
    return {
        "export": _sha(tmp / "variants.jsonl"),
        "rejects": _sha(out / "rejects.jsonl"),
        "canonicalize": _sha(tmp / "back.jsonl"),
    }


CASES = [(name, []) for name in sorted(builtin_recipes())] + [
    ("default", ["--harness-pool", "0"]),
    ("default", ["--keep-original"]),
]


def _key(recipe: str, extra: list[str]) -> str:
    return " ".join([recipe, *extra])


@pytest.mark.parametrize(("recipe", "extra"), CASES, ids=[_key(r, e) for r, e in CASES])
def test_recipe_output_bytes_are_pinned(recipe: str, extra: list[str], tmp_path: Path) -> None:
    got = _run(recipe, tmp_path, extra)
    pins = json.loads(PINS.read_text()) if PINS.exists() else {}
    key = _key(recipe, extra)
    if UPDATE:
        pins[key] = got
        PINS.write_text(json.dumps(dict(sorted(pins.items())), indent=1) + "\n")
        return
    assert key in pins, f"no pin for {key!r}: run HSA_UPDATE_GOLDEN=1 pytest {__file__}"
    assert got == pins[key], (
        f"{key}: output bytes changed ({', '.join(k for k in got if got[k] != pins[key][k])}); if the change "
        "is meant, rerun with HSA_UPDATE_GOLDEN=1 and say why in the commit message"
    )
