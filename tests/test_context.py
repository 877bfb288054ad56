"""The worker context (hsa.context): what a process keeps between records lives in one object, a fresh one is a
clean slate, and the one before it comes back untouched."""

from __future__ import annotations

from pathlib import Path

from hsa import cache
from hsa.context import STACK, WorkerContext, current, use
from hsa.io import InputLine
from hsa.pipeline.executor import init_worker, work
from hsa.recipes import load_recipe, recipe_to_dict
from hsa.record_texts import param_paths
from tests.conftest import ROOT

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "when": {"type": "object", "properties": {
    "day": {"type": "string"}}}}}


def _lines(n: int) -> list[InputLine]:
    path = ROOT / "fixtures" / "mcp" / "records.jsonl"
    raw = Path(path).read_bytes().splitlines()[:n]
    return [InputLine(str(path), i + 1, line, i) for i, line in enumerate(raw)]


def test_a_fresh_context_has_its_own_caches_and_plans_and_the_one_before_comes_back():
    outer = current()
    param_paths(SCHEMA)
    param_paths(SCHEMA)
    paths = cache.lru("schema.facts", 64 << 20)
    hits = paths.hits
    assert hits >= 1 and len(paths) >= 1
    outer.plans.get(("h", 0))
    with use(WorkerContext()) as inner:
        assert current() is inner and STACK[-1] is inner
        assert paths.hits == 0 and len(paths) == 0  # the handle reads the inner context's table
        assert param_paths(SCHEMA) == [("city",), ("when",), ("when", "day")]
        assert paths.misses == 1 and len(inner.plans) == 0
        assert "schema.facts" in inner.caches and inner.caches["schema.facts"] is not \
            outer.caches["schema.facts"]
    assert current() is outer
    assert paths.hits == hits and len(outer.plans) >= 1  # untouched by the inner block
    param_paths(SCHEMA)
    assert paths.hits == hits + 1


def test_use_restores_the_context_when_the_block_raises():
    outer = current()
    try:
        with use(WorkerContext()):
            raise KeyError("x")
    except KeyError:
        pass
    assert current() is outer


def test_init_worker_puts_the_recipe_and_options_in_the_current_context_and_work_reads_them():
    config = recipe_to_dict(load_recipe("default"))
    options = {"seed": 3, "variants": 2, "keep_original": True, "harness_pool": 8, "exec_hooks": False}
    lines = _lines(6)
    with use(WorkerContext()) as a:
        init_worker(config, options)
        assert a.recipe is not None and a.options == options
        first = [(pos, encoded) for pos, _, encoded in work(lines)]
        assert len(a.plans) > 0 and a.cache_stats()
    with use(WorkerContext()) as b:  # a clean slate gives the same bytes as the warm context
        init_worker(config, options)
        assert [(pos, encoded) for pos, _, encoded in work(lines)] == first
        with use(WorkerContext(max_plans=0)) as c:  # and so does one that keeps no plan
            init_worker(config, options)
            assert [(pos, encoded) for pos, _, encoded in work(lines)] == first
            assert len(c.plans) == 0 and c.plans.misses > 0
        assert len(b.plans) == len(a.plans)


def test_a_context_made_with_memoising_off_keeps_nothing(monkeypatch):
    monkeypatch.setenv("HSA_CACHE", "0")
    with use(WorkerContext()) as ctx:
        param_paths(SCHEMA)
        param_paths(SCHEMA)
        assert ctx.plans.max_plans == 0
        assert ctx.caches["schema.facts"].hits == 0 and len(ctx.caches["schema.facts"]) == 0


def test_a_run_without_hooks_leaves_hook_execution_as_it_was(tmp_path):
    """--no-exec-hooks turns hooks off for its run (the worker context's exec_hooks), not for the process: an RL
    environment or a later run in the same process still replays hooks."""
    from hsa import sandbox
    from hsa.cli import main

    src = ROOT / "fixtures" / "harnesses" / "claude_code.jsonl"
    assert sandbox.execution_enabled()
    assert main(["augment", str(src), "--out", str(tmp_path / "o"), "--variants", "1", "--no-exec-hooks",
                 "--workers", "1", "--quiet"]) == 0
    assert sandbox.execution_enabled()
    with use(WorkerContext(options={"exec_hooks": False})):
        assert not sandbox.execution_enabled()
    assert sandbox.execution_enabled()
    with use(WorkerContext()):
        init_worker(recipe_to_dict(load_recipe("identity")), {"exec_hooks": False})
        assert not sandbox.execution_enabled()
    assert sandbox.execution_enabled()


def test_validate_collects_less_while_it_runs_and_puts_the_thresholds_back(monkeypatch):
    """hsa validate's loop (and canonicalize's) runs with GC_THRESHOLDS; the caller's thresholds are back after,
    also when the loop raises."""
    import gc

    from hsa.context import GC_THRESHOLDS
    from hsa.validate import ValidationReport, validate_records

    outer = gc.get_threshold()  # init_worker, run in this process by a test before, sets GC_THRESHOLDS for good
    gc.set_threshold(700, 10, 10)
    before = gc.get_threshold()
    seen = []

    def items():
        seen.append(gc.get_threshold())
        yield from ()

    validate_records(items(), ValidationReport())
    assert seen == [GC_THRESHOLDS] and gc.get_threshold() == before

    def broken():
        seen.append(gc.get_threshold())
        raise KeyboardInterrupt
        yield

    try:
        validate_records(broken(), ValidationReport())
    except KeyboardInterrupt:
        pass
    assert seen[-1] == GC_THRESHOLDS and gc.get_threshold() == before
    gc.set_threshold(*outer)
