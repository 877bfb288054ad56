"""Instruction following, IFEval style: strict / loose, prompt / instruction level, and whose checker runs."""

from __future__ import annotations

import pytest

from trainers.ifcheck import evaluate, ifeval_registry, loose_variants

ROWS = [
    {"prompt": [{"role": "user", "content": "in lowercase, at most 5 words"}],
     "checks": [{"type": "lowercase"}, {"type": "max_words", "n": 5}]},
    {"prompt": [{"role": "user", "content": "mention tea and end with 'Bye.'"}],
     "checks": [{"type": "keywords", "words": ["tea"]}, {"type": "ends_with", "text": "Bye."}]},
]


def test_strict_and_loose_prompt_and_instruction_accuracy_with_our_checkers():
    """Four IFEval accuracies: a preamble line fails strict but passes loose; counts are per prompt and check."""
    responses = ["Sure! Here it is:\nhello there friend", "I like tea. Bye."]
    out = evaluate(responses, ROWS, use_ifeval=False)
    assert (out["n"], out["n_instructions"]) == (2, 4)
    assert out["prompt_strict"] == 0.5 and out["prompt_loose"] == 1.0
    assert out["instruction_strict"] == 0.5 and out["instruction_loose"] == 1.0  # the preamble breaks both checks
    assert out["checker"]["instructions_checked_by_hsa"] == 4


def test_empty_response_follows_nothing():
    """An empty reply fails every instruction, strict and loose (as IFEval scores it)."""
    out = evaluate(["", ""], ROWS, use_ifeval=False)
    assert out["prompt_loose"] == 0.0 and out["instruction_loose"] == 0.0


def test_loose_variants_are_ifevals():
    """The loose readings drop the first line, the last line, both, and asterisks."""
    assert loose_variants("a\n**b**\nc") == ["a\n**b**\nc", "**b**\nc", "a\n**b**", "**b**", "a\nb\nc", "b\nc",
                                             "a\nb", "b"]


needs_ifeval = pytest.mark.skipif(ifeval_registry()[0] is None, reason="if-verifiable / lm-eval not installed")


@needs_ifeval
def test_ifevals_own_checker_code_runs_where_installed():
    """With if-verifiable installed, IFEval's checker decides: it counts don't as two words (\\w+ tokens)."""
    rows = [{"prompt": "two words", "checks": [{"type": "max_words", "n": 2}]}]
    assert evaluate(["don't stop"], rows, use_ifeval=False)["prompt_strict"] == 1.0
    out = evaluate(["don't stop"], rows)
    assert out["prompt_strict"] == 0.0
    assert out["checker"]["ifeval"].startswith(("if-verifiable", "lm-eval"))
    assert out["checker"]["instructions_checked_by_ifeval"] == 1


@needs_ifeval
def test_ifeval_rows_are_scored_with_ifevals_registry():
    """Rows in IFEval's own format (instruction_id_list + kwargs) are checked by IFEval's code."""
    rows = [{"prompt": "Write without commas. End with Is there anything else I can help with?",
             "instruction_id_list": ["punctuation:no_comma", "startend:end_checker"],
             "kwargs": [{}, {"end_phrase": "Is there anything else I can help with?"}]}]
    out = evaluate(["Hello there. Is there anything else I can help with?"], rows)
    assert out["prompt_strict"] == 1.0 and out["n_instructions"] == 2
    out = evaluate(["Hello, there."], rows)
    assert out["instruction_strict"] == 0.0
