"""The harness-variant pool (issue 18): slots, shared harness-level draws, the slot column, determinism."""

from __future__ import annotations

import json
import random

import pytest

from hsa import load_recipe
from hsa.cli import main
from hsa.io import InputLine, iter_rows
from hsa.pipeline import AugmentError, augment, augment_record, harness_digest, rng_for, slot_for
from hsa.records import normalize
from hsa.transform import SlotRng, from_config, run

HARNESS_FAMILIES = {"tool", "skill", "prompt", "hook"}


@pytest.fixture(scope="module")
def shared_records() -> list[dict]:
    """12 generated records from 3 shared harnesses (only the conversations differ)."""
    from fixtures.livestream.generate import generate

    return generate(12, seed=3, harnesses=3)


@pytest.fixture
def shared_jsonl(tmp_path, shared_records):
    p = tmp_path / "shared.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in shared_records), encoding="utf-8")
    return p


def _line(rec: dict, pos: int = 0) -> InputLine:
    return InputLine("in.jsonl", pos + 1, json.dumps(rec).encode(), pos)


def test_pool_zero_draws_each_variant_from_its_record_rng(fixture_records):
    """--harness-pool 0 is the pre-pool derivation: each variant is run(recipe, source, rng_for(seed, id, k))."""
    recipe = load_recipe("default")
    for rec in fixture_records[:3]:
        res = augment_record(_line(rec), recipe, seed=7, variants=2, keep_original=False, harness_pool=0)
        source = normalize(rec)
        for row in res.rows:
            assert "slot" not in row
            _, applied, _ = run(recipe, source, rng_for(7, source["id"], row["variant"]))
            assert row["transforms"] == [a.to_json() for a in applied]


def test_records_sharing_a_harness_share_the_harness_edits_of_a_slot(shared_records):
    """Two records of one harness in the same slot get the same harness-level transforms and params."""
    recipe = load_recipe("default")
    by_key: dict[tuple[str, int], list] = {}
    for i, rec in enumerate(shared_records):
        res = augment_record(_line(rec, i), recipe, seed=1, variants=4, keep_original=False, harness_pool=2)
        digest = harness_digest(normalize(rec))
        for row in res.rows:
            harness = [t for t in row["transforms"] if t["name"].split(".")[0] in HARNESS_FAMILIES]
            by_key.setdefault((digest, row["slot"]), []).append(harness)
    shared = [v for v in by_key.values() if len(v) > 1]
    assert shared, "no two variants fell in the same (harness, slot)"
    for edits in shared:
        names = [[t["name"] for t in e] for e in edits]
        assert all(n == names[0] for n in names)
        tool_renames = [[t["params"] for t in e if t["name"] == "tool.rename"] for e in edits]
        assert all(r == tool_renames[0] for r in tool_renames)
    assert len({json.dumps(v[0]) for v in by_key.values()}) > 1  # slots differ from each other


def test_slot_column_is_written_and_is_the_slot_of_each_variant(tmp_path, shared_jsonl):
    """Rows carry 'slot' = slot_for(seed, source id, variant, K); the source row has null; the manifest has K."""
    import datasets

    out = tmp_path / "out"
    augment([shared_jsonl], out, load_recipe("tools"), variants=3, seed=2, keep_original=True, harness_pool=5)
    ds = datasets.load_from_disk(str(out))
    assert ds.column_names[:4] == ["id", "source_id", "variant", "slot"]
    for row in ds:
        if row["variant"] == 0:
            assert row["slot"] is None
        else:
            assert row["slot"] == slot_for(2, row["source_id"], row["variant"], 5)
    assert set(ds["slot"]) - {None} <= set(range(5))
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["harness_pool"] == 5
    info = json.loads((out / "dataset_info.json").read_text())
    assert info["features"]["slot"] == {"dtype": "int64", "_type": "Value"}


def test_a_records_variants_take_distinct_slots_then_cycle():
    """The first K variants of a record are K distinct slots; variant K + j takes the slot of variant j."""
    for rid in ("a", "b", "ls-000001"):
        slots = [slot_for(0, rid, v, 5) for v in range(1, 11)]
        assert sorted(slots[:5]) == list(range(5)) and slots[5:] == slots[:5]
    assert len({tuple(slot_for(0, r, v, 8) for v in range(1, 5)) for r in "abcdefgh"}) > 1  # per-record order


def test_no_slot_column_without_a_pool(tmp_path, shared_jsonl):
    """--harness-pool 0 writes the columns of before (no 'slot'), and the manifest says 0."""
    out = tmp_path / "out"
    augment([shared_jsonl], out, load_recipe("tools"), variants=1, harness_pool=0)
    assert "slot" not in next(iter_rows(out))
    assert json.loads((out / "manifest.json").read_text())["harness_pool"] == 0
    assert "slot" not in json.loads((out / "dataset_info.json").read_text())["features"]


def test_exported_rows_keep_the_slot_and_read_back_as_records(tmp_path, shared_jsonl):
    """hsa export writes 'slot' after 'variant'; an exported row augments again (slot is an output key)."""
    out, jl = tmp_path / "out", tmp_path / "rows.jsonl"
    augment([shared_jsonl], out, load_recipe("tools"), variants=1, harness_pool=3)
    assert main(["export", str(out), "--out", str(jl)]) == 0
    first = json.loads(jl.read_text().splitlines()[0])
    assert list(first)[:4] == ["id", "source_id", "variant", "slot"]
    assert normalize(first)["extra"] == {}


@pytest.mark.parametrize("pool", [1, 3])
def test_pool_output_is_identical_for_any_workers_shard_and_batch_size(tmp_path, shared_jsonl, pool):
    """With a pool, rows are the same bytes whatever the worker count, shard size or batch size."""
    recipe = load_recipe("default")
    a, b = tmp_path / "a", tmp_path / "b"
    augment([shared_jsonl], a, recipe, variants=2, seed=4, shard_size=5, harness_pool=pool)
    augment([shared_jsonl], b, recipe, variants=2, seed=4, shard_size=1000, workers=2, batch_size=3,
            harness_pool=pool)
    assert [json.dumps(r) for r in iter_rows(a)] == [json.dumps(r) for r in iter_rows(b)]


def test_pool_sizes_change_the_draws_and_one_slot_means_one_variant_per_harness(shared_records):
    """K=1: every variant of a harness has the same harness-level edits; K=1 and K=7 draw differently."""
    recipe = load_recipe("tools")
    edits = {1: {}, 7: {}}
    for pool in edits:
        for i, rec in enumerate(shared_records):
            res = augment_record(_line(rec, i), recipe, seed=0, variants=3, keep_original=False, harness_pool=pool)
            digest = harness_digest(normalize(rec))
            for row in res.rows:
                edits[pool].setdefault(digest, set()).add(json.dumps([t["name"] for t in row["transforms"]]))
    assert all(len(v) == 1 for v in edits[1].values())
    assert any(len(v) > 1 for v in edits[7].values())


def test_a_leaf_that_draws_more_does_not_shift_the_next_leaf():
    """Each harness-level leaf gets its own rng from one draw of the slot rng; trajectory leaves get the record's."""
    traj = random.Random(5)
    tool = from_config({"transform": "tool.reorder"})
    strip = from_config({"transform": "trajectory.strip_retries"})
    a, b = SlotRng(11, traj), SlotRng(11, traj)
    first_a = a.for_leaf(tool)
    first_a.random()
    first_b = b.for_leaf(tool)
    for _ in range(50):
        first_b.random()  # the first leaf consumed far more here
    assert a.for_leaf(tool).random() == b.for_leaf(tool).random()
    assert a.for_leaf(strip) is traj


def test_harness_digest_ignores_conversations_and_prompt_bodies(shared_records):
    """The digest is of the harness part: other messages or section bodies give the same digest, tools do not."""
    a = normalize(shared_records[0])
    b = normalize(shared_records[3])  # the same harness (index % 3)
    assert a["messages"] != b["messages"] and harness_digest(a) == harness_digest(b)
    c = json.loads(json.dumps(shared_records[0]))
    if c.get("prompt"):
        c["prompt"]["sections"][0]["body"] += " (today)"
        assert harness_digest(normalize(c)) == harness_digest(a)
    c["tools"] = c["tools"][1:]
    assert harness_digest(normalize(c)) != harness_digest(a)


def test_bad_pool_sizes_are_refused(tmp_path, shared_jsonl, capsys):
    """A negative --harness-pool is a clear error, in the CLI and the API."""
    with pytest.raises(SystemExit):
        main(["augment", str(shared_jsonl), "--out", str(tmp_path / "o"), "--harness-pool", "-1"])
    assert "--harness-pool" in capsys.readouterr().err
    with pytest.raises(AugmentError, match="harness-pool"):
        augment([shared_jsonl], tmp_path / "o2", load_recipe("identity"), harness_pool=-2)


def test_resume_with_another_pool_size_is_refused(tmp_path, shared_jsonl):
    """A run resumed with a different --harness-pool would mix draws: refused, naming harness_pool."""
    out = tmp_path / "out"
    augment([shared_jsonl], out, load_recipe("identity"), variants=1, harness_pool=2)
    with pytest.raises(AugmentError, match="harness_pool"):
        augment([shared_jsonl], out, load_recipe("identity"), variants=1, harness_pool=4, resume=True)


def test_stats_report_rows_per_slot(tmp_path, shared_jsonl):
    """hsa stats counts the rows of each pool slot and reports K from the manifest."""
    from hsa.stats import compute_stats, render_text

    out = tmp_path / "out"
    augment([shared_jsonl], out, load_recipe("tools"), variants=3, keep_original=True, harness_pool=4)
    st = compute_stats(out)
    expected: dict[str, int] = {}
    for row in iter_rows(out):
        if row["slot"] is not None:
            expected[str(row["slot"])] = expected.get(str(row["slot"]), 0) + 1
    assert st["slots"] == dict(sorted(expected.items())) and st["harness_pool"] == 4
    assert sum(st["slots"].values()) == 36 and "rows per harness-pool slot (K = 4)" in render_text(st)


def test_a_leaf_on_the_harness_is_sampled_and_applied_once_per_slot_and_per_what_it_read():
    """Under a slot rng, a leaf that samples and applies on the harness is run once for the records of a slot whose
    harness parts and answers are alike, and the parts it made are taken by the others; a record whose answer to
    its question differs gets its own run. A leaf with a plain apply is applied per record (its draw reused)."""
    import dataclasses
    from typing import ClassVar

    from hsa import cache
    from hsa.plans import SlotPlan
    from hsa.records import normalize
    from hsa.transform import Transform

    calls = []

    def says_hello(record) -> bool:
        return any("hello" in (m.get("content") or "") for m in record["messages"])

    @dataclasses.dataclass(frozen=True)
    class Tag(Transform):
        name: ClassVar[str] = "tool.test_tag"
        family: ClassVar[str] = "tool"

        def sample_harness(self, harness, facts, rng):
            return {"n": rng.randrange(1000), "hello": facts.ask(says_hello)}

        def apply_harness(self, harness, params):
            calls.append(params["n"])
            return {"tools": [{**t, "description": f"v{params['n']} {params['hello']}"} for t in harness["tools"]]}

    @dataclasses.dataclass(frozen=True)
    class TagOnRecord(Tag):
        name: ClassVar[str] = "tool.test_tag_record"
        apply_harness = Transform.apply_harness  # a plain apply instead

        def apply(self, record, params):
            calls.append(params["n"])
            return {**record, "tools": [{**t, "description": f"v{params['n']}"} for t in record["tools"]]}

    tools = [{"name": "t", "description": "d", "parameters": {"type": "object"}, "dialect": "openai"}]
    # internal records (run adds the restore step of invariant 8 to their mapping)
    a = normalize({"id": "a", "tools": tools, "messages": [{"role": "user", "content": "one"}]})
    b = normalize({"id": "b", "tools": tools, "messages": [{"role": "user", "content": "two"}]})
    c = normalize({"id": "c", "tools": tools, "messages": [{"role": "user", "content": "hello"}]})
    cache.clear()
    for t, expected_calls in ((Tag(), 2), (TagOnRecord(), 3)):
        calls.clear()
        plan = SlotPlan()  # the slot's plan, shared by the three records
        outs = [run(t, rec, SlotRng(3, random.Random(0), plan))[0] for rec in (a, b, c)]
        assert len(calls) == expected_calls  # Tag: a, then c (another answer); b takes a's
        assert outs[0]["tools"] == outs[1]["tools"] and outs[1]["messages"] == b["messages"]
        assert outs[1]["id"] == "b" and outs[2]["id"] == "c"
        assert t.apply(a, {"n": 1, "hello": False})["tools"][0]["description"].startswith("v1")
    with pytest.raises(TypeError, match="defines both apply and apply_harness"):
        from hsa.transform import register

        register(_with_an_apply(Tag, "tool.test_both"))


def test_a_leaf_that_makes_mapping_steps_has_their_harness_work_done_once_per_slot():
    """A transform whose change is its mapping steps (``mapping_steps``, nothing declared) is applied by hsa's
    appliers; under a slot rng its harness parts and steps are kept in the slot plan from the second record of a
    harness on and taken by the next, whose messages are carried through the steps: the variant of every record is
    its plain apply's, the mentions of the renamed tool in that record's own messages included."""
    import dataclasses
    from typing import ClassVar

    from hsa.plans import SlotPlan
    from hsa.records import normalize
    from hsa.transform import Transform, makes_steps, register

    made = []

    @dataclasses.dataclass(frozen=True)
    class Prefix(Transform):
        name: ClassVar[str] = "tool.test_prefix"
        family: ClassVar[str] = "tool"

        def sample_harness(self, harness, facts, rng):
            return {"renames": {t["name"]: f"acme_{t['name']}" for t in harness["tools"]}}

        def mapping_steps(self, harness, params):
            made.append(params)
            missing = set(params["renames"]) - {t["name"] for t in harness["tools"]}
            if missing:
                raise ValueError(f"tool.test_prefix: tools {sorted(missing)} are not in the record")
            return [{"op": "tools", "map": params["renames"]}]

    assert makes_steps(Prefix())
    tools = [{"name": "get_weather", "description": "Weather for a city.", "dialect": "openai",
              "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]

    def record(i: int, text: str) -> dict:
        return normalize({"id": f"r{i}", "tools": tools, "messages": [
            {"role": "user", "content": text},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "4 C"},
            {"role": "assistant", "content": f"get_weather says 4 C ({i})."}]})

    recs = [record(i, text) for i, text in enumerate(("Oslo?", "Weather in Oslo, via get_weather?", "and Bergen?"))]
    plan = SlotPlan()
    outs = [run(Prefix(), rec, SlotRng(3, random.Random(0), plan))[0] for rec in recs]
    assert len(made) == 2  # the first record notes the branch, the second checks and keeps it, the third takes it
    assert sum(r.taken for r in plan.runs) == 1
    params = {"renames": {"get_weather": "acme_get_weather"}}
    for rec, out in zip(recs, outs):
        plain = Prefix().apply(rec, params)
        assert out["tools"] == plain["tools"] and out["messages"] == plain["messages"]
        assert out["messages"][1]["tool_calls"][0]["function"]["name"] == "acme_get_weather"
        assert "acme_get_weather says" in out["messages"][3]["content"]
    assert "via acme_get_weather?" in outs[1]["messages"][0]["content"]
    with pytest.raises(ValueError, match="are not in the record"):
        Prefix().apply(recs[0], {"renames": {"nope": "acme_nope"}})
    with pytest.raises(TypeError, match="defines both apply and mapping_steps"):
        register(_with_an_apply(Prefix, "tool.test_both_steps"))


def _with_an_apply(base: type, name: str) -> type:
    """``base`` (a transform class) with a plain ``apply`` of its own too, named ``name``: what register refuses."""
    return type("Both", (base,), {"name": name, "apply": lambda self, record, params: record})


def test_source_records_of_the_same_tools_share_one_tool_list_and_records_read_back_do_not():
    """The pipeline reads a source's tools once per tool list (``normalize(shared=True)``: one list, read only, for
    the records with those tools after the first, whose list stays its own: a record with tools of its own keeps
    nothing more); a record read back (whose undo rewrites its tools in place) gets its own."""
    from hsa import cache
    from hsa.records import read_row

    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city.",
                                               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
    rows = [{"id": f"r{i}", "tools": tools, "messages": [{"role": "user", "content": f"hi {i}"}]} for i in range(3)]
    cache.clear()
    loaded = [json.loads(json.dumps(r)) for r in rows]  # what a JSON parser made, as the pipeline reads a line
    shared = [normalize(r, loaded=True, shared=True) for r in loaded]
    assert shared[1]["tools"] is shared[2]["tools"] and shared[0]["tools"] is not shared[1]["tools"]
    assert shared[0]["tools"] == shared[1]["tools"] == normalize(rows[0])["tools"]  # as a record read on its own
    fresh = [normalize(r, loaded=True) for r in loaded[:2]] + [read_row(json.dumps(rows[0])) for _ in range(2)]
    assert len({id(r["tools"]) for r in fresh} | {id(shared[1]["tools"])}) == 5
    assert all(r["tools"] == shared[1]["tools"] for r in fresh)


def test_a_transform_that_modifies_its_source_stops_the_record(monkeypatch):
    """With HSA_CHECK_SOURCES (the suite sets it), a transform whose apply changes the record it is given (here its
    tool list, which a second record of the same tools shares) is an error, not other variants and records changed
    behind their back."""
    import dataclasses
    from typing import ClassVar

    from hsa import cache
    from hsa.pipeline import record as record_module
    from hsa.transform import Transform

    assert record_module.CHECK_SOURCES  # tests/conftest.py sets HSA_CHECK_SOURCES=1

    @dataclasses.dataclass(frozen=True)
    class Vandal(Transform):
        name: ClassVar[str] = "tool.test_vandal"
        family: ClassVar[str] = "tool"

        def sample(self, record, rng):
            return {}

        def apply(self, record, params):
            record["tools"][0]["description"] = "changed in place"  # modifies its input: not allowed
            return {**record, "tools": [dict(t) for t in record["tools"]]}

    rec = {"id": "v", "tools": [{"type": "function", "function": {"name": "f", "description": "d",
                                                                   "parameters": {"type": "object"}}}],
           "messages": [{"role": "user", "content": "x"}]}
    cache.clear()  # the first record's tools are its own, the second's the shared list
    try:
        with pytest.raises(AssertionError, match="a transform's apply must not modify its input"):
            augment_record(_line(rec), Vandal(), seed=0, variants=1, keep_original=False, harness_pool=0)
        monkeypatch.setattr(record_module, "CHECK_SOURCES", False)
        res = augment_record(_line(rec), Vandal(), seed=0, variants=1, keep_original=False, harness_pool=0)
        assert res.rows  # unchecked, the change goes through
    finally:
        cache.clear()  # the shared list it changed is not left for later tests, whatever the outcome
