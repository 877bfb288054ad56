"""Behaviour pins: the sha256 of hsa's output on the bundled fixtures and on generated inputs of the public layouts.

Refactors (module moves, caches, the harness pool's internals, the slot plans of issue 29) must not change a byte
of what hsa writes. Each pin runs one input through the command line (`hsa augment` then `hsa export`, and
`hsa canonicalize` of that export) and compares the sha256 of the written files with tests/golden/outputs.json.

The inputs:

- a slice of fixtures/livestream (the full harness: tools, skills, prompt, hooks; every record its own harness):
  every built-in recipe, `--harness-pool 0`, `--keep-original`, `--no-exec-hooks`;
- fixtures/mcp/records.jsonl: tool-only records with the tool lists of nine public MCP servers;
- a public-layout slice: generated records in the BFCL/xLAM row shape (messages and tools only, no system
  message; each record its own tools), `public_layout` of benchmarks/bench_augment.py;
- 8 shared full harnesses: generated records of 8 deployments (`make_input(n, path, 8)` of
  benchmarks/bench_augment.py), so that records really share pool slots (the livestream slice never does); with
  `--workers 2` too, which must give the bytes of `--workers 1`;
- a small input that hsa rejects in part (`_with_rejects`): good livestream records, a malformed JSON line, a
  record whose call does not validate against its tool's schema, and a record whose hook compares a string
  computed from a tool name (every variant's hook sync refuses it). Every other input writes an empty rejects
  file; this one pins the reject lines (reasons, details, their order).

The generated inputs are pinned too (the sha256 of the input file), so that a pin that moves says whether the
generator or hsa moved it.

A change that is *meant* to change output (a fixed defect, a new default) updates the pins in the same commit:
`HSA_UPDATE_GOLDEN=1 pytest tests/test_golden_outputs.py`, and the commit message says why the bytes moved.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections import Counter
from pathlib import Path

import pytest

from hsa.cli import main
from hsa.recipes import builtin_recipes

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "fixtures" / "livestream" / "trajectories.jsonl"
MCP = ROOT / "fixtures" / "mcp" / "records.jsonl"
PINS = Path(__file__).parent / "golden" / "outputs.json"
RECORDS = 24  # a slice: every record kind of the generator appears in its first two dozen lines
PUBLIC_RECORDS = 40  # generated public-layout records, each with its own tools
SHARED_RECORDS, SHARED_HARNESSES = 48, 8  # 6 records a harness, 3 variants each: 18 draws of a pool of 8 slots
SEED, VARIANTS = 7, 3
UPDATE = os.environ.get("HSA_UPDATE_GOLDEN") == "1"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _bench_augment():
    """benchmarks/bench_augment.py as a module (benchmarks/ is not a package): its input generators."""
    spec = importlib.util.spec_from_file_location("bench_augment", ROOT / "benchmarks" / "bench_augment.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _livestream(path: Path) -> None:
    lines = FIXTURE.read_text(encoding="utf-8").splitlines(keepends=True)[:RECORDS]
    path.write_text("".join(lines), encoding="utf-8")


def _mcp(path: Path) -> None:
    path.write_bytes(MCP.read_bytes())


def _public(path: Path) -> None:
    bench = _bench_augment()
    bench.make_input(PUBLIC_RECORDS, path, shape=bench.public_layout)


def _shared(path: Path) -> None:
    _bench_augment().make_input(SHARED_RECORDS, path, SHARED_HARNESSES)


def _with_rejects(path: Path) -> None:
    records = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()[:6]]
    bad_call = json.loads(json.dumps(records[3]))
    bad_call["id"] = "bad-call"
    call = next(c for m in bad_call["messages"] for c in m.get("tool_calls") or ()
                if json.loads(c["function"]["arguments"]))
    args = json.loads(call["function"]["arguments"])
    args[next(iter(args))] = {"not": ["what", "the", "schema", "says"]}  # a string argument given an object
    call["function"]["arguments"] = json.dumps(args)
    hooked = json.loads(json.dumps(records[4]))
    hooked["id"] = "name-reading-hook"
    reversed_names = [t["function"]["name"][::-1] for t in hooked["tools"]]
    hooked["hooks"].append({"name": "reversed_names", "event": "pre_tool_use", "entry": "check", "source": (
        "def check(payload: dict) -> dict:\n"
        "    name = payload[\"tool_name\"]\n"
        f"    if name[::-1] not in {reversed_names!r}:\n"
        "        return {\"decision\": \"deny\", \"message\": \"unknown tool \" + name[::-1]}\n"
        "    return {\"decision\": \"allow\"}\n")})
    lines = [json.dumps(r, ensure_ascii=False) for r in records[:3]]
    lines += ['{"id": "broken", "messages": [', json.dumps(bad_call, ensure_ascii=False),
              json.dumps(hooked, ensure_ascii=False), json.dumps(records[5], ensure_ascii=False)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


#: input name -> (writer of the input file, whether the input is generated and so pinned itself)
INPUTS = {
    "livestream": (_livestream, False),
    "mcp": (_mcp, False),
    f"public-{PUBLIC_RECORDS}": (_public, True),
    f"shared-{SHARED_RECORDS}-h{SHARED_HARNESSES}": (_shared, True),
    "with-rejects": (_with_rejects, True),
}


def _run(source: str, recipe: str, tmp: Path, extra: list[str]) -> dict[str, str]:
    src = tmp / "in.jsonl"
    write, generated = INPUTS[source]
    write(src)
    out = tmp / "shards"
    # the input named as a relative path from tmp: a reject line names its input file as given
    argv = ["augment", "in.jsonl", "--out", str(out), "--variants", str(VARIANTS), "--seed", str(SEED),
            "--recipe", recipe, "--workers", "1", "--quiet", *extra]
    assert main(argv) == 0
    assert main(["export", str(out), "--out", str(tmp / "variants.jsonl")]) == 0
    assert main(["canonicalize", str(tmp / "variants.jsonl"), "--out", str(tmp / "back.jsonl")]) == 0
    got = {
        "export": _sha(tmp / "variants.jsonl"),
        "rejects": _sha(out / "rejects.jsonl"),
        "canonicalize": _sha(tmp / "back.jsonl"),
    }
    return {"input": _sha(src), **got} if generated else got


LIVESTREAM = [(name, []) for name in sorted(builtin_recipes())] + [
    ("default", ["--harness-pool", "0"]),
    ("default", ["--keep-original"]),
]
SHARED = f"shared-{SHARED_RECORDS}-h{SHARED_HARNESSES}"
#: (input, recipe, extra options); the livestream pins keep the keys they had before the other inputs came
CASES = [("livestream", r, e) for r, e in LIVESTREAM] + [
    ("livestream", "default", ["--no-exec-hooks"]),
    ("mcp", "default", []),
    (f"public-{PUBLIC_RECORDS}", "default", []),
    (SHARED, "default", []),
    (SHARED, "default", ["--workers", "2"]),
    ("with-rejects", "default", []),
]


def _key(source: str, recipe: str, extra: list[str]) -> str:
    return " ".join([recipe, *extra]) if source == "livestream" else " ".join([f"{source}:", recipe, *extra])


@pytest.mark.parametrize(("source", "recipe", "extra"), CASES, ids=[_key(*c) for c in CASES])
def test_recipe_output_bytes_are_pinned(source: str, recipe: str, extra: list[str], tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """hsa's output on each input, recipe and options has the pinned sha256 (export, rejects, canonicalized)."""
    monkeypatch.chdir(tmp_path)
    got = _run(source, recipe, tmp_path, extra)
    pins = json.loads(PINS.read_text()) if PINS.exists() else {}
    key = _key(source, recipe, extra)
    if UPDATE:
        pins[key] = got
        PINS.write_text(json.dumps(dict(sorted(pins.items())), indent=1) + "\n")
        return
    assert key in pins, f"no pin for {key!r}: run HSA_UPDATE_GOLDEN=1 pytest {__file__}"
    assert got == pins[key], (
        f"{key}: output bytes changed ({', '.join(k for k in got if got[k] != pins[key].get(k))}); if the change "
        "is meant, rerun with HSA_UPDATE_GOLDEN=1 and say why in the commit message"
    )


def test_two_workers_pin_the_bytes_of_one() -> None:
    """The shared-harness input's pin with `--workers 2` is the pin with `--workers 1`: output is a pure function
    of the line, whichever worker reads it."""
    pins = json.loads(PINS.read_text())
    assert pins[_key(SHARED, "default", ["--workers", "2"])] == pins[_key(SHARED, "default", [])]


def test_shared_input_really_shares_slots(tmp_path: Path) -> None:
    """The records of the shared-harness input have 8 harnesses and their variants meet in the same (harness, pool
    slot) pairs, so that its pins cover a slot that several records share (the livestream slice never does)."""
    from hsa.pipeline import DEFAULT_HARNESS_POOL, harness_digest, slot_for
    from hsa.records import read_row

    src = tmp_path / "in.jsonl"
    _shared(src)
    records = [read_row(line) for line in src.read_text(encoding="utf-8").splitlines()]
    digests = [harness_digest(r) for r in records]
    uses = Counter((d, slot_for(SEED, r["id"], v, DEFAULT_HARNESS_POOL)) for d, r in zip(digests, records)
                   for v in range(1, VARIANTS + 1))
    assert len(records) == SHARED_RECORDS and len(set(digests)) == SHARED_HARNESSES
    shared = [pair for pair, n in uses.items() if n > 1]
    assert len(shared) >= SHARED_HARNESSES, f"only {len(shared)} (harness, slot) pairs serve more than one variant"


def test_a_pin_covers_rejects() -> None:
    """The rejects input's pin hashes a rejects file with lines in it (every other input rejects nothing), so
    that the reject reasons, details and their order are pinned too."""
    pins = json.loads(PINS.read_text())
    empty = hashlib.sha256(b"").hexdigest()
    assert pins[_key("with-rejects", "default", [])]["rejects"] != empty
