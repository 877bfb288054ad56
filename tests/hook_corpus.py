"""Hook sources the hook tests share: the fixtures' hooks, and hooks as the recipes rewrite them.

Each list is built once per process (the rewritten ones run two recipes over a sample of
the fixture records), so test files that compare a fast path with its oracle on the same
corpus do not each rebuild it.
"""

from __future__ import annotations

import json
import random
from functools import lru_cache

from hsa.hooks_model import infer_entry
from tests.conftest import FIXTURES

LINES = FIXTURES.read_text(encoding="utf-8").splitlines()


def _key(h: dict) -> tuple[str, str]:
    return h["source"], h.get("entry") or infer_entry(h["source"]) or ""


@lru_cache(maxsize=1)
def fixture_hooks() -> tuple[tuple[str, str], ...]:
    """Every distinct ``(source, entry)`` of the fixture records' hooks, in order of first use."""
    return tuple(dict.fromkeys(_key(h) for line in LINES for h in json.loads(line).get("hooks") or ()))


@lru_cache(maxsize=1)
def rewritten_hooks() -> tuple[tuple[str, str], ...]:
    """``(source, entry)`` of hooks as the ``default`` and ``hooks`` recipes rewrite them (every 9th fixture
    record, two variants each), leaving out sources that are already fixture hooks."""
    from hsa.recipes import load_recipe
    from hsa.records import normalize
    from hsa.transform import run

    out: dict = {}
    for recipe_name in ("default", "hooks"):
        recipe = load_recipe(recipe_name)
        for i in range(0, len(LINES), 9):
            record = normalize(json.loads(LINES[i]))
            for k in (1, 2):
                variant, _, _ = run(recipe, record, random.Random(k))
                for h in variant.get("hooks") or ():
                    out[_key(h)] = None
    known = set(fixture_hooks())
    return tuple(x for x in out if x not in known)
