"""Harness-variant evaluation: prompts -> predictions (from any generator) -> scores -> report.

Three steps, each usable alone and none needing torch:

>>> from hsa.evaluation import make_prompts, score          # doctest: +SKIP
>>> prompts = make_prompts("runs/shards", turns="calls")    # doctest: +SKIP
>>> report = score("runs/shards", "preds.jsonl", turns="calls", held_out=["skill"])  # doctest: +SKIP
>>> report["canonical"]["call_accuracy"], report["gap"]["ci95"]                     # doctest: +SKIP

``python -m trainers.eval`` / ``hsa eval run`` add generation with a model (the train extra).
The report fields and the exact metric definitions are in docs/evaluation.md.
"""

from hsa.evaluation.parsers import FORMATS, Parsed, parse, parse_message
from hsa.evaluation.prompts import TURNS, EvalInputError, collect, make_prompts
from hsa.evaluation.report import dumps, read_predictions, score, to_markdown, write_report
from hsa.evaluation.scoring import STRING_MATCH, arguments_match, values_match

__all__ = [
    "FORMATS",
    "TURNS",
    "STRING_MATCH",
    "Parsed",
    "EvalInputError",
    "parse",
    "parse_message",
    "collect",
    "make_prompts",
    "score",
    "read_predictions",
    "arguments_match",
    "values_match",
    "dumps",
    "to_markdown",
    "write_report",
]
