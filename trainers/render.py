"""Prompts rendered to text for a model that tokenizes them again: what the stages that render prompts (GRPO's
single-turn and multi-turn rollouts, evaluation's generation) do to the text the chat template wrote."""

from __future__ import annotations

__all__ = ["strip_bos"]


def strip_bos(tokenizer, text: str) -> str:
    """Rendered prompts are tokenized again by GRPO with special tokens: drop a BOS the template wrote."""
    bos = tokenizer.bos_token
    if bos and text.startswith(bos) and tokenizer("", add_special_tokens=True)["input_ids"]:
        return text[len(bos):]
    return text
