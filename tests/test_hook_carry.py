"""Analyses carried across hook.rename_locals and hook.restyle quotes edits equal fresh analyses (issue 8)."""
from __future__ import annotations

import random

import pytest

from hsa.codemods import analysis as A
from hsa.codemods.locals import fresh_name, identifiers_of, local_units, rename_locals_edits
from hsa.codemods.restyle import restyle, restyle_sites
from tests.hook_corpus import fixture_hooks, rewritten_hooks

HOOKS = list(fixture_hooks()) + list(rewritten_hooks()[::10])  # as in the inputs, and after the recipes' rewrites
EXTRA = [
    ('def check(payload):\n    name = payload.get("tool_name")\n    label = f"{name}: \'x\'"\n'
     '    if name in (\'lookup\', "other"):  # lookup\n        return {"decision": "block", "message": label}\n'
     '    return {"decision": "allow"}\n', "check"),
    ('def check(payload):\n    nom = payload["tool_name"]  # é\n    msg = "é " \'lookup\' f"{nom}"\n'
     '    if nom == \'lookup\':\n        return {"decision": "block", "message": msg}\n    return {"decision": "allow"}\n',
     "check"),
]


def _fresh(source, entry):
    return A._analyze(source, entry)


@pytest.mark.parametrize("k", range(0, len(HOOKS) + len(EXTRA), 1))
def test_carried_analysis_equals_fresh_analysis(k):
    """For drawn local renames and quote swaps of each hook, carry() gives exactly the fresh analysis."""
    source, entry = (HOOKS + EXTRA)[k]
    an = _fresh(source, entry)
    assert an.ok
    rng = random.Random(k)
    protect = frozenset({(entry or "").split(".")[0]})
    units, _ = local_units(source, module_helpers=True, protect=protect)
    carried = 0
    for _ in range(3):
        taken = identifiers_of(source)
        renames = {}
        for u in units:
            if rng.random() < 0.6:
                renames[u.key] = fresh_name(u.name, rng, taken | set(renames.values()))
        new, edits = rename_locals_edits(source, renames, module_helpers=True, protect=protect)
        if edits:
            got = A.carry(an, new, edits)
            if got is not None:
                carried += 1
                assert got == _fresh(new, entry)
        n = restyle_sites(source)[0].get("quotes", 0)
        picked = [i for i in range(n) if rng.random() < 0.5]
        if picked:
            new, _ = restyle(source, {"quotes": picked})
            got = A.carry_requoted(an, new)
            assert got is not None  # a quotes-only restyle is always carried
            carried += 1
            assert got == _fresh(new, entry)
    assert carried or not units


def test_carry_refuses_edits_it_cannot_prove():
    """An edit inside a literal, a changed literal body, or edits that do not give the new source: None."""
    source, entry = EXTRA[0]
    an = _fresh(source, entry)
    i = source.encode().index(b"'lookup'")
    assert A.carry(an, source.replace("'lookup'", "'other'", 1), [(i, i + 8, "'other'")]) is None  # body changed
    j = source.encode().index(b"tool_name")
    assert A.carry(an, source.replace("tool_name", "tool_nom", 1), [(j, j + 9, "tool_nom")]) is None  # in a literal
    k = source.encode().index(b"name =")
    assert A.carry(an, source, [(k, k + 4, "nom")]) is None  # edits do not give the source passed
    assert A.carry_requoted(an, source.replace("lookup", "lookop")) is None  # not a re-quote
