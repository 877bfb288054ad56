"""Shared helpers of the hsa-bench tests: a small pool (built once per session), answers made from the pool's own
gold turns, and a local stub OpenAI-compatible server for faults (slow, 429/500, malformed, unreachable)."""

from __future__ import annotations

import http.server
import json
import threading
from pathlib import Path

import pytest

from hsa.bench.serve import free_port  # noqa: F401  (re-exported for the tests)

SMALL = {"bfcl": ["simple_python", "parallel_multiple", "live_multiple", "irrelevance"], "agentdojo": ["banking"]}


def suites_installed() -> bool:
    from hsa.bench.suites import installed_version

    return installed_version("bfcl") is not None and installed_version("agentdojo") is not None


needs_suites = pytest.mark.skipif(not suites_installed(), reason="the suites are not installed: make venv-bench")


@pytest.fixture(scope="session")
def small_pool(tmp_path_factory) -> Path:
    """2 items of 4 BFCL categories and 2 AgentDojo banking tasks, K=1, every family."""
    from hsa.bench.pool import build_pool

    out = tmp_path_factory.mktemp("bench") / "pool"
    build_pool(out, parts=SMALL, k=1, limit=2, progress=False)
    return out


def gold_answers(pool, sel, *, canonical_names: bool = False, no_calls: bool = False) -> list[dict]:
    """Answers that repeat each prompt's gold turn as the row writes it (variant names), or in the canonical
    harness (``canonical_names``: what a model that memorised its harness says), or make no call."""
    rows = {r["id"]: r for r in pool.rows()}
    out = []
    for it in sel.items:
        if no_calls:
            calls = []
        elif canonical_names:
            calls = [{"id": f"c{n}", "type": "function", "function": {"name": c["name"], "arguments":
                                                                      json.dumps(c["arguments"])}}
                     for n, c in enumerate(it.gold["calls"])]
        else:
            m = rows[it.prompt["row_id"]]["messages"][it.prompt["turn"]]
            calls = [{"id": f"c{n}", "type": "function", "function": {"name": c["function"]["name"], "arguments":
                                                                      json.dumps(c["function"]["arguments"])}}
                     for n, c in enumerate(m.get("tool_calls") or ())]
        out.append({"ok": True, "prediction": {"message": {"content": "" if calls else "I cannot help with that.",
                                                           "tool_calls": calls}}})
    return out


class StubServer:
    """A local OpenAI-compatible endpoint whose answers a test scripts: ``plan`` is a list of actions taken in turn
    for each POST (the last repeats): ``("ok", text)``, ``("status", code, headers)``, ``("raw", body)``,
    ``("sleep", seconds)``. Counts the requests it got. Faults only: no model behind it."""

    def __init__(self, plan):
        self.plan = list(plan)
        self.posts = 0
        self.lock = threading.Lock()
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                self._send(200, json.dumps({"object": "list", "data": [{"id": "stub"}]}).encode())

            def do_POST(self):
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length))
                with stub.lock:
                    step = stub.plan[min(stub.posts, len(stub.plan) - 1)]
                    stub.posts += 1
                if step[0] == "sleep":
                    import time

                    time.sleep(step[1])
                    step = ("ok", "late")
                if step[0] == "ok":
                    text = step[1] if step[1] is not None else body["messages"][-1]["content"][:20]
                    self._send(200, json.dumps({"choices": [{"message": {"role": "assistant", "content": text},
                                                             "finish_reason": "stop"}],
                                                "usage": {"prompt_tokens": 7, "completion_tokens": 3}}).encode())
                elif step[0] == "status":
                    self._send(step[1], b'{"error": {"message": "scripted"}}', step[2] if len(step) > 2 else {})
                else:
                    self._send(200, step[1])

            def _send(self, code, data, headers=None):
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        class Server(http.server.ThreadingHTTPServer):
            def handle_error(self, request, client_address):  # a client that gave up (the timeout case)
                pass

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)
