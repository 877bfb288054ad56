"""Local generation backends of ``hsa bench run`` and ``hsa eval run``: transformers (any device) and vLLM (a GPU).

Each renders a prompt row with the model's chat template (or ``--chat-template``) and the row's own tools
(:func:`trainers.eval.render_prompts`), generates greedily, and yields outcomes in the form
:mod:`hsa.bench.run` caches: ``{"ok": True, "prediction": {"completion": text}, "usage": {"prompt_tokens",
"completion_tokens"}}``. The rendered text is the request (part of the cache key), so a changed template asks
again. The OpenAI-compatible backend is :class:`hsa.bench.client.OpenAIBackend`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from trainers.common import TrainerInputError

__all__ = ["LocalBackend", "local_backend"]


class LocalBackend:
    """Greedy generation in this process (``backend``: ``transformers`` or ``vllm``)."""

    def __init__(self, backend: str, model: str, *, chat_template: str | None = None, batch_size: int = 8,
                 max_new_tokens: int = 256, device: str | None = None, dtype: str | None = None, seed: int = 0,
                 trust_remote_code: bool = False, chat_compat: Sequence[str] = ()):
        import torch

        from trainers.common import ModelArguments, load_tokenizer, resolve_model_path
        from trainers.eval import device_for, dtype_for

        if backend not in ("transformers", "vllm"):
            raise TrainerInputError(f"--backend must be transformers, vllm or openai (got {backend!r})")
        self.name, self.model_name = backend, model
        self.path = resolve_model_path(model, what="--model")
        self.batch_size, self.max_new_tokens, self.seed = batch_size, max_new_tokens, seed
        self.chat_template, self.chat_compat = chat_template, tuple(chat_compat)
        self.trust_remote_code = trust_remote_code
        torch.manual_seed(seed)
        self.device = device_for(device)
        self.dtype = dtype_for(dtype, self.device)
        self.tokenizer = load_tokenizer(ModelArguments(model_name_or_path=model, chat_template_path=chat_template,
                                                       trust_remote_code=trust_remote_code), padding_side="left")
        self._model = None
        self._llm = None

    def identity(self) -> dict:
        weights = sorted(p for p in Path(self.path).glob("*.safetensors")) if Path(self.path).is_dir() else []
        digest = hashlib.sha256("".join(f"{p.name}:{p.stat().st_size}" for p in weights).encode()).hexdigest()[:16]
        return {"backend": self.name, "model": str(self.model_name), "weights": digest, "greedy": True,
                "max_new_tokens": self.max_new_tokens, "dtype": self.dtype or "float32"}

    def describe(self) -> dict:
        return {**self.identity(), "device": self.device, "batch_size": self.batch_size,
                "chat_template": self.chat_template, "chat_compat": list(self.chat_compat)}

    def payloads(self, prompts: Sequence[dict]) -> list[dict]:
        """Each prompt rendered with the chat template and its tools (:func:`trainers.eval.render_prompts`, which
        also checks on the first prompt with tools that the template renders them)."""
        from trainers.eval import render_prompts

        return [{"text": t} for t in render_prompts(self.tokenizer, list(prompts), compat=self.chat_compat)]

    def _count(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def complete(self, work: Sequence[tuple[int, dict]]) -> Iterator[tuple[int, dict]]:
        """``(index, outcome)`` per ``(index, payload)``, a batch at a time (vLLM: 256 prompts per call)."""
        work = list(work)
        if self.name == "vllm":
            step = 256
            gen = self._vllm
        else:
            from trainers.eval import load_model

            if self._model is None:
                self._model = load_model(self.path, device=self.device, dtype=self.dtype,
                                         trust_remote_code=self.trust_remote_code)
            step = self.batch_size * 4
            gen = self._transformers
        order = sorted(work, key=lambda w: -len(w[1]["text"]))  # similar lengths together: less padding
        for start in range(0, len(order), step):
            chunk = order[start:start + step]
            for (index, payload), (text, n_in, n_out) in zip(chunk, gen([p["text"] for _, p in chunk])):
                yield index, {"ok": True, "prediction": {"completion": text},
                              "usage": {"prompt_tokens": n_in, "completion_tokens": n_out}}

    def _transformers(self, texts: list[str]) -> list[tuple[str, int, int]]:
        from trainers.eval import generate

        outs = generate(self._model, self.tokenizer, texts, max_new_tokens=self.max_new_tokens,
                        batch_size=self.batch_size)
        return [(o, self._count(t), self._count(o)) for t, o in zip(texts, outs)]

    def _vllm(self, texts: list[str]) -> list[tuple[str, int, int]]:
        if self._llm is None:
            try:
                from vllm import LLM
            except ImportError:
                raise TrainerInputError("--backend vllm needs vllm (pip install vllm) and a GPU; or use "
                                        "--backend transformers, or serve the model with `vllm serve` and use "
                                        "--backend openai") from None
            self._llm = LLM(model=self.path, seed=self.seed, dtype=self.dtype or "auto",
                            trust_remote_code=self.trust_remote_code)
        from vllm import SamplingParams

        params = SamplingParams(temperature=0.0, max_tokens=self.max_new_tokens, skip_special_tokens=False)
        outs = self._llm.generate(texts, params)
        return [(o.outputs[0].text, len(o.prompt_token_ids or ()), len(o.outputs[0].token_ids))
                for o in outs]

    def close(self) -> None:
        self._model = None
        self._llm = None


def local_backend(backend: str, model: str, **kwargs) -> LocalBackend:
    """The transformers or vLLM backend (see :class:`LocalBackend`)."""
    return LocalBackend(backend, model, **kwargs)
