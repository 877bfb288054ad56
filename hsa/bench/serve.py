"""A local OpenAI-compatible server for a GGUF file: llama.cpp's, from llama-cpp-python (``pip install
'llama-cpp-python[server]'``), on a free loopback port, for as long as a ``with`` block runs.

>>> with serve_gguf("SmolLM2-135M-Instruct.Q4_1.gguf") as url:     # doctest: +SKIP
...     ...  # hsa bench run BENCH --backend openai --base-url URL --tools-in-prompt ...

The server applies the chat template stored in the GGUF. It is what the tests and benchmarks/bench_served.py use;
on the command line the same is ``python -m llama_cpp.server --model FILE.gguf --port 8000``.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from hsa.bench.pool import BenchError

__all__ = ["serve_gguf", "free_port"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_gguf(gguf: str | Path, *, threads: int = 1, n_ctx: int = 4096, start_timeout: float = 180.0
               ) -> Iterator[str]:
    """Start llama-cpp-python's server on ``gguf``; yields its API root (``http://127.0.0.1:PORT/v1``); stops it
    (SIGTERM, then SIGKILL after 30 s) when the block ends. One thread by default: on a shared 2-core machine two
    threads generated 15 times slower (650 ms a token against 45, measured), each waiting for the other."""
    import importlib.util

    if importlib.util.find_spec("llama_cpp") is None:
        raise BenchError("the local server needs llama-cpp-python: pip install 'llama-cpp-python[server]' (make "
                         "venv-served builds it once from its sdist)")
    port = free_port()
    # the server's log goes to a file, never to a pipe: llama.cpp logs more at start and per request than a pipe
    # holds, and a server blocked on a full pipe that nobody reads answers nothing
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
                             "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(threads), "--seed", "0"],
                            stdout=subprocess.DEVNULL, stderr=log)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + start_timeout
        while True:
            try:
                urllib.request.urlopen(f"{url}/models", timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    proc.kill()
                    proc.wait()
                    log.seek(0)
                    err = log.read().decode(errors="replace")[-1500:]
                    raise BenchError(f"llama.cpp's server did not start on {url}: {err}") from None
                time.sleep(0.5)
        yield url
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()
