"""What the three stages share: configs and their parser, datasets, chat conversion, model loading.

Parser (trl's script style): dataclass configs with help text; ``--config file.yaml``
sets defaults, then command-line flags override. Keys and flags that are not fields
of these dataclasses are forwarded to the stage's trl config (``SFTConfig``,
``DistillationConfig``, ``GRPOConfig``) and checked against it, so every trl option
stays reachable without importing trl for ``--help``.

Datasets: ``--dataset`` is an hsa shard folder (``hsa augment --out DIR``; opened with
``datasets.load_from_disk``), a JSONL file (``.jsonl``, ``.jsonl.gz``, ``.json``), a JSON
array file, a Parquet file, or a hub dataset id. Rows become trl's conversational format with a per-row ``tools``
list: tools in the OpenAI form that chat templates expect, tool-call ``arguments`` as
objects, whatever dialect the row came in (:func:`to_chat`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import types
import typing
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from hsa.chat import CHAT_COMPAT, adaptation_summary

__all__ = [
    "ModelArguments",
    "RunArguments",
    "LoraArguments",
    "Extras",
    "TrainerInputError",
    "train_top_layers",
    "make_parser",
    "parse_args",
    "iter_rows",
    "to_chat",
    "CHAT_COMPAT",
    "template_compat",
    "adaptation_summary",
    "check_template_renders_harness",
    "tools_to_openai",
    "resolve_model_path",
    "load_tokenizer",
    "trl_config",
    "peft_config",
    "bundled_path",
    "bundled_template",
    "has_accelerator",
    "model_init_kwargs",
    "log",
]


class TrainerInputError(ValueError):
    """A dataset, model or tokenizer the trainers cannot use; the message says what to do."""


# --------------------------------------------------------------------------- configs


@dataclasses.dataclass
class ModelArguments:
    """Which model and tokenizer to train."""

    model_name_or_path: str | None = dataclasses.field(
        default=None, metadata={"help": "A local model folder (for example one built by `python -m trainers.tiny "
                                        "--out DIR`) or a hub model id. Required."})
    chat_template_path: str | None = dataclasses.field(
        default=None, metadata={"help": "A .jinja file or a tokenizer folder whose chat template replaces the "
                                        "tokenizer's own (trainers/data/hsa_chatml_tools.jinja is bundled)."})
    dtype: str | None = dataclasses.field(
        default=None, metadata={"help": "Weight dtype when loading: float32, bfloat16, float16 or auto. Unset: "
                                        "float32 weights (trl's default), with bf16 autocast where supported."})
    attn_implementation: str | None = dataclasses.field(
        default=None, metadata={"help": "Attention kernel passed to from_pretrained (eager, sdpa, "
                                        "flash_attention_2, ...)."})
    trust_remote_code: bool = dataclasses.field(
        default=False, metadata={"help": "Allow models and tokenizers that ship custom code."})
    chat_compat: list[str] | None = dataclasses.field(
        default=None, metadata={"help": "Rewrites for chat templates that cannot render some conversations, on top "
                                        "of those found by rendering probe conversations through the template "
                                        "(always on, logged): split_parallel_calls (one call per assistant turn: "
                                        "Llama 3.1/3.2, gpt-oss), alnum9_call_ids (tool-call ids of 9 letters and "
                                        "digits: Mistral), fold_system (a system message after the first, such as "
                                        "a hook's message, folded into the user turn: Qwen 3.5, Mistral, Gemma), "
                                        "merge_user_turns (two user turns in a row joined), system_in_last_user (the "
                                        "system prompt put in the last user turn: Mistral v0.3, which renders it "
                                        "only beside a final user turn), system_as_user (a late "
                                        "system message sent as a user message), string_arguments (tool-call "
                                        "arguments as JSON text, for a template that joins them to a string: "
                                        "Apertus), tool_call_tags (calls written as <tool_call> tags in the "
                                        "assistant's text: SmolLM3)."})


@dataclasses.dataclass
class RunArguments:
    """The usual training-loop knobs; anything else goes straight to the trl config."""

    output_dir: str | None = dataclasses.field(
        default=None, metadata={"help": "Where checkpoints and the final model are written. Required."})
    max_steps: int = dataclasses.field(
        default=-1, metadata={"help": "Optimisation steps; -1 runs num_train_epochs."})
    num_train_epochs: float = dataclasses.field(default=1.0, metadata={"help": "Epochs when max_steps is -1."})
    learning_rate: float | None = dataclasses.field(
        default=None, metadata={"help": "Peak learning rate (the default depends on the stage)."})
    per_device_train_batch_size: int = dataclasses.field(default=1, metadata={"help": "Batch size per device."})
    gradient_accumulation_steps: int = dataclasses.field(
        default=1, metadata={"help": "Micro-batches accumulated per optimisation step."})
    logging_steps: float = dataclasses.field(default=10, metadata={"help": "Log every this many steps."})
    save_strategy: str = dataclasses.field(
        default="steps", metadata={"help": "When to save checkpoints: no, steps or epoch."})
    save_steps: float = dataclasses.field(default=500, metadata={"help": "Save a checkpoint every this many steps."})
    seed: int = dataclasses.field(default=0, metadata={"help": "Random seed (data order, sampling, LoRA init)."})
    bf16: bool | None = dataclasses.field(
        default=None, metadata={"help": "bf16 mixed precision (fp32 master weights, bf16 autocast). Unset: on where the "
                                        "GPU supports it, off on CPU; true on a CPU with bf16 instructions (AVX-512 "
                                        "BF16, AMX) runs the CPU autocast, about 2.5x faster there."})
    gradient_checkpointing: bool | None = dataclasses.field(
        default=None, metadata={"help": "Recompute activations to save memory. Unset: on with a GPU, off on CPU."})
    report_to: str = dataclasses.field(
        default="none", metadata={"help": "Experiment trackers (none, tensorboard, wandb, trackio, all)."})


@dataclasses.dataclass
class LoraArguments:
    """LoRA through peft (off unless --use_peft)."""

    use_peft: bool = dataclasses.field(default=False, metadata={"help": "Train a LoRA adapter instead of all weights."})
    lora_r: int = dataclasses.field(default=16, metadata={"help": "LoRA rank."})
    lora_alpha: int = dataclasses.field(default=32, metadata={"help": "LoRA scaling alpha."})
    lora_dropout: float = dataclasses.field(default=0.05, metadata={"help": "Dropout on the LoRA path."})
    lora_target_modules: list[str] | None = dataclasses.field(
        default=None, metadata={"help": "Module names to adapt; unset: all linear layers except the LM head."})


@dataclasses.dataclass
class Extras:
    """Options for the trl config that are not fields of the hsa dataclasses."""

    from_config: dict[str, Any] = dataclasses.field(default_factory=dict)  # YAML keys, already typed
    from_cli: list[str] = dataclasses.field(default_factory=list)  # raw --flag value tokens
    config_file: str | None = None


# --------------------------------------------------------------------------- parser

_TRUE = {"true", "1", "yes", "y", "on"}
_FALSE = {"false", "0", "no", "n", "off"}


def _str2bool(text: str) -> bool:
    low = str(text).strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"expected a boolean (true/false), got {text!r}")


def _unwrap_optional(tp: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


def _add_dataclass(parser: argparse.ArgumentParser, cls: type, defaults: dict[str, Any]) -> None:
    group = parser.add_argument_group(cls.__name__, (cls.__doc__ or "").strip().splitlines()[0])
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        tp = _unwrap_optional(hints[f.name])
        default = defaults.get(f.name, f.default if f.default is not dataclasses.MISSING else
                               (f.default_factory() if f.default_factory is not dataclasses.MISSING else None))
        help_text = f.metadata.get("help", "")
        help_text = (help_text + f" (default: {default!r})").replace("%", "%%")
        kwargs: dict[str, Any] = {"default": default, "help": help_text, "dest": f.name}
        if tp is bool:
            kwargs.update(type=_str2bool, nargs="?", const=True, metavar="BOOL")
        elif typing.get_origin(tp) is list:
            (item,) = typing.get_args(tp) or (str,)
            kwargs.update(type=item, nargs="+")
        elif tp in (int, float, str):
            kwargs.update(type=tp)
        choices = f.metadata.get("choices")
        if choices:
            kwargs["choices"] = choices
        group.add_argument(f"--{f.name}", **kwargs)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def make_parser(prog: str, description: str, dataclass_types: Sequence[type],
                defaults: dict[str, Any] | None = None, trl_config_name: str = "the trl config"
                ) -> argparse.ArgumentParser:
    """An argparse parser for ``dataclass_types`` plus ``--config``; cheap to build (no torch, no trl)."""
    epilog = (f"Any other field of {trl_config_name} may be given as --name value or as a key of the --config "
              "YAML file; unknown names are reported before training starts.")
    parser = argparse.ArgumentParser(prog=prog, description=description, epilog=epilog)
    parser.add_argument("--config", default=None, metavar="FILE.yaml",
                        help="YAML file of options; command-line flags override it.")
    for cls in dataclass_types:
        _add_dataclass(parser, cls, defaults or {})
    return parser


def _load_yaml(path: str) -> dict[str, Any]:
    import yaml

    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"--config {path}: no such file; pass a YAML file of option: value lines")
    data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError(f"--config {path}: expected a mapping of option names to values, got {type(data).__name__}")
    return data


def parse_args(argv: Sequence[str] | None, prog: str, description: str, dataclass_types: Sequence[type],
               defaults: dict[str, Any] | None = None, trl_config_name: str = "the trl config"
               ) -> tuple[Any, ...]:
    """Parse ``argv`` into one instance per dataclass, plus an :class:`Extras` for the trl config.

    Order of precedence: dataclass defaults < ``defaults`` < ``--config`` YAML < command line.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = make_parser(prog, description, dataclass_types, defaults, trl_config_name)
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config", default=None)
    known_pre, _ = pre.parse_known_args(argv)
    extras = Extras(config_file=known_pre.config)
    if known_pre.config:
        data = _load_yaml(known_pre.config)
        names = {f.name for cls in dataclass_types for f in dataclasses.fields(cls)}
        ours = {k: v for k, v in data.items() if k in names}
        extras.from_config = {k: v for k, v in data.items() if k not in names and k != "config"}
        parser.set_defaults(**ours)
    namespace, unknown = parser.parse_known_args(argv)
    bad = [u for u in unknown if u.startswith("-") and not u.startswith("--") and not _is_number(u)]
    if bad:
        parser.error(f"unrecognised arguments: {' '.join(bad)}")
    if unknown and not unknown[0].startswith("--"):
        parser.error(f"unexpected positional arguments: {' '.join(unknown)}")
    extras.from_cli = unknown
    out = []
    for cls in dataclass_types:
        out.append(cls(**{f.name: getattr(namespace, f.name) for f in dataclasses.fields(cls)}))
    return (*out, extras)


# --------------------------------------------------------------------------- datasets


def bundled_path(name: str) -> Path:
    """A file shipped in ``trainers/data``."""
    return Path(__file__).resolve().parent / "data" / name


def _looks_like_path(spec: str) -> bool:
    """True for strings that cannot be a hub id (``name`` or ``org/name``)."""
    return (spec.startswith((".", "/", "~")) or "\\" in spec or spec.count("/") > 1
            or spec.endswith((".jsonl", ".json", ".gz", ".arrow", ".parquet", ".jinja")))


def _source(spec: str, split: str):
    """The :class:`hsa.io.InputSource` ``--dataset`` names (the dispatch ``hsa augment`` uses for its inputs), with
    ``split`` for a hub dataset or a folder of several splits; its errors in the trainers' words. A bare hub name
    (``squad``, no owner) is read from the hub too."""
    from hsa.io import InputSource, is_uri

    path = os.path.expanduser(spec)
    try:
        return InputSource.resolve(path, split=split)
    except FileNotFoundError as exc:
        if is_uri(spec):
            raise
        if Path(path).is_dir():
            raise TrainerInputError(f"{spec} is a folder but not a saved dataset ({exc}); expected the output "
                                    "folder of `hsa augment ... --out DIR`") from None
        if Path(path).exists() or _looks_like_path(spec):
            raise FileNotFoundError(f"dataset {spec!r} does not exist: expected an hsa shard folder (the --out of "
                                    "`hsa augment`), a JSONL file, or a hub dataset id such as org/name") from None
        return InputSource(f"{spec}:{split}", "hub")


def _source_rows(source) -> Iterator[dict]:
    """The rows of an :class:`hsa.io.InputSource` as plain dicts (an hsa output row as its input-format record,
    :func:`hsa.io.row_to_record`); a line that is not a JSON object is a :class:`TrainerInputError` naming it."""
    from hsa.io import JSONArrayError, parse_line
    from hsa.record_model import RecordError

    items = source.items()
    while True:
        try:
            item = next(items)
        except StopIteration:
            return
        except JSONArrayError as exc:
            raise TrainerInputError(str(exc)) from None
        except ValueError as exc:  # a folder of several splits without the one asked for
            raise TrainerInputError(f"{exc}; pass --dataset_split") from None
        try:
            row = parse_line(item)
        except RecordError as exc:
            raise TrainerInputError(f"{source.spec}:{item.line}: {exc.reason}: {exc.detail}") from None
        if not isinstance(row, dict):
            raise TrainerInputError(f"{source.spec}:{item.line}: expected a JSON object per line, got "
                                    f"{type(row).__name__}")
        yield row


def iter_rows(spec: str, *, split: str = "train", max_rows: int | None = None,
              tools: str | None = None) -> Iterator[dict]:
    """Rows of an hsa shard folder, a JSONL / JSON / Parquet file (local or ``s3://`` / ``gs://``), a ``datasets``
    folder or a hub dataset, as plain Python dicts: the inputs ``hsa augment`` reads (:class:`hsa.io.InputSource`).

    JSON-valued columns of hsa shards come back as Python objects, exactly as written. ``tools``
    (``--tools FILE``, :func:`hsa.records.read_harness_file`) supplies the harness of rows without
    one; a trajectory dump's ``traj`` list is read as the messages.
    """
    if not spec:
        raise TrainerInputError("no --dataset given: pass an hsa shard folder (hsa augment ... --out DIR), "
                                "a JSONL file, or a hub dataset id")
    harness = None
    if tools:
        from hsa.records import RecordError, read_harness_file, supply_harness

        try:
            harness = read_harness_file(os.path.expanduser(tools))
        except RecordError as exc:
            raise TrainerInputError(f"--tools {tools}: {exc.detail}") from None
    n = 0
    for row in _source_rows(_source(spec, split)):
        if max_rows is not None and n >= max_rows:
            return
        n += 1
        yield supply_harness(row, harness) if harness is not None else row


# --------------------------------------------------------------------------- conversion


def tools_to_openai(tools: Sequence[dict]) -> list[dict]:
    """Internal-form tools (:func:`hsa.records.normalize`) as OpenAI function definitions."""
    from hsa.records import openai_tools

    return openai_tools(list(tools))


def template_compat(render: Any, compat: Sequence[str] = ()) -> tuple[str, ...]:
    """The rewrites to use with a template: ``compat`` (``--chat_compat``) plus those its probes show it needs
    (:func:`hsa.chat_template.template_needs`; ``render(messages, tools) -> text``), each detected one logged
    with what its probe showed. A misspelt rewrite in ``compat`` is an error naming the known ones."""
    from hsa.chat_template import template_needs

    unknown = [c for c in compat if c not in CHAT_COMPAT]
    if unknown:
        raise TrainerInputError(f"unknown chat_compat {unknown}; expected some of {list(CHAT_COMPAT)}")
    needs = template_needs(render)
    for name, why in needs.items():
        if name not in compat:
            log(f"the chat template needs {name} (probe: {why}); rows are adapted and counted")
    chosen = set(compat) | set(needs)
    if "fold_system" in chosen:
        chosen.discard("system_as_user")
    return tuple(c for c in CHAT_COMPAT if c in chosen)


def to_chat(row: dict, *, where: str = "row", compat: Sequence[str] = ()) -> dict[str, Any]:
    """:func:`hsa.chat.to_chat` (one row as trl's conversational format, plus what the trainers need beside it),
    with its errors raised as :class:`TrainerInputError`, which the stages report."""
    from hsa import chat

    try:
        return chat.to_chat(row, where=where, compat=compat)
    except chat.ChatInputError as exc:
        raise TrainerInputError(str(exc)) from None


def bundled_template() -> str:
    """The bundled ChatML template with tools and tool calls, as a path to type: relative to the current folder
    when it is inside it (a checkout), else absolute (an installed package)."""
    path = bundled_path("hsa_chatml_tools.jinja")
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def check_template_renders_harness(render: Any, chat: dict[str, Any], *, where: str = "row",
                                   flag: str = "--chat_template_path", final_turn: bool = False) -> None:
    """Raise :class:`TrainerInputError` when a chat template leaves out the tools or the tool calls of ``chat``
    (:func:`hsa.chat_template.harness_not_rendered`), or, with ``final_turn`` (a trainer that ends rows and windows
    on assistant turns), the calls of a conversation's last turn
    (:func:`hsa.chat_template.probe_final_calls_dropped`); the message names ``flag``, the option of the command
    that takes the template, and the bundled template that renders both."""
    from hsa.chat_template import harness_not_rendered, probe_final_calls_dropped, template_error

    try:
        problem = harness_not_rendered(render, chat["messages"], chat["tools"])
    except Exception as exc:  # noqa: BLE001 - the template's own raise_exception (a plain-chat template: no tool turn)
        problem = f"cannot render this conversation with its tool calls and results ({template_error(exc)})"
    if not problem and final_turn:
        problem = probe_final_calls_dropped(render)
    if problem:
        raise TrainerInputError(f"{where}: the chat template {problem}. Pass {flag} with a template that renders "
                                f"tools and tool calls ({bundled_template()} is bundled).")


# --------------------------------------------------------------------------- models and tokenizers


def resolve_model_path(name_or_path: str | None, *, what: str = "--model_name_or_path") -> str:
    """``name_or_path`` if it is a local folder or could be a hub id; a clear error otherwise."""
    if not name_or_path:
        raise TrainerInputError(f"{what} is required: a local model folder (build a tiny one with "
                                "`python -m trainers.tiny --out DIR`) or a hub id such as Qwen/Qwen2.5-0.5B-Instruct")
    expanded = os.path.expanduser(name_or_path)
    if os.path.isdir(expanded):
        if not (Path(expanded) / "config.json").is_file():
            raise TrainerInputError(f"{what} {name_or_path!r} is a folder without config.json; expected a model "
                                    "saved with save_pretrained (python -m trainers.tiny --out DIR makes one)")
        return expanded
    if os.path.exists(expanded) or _looks_like_path(name_or_path):
        raise FileNotFoundError(f"{what} {name_or_path!r} does not exist. Pass a local model folder (build a "
                                "tiny one with `python -m trainers.tiny --out DIR`) or a hub id like org/name.")
    return name_or_path


def _read_template(path: str, flag: str = "--chat_template_path") -> str:
    """``--chat_template_path`` (``flag``): a ``.jinja`` file, a tokenizer folder or its ``tokenizer_config.json``,
    read as ``hsa export --template`` reads it (:func:`hsa.chat_template.read_template`)."""
    from hsa.chat_template import compile_error, read_template

    try:
        template = read_template(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"{flag} {path}: no such file or folder; pass a .jinja file such as "
                                f"{bundled_template()}") from None
    except ValueError as exc:  # a folder or tokenizer_config.json without a template
        raise TrainerInputError(f"{flag} {path}: no chat template there ({exc})") from None
    if problem := compile_error(template):
        raise TrainerInputError(f"{flag} {path}: not a valid Jinja template: {problem}")
    return template


def load_tokenizer(model: ModelArguments, *, padding_side: str | None = None,
                   flags: dict[str, str] | None = None):
    """The model's tokenizer with a chat template and a pad token, or a clear error. ``flags``: the options of
    the calling command that set ``model_name_or_path`` and ``chat_template_path``, named in the errors (default:
    those of the trainers, ``--model_name_or_path`` and ``--chat_template_path``)."""
    from transformers import AutoTokenizer

    flag = {"model_name_or_path": "--model_name_or_path", "chat_template_path": "--chat_template_path",
            **(flags or {})}
    path = resolve_model_path(model.model_name_or_path, what=flag["model_name_or_path"])
    kwargs: dict[str, Any] = {"trust_remote_code": model.trust_remote_code}
    if padding_side:
        kwargs["padding_side"] = padding_side
    try:
        tok = AutoTokenizer.from_pretrained(path, **kwargs)
    except Exception as exc:  # hub and file errors come in many types
        where = "the local folder" if os.path.isdir(path) else "the hub (it is not a local folder)"
        raise TrainerInputError(f"could not load a tokenizer for {model.model_name_or_path!r} from {where}: "
                                f"{type(exc).__name__}: {exc}") from None
    if model.chat_template_path:
        tok.chat_template = _read_template(model.chat_template_path, flag["chat_template_path"])
    if not tok.chat_template:
        raise TrainerInputError(
            f"the tokenizer of {model.model_name_or_path!r} has no chat template, so conversations cannot be "
            f"rendered. Pass {flag['chat_template_path']} with a .jinja file (for example {bundled_template()}) or "
            "use an instruct model's tokenizer.")
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def has_accelerator() -> bool:
    import torch

    return bool(torch.cuda.is_available() or (hasattr(torch, "xpu") and torch.xpu.is_available()))


def _bf16_supported() -> bool:
    import torch

    return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())


def _decoder_layers(model):
    """The model's stack of decoder layers: its longest ``ModuleList`` (``model.model.layers`` in Llama-style
    models, ``transformer.h`` in GPT-2-style ones) and that list's parent, which holds the final norm."""
    import torch

    best, parent = None, None
    for module in model.modules():
        for child in module.children():
            if isinstance(child, torch.nn.ModuleList) and (best is None or len(child) > len(best)):
                best, parent = child, module
    return best, parent


def train_top_layers(model, n: int) -> str:
    """Freeze every weight but the top ``n`` decoder layers and the norm after them; returns what trains, in words.

    The embeddings stay frozen, and with them the LM head where the two are tied; the final norm is the one
    in the layers' parent module that comes after them (``norm``, ``ln_f``, ``final_layernorm``)."""
    layers, parent = _decoder_layers(model)
    if layers is None or not 1 <= n <= len(layers):
        total = 0 if layers is None else len(layers)
        raise TrainerInputError(f"--train_top_layers {n}: the model has {total} decoder layers; pass 1..{total}")
    for p in model.parameters():
        p.requires_grad_(False)
    for layer in list(layers)[len(layers) - n:]:
        for p in layer.parameters():
            p.requires_grad_(True)
    after = False
    for child in parent.children():
        if child is layers:
            after = True
        elif after and "norm" in type(child).__name__.lower():
            for p in child.parameters():
                p.requires_grad_(True)
    trained = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    return (f"training the top {n} of {len(layers)} decoder layers and the final norm: {trained:,} of {total:,} "
            f"parameters; the embeddings, LM head and lower layers frozen")


def cpu_bf16_supported() -> bool:
    """Whether this CPU has bf16 instructions (oneDNN's test: AVX-512 BF16 or AMX), so bf16 autocast pays."""
    import torch

    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # pragma: no cover - a torch built without oneDNN
        return False


def model_init_kwargs(model: ModelArguments) -> dict[str, Any]:
    out: dict[str, Any] = {"trust_remote_code": model.trust_remote_code}
    if model.dtype:
        out["dtype"] = model.dtype
    if model.attn_implementation:
        out["attn_implementation"] = model.attn_implementation
    return out


def _typed_cli_extras(config_cls: type, tokens: list[str]) -> dict[str, Any]:
    """Type the ``--name value`` tokens with the trl config's own parser (HfArgumentParser)."""
    if not tokens:
        return {}
    from transformers import HfArgumentParser

    names = [t[2:].split("=", 1)[0].replace("-", "_") for t in tokens if t.startswith("--")]
    fields = {f.name for f in dataclasses.fields(config_cls)}
    unknown = [n for n in names if n not in fields]
    if unknown:
        raise TrainerInputError(f"Unknown arguments: {', '.join('--' + n for n in unknown)}. They are neither hsa "
                                f"options (see --help) nor fields of {config_cls.__name__}; remove or rename them.")
    namespace, rest = HfArgumentParser(config_cls).parse_known_args(tokens)  # typed values, no instance built
    if rest:
        raise TrainerInputError(f"could not read the arguments {rest} for {config_cls.__name__}")
    return {n: getattr(namespace, n) for n in names}


def trl_config(config_cls: type, run: RunArguments, stage: dict[str, Any], extras: Extras,
               default_learning_rate: float):
    """An instance of ``config_cls`` (a trl config) from the hsa options, the stage options and the extras."""
    fields = {f.name for f in dataclasses.fields(config_cls)}
    unknown = sorted(k for k in extras.from_config if k not in fields)
    if unknown:
        raise TrainerInputError(f"Unknown arguments from config file {extras.config_file}: {unknown}. They are "
                                f"neither hsa options (see --help) nor fields of {config_cls.__name__}; remove them "
                                "or fix their spelling.")
    if not run.output_dir:
        raise TrainerInputError("--output_dir is required: the folder where checkpoints and the model are written")
    accel = has_accelerator()
    kwargs: dict[str, Any] = {
        "output_dir": run.output_dir,
        "max_steps": run.max_steps,
        "num_train_epochs": run.num_train_epochs,
        "learning_rate": run.learning_rate if run.learning_rate is not None else default_learning_rate,
        "per_device_train_batch_size": run.per_device_train_batch_size,
        "gradient_accumulation_steps": run.gradient_accumulation_steps,
        "logging_steps": run.logging_steps,
        "save_strategy": run.save_strategy,
        "save_steps": run.save_steps,
        "seed": run.seed,
        "bf16": _bf16_supported() if run.bf16 is None else run.bf16,
        "report_to": run.report_to,
        "use_cpu": not accel,
    }
    checkpointing = accel if run.gradient_checkpointing is None else run.gradient_checkpointing
    # transformers >= 5.2x renames gradient_checkpointing to activation_checkpointing (the old name warns)
    kwargs["activation_checkpointing" if "activation_checkpointing" in fields else "gradient_checkpointing"] = \
        checkpointing
    kwargs.update({k: v for k, v in stage.items() if k in fields})
    kwargs.update(extras.from_config)
    kwargs.update(_typed_cli_extras(config_cls, extras.from_cli))
    if kwargs.get("bf16") and not accel and not cpu_bf16_supported():
        raise TrainerInputError("--bf16 true needs a GPU that supports bf16 or a CPU with bf16 instructions (AVX-512 "
                                "BF16 or AMX); this one has neither: leave it unset or pass --bf16 false")
    return config_cls(**kwargs)


def peft_config(lora: LoraArguments):
    """A peft ``LoraConfig`` when ``--use_peft`` is set, else ``None``."""
    if not lora.use_peft:
        return None
    try:
        from peft import LoraConfig
    except ImportError:  # pragma: no cover - peft is part of the train extra
        raise ImportError("--use_peft needs peft: pip install 'hsa[train]' (or pip install peft)") from None
    return LoraConfig(r=lora.lora_r, lora_alpha=lora.lora_alpha, lora_dropout=lora.lora_dropout,
                      target_modules=lora.lora_target_modules or "all-linear", task_type="CAUSAL_LM")


def log(message: str) -> None:
    """A progress line on stderr (only on the main process under accelerate)."""
    if os.environ.get("RANK", "0") == "0" and os.environ.get("LOCAL_RANK", "0") == "0":
        print(f"[hsa] {message}", file=sys.stderr, flush=True)


def run_stage(parse, build_trainer, argv) -> int:
    """The body of every stage's ``main``: parse, build the trainer, train, save.

    A bad option, dataset, model path or template is one line on stderr and exit status 2, not a traceback."""
    try:
        model_args, stage_args, run, lora, extras = parse(argv)
        trainer = build_trainer(model_args, stage_args, run, lora, extras)
    except (TrainerInputError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    trainer.train()
    trainer.save_model(run.output_dir)
    # the logged losses (and rewards, for RL) of every step, beside the model: the learning curve
    history = Path(run.output_dir) / "log_history.json"
    history.write_text(json.dumps(trainer.state.log_history, indent=1) + "\n", encoding="utf-8")
    log(f"saved to {run.output_dir}")
    return 0
