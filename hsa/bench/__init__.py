"""hsa-bench: a public harness-sensitivity benchmark that any model can take (docs/benchmark.md).

``hsa bench build`` reads the public suites (BFCL, AgentDojo) from their PyPI packages at pinned versions and
writes a fixed variant pool (:mod:`hsa.bench.pool`); ``hsa bench run`` generates on it with a local model or any
OpenAI-compatible server (:mod:`hsa.bench.run`, :mod:`hsa.bench.client`) and reports canonical and variant
accuracy, call turns and no-call turns apart (:mod:`hsa.bench.report`).
"""

from hsa.bench.pool import BENCH_NAME, FAMILIES, BenchError, Pool, build_pool, load_pool
from hsa.bench.suites import SUITE_PACKAGES, SUITES, SuiteError

__all__ = ["BENCH_NAME", "FAMILIES", "SUITES", "SUITE_PACKAGES", "BenchError", "SuiteError", "Pool", "build_pool",
           "load_pool"]
