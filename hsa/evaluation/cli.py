"""``hsa eval prompts | score | run``: the commands (their options are in :mod:`hsa.evaluation.options`; run forwards
to :mod:`trainers.eval`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hsa.evaluation.options import add_common_options, add_run_options, add_score_options, parse_run_args, run_kwargs

__all__ = ["add_parser", "add_common_options", "add_score_options", "add_run_options", "parse_run_args",
           "run_kwargs", "cmd_prompts", "cmd_score", "cmd_run"]


def _die(msg: str) -> int:
    print(f"hsa: error: {msg}", file=sys.stderr)
    return 2


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
    sp.add_argument("--prompts", metavar="prompts.jsonl",
                    help="the prompts file the predictions were made from (`hsa eval prompts --out`): exactly its "
                         "prompts are scored, whatever --turns and --max-prompts say (a note says when those would "
                         "choose others)")
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


def cmd_score(args: argparse.Namespace) -> int:
    from hsa.evaluation.prompts import EvalInputError
    from hsa.evaluation.report import score, summary_text, write_report

    try:
        report = score(args.data, args.predictions, turns=args.turns, max_prompts=args.max_prompts, fmt=args.fmt,
                       string_match=args.string_match, held_out=args.held_out, train_manifest=args.train_manifest,
                       seed=args.seed, bootstrap=args.bootstrap, compare_to=args.compare, prompts=args.prompts)
        write_report(report, args.out, md=args.md, png=args.plot)
    except EvalInputError as exc:
        return _die(str(exc))
    print(summary_text(report), file=sys.stderr)
    print(f"report written to {args.out}", file=sys.stderr)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from hsa.evaluation.prompts import EvalInputError
    from hsa.evaluation.report import summary_text

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
    print(summary_text(report), file=sys.stderr)
    print(f"report written to {args.out}", file=sys.stderr)
    return 0
