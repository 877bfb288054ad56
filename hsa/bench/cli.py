"""``hsa bench build | run``: the command line of hsa-bench (docs/benchmark.md)."""

from __future__ import annotations

import argparse
import os
import sys

from hsa.evaluation.options import positive_int

__all__ = ["add_parser", "cmd_build", "cmd_run", "make_backend"]


def _die(msg: str) -> int:
    print(f"hsa: error: {msg}", file=sys.stderr)
    return 2


def add_parser(sub) -> argparse.ArgumentParser:
    """Register ``bench`` and its commands on the ``hsa`` subparsers."""
    from hsa.bench.client import add_server_options
    from hsa.bench.pool import DEFAULT_K, FAMILIES

    b = sub.add_parser("bench", help="hsa-bench: build the public harness-sensitivity pool, run a model on it",
                       description="hsa-bench: how much a tool-calling model's accuracy moves when its harness "
                                   "changes in task-preserving ways, on public suites (docs/benchmark.md).")
    bs = b.add_subparsers(dest="bench_command", metavar="STEP")
    bp = bs.add_parser("build", help="read BFCL / AgentDojo from their pinned PyPI packages and write the variant "
                                     "pool; prints its sha256")
    bp.add_argument("--suite", choices=("bfcl", "agentdojo", "all"), default="all", help="the suites (default all)")
    bp.add_argument("--out", required=True, metavar="BENCH", help="the pool folder to write")
    bp.add_argument("--k", type=positive_int, default=DEFAULT_K, metavar="K",
                    help=f"variants per item and family (default {DEFAULT_K}; hsa-bench v1 uses {DEFAULT_K})")
    bp.add_argument("--seed", type=int, default=0, help="seed of the variants (default 0; hsa-bench v1 uses 0)")
    bp.add_argument("--families", nargs="+", choices=list(FAMILIES), metavar="FAMILY",
                    help=f"only these families (default all: {', '.join(FAMILIES)})")
    bp.add_argument("--categories", nargs="+", metavar="NAME",
                    help="only these BFCL categories / AgentDojo suites (default all)")
    bp.add_argument("--limit", type=positive_int, metavar="N", help="only the first N items of each category")
    bp.add_argument("--workers", type=positive_int, default=1, metavar="N", help="processes (default 1; same bytes)")
    bp.add_argument("--overwrite", action="store_true", help="replace the pool in a non-empty --out")
    bp.add_argument("--allow-other-versions", action="store_true",
                    help="build with suite packages other than the pinned ones (the pool is then not hsa-bench v1)")
    bp.add_argument("--docs", metavar="FILE.md",
                    help="also write the pool's sha256 and counts into FILE.md between the markers "
                         "<!-- hsa-bench:pool:start --> and <!-- hsa-bench:pool:end -->")
    bp.add_argument("--quiet", action="store_true", help="no progress line")
    bp.set_defaults(func=cmd_build)

    rp = bs.add_parser("run", help="generate on the pool with a model (transformers, vllm) or an OpenAI-compatible "
                                   "server, and report")
    rp.add_argument("bench", metavar="BENCH", help="a pool folder written by `hsa bench build`")
    rp.add_argument("--model", required=True, metavar="M",
                    help="a local model folder (transformers, vllm) or the model name the server serves (openai)")
    rp.add_argument("--backend", choices=("transformers", "vllm", "openai"), default="transformers",
                    help="transformers / vllm: generate here (the train extra; vllm needs a GPU); openai: any "
                         "OpenAI-compatible server at --base-url")
    rp.add_argument("--out", required=True, metavar="DIR",
                    help="folder for report.json, report.md, report.html, report.png, predictions.jsonl and the "
                         "response cache")
    add_server_options(rp)
    lg = rp.add_argument_group("transformers / vllm backends")
    lg.add_argument("--chat-template", metavar="FILE",
                    help="a .jinja file (or tokenizer folder) whose chat template replaces the model's own "
                         "(trainers/data/hsa_chatml_tools.jinja renders tools for models whose template does not)")
    lg.add_argument("--batch-size", type=positive_int, default=8, metavar="B", help="prompts per batch (default 8)")
    lg.add_argument("--device", choices=("cpu", "cuda"), default=None, help="default: cuda when available")
    lg.add_argument("--dtype", default=None, help="weight dtype (default bfloat16 on a GPU that supports it)")
    rp.add_argument("--max-new-tokens", type=positive_int, default=256, metavar="T",
                    help="tokens generated per prompt (default 256)")
    s = rp.add_argument_group("which prompts")
    s.add_argument("--suites", nargs="+", default=[], metavar="SUITE", help="only these suites (bfcl, agentdojo)")
    s.add_argument("--categories", nargs="+", default=[], metavar="NAME", help="only these categories")
    s.add_argument("--families", nargs="+", default=[], metavar="FAMILY",
                   help="only the variants of these families (the canonical rows always)")
    s.add_argument("--per-category", type=positive_int, metavar="N",
                   help="N items per category, drawn by a seeded hash of their ids (a stated subset; default all)")
    sc = rp.add_argument_group("scoring")
    from hsa.evaluation.parsers import FORMATS
    from hsa.evaluation.scoring import STRING_MATCH

    sc.add_argument("--format", dest="fmt", choices=FORMATS, default="auto",
                    help="tool-call format of text completions (default auto)")
    sc.add_argument("--string-match", choices=STRING_MATCH, default="bfcl",
                    help="string arguments: bfcl (default: BFCL's, case, spaces and ,./-_*^ ignored) or exact")
    sc.add_argument("--seed", type=int, default=0, help="seed of --per-category and of the bootstrap (default 0)")
    sc.add_argument("--bootstrap", type=int, default=1000, metavar="N", help="bootstrap resamples (default 1000)")
    sc.add_argument("--compare", metavar="REPORT", help="another report.json on the same pool: paired difference")
    rp.add_argument("--no-plot", action="store_true", help="no report.png")
    rp.add_argument("--allow-other-version", action="store_true",
                    help="run a pool built by another hsa version (the report notes it)")
    rp.add_argument("--quiet", action="store_true", help="no progress line")
    rp.add_argument("--trust-remote-code", action="store_true", help="allow models that ship custom code")
    rp.set_defaults(func=cmd_run)
    b.set_defaults(func=lambda args: (b.print_help(), 2)[1])
    return b


def _parts(args) -> dict:
    from hsa.bench.suites import AGENTDOJO_SUITES, BFCL_CATEGORIES

    if not args.categories:
        return {}
    out: dict[str, list[str]] = {}
    for c in args.categories:
        if c in BFCL_CATEGORIES:
            out.setdefault("bfcl", []).append(c)
        elif c in AGENTDOJO_SUITES:
            out.setdefault("agentdojo", []).append(c)
        else:
            raise ValueError(f"--categories: {c!r} is neither a BFCL category ({', '.join(BFCL_CATEGORIES)}) nor an "
                             f"AgentDojo suite ({', '.join(AGENTDOJO_SUITES)})")
    return out


def cmd_build(args: argparse.Namespace) -> int:
    from hsa.bench.docs import write_pool_docs
    from hsa.bench.pool import BenchError, build_pool
    from hsa.bench.suites import SUITES, SuiteError

    suites = list(SUITES) if args.suite == "all" else [args.suite]
    try:
        parts = _parts(args)
        suites = [s for s in suites if not parts or s in parts]
        card = build_pool(args.out, suites=suites, parts=parts, k=args.k, seed=args.seed, families=args.families,
                          limit=args.limit, workers=args.workers, overwrite=args.overwrite,
                          allow_other_versions=args.allow_other_versions, progress=False if args.quiet else None)
        if args.docs:
            write_pool_docs(card, args.docs)
    except (BenchError, SuiteError, ValueError) as exc:
        return _die(str(exc))
    c = card["counts"]
    print(f"{card['name']}: {c['items']} items, {c['rows']} rows, prompts {c['prompts']}; "
          f"{card['files']['rejects.jsonl']['rows']} rejects (rejects.jsonl)", file=sys.stderr)
    print(f"sha256 {card['sha256']}")
    return 0


def make_backend(args: argparse.Namespace):
    """The backend of ``hsa bench run`` / ``hsa eval run`` options: openai here, transformers / vllm from
    :mod:`trainers.backends` (the train extra)."""
    from hsa.bench.pool import BenchError

    if args.backend == "openai":
        from hsa.bench.client import OpenAIBackend

        if not args.base_url:
            raise BenchError("--backend openai needs --base-url URL (the server's API root, e.g. "
                             "http://127.0.0.1:8000/v1)")
        key = None
        if args.api_key_env:
            key = os.environ.get(args.api_key_env)
            if not key:
                raise BenchError(f"--api-key-env {args.api_key_env}: that environment variable is not set or empty")
        try:
            import httpx  # noqa: F401
        except ImportError:
            raise BenchError("--backend openai needs httpx: pip install 'hsa[bench]'") from None
        return OpenAIBackend(args.model, args.base_url, api_key=key, concurrency=args.concurrency,
                             max_retries=args.max_retries, timeout=args.timeout, max_tokens=args.max_new_tokens,
                             tools_in_prompt=args.tools_in_prompt, extra_body=args.request_extra)
    try:
        from trainers.backends import local_backend
    except ImportError as exc:
        raise BenchError(f"--backend {args.backend} needs the train extra ({exc}): pip install 'hsa[train]'") \
            from None
    return local_backend(args.backend, args.model, chat_template=args.chat_template, batch_size=args.batch_size,
                         max_new_tokens=args.max_new_tokens, device=args.device, dtype=args.dtype, seed=args.seed,
                         trust_remote_code=args.trust_remote_code)


def cmd_run(args: argparse.Namespace) -> int:
    from hsa.bench.client import ServerUnreachable
    from hsa.bench.pool import BenchError
    from hsa.bench.report import summary_text
    from hsa.bench.run import run_bench

    try:
        backend = make_backend(args)
    except BenchError as exc:
        return _die(str(exc))
    except Exception as exc:  # noqa: BLE001  (a local model that cannot load: one line, not a traceback)
        if type(exc).__name__ in ("TrainerInputError",):
            return _die(str(exc))
        raise
    try:
        if hasattr(backend, "check"):
            backend.check()
        report = run_bench(args.bench, backend, out=args.out, suites=args.suites, categories=args.categories,
                           families=args.families, per_category=args.per_category, seed=args.seed,
                           cache_path=args.cache, fmt=args.fmt, string_match=args.string_match,
                           bootstrap=args.bootstrap, compare=args.compare,
                           allow_other_version=args.allow_other_version, progress=False if args.quiet else None,
                           plot=not args.no_plot)
    except ServerUnreachable as exc:
        return _die(f"{exc}. Answers received so far are kept in the cache; rerun the same command to resume.")
    except BenchError as exc:
        return _die(str(exc))
    except KeyboardInterrupt:
        print(f"\ninterrupted: the answers received so far are in the cache ({args.cache or args.out + '/cache.sqlite'})"
              "; rerun the same command to resume", file=sys.stderr)
        return 130
    finally:
        if hasattr(backend, "close"):
            backend.close()
    print(summary_text(report), file=sys.stderr)
    print(f"report written to {args.out}/report.json (and report.md, report.html, predictions.jsonl)",
          file=sys.stderr)
    return 0
