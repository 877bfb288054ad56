"""Shared data of the report tests: a small augmented dataset, a model that memorised the canonical harness, and its
evaluation report."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.trainers_support import augment_first


@dataclass
class Evaluated:
    data: Path  # hsa augment output: 6 records, originals and 2 variants each
    report: Path  # hsa eval score report.json of the memorised predictions
    predictions: Path
    renamed_row: str  # a variant row whose mapping renames a tool
    renamed: tuple[str, str]  # that tool: (canonical name, variant name)
    wrong_prompt: str  # a prompt of that row that calls the renamed tool: wrong for the memorised model


def memorised_predictions(data: Path, path: Path) -> Path:
    """Predictions that always use the canonical names (a fixed-harness model): the gold turn, mapped back."""
    from hsa.evaluation import collect

    lines = []
    for it in collect(str(data))[0]:
        calls = it.gold["calls"]
        text = "".join(f"<tool_call>{json.dumps(c)}</tool_call>" for c in calls) or (it.gold["content"] or "ok")
        lines.append(json.dumps({"id": it.prompt["id"], "completion": text}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def evaluated(tmp_path_factory) -> Evaluated:
    from hsa.evaluation import collect, dumps, score
    from hsa.io import read_records

    root = tmp_path_factory.mktemp("report")
    data = augment_first(6, root / "shards", variants=2)
    preds = memorised_predictions(data, root / "preds.jsonl")
    report = root / "report.json"
    report.write_text(dumps(score(str(data), preds)), encoding="utf-8")
    items = collect(str(data))[0]
    for row in read_records(data):
        tools = (row.get("mapping") or {}).get("tools") or {}
        for canon, new in tools.items():
            wrong = [it.prompt["id"] for it in items if it.prompt["row_id"] == row["id"]
                     and any(c["name"] == canon for c in it.gold["calls"])]
            if wrong:
                return Evaluated(data, report, preds, row["id"], (canon, new), wrong[0])
    raise AssertionError("no variant renames a tool that one of its turns calls")
