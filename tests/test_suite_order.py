"""The scheduling lists of tests/conftest.py name tests that exist: a renamed test or file would otherwise drop out
of them without a word (the list would order nothing, or a Ray file would be split over both workers)."""

from __future__ import annotations

import importlib

from tests.conftest import LONG_FIRST, ONE_WORKER_FILES, ROOT


def test_long_first_names_tests_of_the_suite():
    for nodeid in LONG_FIRST:
        path, _, name = nodeid.partition("::")
        assert (ROOT / path).is_file(), nodeid
        module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
        assert callable(getattr(module, name.split("[")[0], None)), nodeid


def test_one_worker_files_are_test_files():
    for path in ONE_WORKER_FILES:
        assert (ROOT / path).is_file() and (ROOT / path).name.startswith("test_"), path
