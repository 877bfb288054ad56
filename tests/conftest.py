"""Shared fixtures: the bundled live-commerce records and small hand-written records."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Under pytest-xdist each worker is one of the machine's CPUs: torch (and the commands a test starts, which inherit
# the environment) get one thread each instead of one per CPU, so the workers' thread pools do not fight over the
# cores. On CI's 2 cores, with a CPU-bound test beside it, the reproduction's quick run took 20% less CPU this way.
# Set before anything imports torch; a value given in the environment is kept.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

# Every record augmented in the suite (in this process, in the commands a test starts, in their workers) checks that
# making its variants left the source record as it was read (hsa.pipeline.record.CHECK_SOURCES): a source's tools
# are shared, read only, with the other records of the same tools. Set before hsa.pipeline.record is imported.
os.environ.setdefault("HSA_CHECK_SOURCES", "1")

# The built-in families register through the entry-point group hsa.transforms of an installed hsa. The suite also
# runs from a checkout whose environment holds another checkout's install (or one older than the group), so it
# loads them itself; tests/test_entry_points.py checks the entry-point path in fresh interpreters.
import transforms  # noqa: F401,E402

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "livestream" / "trajectories.jsonl"

settings.register_profile("default", deadline=None, max_examples=30,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("thorough", deadline=None, max_examples=500,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
# CI: the same examples every run (no flaky discoveries), and no example database to carry over
settings.register_profile("ci", parent=settings.get_profile("default"), derandomize=True, database=None)
settings.load_profile(os.environ.get("HSA_HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "default"))

#: ``HSA_HYPOTHESIS_PROFILE=thorough`` also compares every item of the oracle corpora (tests/test_*_fast.py and the
#: reuse checks of tests/test_slot_params.py compare a fast path with the code it replaced on corpora of hooks,
#: records and variants); the suite takes a fixed half of each (:func:`sample`), which keeps it within its time on
#: CI's 2 cores
THOROUGH = os.environ.get("HSA_HYPOTHESIS_PROFILE") == "thorough"


def sample(items, every: int = 2) -> list:
    """Every ``every``-th of ``items``, from the first (all of them under the thorough profile): a fixed sample, the
    same on every run."""
    items = list(items)
    return items if THOROUGH else items[::every]


def normalized_fixtures(every: int = 1) -> list[dict]:
    """Every ``every``-th bundled record, in the internal form (:func:`hsa.records.normalize`)."""
    from hsa.records import normalize

    return [normalize(json.loads(line)) for line in FIXTURES.read_text(encoding="utf-8").splitlines()[::every]]


def without_hooks(record: dict) -> dict:
    """A copy of an internal record without its hooks and hook events (a tool-only record of the same harness)."""
    from hsa.records import clone

    out = clone(record)
    out.pop("hooks", None)
    out.pop("hook_events", None)
    return out


@pytest.fixture(params=["on", "off"])
def caches(request, monkeypatch):
    """Runs a test with the caches on and with ``HSA_CACHE=0``, each emptied before and after. "on" also gives the
    code under test a slot plan of a variant in progress (``hsa.context.current().plan``, as the pipeline sets it
    under a pool) that an earlier variant was made with, where the restore step and the variant check keep their
    work; "off" gives none."""
    from hsa import cache
    from hsa.context import current
    from hsa.plans import SlotPlan

    if request.param == "off":
        monkeypatch.setenv("HSA_CACHE", "0")
    cache.clear()
    current().plan = SlotPlan() if request.param == "on" else None
    if current().plan is not None:
        current().plan.reused = True  # the work is kept (hsa.context.WorkerContext.keeping)
    yield request.param
    monkeypatch.delenv("HSA_CACHE", raising=False)
    cache.clear()


@pytest.fixture(scope="session")
def fixture_lines() -> list[str]:
    return FIXTURES.read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="session")
def fixture_records(fixture_lines) -> list[dict]:
    return [json.loads(line) for line in fixture_lines]


@pytest.fixture
def small_jsonl(tmp_path, fixture_lines):
    """The first 20 fixture records as a JSONL file."""
    p = tmp_path / "in.jsonl"
    p.write_text("\n".join(fixture_lines[:20]) + "\n", encoding="utf-8")
    return p


def run_watching(cmd: list[str], folder: Path, watch: Callable[[], None], *, every: float, limit: float = 600,
                 **popen) -> tuple[int, str, str]:
    """Run ``cmd`` with its stdout and stderr in files of ``folder`` (a pipe read only at the end could fill and stop
    the run in its write) and call ``watch()`` every ``every`` seconds while it runs; fail, naming the wait, when it
    has not ended after ``limit`` seconds (it is killed). Returns (exit status, stdout, stderr)."""
    out, err = folder / "stdout", folder / "stderr"
    with open(out, "w") as fout, open(err, "w") as ferr:
        proc = subprocess.Popen(cmd, stdout=fout, stderr=ferr, **popen)
        deadline = time.monotonic() + limit
        while proc.poll() is None and time.monotonic() < deadline:
            watch()
            time.sleep(every)
        late = proc.poll() is None
        if late:
            proc.kill()
        proc.wait()
    stdout, stderr = out.read_text(), err.read_text()
    if late:
        pytest.fail(f"the run had not ended after {limit:.0f} s (killed); its stderr:\n{stderr[-2000:]}")
    return proc.returncode, stdout, stderr


@pytest.fixture(scope="module")
def box():
    """A sandbox with short limits (0.5 s, 256 MB), one per test module."""
    from hsa.sandbox import Sandbox

    b = Sandbox(time_limit=0.5, memory_mb=256)
    yield b
    b.close()


#: Test files whose tests one pytest-xdist worker runs, in file order (make test runs 2 workers): two tests of
#: test_ray_engine.py start a local Ray of their own and the others share the module's, so one worker means one Ray
#: at a time on the machine (with two workers, each started its module Ray, and a third came with the CLI test).
#: (tests/test_docs.py was one unit too for a round, so that its two pages that share commands would not wait on each
#: other's lock: xdist then started it beside the Ray file, and both ran 2-4 times longer; the page that waits leaves
#: its core to the other page's commands, which start two worker processes of their own.)
ONE_WORKER_FILES = ("tests/test_ray_engine.py",)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """xdist's load scheduling, but each of :data:`ONE_WORKER_FILES` is one unit of work. (``--dist loadgroup``
    with an ``xdist_group`` mark does this on the workers by renaming items, which pytest 9.2's node ids no
    longer allow: the mark is ignored there.)"""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FilesOnOneWorker(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return path if path in ONE_WORKER_FILES else nodeid

    return FilesOnOneWorker(config, log)



#: The suite's two longest single-process tests (each about 65 s on CI's 2 cores with one torch thread; 130-160 s
#: with torch's default threads), run first, beside test_ray_engine.py (xdist sends the file with the most tests
#: first: one unit, about 3 minutes): started last in file order, they kept one worker busy after the other had run
#: out of tests. The README's commands (tests/test_docs.py, tests/test_readme_path.py), which start processes of
#: their own, ran 40-80% longer beside the Ray tests, so they keep their place. (Ordering only: a test here must
#: pass in any order, as every test must.)
LONG_FIRST = (
    "tests/test_reproduce.py::test_quick_run_writes_the_table",
    "tests/test_reproduce.py::test_gpu_plan_dry_run_runs_every_stage_on_the_cpu",
)


def pytest_collection_modifyitems(config, items):
    rank = {nodeid: i for i, nodeid in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid, len(rank)))  # stable: every other test keeps its place
