"""The ``openai`` backend: chat completions from any OpenAI-compatible server (vLLM's and SGLang's servers,
llama.cpp's server, hosted APIs), with counted retries, timeouts and a bounded number of requests in flight.

Requests go through httpx (one pooled client shared by ``concurrency`` threads). The retries are ours rather than
an SDK's so that each one is counted in the report and a server's ``Retry-After`` is honoured: a connection error,
a timeout, 429 and 5xx are retried up to ``max_retries`` times with exponential backoff; any other status, a body
that is not a chat completion, and a request that still fails after its retries are failures of that prompt
(counted, named in the report, not cached, so a rerun asks again). A server that cannot be reached at all stops the
run with :class:`ServerUnreachable` before anything is scored.

Tools go in the request's ``tools`` (native function calling); with ``tools_in_prompt`` they are rendered into the
system message instead, the calls of earlier turns as ``<tool_call>`` text and tool results as ``<tool_response>``
user turns (:func:`tools_in_prompt_messages`): the text the bundled ``trainers/data/hsa_chatml_tools.jinja``
renders, so a server that applies a plain ChatML template sees what a local model with that template sees.
"""

from __future__ import annotations

import concurrent.futures
import json
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

from hsa.bench.pool import BenchError

__all__ = ["ServerUnreachable", "OpenAIBackend", "tools_in_prompt_messages", "api_messages", "RETRY_STATUS",
           "add_server_options", "server_options"]

#: HTTP statuses that are retried (rate limits and server errors).
RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class ServerUnreachable(BenchError):
    """The server cannot be reached at all (connection refused, DNS, every retry timed out)."""


def _string_arguments(messages: Sequence[dict]) -> list[dict]:
    out = []
    for m in messages:
        m = {k: v for k, v in m.items() if k != "train"}
        if m.get("tool_calls"):
            m["tool_calls"] = [{**c, "function": {**c["function"], "arguments": c["function"]["arguments"]
                                                  if isinstance(c["function"]["arguments"], str) else
                                                  json.dumps(c["function"]["arguments"], ensure_ascii=False)}}
                               for c in m["tool_calls"]]
        out.append(m)
    return out


def api_messages(messages: Sequence[dict]) -> list[dict]:
    """A prompt's messages in the OpenAI API form (tool-call arguments as JSON text, every call with an id and each
    tool result with its call's id)."""
    out, pending = [], []
    for n, m in enumerate(_string_arguments(messages)):
        if m.get("tool_calls"):
            calls = []
            for k, c in enumerate(m["tool_calls"]):
                c = {"id": c.get("id") or f"call_{n}_{k}", "type": "function", "function": c["function"]}
                calls.append(c)
            m["tool_calls"] = calls
            pending = [c["id"] for c in calls]
        elif m.get("role") == "tool" and not m.get("tool_call_id") and pending:
            m["tool_call_id"] = pending[0]
        if m.get("role") == "tool" and m.get("tool_call_id") in pending:
            pending.remove(m["tool_call_id"])
        out.append(m)
    return out


def tools_in_prompt_messages(messages: Sequence[dict], tools: Sequence[dict]) -> list[dict]:
    """The prompt as plain text turns, tools in the system message (the text of hsa_chatml_tools.jinja)."""
    out: list[dict] = []
    rest = list(messages)
    system = ""
    if rest and rest[0].get("role") == "system":
        system = (rest.pop(0).get("content") or "") + "\n\n"
    if tools:
        block = "".join("\n" + json.dumps(t, ensure_ascii=False) for t in tools)
        out.append({"role": "system", "content": system + "# Tools\n\nYou may call functions. Their signatures are "
                    "within <tools></tools>:\n<tools>" + block + "\n</tools>\n\nTo call a function, write "
                    "<tool_call>{\"name\": <function-name>, \"arguments\": <args-json-object>}</tool_call> on its "
                    "own line, one per call."})
    elif system:
        out.append({"role": "system", "content": system[:-2]})
    for m in rest:
        role = m.get("role")
        if role == "tool":
            piece = "<tool_response>\n" + (m.get("content") or "") + "\n</tool_response>"
            if out and out[-1].get("_tool"):
                out[-1]["content"] += "\n" + piece
            else:
                out.append({"role": "user", "content": piece, "_tool": True})
            continue
        if role == "assistant":
            text = m.get("content") or ""
            for k, c in enumerate(m.get("tool_calls") or ()):
                fn = c["function"]
                args = fn["arguments"] if isinstance(fn["arguments"], str) else json.dumps(fn["arguments"],
                                                                                            ensure_ascii=False)
                text += ("\n" if text or k else "") + '<tool_call>{"name": "' + fn["name"] + '", "arguments": ' + \
                    args + "}</tool_call>"
            out.append({"role": "assistant", "content": text})
            continue
        out.append({"role": role, "content": m.get("content") or ""})
    return [{k: v for k, v in m.items() if k != "_tool"} for m in out]


class OpenAIBackend:
    """Greedy chat completions from an OpenAI-compatible server at ``base_url`` (``.../v1``)."""

    name = "openai"

    def __init__(self, model: str, base_url: str, *, api_key: str | None = None, concurrency: int = 4,
                 max_retries: int = 3, timeout: float = 120.0, max_tokens: int = 256, tools_in_prompt: bool = False,
                 backoff: float = 1.0, extra_body: dict | None = None):
        import httpx

        if concurrency < 1 or max_retries < 0:
            raise BenchError("--concurrency must be at least 1 and --max-retries at least 0")
        self.model, self.base_url = model, base_url.rstrip("/")
        self.concurrency, self.max_retries, self.timeout = concurrency, max_retries, timeout
        self.max_tokens, self.tools_in_prompt, self.backoff = max_tokens, tools_in_prompt, backoff
        self.extra_body = dict(extra_body or {})
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(headers=headers, timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
                                    limits=httpx.Limits(max_connections=concurrency))
        self._lock = threading.Lock()
        self.retries = 0

    def identity(self) -> dict:
        """What, besides the prompt, decides a completion (part of every cache key)."""
        return {"backend": "openai", "model": self.model, "temperature": 0, "max_tokens": self.max_tokens,
                "tools_in_prompt": self.tools_in_prompt, **({"extra_body": self.extra_body} if self.extra_body
                                                            else {})}

    def describe(self) -> dict:
        return {**self.identity(), "base_url": self.base_url, "concurrency": self.concurrency,
                "max_retries": self.max_retries, "timeout_s": self.timeout}

    def payload(self, prompt: dict) -> dict:
        """The request body of one prompt."""
        body: dict[str, Any] = {"model": self.model, "temperature": 0, "max_tokens": self.max_tokens}
        if self.tools_in_prompt:
            body["messages"] = tools_in_prompt_messages(prompt["messages"], prompt["tools"])
        else:
            body["messages"] = api_messages(prompt["messages"])
            if prompt["tools"]:
                body["tools"] = prompt["tools"]
        body.update(self.extra_body)
        return body

    def check(self) -> None:
        """Fail fast with a clear message when the server cannot be reached (GET /models)."""
        import httpx

        try:
            self._client.get(f"{self.base_url}/models", timeout=min(self.timeout, 10.0))
        except httpx.HTTPError as exc:
            raise ServerUnreachable(self._unreachable(exc)) from None

    def _unreachable(self, exc: Exception) -> str:
        return (f"cannot reach the server at {self.base_url} ({type(exc).__name__}: {exc}). Is it running, and is "
                f"--base-url right (it ends in /v1)? Try: curl {self.base_url}/models")

    def close(self) -> None:
        self._client.close()

    # ----------------------------------------------------------------------- one request

    def _post(self, body: dict) -> dict:
        """One prompt's outcome: ``{"ok": True, "prediction", "usage", "retries"}`` or ``{"ok": False, "error",
        "detail", "retries"}``; raises :class:`ServerUnreachable` when every try failed to connect."""
        import httpx

        retries = 0
        while True:
            wait = None
            try:
                r = self._client.post(f"{self.base_url}/chat/completions", json=body)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                if retries >= self.max_retries:
                    raise ServerUnreachable(self._unreachable(exc)) from None
                error = ("unreachable", str(exc))
            except httpx.TimeoutException as exc:
                error = ("timeout", f"no answer within {self.timeout:g}s ({type(exc).__name__})")
            except httpx.HTTPError as exc:
                error = ("transport", f"{type(exc).__name__}: {exc}")
            else:
                if r.status_code == 200:
                    return {**_read_completion(r), "retries": retries}
                error = (f"http_{r.status_code}", r.text[:300])
                if r.status_code not in RETRY_STATUS:
                    return {"ok": False, "error": error[0], "detail": error[1], "retries": retries}
                wait = _retry_after(r.headers.get("retry-after"))
            if retries >= self.max_retries:
                return {"ok": False, "error": error[0], "detail": error[1], "retries": retries}
            retries += 1
            with self._lock:
                self.retries += 1
            time.sleep(min(wait if wait is not None else self.backoff * 2 ** (retries - 1), 60.0))

    # ----------------------------------------------------------------------- many

    def complete(self, work: Sequence[tuple[int, dict]]) -> Iterator[tuple[int, dict]]:
        """``(index, outcome)`` for each ``(index, request body)``, as they finish, ``concurrency`` at a time."""
        with concurrent.futures.ThreadPoolExecutor(self.concurrency) as pool:
            futures = {}
            it = iter(work)
            try:
                for index, body in it:  # keep at most 2 x concurrency submitted (a stop loses little)
                    futures[pool.submit(self._post, body)] = index
                    if len(futures) >= 2 * self.concurrency:
                        done, _ = concurrent.futures.wait(futures, return_when=concurrent.futures.FIRST_COMPLETED)
                        for f in done:
                            yield futures.pop(f), f.result()
                for f in concurrent.futures.as_completed(list(futures)):
                    yield futures.pop(f), f.result()
            finally:
                for f in futures:
                    f.cancel()


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _read_completion(r) -> dict:
    """A 200 response as an outcome; a body that is not a chat completion is a ``malformed_response``."""
    try:
        data = r.json()
    except ValueError:
        return {"ok": False, "error": "malformed_response", "detail": f"not JSON: {r.text[:200]!r}"}
    choices = data.get("choices") if isinstance(data, dict) else None
    msg = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(choices[0], dict) \
        else None
    if not isinstance(msg, dict):
        return {"ok": False, "error": "malformed_response",
                "detail": f"no choices[0].message in {json.dumps(data)[:200]}"}
    content = msg.get("content")
    calls = msg.get("tool_calls")
    if content is not None and not isinstance(content, str) or calls is not None and not isinstance(calls, list):
        return {"ok": False, "error": "malformed_response",
                "detail": f"message content or tool_calls of the wrong type: {json.dumps(msg)[:200]}"}
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    out_usage = {k: usage[k] for k in ("prompt_tokens", "completion_tokens") if isinstance(usage.get(k), int)}
    for key in ("cost", "total_cost"):  # some gateways report the price
        if isinstance(usage.get(key), (int, float)):
            out_usage["cost"] = usage[key]
    return {"ok": True, "prediction": {"message": {"content": content or "", "tool_calls": calls or []}},
            "usage": out_usage, "finish_reason": choices[0].get("finish_reason")}


def add_server_options(p) -> None:
    """The options of the ``openai`` backend, shared by ``hsa bench run`` and ``hsa eval run``."""
    g = p.add_argument_group("openai backend (any OpenAI-compatible server)")
    g.add_argument("--base-url", metavar="URL", help="the server's API root, e.g. http://127.0.0.1:8000/v1")
    g.add_argument("--api-key-env", metavar="VAR",
                   help="the environment variable that holds the API key (the key itself is never an argument)")
    g.add_argument("--concurrency", type=int, default=4, metavar="N", help="requests in flight (default 4)")
    g.add_argument("--max-retries", type=int, default=3, metavar="N",
                   help="retries of a request after a connection error, a timeout, 429 or 5xx (default 3)")
    g.add_argument("--timeout", type=float, default=120.0, metavar="S", help="seconds per request (default 120)")
    g.add_argument("--tools-in-prompt", action="store_true",
                   help="render the tools into the system message and calls as <tool_call> text (servers without "
                        "native function calling) instead of sending them in the request's tools")
    g.add_argument("--request-extra", metavar="JSON", type=_json_object, default=None,
                   help="fields added to every request body, e.g. '{\"repeat_penalty\": 1.0}' for llama-cpp-python's "
                        "server (whose default repeat penalty 1.1 changes greedy decoding); part of the cache key")
    g.add_argument("--cache", metavar="FILE", help="the response cache, an sqlite file (hsa bench run: default "
                                                   "OUT/cache.sqlite; hsa eval run: default OUT.cache.sqlite)")


def server_options(args) -> dict:
    """The parsed options of :func:`add_server_options` as a dict."""
    return {k: getattr(args, k) for k in ("base_url", "api_key_env", "concurrency", "max_retries", "timeout",
                                          "tools_in_prompt", "request_extra", "cache")}


def _json_object(text: str) -> dict:
    import argparse

    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {type(value).__name__}")
    return value
