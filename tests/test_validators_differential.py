"""A compiled validator (jsonschema-rs) gives jsonschema's verdicts where the data path would let it decide.

Issue 29 asks whether the per-record call check (invariant 1) can use a compiled validator. jsonschema stays the
authority: :func:`tests.validator_cases.compiled_decides` says where jsonschema-rs may stand in for it (no regex,
no ``multipleOf``, no remote reference, numbers JSON carries exactly), and these tests hold jsonschema-rs to
jsonschema's verdict there on the test corpus (every pair the data-path tests check, captured in
``tests/data/validation_pairs.jsonl``), the public MCP servers' schemas, mutants of each, hand-picked edge cases
and drawn schemas. ``benchmarks/bench_validators.py`` measures the speed and fastjsonschema beside them.

Kept cheap for ``make test`` (about 4 s of CPU): the corpus, its mutants and jsonschema's verdicts on them are made
once for the module, and the drawn schemas are few. The module is skipped where jsonschema-rs is not installed
(it is in the ``dev`` extra, which ``make test`` installs); fastjsonschema is the benchmark's only.
"""

from __future__ import annotations

import functools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("jsonschema_rs", reason="jsonschema-rs is in the dev extra: pip install -e '.[dev]'")

from hsa.testing import strategies as hs  # noqa: E402
from tests.validator_cases import (EDGE_CASES, PAIRS, compiled_decides, corpus_pairs, mutants, verdicts,  # noqa: E402
                                   with_mutants)


def _agree(a, b) -> bool:
    """Same verdict: both valid, both invalid, or both unusable (an exception, whatever its type)."""
    return (isinstance(a, str) and isinstance(b, str)) or a == b


@functools.cache
def _corpus() -> tuple[list, list]:
    """The corpus with its mutants, and jsonschema's verdicts on them: made once for the module's tests."""
    pairs = with_mutants(corpus_pairs())
    return pairs, verdicts("jsonschema", pairs)


def _disagreements(pairs: list, want: list | None = None) -> list[str]:
    """The pairs jsonschema-rs decides where its verdict is not jsonschema's (``want``: jsonschema's verdicts on
    ``pairs``, when already made)."""
    keep = [compiled_decides(*p) for p in pairs]
    decided = [p for p, k in zip(pairs, keep) if k]
    want = verdicts("jsonschema", decided) if want is None else [w for w, k in zip(want, keep) if k]
    got = verdicts("jsonschema_rs", decided)
    return [f"jsonschema {a!r}, jsonschema-rs {b!r}: {json.dumps(s, default=repr)[:300]} <- "
            f"{json.dumps(x, default=repr)[:200]}" for (s, x), a, b in zip(decided, want, got) if not _agree(a, b)]


def test_the_corpus_is_there_and_holds_both_verdicts():
    """The captured corpus is read, and with its mutants it holds valid and invalid calls (the test can fail)."""
    assert PAIRS.exists(), f"{PAIRS} is missing: benchmarks/capture_validation_pairs.py makes it"
    pairs, got = _corpus()
    assert len(pairs) > 5000 and got.count(True) > 1000 and got.count(False) > 1000


def test_same_verdicts_on_the_test_corpus_and_its_mutants():
    """On every captured pair and MCP schema example, and their mutants, jsonschema-rs says what jsonschema says
    wherever it would decide; and it would decide almost all of them (the fast path is not empty)."""
    pairs, want = _corpus()
    assert _disagreements(pairs, want) == []
    assert sum(compiled_decides(*p) for p in pairs) > 0.8 * len(pairs)


def test_same_verdicts_on_the_edge_cases_it_decides():
    """Floats as integers, booleans beside numbers, formats, references, 2020-12 keywords: agreement where it
    decides; the pairs where the two part ways (a regex dialect, NaN, multipleOf on floats) are outside."""
    assert _disagreements(EDGE_CASES) == []
    outside = [p for p in EDGE_CASES if not compiled_decides(*p)]
    want, got = verdicts("jsonschema", outside), verdicts("jsonschema_rs", outside)
    assert any(not _agree(a, b) for a, b in zip(want, got)), "the guard keeps out pairs that really differ"


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_same_verdicts_on_drawn_schemas_and_arguments(data):
    """A drawn tool schema, arguments valid for it, and their mutants: the same verdicts where it decides."""
    schema = data.draw(hs.tool_schemas())
    args = data.draw(hs.arguments(schema))
    pairs = [(schema, args), *((schema, m) for m in mutants(schema, args))]
    assert _disagreements(pairs) == []
