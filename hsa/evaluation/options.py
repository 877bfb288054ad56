"""The options of ``hsa eval`` (prompts, score, run) and of ``python -m trainers.eval``, which takes the same ones:
defined once here, for the command line (:mod:`hsa.evaluation.cli`) and the trainer."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["add_common_options", "add_score_options", "add_run_options", "parse_run_args", "run_kwargs",
           "positive_int"]


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (got {n})")
    return n


def add_common_options(p: argparse.ArgumentParser) -> None:
    """DATA, --turns, --max-prompts: which prompts (the same in prompts, score and run)."""
    from hsa.evaluation.prompts import MAX_PROMPTS_HELP, TURNS

    p.add_argument("data", metavar="DATA",
                   help="an `hsa augment` output folder, or a JSONL file of its rows (`hsa export`); plain records "
                        "without a mapping are read as the canonical harness")
    p.add_argument("--turns", choices=TURNS, default="all",
                   help="assistant turns to predict: all (default), calls (turns with tool calls), replies (final "
                        "replies), first or last of each row")
    p.add_argument("--max-prompts", type=positive_int, default=None, metavar="N",
                   help=MAX_PROMPTS_HELP.replace("%", "%%"))


def add_score_options(p: argparse.ArgumentParser) -> None:
    """How predictions are read and scored, and what the report holds."""
    from hsa.evaluation.parsers import FORMATS
    from hsa.evaluation.scoring import STRING_MATCH

    p.add_argument("--out", required=True, metavar="report.json", help="the JSON report to write")
    p.add_argument("--md", metavar="FILE", help="also write the report as Markdown tables")
    p.add_argument("--plot", metavar="FILE", help="also write a PNG bar chart with the intervals (needs matplotlib: "
                                                  "pip install 'hsa[eval]')")
    p.add_argument("--format", dest="fmt", choices=FORMATS, default="auto",
                   help="tool-call format of the completions (default auto: from the markers in each)")
    p.add_argument("--string-match", choices=STRING_MATCH, default="exact",
                   help="string arguments: exact (default), or BFCL's (case, spaces and ,./-_*^ ignored)")
    p.add_argument("--held-out", nargs="+", action="extend", default=[], metavar="FAMILY",
                   help="transform families held out in training (tool, skill, prompt, hook): their rows are "
                        "reported as held_out")
    p.add_argument("--train-manifest", metavar="FILE",
                   help="the manifest.json (or its folder) of the training data: its hold_out families are "
                        "added to --held-out")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                   help="bootstrap resamples of source records for the intervals (default 1000; 0: none)")
    p.add_argument("--compare", metavar="OTHER_REPORT",
                   help="a report.json of another model on the same data: adds 'paired' (this minus that, with "
                        "a paired-bootstrap interval)")


def add_run_options(p: argparse.ArgumentParser) -> None:
    """The model and generation options of ``run``."""
    p.add_argument("--model", "--model_name_or_path", dest="model", required=True, metavar="M",
                   help="a local model folder (a LoRA adapter folder loads on its base) or a hub id")
    p.add_argument("--backend", choices=("transformers", "vllm", "openai"), default="transformers",
                   help="generation backend (vllm: when it is installed and a GPU is present; openai: any "
                        "OpenAI-compatible server at --base-url)")
    p.add_argument("--predictions-out", metavar="preds.jsonl",
                   help="also write the completions as {\"id\", \"completion\"} lines (hsa eval score reads them)")
    p.add_argument("--instructions", nargs="?", const="bundled", default=None, metavar="FILE",
                   help="also score verifiable general instructions, IFEval style: the bundled set, or a JSONL "
                        "of {\"prompt\", \"checks\"} rows")
    p.add_argument("--ifeval", action="store_true",
                   help="also run the real IFEval (google/IFEval from the hub, IFEval's own checkers from "
                        "if-verifiable or lm-eval) when they are reachable: report field 'ifeval'")
    p.add_argument("--max-instructions", type=positive_int, default=None, metavar="N",
                   help="only the first N instruction prompts")
    p.add_argument("--batch-size", type=positive_int, default=8, metavar="B", help="prompts per batch (default 8)")
    p.add_argument("--max-new-tokens", type=positive_int, default=256, metavar="T",
                   help="tokens generated per prompt (default 256)")
    p.add_argument("--device", choices=("cpu", "cuda"), default=None,
                   help="where the model runs (default: cuda when available, else cpu)")
    p.add_argument("--dtype", default=None,
                   help="weight dtype: float32, bfloat16, float16 or auto (default: bfloat16 on a GPU that "
                        "supports it, else float32)")
    p.add_argument("--chat-template", "--chat_template_path", dest="chat_template", metavar="FILE",
                   help="a .jinja file (or tokenizer folder) whose chat template replaces the model's own")
    p.add_argument("--chat-compat", nargs="+", default=[], metavar="REWRITE",
                   help="rewrites for templates that cannot render some conversations, on top of those the "
                        "template's probes find (always on, logged, as in training): split_parallel_calls, "
                        "alnum9_call_ids, system_as_user, fold_system, merge_user_turns, system_in_last_user, "
                        "string_arguments, tool_call_tags (see docs/training.md)")
    p.add_argument("--trust-remote-code", action="store_true", help="allow models that ship custom code")
    from hsa.bench.client import add_server_options

    add_server_options(p)
    p.add_argument("--config", metavar="FILE.yaml",
                   help="YAML file of options (names as the flags, - or _); command-line flags override it")


def parse_run_args(parser: argparse.ArgumentParser, argv) -> argparse.Namespace:
    """Parse ``run`` options, with ``--config FILE.yaml`` setting defaults that command-line flags override."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config", default=None)
    known, _ = pre.parse_known_args(argv)
    if known.config:
        import yaml

        path = Path(known.config)
        if not path.is_file():
            parser.error(f"--config {known.config}: no such file; pass a YAML file of option: value lines")
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if not isinstance(data, dict):
            parser.error(f"--config {known.config}: expected a mapping of option names to values")
        dests = {a.dest for a in parser._actions}
        values = {str(k).replace("-", "_"): v for k, v in data.items()}
        values = {("fmt" if k == "format" else k): v for k, v in values.items()}
        unknown = sorted(k for k in values if k not in dests or k in ("help", "config"))
        if unknown:
            parser.error(f"--config {known.config}: unknown options {unknown}; see --help for the names")
        parser.set_defaults(**values)
    return parser.parse_args(argv)


def run_kwargs(args: argparse.Namespace) -> dict:
    """The keyword arguments of :func:`trainers.eval.run` from parsed ``run`` options."""
    from hsa.bench.client import server_options

    return {"data": args.data, "model": args.model, "out": args.out, "md": args.md, "plot": args.plot,
            "predictions_out": args.predictions_out, "held_out": args.held_out,
            "train_manifest": args.train_manifest, "instructions": args.instructions,
            "max_instructions": args.max_instructions, "turns": args.turns, "max_prompts": args.max_prompts,
            "batch_size": args.batch_size, "max_new_tokens": args.max_new_tokens, "device": args.device,
            "seed": args.seed, "backend": args.backend, "fmt": args.fmt, "string_match": args.string_match,
            "bootstrap": args.bootstrap, "compare": args.compare, "chat_template": args.chat_template,
            "dtype": args.dtype, "chat_compat": args.chat_compat, "trust_remote_code": args.trust_remote_code,
            "ifeval": args.ifeval, "server": server_options(args)}
