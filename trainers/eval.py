"""Evaluate a model under the canonical and varied harnesses, and on verifiable general instructions.

``python -m trainers.eval DATA --model M --out report.json`` (the same options as ``hsa eval run``)

Each prompt of :func:`hsa.evaluation.make_prompts` is rendered with the model's own chat
template and the row's own tools, completed greedily in batches (transformers; vLLM with
``--backend vllm``), and the completions are scored by :func:`hsa.evaluation.score`: the
report is the one ``hsa eval score`` writes, plus ``model`` and ``generation``, and
``instructions`` (IFEval-style strict / loose accuracies, :mod:`trainers.ifcheck`) when
``--instructions`` is given. docs/evaluation.md lists every field.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trainers.common import TrainerInputError, bundled_path, log

__all__ = ["run", "generate", "render_prompts", "evaluate_instructions", "load_model", "make_parser", "main",
           "run_error_types", "device_for", "dtype_for"]


def run_error_types() -> tuple[type[BaseException], ...]:
    """The exceptions that :func:`run` raises for bad input (reported as one line, not a traceback)."""
    return (TrainerInputError, FileNotFoundError)


def device_for(device: str | None) -> str:
    """The device to run on: ``device``, else cuda when torch sees a GPU, else cpu."""
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        raise TrainerInputError("--device cuda: torch sees no CUDA GPU here; leave --device unset or pass cpu")
    return device or ("cuda" if torch.cuda.is_available() else "cpu")


def dtype_for(dtype: str | None, device: str) -> str | None:
    """The weight dtype: ``dtype``, else bfloat16 on a GPU that supports it, else None (the model's float32)."""
    if dtype:
        return dtype
    import torch

    return "bfloat16" if device == "cuda" and torch.cuda.is_bf16_supported() else None


def load_model(model: str, *, device: str = "cpu", dtype: str | None = None, trust_remote_code: bool = False):
    """The model (a LoRA adapter folder is loaded on its base) on ``device``, in eval mode."""
    from transformers import AutoModelForCausalLM

    from trainers.common import resolve_model_path

    path = resolve_model_path(model, what="--model")
    kwargs: dict[str, Any] = {"trust_remote_code": trust_remote_code}
    if dtype:
        kwargs["dtype"] = dtype
    if (Path(path) / "adapter_config.json").is_file():
        from peft import AutoPeftModelForCausalLM

        m = AutoPeftModelForCausalLM.from_pretrained(path, **kwargs)
    else:
        m = AutoModelForCausalLM.from_pretrained(path, **kwargs)
    return m.to(device).eval()


def _stop_ids(model, tokenizer) -> set[int]:
    ids = set()
    for source in (getattr(model, "generation_config", None), tokenizer):
        eos = getattr(source, "eos_token_id", None)
        if isinstance(eos, int):
            ids.add(eos)
        elif isinstance(eos, (list, tuple)):
            ids.update(i for i in eos if isinstance(i, int))
    return ids


def generate(model, tokenizer, prompts: Sequence[str], *, max_new_tokens: int, batch_size: int) -> list[str]:
    """Greedy completions of rendered text prompts, in their order.

    Prompts are batched by length (less padding); each completion is cut at the first end-of-turn
    token and decoded with the special tokens kept (``<|python_tag|>``, ``[TOOL_CALLS]`` and the like
    are special in some tokenizers and mark the calls), padding removed."""
    import torch

    tokenizer.padding_side = "left"
    stop = _stop_ids(model, tokenizer)
    pad = tokenizer.pad_token_id
    lengths = [len(tokenizer(p, add_special_tokens=False)["input_ids"]) for p in prompts]
    order = sorted(range(len(prompts)), key=lambda i: (-lengths[i], i))
    out: list[str] = [""] * len(prompts)
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        enc = tokenizer([prompts[i] for i in idx], return_tensors="pt", padding=True,
                        add_special_tokens=False).to(model.device)
        with torch.no_grad():
            ids = model.generate(**enc, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=pad,
                                 eos_token_id=sorted(stop) or None)
        for i, seq in zip(idx, ids[:, enc["input_ids"].shape[1]:].tolist()):
            cut = next((k for k, t in enumerate(seq) if t in stop), len(seq))
            seq = [t for t in seq[:cut] if t != pad or pad in stop]
            out[i] = tokenizer.decode(seq, skip_special_tokens=False)
    return out


def _generate_vllm(model: str, prompts: Sequence[str], *, max_new_tokens: int, seed: int, dtype: str | None,
                   trust_remote_code: bool) -> list[str]:
    try:
        from vllm import LLM, SamplingParams
    except ImportError:
        raise TrainerInputError("--backend vllm needs vllm (pip install vllm) and a GPU; or use the default "
                                "--backend transformers") from None
    llm = LLM(model=model, seed=seed, dtype=dtype or "auto", trust_remote_code=trust_remote_code)
    params = SamplingParams(temperature=0.0, max_tokens=max_new_tokens, skip_special_tokens=False)
    return [o.outputs[0].text for o in llm.generate(list(prompts), params)]


def _served(model: str, server: dict, max_new_tokens: int, out: str | None):
    """``gen(prompts)``: the answer message of each prompt row from an OpenAI-compatible server, through the response
    cache of ``hsa bench run`` (``server["cache"]``, default beside ``out``); failed requests are logged and left
    out, so scoring counts them as missing."""
    import os

    from hsa.bench.client import OpenAIBackend
    from hsa.bench.pool import BenchError
    from hsa.bench.run import ResponseCache, generate_all

    if not server.get("base_url"):
        raise TrainerInputError("--backend openai needs --base-url URL (e.g. http://127.0.0.1:8000/v1)")
    key = os.environ.get(server["api_key_env"]) if server.get("api_key_env") else None
    if server.get("api_key_env") and not key:
        raise TrainerInputError(f"--api-key-env {server['api_key_env']}: that environment variable is not set")
    backend = OpenAIBackend(model, server["base_url"], api_key=key, concurrency=server.get("concurrency", 4),
                            max_retries=server.get("max_retries", 3), timeout=server.get("timeout", 120.0),
                            max_tokens=max_new_tokens, tools_in_prompt=bool(server.get("tools_in_prompt")),
                            extra_body=server.get("request_extra"))
    cache_path = server.get("cache") or (f"{out}.cache.sqlite" if out else None)

    def gen(prompts):
        try:
            backend.check()
            cache = ResponseCache(cache_path or ":memory:")
            try:
                answers, counts = generate_all(backend, prompts, cache)
            finally:
                cache.close()
        except BenchError as exc:
            raise TrainerInputError(str(exc)) from None
        finally:
            backend.close()
        log(f"{counts['cache_hits']} answers from the cache, {counts['asked']} asked, {counts['retries']} retries")
        for kind, f in counts["failed"].items():
            log(f"warning: {f['n']} requests failed ({kind}, e.g. {f['examples'][0]['detail']!r}): scored as missing")
        return [a["prediction"]["message"] if a else None for a in answers]

    return gen


def _compat(messages: list[dict], compat: Sequence[str]) -> list[dict]:
    """The prompt through the same template rewrites the trainers use (:func:`hsa.chat_template.adapt`; the names
    checked by :func:`trainers.common.template_compat`)."""
    from hsa.chat_template import adapt

    messages, _, _ = adapt(messages, [False] * len(messages), compat)
    return messages


def render_prompts(tokenizer, prompts: Sequence[dict], *, compat: Sequence[str] = (),
                   template_flag: str = "--chat-template") -> list[str]:
    """Each prompt row rendered with the tokenizer's chat template and the row's tools, ready to generate.

    The rewrites the template's probes show it needs are added to ``compat`` and logged, as the trainers do
    (:func:`trainers.common.template_compat`), so a prompt is rendered as the model was trained on it. The first
    prompt with tools also checks that the template renders them (an error names ``template_flag``)."""
    from trainers.common import CHAT_COMPAT, check_template_renders_harness, template_compat
    from trainers.render import strip_bos

    def render(messages, tools, generation=False):
        def go(msgs):
            return tokenizer.apply_chat_template(list(msgs), tools=tools or None, add_generation_prompt=generation,
                                                 tokenize=False)
        try:
            return go(messages)
        except Exception:  # noqa: BLE001  (DeepSeek V3's template wants arguments as JSON text)
            if not any(m.get("tool_calls") for m in messages):
                raise
            return go(_compat(list(messages), ["string_arguments"]))

    compat = template_compat(render, compat)  # a misspelt --chat-compat is an error there
    texts, checked = [], False
    for p in prompts:
        messages = _compat(p["messages"], compat)
        if not checked and p["tools"]:
            check_template_renders_harness(render, {"messages": messages, "tools": p["tools"]}, where=p["id"],
                                           flag=template_flag)
            checked = True
        try:
            texts.append(strip_bos(tokenizer, render(messages, p["tools"], True)))
        except Exception as exc:  # noqa: BLE001  (templates raise their own exception types)
            raise TrainerInputError(f"prompt {p['id']}: the chat template cannot render it ({type(exc).__name__}: "
                                    f"{exc}); rewrites applied: {', '.join(compat) or 'none'}; --chat-compat adds "
                                    f"others ({', '.join(c for c in CHAT_COMPAT if c not in compat)})") from None
    return texts


def _instruction_rows(path: str, max_rows: int | None) -> list[dict]:
    """Rows of verifiable instructions: ours (``prompt`` + ``checks``) or IFEval's (``prompt`` +
    ``instruction_id_list`` + ``kwargs``, as in its input_data.jsonl)."""
    from trainers.common import iter_rows
    from trainers.ifcheck import CheckError, validate_checks

    rows = []
    for n, r in enumerate(iter_rows(path), 1):
        if not isinstance(r, dict) or not (r.get("checks") or r.get("instruction_id_list")):
            raise TrainerInputError(f"{path} row {n}: no 'checks' (or IFEval's 'instruction_id_list'); expected the "
                                    f"format of {bundled_path('general_instructions.jsonl')} or IFEval's "
                                    "input_data.jsonl")
        try:
            if r.get("checks"):
                validate_checks(r["checks"])
        except CheckError as exc:
            raise TrainerInputError(f"{path} row {n}: {exc}") from None
        rows.append(r)
        if max_rows is not None and len(rows) >= max_rows:
            break
    if not rows:
        raise TrainerInputError(f"{path} has no instruction rows")
    return rows


def _ifeval_rows(max_rows: int | None) -> list[dict]:
    """The real IFEval prompts (google/IFEval on the hub), or a clear error when they cannot be reached."""
    try:
        import datasets

        ds = datasets.load_dataset("google/IFEval", split="train")
    except Exception as exc:  # noqa: BLE001  (offline, hub errors of many types)
        raise TrainerInputError(f"--ifeval: the IFEval prompts (google/IFEval) cannot be loaded here "
                                f"({type(exc).__name__}: {str(exc)[:160]}); download its input_data.jsonl where the "
                                "hub is reachable and pass --instructions input_data.jsonl") from None
    rows = [dict(r) for r in ds]
    return rows[:max_rows] if max_rows is not None else rows


def evaluate_instructions(generate_fn, tokenizer, path: str | None, *, max_rows: int | None = None,
                          rows: list[dict] | None = None) -> dict[str, Any]:
    """IFEval's strict / loose, prompt- / instruction-level accuracies on verifiable instructions
    (:func:`trainers.ifcheck.evaluate`: IFEval's own checkers where a maintained package has them)."""
    from hsa.evaluation.parsers import parse
    from trainers.distill import prompt_of
    from trainers.ifcheck import CheckError, evaluate

    rows = rows if rows is not None else _instruction_rows(path, max_rows)
    texts = [tokenizer.apply_chat_template(prompt_of(r), add_generation_prompt=True, tokenize=False) for r in rows]
    completions = generate_fn(texts)
    replies = []
    for c in completions:
        p = parse(c)
        replies.append((p.content if p.ok else c).strip())
    try:
        out = evaluate(replies, rows)
    except CheckError as exc:
        raise TrainerInputError(f"{path or 'IFEval'}: {exc}") from None
    out["source"] = path
    return out


def run(data: str, model: str, *, out: str | None = None, md: str | None = None, plot: str | None = None,
        predictions_out: str | None = None, held_out: Sequence[str] = (), train_manifest: str | None = None,
        instructions: str | None = None, max_instructions: int | None = None, turns: str = "all",
        max_prompts: int | None = None, batch_size: int = 8, max_new_tokens: int = 256, device: str | None = None,
        seed: int = 0, backend: str = "transformers", fmt: str = "auto", string_match: str = "exact",
        bootstrap: int = 1000, compare: str | None = None, chat_template: str | None = None,
        dtype: str | None = None, chat_compat: Sequence[str] = (), trust_remote_code: bool = False,
        ifeval: bool = False, server: dict | None = None) -> dict:
    """Generate with ``model`` on the prompts of ``data`` and score them; returns the report (written to
    ``out`` / ``md`` / ``plot`` when given). ``instructions``: a JSONL of verifiable instructions (ours or
    IFEval's input_data.jsonl), or ``"bundled"`` for the bundled set; ``ifeval``: also the real IFEval from the
    hub (an error when it cannot be reached). ``server`` (``backend="openai"``): ``base_url``, ``api_key_env``,
    ``concurrency``, ``max_retries``, ``timeout``, ``tools_in_prompt``, ``cache`` (:mod:`hsa.bench.client`)."""
    import torch

    from hsa.evaluation import collect, score, write_report
    from trainers.common import ModelArguments, load_tokenizer

    if backend not in ("transformers", "vllm", "openai"):
        raise TrainerInputError(f"--backend must be transformers, vllm or openai (got {backend!r})")
    items, _ = collect(data, turns=turns, max_prompts=max_prompts)
    inst_path = str(bundled_path("general_instructions.jsonl")) if instructions == "bundled" else instructions
    inst_rows = _instruction_rows(inst_path, max_instructions) if instructions else None  # bad input fails early
    ifeval_rows = _ifeval_rows(max_instructions) if ifeval else None
    prompts = [it.prompt for it in items]
    if backend == "openai":  # any OpenAI-compatible server (hsa.bench.client): answers are messages
        if instructions or ifeval:
            raise TrainerInputError("--instructions / --ifeval are not run with --backend openai yet; score the "
                                    "instructions with a local backend")
        dev, dt, tokenizer, texts = "server", None, None, prompts
        gen = _served(model, dict(server or {}), max_new_tokens, out)
    else:
        torch.manual_seed(seed)
        dev = device_for(device)
        dt = dtype_for(dtype, dev)
        tokenizer = load_tokenizer(ModelArguments(model_name_or_path=model, chat_template_path=chat_template,
                                                  trust_remote_code=trust_remote_code), padding_side="left",
                                   flags={"model_name_or_path": "--model", "chat_template_path": "--chat-template"})
        texts = render_prompts(tokenizer, prompts, compat=chat_compat)
        if backend == "vllm":
            from trainers.common import resolve_model_path

            path = resolve_model_path(model, what="--model")

            def gen(batch):
                return _generate_vllm(path, batch, max_new_tokens=max_new_tokens, seed=seed, dtype=dt,
                                      trust_remote_code=trust_remote_code)
        else:
            lm = load_model(model, device=dev, dtype=dt, trust_remote_code=trust_remote_code)

            def gen(batch):
                return generate(lm, tokenizer, batch, max_new_tokens=max_new_tokens, batch_size=batch_size)
    started = time.perf_counter()
    completions = gen(texts)
    log(f"{len(texts)} prompts completed in {time.perf_counter() - started:.1f}s on {dev} ({backend})")
    predictions = {p["id"]: c for p, c in zip(prompts, completions) if c is not None}
    if predictions_out:
        Path(predictions_out).parent.mkdir(parents=True, exist_ok=True)
        with open(predictions_out, "w", encoding="utf-8") as f:
            for p, c in zip(prompts, completions):
                if c is None:
                    continue
                f.write(json.dumps({"id": p["id"], ("message" if isinstance(c, dict) else "completion"): c},
                                   ensure_ascii=False) + "\n")
    report = score(items, predictions, turns=turns, max_prompts=max_prompts, fmt=fmt, string_match=string_match,
                   held_out=held_out, train_manifest=train_manifest, seed=seed, bootstrap=bootstrap,
                   compare_to=compare)
    report["data"] = str(data)
    report["predictions"] = str(predictions_out) if predictions_out else None
    results = report.pop("results")
    report["model"] = str(model)
    report["generation"] = {"backend": backend, "device": dev, "dtype": dt or "float32", "greedy": True,
                            "batch_size": batch_size, "max_new_tokens": max_new_tokens,
                            "chat_template": chat_template, "chat_compat": list(chat_compat)}
    if instructions:
        report["instructions"] = evaluate_instructions(gen, tokenizer, inst_path, rows=inst_rows)
        if instructions == "bundled":
            report["instructions"]["source"] = "bundled (trainers/data/general_instructions.jsonl)"
    if ifeval:
        report["ifeval"] = evaluate_instructions(gen, tokenizer, None, rows=ifeval_rows)
        report["ifeval"]["source"] = "google/IFEval"
    report["results"] = results
    from hsa.evaluation.report import round_floats

    report = round_floats(report)
    write_report(report, out, md=md, png=plot)
    return report


def make_parser() -> argparse.ArgumentParser:
    """The options of ``hsa eval run`` under ``python -m trainers.eval``."""
    from hsa.evaluation.options import add_common_options, add_run_options, add_score_options

    p = argparse.ArgumentParser(prog="python -m trainers.eval", description=__doc__.splitlines()[0])
    add_common_options(p)
    add_score_options(p)
    add_run_options(p)
    return p


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    from hsa.evaluation.options import parse_run_args

    return parse_run_args(make_parser(), sys.argv[1:] if argv is None else list(argv))


def main(argv: Sequence[str] | None = None) -> int:
    from hsa.evaluation.options import run_kwargs
    from hsa.evaluation.prompts import EvalInputError
    from hsa.evaluation.report import summary_text

    args = _parse(argv)
    try:
        report = run(**run_kwargs(args))
    except (EvalInputError, *run_error_types()) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(summary_text(report), file=sys.stderr)
    log(f"report written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
