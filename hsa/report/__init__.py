"""``hsa report``: one self-contained HTML page of a dataset's variants, its stats and its evaluation.

>>> from hsa.report import write_report                                  # doctest: +SKIP
>>> write_report("runs/shards", "runs/report.html",                      # doctest: +SKIP
...              evals=["runs/report.json"], predictions=["runs/preds.jsonl"])

The page (docs/report.md) has four views: the overview of the run (inputs, recipe, counts,
rejects, transforms, hooks), plots over every row, a variant browser (each sampled source beside
its variants, part by part, with the mapping as a table) and, with evaluation reports, their
groups with 95% intervals and a per-prompt table that says why each wrong prompt is wrong.
``hsa stats --html`` and the reproduction write their pages with
:func:`write_report`.

Modules: :mod:`hsa.report.diff` (representation-free diffs, shared with ``hsa show``),
:mod:`hsa.report.evalview` (reports and reasons), :mod:`hsa.report.data` (what the page shows),
:mod:`hsa.report.plots` (inline SVG), :mod:`hsa.report.page` (the HTML) and
:mod:`hsa.report.browser` (a headless Chromium over its DevTools pipe, for tests and screenshots).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hsa.report.data import DEFAULT_SAMPLE, collect_page
from hsa.report.evalview import ReportInputError
from hsa.report.page import render_page

__all__ = ["write_report", "build_report", "ReportInputError", "DEFAULT_SAMPLE"]


def build_report(data: str | Path, *, evals: Sequence[str | Path] = (), predictions: Sequence[str | Path] = (),
                 sample: int = DEFAULT_SAMPLE, seed: int = 0, tokenizer: str | None = None,
                 title: str | None = None, command: str | None = None, notes: Sequence[str] = ()) -> str:
    """The page of ``data`` (an ``hsa augment`` output folder) as an HTML string.

    ``evals``: evaluation reports (report.json) of that data, one per model; ``predictions``: their
    predictions files in the same order (a report without one uses the file it names, when it is
    there); ``sample``: source records shown one by one, with all their variants and prompts;
    ``seed``: which ones; ``tokenizer``: count tokens with it for the length plot; ``notes``: lines
    shown at the top of the overview (what the caller wants said, e.g. a benchmark's settings).
    Raises :class:`ReportInputError` for an input that cannot be used, with what to do."""
    page = collect_page(data, evals=evals, predictions=predictions, sample=sample, seed=seed, tokenizer=tokenizer)
    return render_page(page, title=title or f"hsa report: {Path(data).name}", command=command, notes=list(notes))


def write_report(data: str | Path, out: str | Path, **options) -> Path:
    """Write :func:`build_report` ``(data, **options)`` to ``out`` (its folder made); returns the path."""
    html = build_report(data, **options)
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(path)
    return path
