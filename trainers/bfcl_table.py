"""The second table of the reproduction: fixed-harness SFT against HSA-SFT on BFCL, split by function.

Public data no one here wrote: the single-turn call categories of BFCL (``bfcl-eval`` on PyPI), through the
``hsa bench`` pool (``hsa bench build``: every item's canonical row and its variants of the pool's families).
The items are split by **function**: two items that offer a tool of the same name are in one group (a union-find
over tool names), and whole groups go to the test split, so no tool of a test prompt is ever in a training row.

- ``fixed_sft`` trains on the canonical rows of the train items, ``hsa_sft`` on their canonical and variant rows;
  the same steps, batch and sequence length for both (:class:`trainers.reproduce.Plan`).
- Both are scored by ``hsa eval run`` on the test items: the canonical row of each, and ``bfcl_eval_variants``
  variant rows of each drawn from distinct families (seeded). A call counts when it maps back to BFCL's first
  accepted answer (stricter than BFCL's own checker, which accepts any listed value: the same rule for both
  models, and for the base).

>>> groups = split_by_function({"a": ["f", "g"], "b": ["g"], "c": ["h"]}, test_items=1, seed=0)
>>> sorted(groups["test"] + groups["train"]), groups["test"] in (["a", "b"], ["c"])
(['a', 'b', 'c'], True)
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["CATEGORIES", "split_by_function", "prepare_bfcl", "tool_names"]

# single-turn categories whose turns are calls (irrelevance and multi-turn left out: the table scores calls)
CATEGORIES = ("simple_python", "multiple", "parallel", "live_simple")


def tool_names(row: Mapping[str, Any]) -> list[str]:
    """The names of the tools a row offers (:func:`hsa.formats.common.tool_name`: OpenAI or flat)."""
    from hsa.formats.common import tool_name

    return [n for n in map(tool_name, row.get("tools") or []) if n is not None]


def _order(key: str, seed: int) -> str:
    return hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()


def split_by_function(items: Mapping[str, Sequence[str]], *, test_items: int, seed: int) -> dict[str, list[str]]:
    """``{"train": [...], "test": [...]}`` item ids: items sharing a tool name are one group; groups, in a seeded
    order, fill the test split up to ``test_items`` (a group that would overshoot is skipped), the rest train."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for item, names in items.items():
        root = find("item:" + item)
        for name in names:
            parent[find("tool:" + name)] = root
    groups: dict[str, list[str]] = {}
    for item in items:
        groups.setdefault(find("item:" + item), []).append(item)
    test: list[str] = []
    train: list[str] = []
    for members in sorted(groups.values(), key=lambda m: _order(min(m), seed)):
        if len(test) < test_items and len(test) + len(members) <= test_items:
            test.extend(members)
        else:
            train.extend(members)
    return {"train": sorted(train), "test": sorted(test)}


def _rows_by_item(pool: Path) -> dict[str, list[dict]]:
    from hsa.bench.pool import iter_pool_rows

    out: dict[str, list[dict]] = {}
    for row in iter_pool_rows(pool):
        out.setdefault(row["source_id"], []).append(row)
    return out


def _eval_rows(rows: list[dict], k: int, rng: random.Random) -> list[dict]:
    """The canonical row and ``k`` variant rows of distinct families (fewer where the item has fewer)."""
    canonical = [r for r in rows if r.get("variant") == 0]
    by_family: dict[str, list[dict]] = {}
    for r in rows:
        if r.get("variant") != 0:
            by_family.setdefault(r.get("bench_family") or "-", []).append(r)
    families = sorted(by_family)
    rng.shuffle(families)
    return canonical + [rng.choice(by_family[f]) for f in families[:k]]


def _dumps(rows: Iterable[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def prepare_bfcl(out: Path, plan: Any, runner: Any) -> dict[str, Any]:
    """The pool (``hsa bench build``), the split by function and the three data files of the table:
    ``train_fixed.jsonl`` (canonical rows), ``train_hsa.jsonl`` (canonical and variant rows) and
    ``eval.jsonl``; returns their paths and the split's counts."""
    data = out / "bfcl"
    data.mkdir(parents=True, exist_ok=True)
    pool = data / "bench"
    argv = ["hsa", "bench", "build", "--suite", "bfcl", "--out", str(pool), "--categories",
            *plan.bfcl_categories, "--workers", "1", "--quiet"]
    if plan.bfcl_limit:
        argv += ["--limit", str(plan.bfcl_limit)]
    runner.run("bfcl pool", argv, pool / "bench.json")
    paths = {"train_fixed": data / "train_fixed.jsonl", "train_hsa": data / "train_hsa.jsonl",
             "eval": data / "eval.jsonl", "split": data / "split.json"}
    if not paths["split"].exists():
        rows = _rows_by_item(pool)
        items = {sid: tool_names(next(r for r in rs if r.get("variant") == 0)) for sid, rs in rows.items()
                 if any(r.get("variant") == 0 for r in rs)}
        split = split_by_function(items, test_items=plan.bfcl_test_items, seed=plan.data_seed)
        train_tools = {n for sid in split["train"] for n in items[sid]}
        leaked = sorted({n for sid in split["test"] for n in items[sid]} & train_tools)
        assert not leaked, leaked  # the union-find guarantees it; a wrong split must never train
        rng = random.Random(plan.eval_seed)
        eval_rows = [r for sid in split["test"] for r in _eval_rows(rows[sid], plan.bfcl_eval_variants, rng)]
        paths["train_fixed"].write_text(_dumps(r for sid in split["train"] for r in rows[sid]
                                               if r.get("variant") == 0), encoding="utf-8")
        paths["train_hsa"].write_text(_dumps(r for sid in split["train"] for r in rows[sid]), encoding="utf-8")
        paths["eval"].write_text(_dumps(eval_rows), encoding="utf-8")
        counts = {"items": len(items), "train_items": len(split["train"]), "test_items": len(split["test"]),
                  "train_tools": len(train_tools),
                  "test_tools": len({n for sid in split["test"] for n in items[sid]}),
                  "train_rows_fixed": sum(1 for sid in split["train"] for r in rows[sid] if r.get("variant") == 0),
                  "train_rows_hsa": sum(len(rows[sid]) for sid in split["train"]),
                  "eval_rows": len(eval_rows), "eval_variant_rows": sum(1 for r in eval_rows if r.get("variant")),
                  "categories": list(plan.bfcl_categories)}
        paths["split"].write_text(json.dumps({"counts": counts, **split}, indent=1) + "\n", encoding="utf-8")
    split = json.loads(paths["split"].read_text(encoding="utf-8"))
    return {**paths, "counts": split["counts"]}
