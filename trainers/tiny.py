"""Build a tiny tool-calling model locally, so every stage runs without a model hub.

``python -m trainers.tiny --out DIR`` writes a model folder that ``from_pretrained``
opens: a byte-level BPE tokenizer trained on the bundled fixtures (rendered through
the chat template) and the bundled general instructions, the tool-capable chat
template ``trainers/data/hsa_chatml_tools.jinja`` (ChatML, Hermes-style
``<tool_call>`` blocks, ``{% generation %}`` markers), and a Qwen2-architecture causal
LM with random weights (about 2.3M parameters by default).

The tokenizer is trained with exactly the normaliser, pre-tokenizer and decoder that
``Qwen2Tokenizer`` rebuilds on load, so ``AutoTokenizer.from_pretrained(DIR)`` gives
the same ids as the trained tokenizer; :func:`build` checks this before returning.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["build", "corpus", "main", "make_parser", "SPECIAL_TOKENS", "TOOL_TOKENS"]

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
#: Plain (non-special) added tokens: they survive ``skip_special_tokens`` when completions are decoded.
TOOL_TOKENS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<tools>", "</tools>")

_ROOT = Path(__file__).resolve().parents[1]
FIXTURES = _ROOT / "fixtures" / "livestream" / "trajectories.jsonl"


def corpus(records: int | None = None, fixtures: Path = FIXTURES) -> Iterator[str]:
    """Texts to train the tokenizer on: fixture conversations as the chat template renders them, then
    the bundled general instructions and their example answers."""
    from transformers.utils.chat_template_utils import render_jinja_template

    from trainers.common import bundled_path, to_chat

    template = bundled_path("hsa_chatml_tools.jinja").read_text(encoding="utf-8")
    with open(fixtures, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if records is not None and i >= records:
                break
            chat = to_chat(json.loads(line), where=f"{fixtures}:{i + 1}")
            rendered, _ = render_jinja_template(conversations=[chat["messages"]], tools=chat["tools"],
                                                chat_template=template)
            yield rendered[0]
    with open(bundled_path("general_instructions.jsonl"), encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            for m in row["prompt"]:
                yield m["content"]
            if row.get("example"):
                yield row["example"]


def _train_tokenizer(texts: Iterator[str], vocab_size: int):
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer)
    return tok


def _probe_texts() -> list[str]:
    return ['Hello  world, 12345 ¥79 link_id "x"\n\n  tabs\tand CAPS',
            '<|im_start|>assistant\n<tool_call>{"name": "get_product_info_by_link_id", "arguments": {"link_id": 3}}'
            '</tool_call><|im_end|>\n',
            "<tool_response>\n{\"stock\": 8}\n</tool_response> café naïve 今日はライブ",
            "don't I'LL we've 3.14 -42 https://example.com/a?b=c"]


def build(out: str | Path, *, vocab_size: int = 4096, hidden_size: int = 192, num_layers: int = 4,
          num_heads: int = 6, num_kv_heads: int = 2, intermediate_size: int = 512,
          max_position_embeddings: int = 16384, seed: int = 0, records: int | None = None,
          tokenizer_from: str | Path | None = None) -> Path:
    """Write a tiny model folder to ``out`` and return its path.

    ``tokenizer_from`` reuses the tokenizer of an earlier build (same vocabulary, for a
    teacher/student pair with different random weights).
    """
    import torch
    from transformers import AutoTokenizer, PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    from trainers.common import bundled_path

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    template = bundled_path("hsa_chatml_tools.jinja").read_text(encoding="utf-8")
    if tokenizer_from is not None:
        fast = AutoTokenizer.from_pretrained(str(tokenizer_from))
    else:
        raw = _train_tokenizer(corpus(records), vocab_size)
        fast = PreTrainedTokenizerFast(tokenizer_object=raw, bos_token=None, eos_token="<|im_end|>",
                                       pad_token="<|endoftext|>", unk_token="<|endoftext|>")
        fast.add_special_tokens({"additional_special_tokens": ["<|im_start|>"]})
        fast.add_tokens(list(TOOL_TOKENS))
    fast.chat_template = template
    fast.model_max_length = max_position_embeddings
    fast.save_pretrained(out)

    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(fast), hidden_size=hidden_size, intermediate_size=intermediate_size,
        num_hidden_layers=num_layers, num_attention_heads=num_heads, num_key_value_heads=num_kv_heads,
        max_position_embeddings=max_position_embeddings, tie_word_embeddings=True,
        bos_token_id=None, eos_token_id=fast.eos_token_id, pad_token_id=fast.pad_token_id,
    )
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = fast.eos_token_id
    model.generation_config.pad_token_id = fast.pad_token_id
    model.save_pretrained(out)

    reloaded = AutoTokenizer.from_pretrained(str(out))
    for text in _probe_texts():
        if reloaded(text).input_ids != fast(text).input_ids:
            raise RuntimeError(f"the tokenizer saved in {out} reloads as {type(reloaded).__name__} with different "
                               f"ids for {text!r}; this is a bug in trainers.tiny")
    return out


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m trainers.tiny", description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="Folder to write the model and tokenizer to.")
    p.add_argument("--vocab_size", type=int, default=4096, help="BPE vocabulary size (default: 4096).")
    p.add_argument("--hidden_size", type=int, default=192, help="Model width (default: 192).")
    p.add_argument("--num_layers", type=int, default=4, help="Decoder layers (default: 4).")
    p.add_argument("--num_heads", type=int, default=6, help="Attention heads (default: 6).")
    p.add_argument("--num_kv_heads", type=int, default=2, help="Key/value heads (default: 2).")
    p.add_argument("--intermediate_size", type=int, default=512, help="MLP width (default: 512).")
    p.add_argument("--seed", type=int, default=0, help="Seed of the random weights (default: 0).")
    p.add_argument("--records", type=int, default=None,
                   help="Train the tokenizer on the first N fixture records only (default: all).")
    p.add_argument("--tokenizer_from", default=None,
                   help="Reuse the tokenizer of this earlier build instead of training one.")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    out = build(args.out, vocab_size=args.vocab_size, hidden_size=args.hidden_size, num_layers=args.num_layers,
                num_heads=args.num_heads, num_kv_heads=args.num_kv_heads,
                intermediate_size=args.intermediate_size, seed=args.seed, records=args.records,
                tokenizer_from=args.tokenizer_from)
    from transformers import AutoConfig

    cfg = AutoConfig.from_pretrained(str(out))
    print(json.dumps({"out": str(out), "model_type": cfg.model_type, "vocab_size": cfg.vocab_size,
                      "parameters": _count_parameters(out)}), file=sys.stdout)
    return 0


def _count_parameters(folder: Path) -> int:
    from safetensors import safe_open

    total = 0
    with safe_open(str(Path(folder) / "model.safetensors"), framework="pt") as f:
        for key in f.keys():
            n = 1
            for d in f.get_slice(key).get_shape():
                n *= d
            total += n
    return total


if __name__ == "__main__":
    raise SystemExit(main())
