"""The hsa pytest plugin (entry point ``pytest11: hsa``): fixtures for testing transforms.

Installed with hsa, so any project's tests can use:

``hsa_fixture_path``
    Path of the bundled live-commerce sample (300 records, JSON Lines).
``hsa_records``
    Those records as input-format JSON objects (a fresh copy for each test).
``hsa_check``
    :func:`hsa.testing.assert_task_preserving`, for tests that prefer a fixture to an import.

The module imports nothing heavy: fixtures load hsa when a test asks for them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

__all__ = ["hsa_fixture_path", "hsa_records", "hsa_check"]


def _fixture_path() -> Path:
    from importlib import resources

    return Path(str(resources.files("fixtures").joinpath("livestream", "trajectories.jsonl")))


@pytest.fixture(scope="session")
def hsa_fixture_path() -> Path:
    """Path of the bundled live-commerce trajectories (JSON Lines, one record a line)."""
    path = _fixture_path()
    if not path.is_file():
        pytest.fail(f"the bundled fixture {path} is missing; reinstall hsa (pip install -e .) to restore it")
    return path


@pytest.fixture(scope="session")
def _hsa_fixture_lines(hsa_fixture_path) -> list[str]:
    return [line for line in hsa_fixture_path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture
def hsa_records(_hsa_fixture_lines) -> list[dict]:
    """The bundled records as input-format JSON objects, parsed afresh for each test (safe to modify)."""
    return [json.loads(line) for line in _hsa_fixture_lines]


@pytest.fixture
def hsa_check():
    """:func:`hsa.testing.assert_task_preserving` (transform, record, seed=0) -> report; raises on a broken invariant."""
    from hsa.testing import assert_task_preserving

    return assert_task_preserving
