# Two entry points: `make demo` (augment the bundled fixtures) and `make test` (the whole suite).
# Each creates .venv and installs what it needs; nothing else is assumed.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# torch is pinned here for the CPU build this machine carries; the package itself asks for torch>=2.4.
TORCH_PIN ?= torch==2.13.0

.PHONY: demo test venv venv-train clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

venv: $(BIN)/python
	$(BIN)/pip install -q -e '.[dev]'

venv-train: $(BIN)/python
	$(BIN)/pip install -q $(TORCH_PIN)
	$(BIN)/pip install -q -e '.[dev,train,eval]'

demo: venv
	rm -rf demo-out
	$(BIN)/hsa augment fixtures/livestream/trajectories.jsonl --out demo-out/shards --variants 4 --seed 0 --workers 2
	$(BIN)/python -c "import datasets; print(datasets.load_from_disk('demo-out/shards'))"
	$(BIN)/hsa export demo-out/shards --out demo-out/variants.jsonl
	$(BIN)/hsa canonicalize demo-out/variants.jsonl --out demo-out/back.jsonl
	$(BIN)/hsa validate demo-out/variants.jsonl
	$(BIN)/hsa show demo-out/shards --id ls-000001/2 --no-color | head -40

test: venv-train
	$(BIN)/python -m pytest -q -n 2 tests

clean:
	rm -rf $(VENV) demo-out shards
