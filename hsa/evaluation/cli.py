"""``hsa eval prompts | score | run``: the options and the commands (run forwards to :mod:`trainers.eval`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

__all__ = ["add_parser", "add_common_options", "add_score_options", "add_run_options", "cmd_prompts",
           "cmd_score", "cmd_run"]


def _die(msg: str) -> int:
    print(f"hsa: error: {msg}", file=sys.stderr)
    return 2


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (got {n})")
    return n


def add_common_options(p: argparse.ArgumentParser) -> None:
    """DATA, --turns, --max-prompts: which prompts (the same in prompts, score and run)."""
    from hsa.evaluation.prompts import TURNS

    p.add_argument("data", metavar="DATA",
                   help="an `hsa augment` output folder, or a JSONL file of its rows (`hsa export`); plain records "
                        "without a mapping are read as the canonical harness")
    p.add_argument("--turns", choices=TURNS, default="all",
                   help="assistant turns to predict: all (default), calls (turns with tool calls), replies (final "
                        "replies), first or last of each row")
    p.add_argument("--max-prompts", type=_positive, default=None, metavar="N",
                   help="only the first N prompts (dataset order)")


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
    p.add_argument("--backend", choices=("transformers", "vllm"), default="transformers",
                   help="generation backend (vllm: when it is installed and a GPU is present)")
    p.add_argument("--predictions-out", metavar="preds.jsonl",
                   help="also write the completions as {\"id\", \"completion\"} lines (hsa eval score reads them)")
    p.add_argument("--instructions", nargs="?", const="bundled", default=None, metavar="FILE",
                   help="also score verifiable general instructions, IFEval style: the bundled set, or a JSONL "
                        "of {\"prompt\", \"checks\"} rows")
    p.add_argument("--ifeval", action="store_true",
                   help="also run the real IFEval (google/IFEval from the hub, IFEval's own checkers from "
                        "if-verifiable or lm-eval) when they are reachable: report field 'ifeval'")
    p.add_argument("--max-instructions", type=_positive, default=None, metavar="N",
                   help="only the first N instruction prompts")
    p.add_argument("--batch-size", type=_positive, default=8, metavar="B", help="prompts per batch (default 8)")
    p.add_argument("--max-new-tokens", type=_positive, default=256, metavar="T",
                   help="tokens generated per prompt (default 256)")
    p.add_argument("--device", choices=("cpu", "cuda"), default=None,
                   help="where the model runs (default: cuda when available, else cpu)")
    p.add_argument("--dtype", default=None,
                   help="weight dtype: float32, bfloat16, float16 or auto (default: bfloat16 on a GPU that "
                        "supports it, else float32)")
    p.add_argument("--chat-template", metavar="FILE",
                   help="a .jinja file (or tokenizer folder) whose chat template replaces the model's own")
    p.add_argument("--chat-compat", nargs="+", default=[], metavar="REWRITE",
                   help="rewrites for templates that cannot render some conversations: split_parallel_calls, "
                        "alnum9_call_ids, system_as_user (see docs/training.md)")
    p.add_argument("--trust-remote-code", action="store_true", help="allow models that ship custom code")
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


def add_parser(sub) -> argparse.ArgumentParser:
    """Register ``eval`` and its three commands on the ``hsa`` subparsers."""
    e = sub.add_parser("eval", help="evaluate a model under the canonical and varied harnesses "
                       "(prompts | score | run)", description="Harness-variant evaluation: write prompts, score "
                       "predictions made by anything, or generate with a model and score (docs/evaluation.md).")
    es = e.add_subparsers(dest="eval_command", metavar="STEP")
    pp = es.add_parser("prompts", help="write one prompt per (row, assistant turn) as JSONL (no model needed)")
    add_common_options(pp)
    pp.add_argument("--out", required=True, metavar="prompts.jsonl", help="JSONL file to write ('-': standard output)")
    pp.add_argument("--call-arguments", choices=("object", "string"), default="object",
                    help="tool-call arguments in the messages as objects (default: what chat templates read) or as "
                         "JSON strings (what the OpenAI API and vLLM's server expect)")
    pp.set_defaults(func=cmd_prompts)
    sp = es.add_parser("score", help="score predictions {\"id\", \"completion\" | \"message\"} against the gold turns")
    add_common_options(sp)
    sp.add_argument("--predictions", required=True, metavar="preds.jsonl",
                    help="JSONL of {\"id\", \"completion\": text} or {\"id\", \"message\": {\"content\", "
                         "\"tool_calls\"}} (OpenAI responses and Batch API lines are read too)")
    add_score_options(sp)
    sp.set_defaults(func=cmd_score)
    rp = es.add_parser("run", help="generate greedily with a model (the train extra), then score")
    add_common_options(rp)
    add_score_options(rp)
    add_run_options(rp)
    rp.set_defaults(func=cmd_run, _run_parser=rp)
    e.set_defaults(func=lambda args: (e.print_help(), 2)[1])
    return e


def cmd_prompts(args: argparse.Namespace) -> int:
    from hsa.evaluation.prompts import EvalInputError, Source, iter_items, paused_gc

    if args.out != "-" and Path(args.out).is_dir():
        return _die(f"--out {args.out} is a folder; give the JSONL file to write")
    if args.out != "-":
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    source = Source()
    n = 0
    f = sys.stdout if args.out == "-" else open(args.out + ".part", "w", encoding="utf-8")
    try:
        with paused_gc():
            for it in iter_items(args.data, source, turns=args.turns, max_prompts=args.max_prompts):
                prompt = it.prompt if args.call_arguments == "object" else _string_arguments(it.prompt)
                f.write(json.dumps(prompt, ensure_ascii=False) + "\n")
                n += 1
    except EvalInputError as exc:
        if f is not sys.stdout:
            f.close()
            Path(args.out + ".part").unlink()
        return _die(str(exc))
    if f is not sys.stdout:
        f.close()
        Path(args.out + ".part").replace(args.out)
    for note in source.notes:
        print(f"hsa: note: {note}", file=sys.stderr)
    for r in source.rejected:
        print(f"hsa: warning: {r['where']}: skipped: {r['reason']}", file=sys.stderr)
    print(f"{n} prompts written to {args.out}" +
          (f"; {len(source.rejected)} rows could not be read" if source.rejected else ""), file=sys.stderr)
    return 0


def _string_arguments(prompt: dict) -> dict:
    """The prompt with every tool call's arguments as a JSON string (the OpenAI API form)."""
    def fix(m: dict) -> dict:
        if not m.get("tool_calls"):
            return m
        return {**m, "tool_calls": [{**c, "function": {**c["function"], "arguments": json.dumps(
            c["function"]["arguments"], ensure_ascii=False)}} for c in m["tool_calls"]]}

    return {**prompt, "messages": [fix(m) for m in prompt["messages"]]}


def _summary(report: dict) -> str:
    def pct(g):
        v = (g or {}).get("call_accuracy")
        return "–" if v is None else f"{100 * v:.1f}%"

    parts = [f"canonical {pct(report.get('canonical'))} (n={report['canonical']['n']})",
             f"variants {pct(report.get('variants'))} (n={report['variants']['n']})"]
    if "held_out" in report:
        parts.append(f"held-out {pct(report['held_out'])} (n={report['held_out']['n']})")
    gap = report.get("gap") or {}
    if gap.get("call_accuracy") is not None:
        parts.append(f"gap {100 * gap['call_accuracy']:+.1f} points, 95% CI "
                     f"[{100 * gap['ci95'][0]:+.1f}, {100 * gap['ci95'][1]:+.1f}]")
    pr = report["problems"]
    bad = {k: v["n"] for k, v in pr.items() if isinstance(v, dict) and v.get("n") and k != "formats"}
    line = "call accuracy: " + ", ".join(parts)
    if bad:
        line += "\nproblems: " + ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in bad.items()) + \
            " (named in the report's 'problems')"
    if pr["unknown_ids"]["n"] and pr["missing"]["n"]:
        line += ("\nhint: predictions with ids that are not prompts, and prompts without predictions: were the "
                 "prompts written with other --turns / --max-prompts than score was given?")
    return line


def cmd_score(args: argparse.Namespace) -> int:
    from hsa.evaluation.prompts import EvalInputError
    from hsa.evaluation.report import score, write_report

    try:
        report = score(args.data, args.predictions, turns=args.turns, max_prompts=args.max_prompts, fmt=args.fmt,
                       string_match=args.string_match, held_out=args.held_out, train_manifest=args.train_manifest,
                       seed=args.seed, bootstrap=args.bootstrap, compare_to=args.compare)
        write_report(report, args.out, md=args.md, png=args.plot)
    except EvalInputError as exc:
        return _die(str(exc))
    print(_summary(report), file=sys.stderr)
    print(f"report written to {args.out}", file=sys.stderr)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from hsa.evaluation.prompts import EvalInputError

    try:
        from trainers.eval import run, run_error_types
    except ImportError as exc:
        return _die(f"hsa eval run needs the train extra ({exc}): pip install 'hsa[train]'; or generate the "
                    "completions elsewhere and use `hsa eval prompts` + `hsa eval score`")
    if args.config:
        rp = args._run_parser
        explicit = {k: v for k, v in vars(args).items() if v != rp.get_default(k)}
        args = parse_run_args(rp, [args.data, "--config", args.config, "--out", args.out,
                                   "--model", args.model])
        for k, v in explicit.items():  # flags given on the command line win over the file
            setattr(args, k, v)
    try:
        report = run(**run_kwargs(args))
    except (EvalInputError, *run_error_types()) as exc:
        return _die(str(exc))
    print(_summary(report), file=sys.stderr)
    print(f"report written to {args.out}", file=sys.stderr)
    return 0


def run_kwargs(args: argparse.Namespace) -> dict:
    """The keyword arguments of :func:`trainers.eval.run` from parsed ``run`` options."""
    return {"data": args.data, "model": args.model, "out": args.out, "md": args.md, "plot": args.plot,
            "predictions_out": args.predictions_out, "held_out": args.held_out,
            "train_manifest": args.train_manifest, "instructions": args.instructions,
            "max_instructions": args.max_instructions, "turns": args.turns, "max_prompts": args.max_prompts,
            "batch_size": args.batch_size, "max_new_tokens": args.max_new_tokens, "device": args.device,
            "seed": args.seed, "backend": args.backend, "fmt": args.fmt, "string_match": args.string_match,
            "bootstrap": args.bootstrap, "compare": args.compare, "chat_template": args.chat_template,
            "dtype": args.dtype, "chat_compat": args.chat_compat, "trust_remote_code": args.trust_remote_code,
            "ifeval": args.ifeval}
