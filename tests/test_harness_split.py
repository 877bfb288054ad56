"""hsa.harness: a record split into its harness and its trajectory, joined back exactly, and the harness's digest."""

from __future__ import annotations

import dataclasses
import json
import random
from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from hsa import _json
from hsa.harness import Harness, Trajectory, join, split
from hsa.pipeline import harness_digest
from hsa.records import normalize, read_row
from hsa.testing import records

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
#: JSON Lines files under fixtures/ that hold something else than records
NOT_RECORDS = {"harnesses/plain_word_mentions.jsonl": "hand-labelled mentions of tool names in prompts",
               "claude_code/session.jsonl": "a Claude Code session log: events, read by hsa import claude-code",
               "codex/rollout.jsonl": "a Codex CLI rollout: items, read by hsa import codex"}
RECORD_FILES = sorted(p for p in FIXTURES.rglob("*.jsonl") if p.relative_to(FIXTURES).as_posix() not in NOT_RECORDS)


def _exact(a, b, at: str = "record") -> None:
    """``a`` and ``b`` are the same JSON value, with the same key order in every object."""
    assert type(a) is type(b), f"{at}: {type(a).__name__} against {type(b).__name__}"
    if isinstance(a, dict):
        assert list(a) == list(b), f"{at}: keys {list(a)} against {list(b)}"
        for k in a:
            _exact(a[k], b[k], f"{at}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), f"{at}: {len(a)} items against {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            _exact(x, y, f"{at}[{i}]")
    elif isinstance(a, float) and a != a:
        assert b != b, f"{at}: NaN against {b!r}"
    else:
        assert a == b, f"{at}: {a!r} against {b!r}"


def _round_trip(record: dict) -> tuple[Harness, Trajectory]:
    before = json.dumps(record, ensure_ascii=False)
    harness, trajectory = split(record)
    joined = join(harness, trajectory)
    _exact(joined, record)
    assert joined == record
    assert json.dumps(record, ensure_ascii=False) == before, "split or join modified the record"
    return harness, trajectory


def test_the_fixture_files_are_found() -> None:
    """The round trip below reads every record file of fixtures/ (a new one is included, or named in NOT_RECORDS)."""
    names = {p.relative_to(FIXTURES).as_posix() for p in RECORD_FILES}
    assert {"livestream/trajectories.jsonl", "mcp/records.jsonl", "prompts/records.jsonl",
            "harnesses/claude_code.jsonl"} <= names
    assert all((FIXTURES / name).is_file() for name in NOT_RECORDS)


@pytest.mark.parametrize("path", RECORD_FILES, ids=[p.relative_to(FIXTURES).as_posix() for p in RECORD_FILES])
def test_join_undoes_split_on_every_fixture_record(path: Path) -> None:
    """join(*split(r)) is r, key order included, for every record of a fixture file: as read (the internal form)
    and as written in the file (the input form); and the harness digest groups the records as the pool's does."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert lines
    groups: dict[str, set[str]] = defaultdict(set)
    for line in lines:
        record = read_row(line)
        harness, _ = _round_trip(record)
        _round_trip(json.loads(line))
        groups[harness.digest()].add(harness_digest(record))
    pool = [d for ds in groups.values() for d in ds]
    assert len(pool) == len(set(pool)) == len(groups), "the harness digest and the pool's digest group differently"


def test_join_undoes_split_on_variants() -> None:
    """Variants (a mapping, the replay record, a restore step, a `_fmt` rewritten with the source id first) split
    and join back exactly, and keep their source's trajectory parts they did not change."""
    from hsa.recipes import load_recipe
    from hsa.transform import run

    recipe = load_recipe("default")
    lines = (FIXTURES / "livestream" / "trajectories.jsonl").read_text(encoding="utf-8").splitlines()[:3]
    for k, line in enumerate(lines):
        source = read_row(line)
        variant, applied, _ = run(recipe, source, random.Random(k))
        assert applied and variant["mapping"]
        _, trajectory = _round_trip(variant)
        assert trajectory.mapping is variant["mapping"] and trajectory.id == source["id"]


def test_shared_harnesses_have_one_digest_each(tmp_path: Path) -> None:
    """The 48 generated records of 8 shared harnesses (the golden pins' shared input) have 8 harness digests."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_augment", ROOT / "benchmarks" / "bench_augment.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    path = bench.make_input(48, tmp_path / "in.jsonl", 8)
    harnesses = [_round_trip(read_row(line))[0] for line in path.read_text(encoding="utf-8").splitlines()]
    assert len({h.digest() for h in harnesses}) == len(set(harnesses)) == 8


@settings(max_examples=40, deadline=None)
@given(records())
def test_join_undoes_split_on_drawn_records(raw: dict) -> None:
    """join(*split(r)) is r for drawn records, in the input form and in the internal form."""
    note(_json.dumps(raw)[:2000])
    _round_trip(raw)
    _round_trip(normalize(raw))


def _livestream() -> dict:
    """The first livestream record with every part (tools, skills, hooks, prompt, hook events, meta), read afresh."""
    with open(FIXTURES / "livestream" / "trajectories.jsonl", encoding="utf-8") as f:
        for line in f:
            record = read_row(line)
            if all(record.get(k) for k in ("tools", "skills", "hooks", "prompt", "hook_events", "meta")):
                return record
    raise AssertionError("no livestream record has every part")


def _first_body(r: dict) -> None:
    r["prompt"]["sections"][0]["body"] += " (today only)"


#: trajectory-level edits of a record: none of them moves the harness digest
TRAJECTORY_EDITS = {
    "messages": lambda r: r["messages"][-1].update(content="something else entirely"),
    "fewer messages": lambda r: r["messages"].pop(),
    "hook events": lambda r: r["hook_events"].pop(),
    "prompt body": _first_body,
    "id": lambda r: r.update(id="another"),
    "meta": lambda r: r["meta"].update(note="x"),
    "notes": lambda r: r["notes"].append("a note"),
    "extra": lambda r: r["extra"].update(source="elsewhere"),
    "argument encoding": lambda r: r["_fmt"].update(args="object" if r["_fmt"].get("args") == "string" else "string"),
}


def _key_order(tool: dict) -> None:
    items = list(tool.items())
    tool.clear()
    tool.update(reversed(items))


#: harness-level edits, one part each: every one moves the harness digest
HARNESS_EDITS = {
    "tool description": lambda r: r["tools"][0].update(description="Does another thing."),
    "tool order": lambda r: r["tools"].reverse(),
    "tool parameter": lambda r: r["tools"][0]["parameters"]["properties"].update(extra_flag={"type": "boolean"}),
    "tool key order": lambda r: _key_order(r["tools"][0]),
    "skill content": lambda r: r["skills"][0].update(content=r["skills"][0]["content"] + "\nOne more step."),
    "skill tool": lambda r: r["skill_tool"].update(argument="skill_name"),
    "hook source": lambda r: r["hooks"][0].update(source=r["hooks"][0]["source"] + "\n# changed\n"),
    "hook event": lambda r: r["hooks"][0].update(event="SomeOtherEvent"),
    "prompt template": lambda r: r["prompt"].update(template=r["prompt"].get("template", "") + "\n"),
    "prompt section title": lambda r: r["prompt"]["sections"][0].update(title="Another title"),
    "prompt section order": lambda r: r["prompt"]["sections"].reverse(),
    "tools written as a string": lambda r: r["_fmt"].update(tools_str=True),
}


@pytest.mark.parametrize("edit", list(TRAJECTORY_EDITS))
def test_a_trajectory_edit_keeps_the_harness_digest(edit: str) -> None:
    """Two records that differ only in their trajectory (messages, events, bodies, ...) have one harness."""
    record = _livestream()
    other = _json.copy(record)
    TRAJECTORY_EDITS[edit](other)
    assert other != record
    (a, ta), (b, tb) = _round_trip(record), _round_trip(other)
    assert a.digest() == b.digest() and a == b and hash(a) == hash(b)
    assert ta != tb


@pytest.mark.parametrize("edit", list(HARNESS_EDITS))
def test_a_harness_edit_moves_the_harness_digest(edit: str) -> None:
    """Changing one part of the harness (and nothing else) gives another digest; the trajectory stays equal."""
    record = _livestream()
    other = _json.copy(record)
    HARNESS_EDITS[edit](other)
    assert _json.dumps(other) != _json.dumps(record)
    (a, ta), (b, tb) = _round_trip(record), _round_trip(other)
    assert a.digest() != b.digest() and a != b
    if edit != "prompt section order":  # the bodies move with their sections
        assert _unlaid(ta) == _unlaid(tb)


def _unlaid(trajectory: Trajectory) -> Trajectory:
    """``trajectory`` without the record's key order (which counts the harness's `_fmt` keys too)."""
    return dataclasses.replace(trajectory, keys=(), fmt_keys=None)


@settings(max_examples=20, deadline=None)
@given(records(), st.data())
def test_drawn_records_with_other_messages_share_their_harness(raw: dict, data: st.DataObject) -> None:
    """A drawn record and the same record with another trajectory drawn (same harness) have one harness digest."""
    record = normalize(raw)
    other = _json.copy(record)
    other["messages"] = other["messages"][: data.draw(st.integers(1, len(other["messages"])))]
    other["messages"][0] = {"role": "user", "content": data.draw(st.text(max_size=20))}
    assert split(record)[0].digest() == split(other)[0].digest()


def test_join_says_when_the_prompt_has_lost_sections() -> None:
    """A trajectory joined with a harness whose prompt lacks its sections is refused with a clear error."""
    record = _livestream()
    harness, trajectory = split(record)
    fewer = dataclasses.replace(harness, prompt={**harness.prompt, "sections": harness.prompt["sections"][1:]})
    with pytest.raises(ValueError, match="no section for each of the trajectory's"):
        join(fewer, trajectory)
    with pytest.raises(TypeError, match="split takes a record"):
        split([record])


def test_a_harness_part_the_record_lacks_is_added_by_join() -> None:
    """A harness part that the trajectory's record did not have (a variant harness that gains skills) is written
    after the record's own keys."""
    record = _livestream()
    without = {k: v for k, v in record.items() if k != "skills"}
    harness, trajectory = split(record)
    _, bare = split(without)
    joined = join(harness, bare)
    assert list(joined) == [*without, "skills"] and joined["skills"] is record["skills"]
