# Two commands on a fresh machine: `make run` and `make test`. Both build .venv first.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv jvm run test lint conformance benchmarks clean

venv: $(STAMP) jvm

# Idempotent: re-runs only when pyproject.toml changes (or the venv is missing).
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[spark,operator,dev]'
	touch $(STAMP)

# The JVM operator library, compiled against this venv's PySpark jars (needs a JDK 17; no-op when up to date:
# the jar's stamp covers the Java sources and the Spark version). docs/jvm-operators.md.
jvm: $(STAMP)
	$(BIN)/python -m planengine.runtime.jvm --quiet

run: venv
	$(BIN)/python -m examples.clicks.main

lint: venv
	$(BIN)/ruff check .
	$(BIN)/lint-imports

test: venv lint
	bash tests/setup/prepare.sh
	$(BIN)/python -m pytest

conformance: venv
	$(BIN)/python -m pytest tests/conformance -q

benchmarks: venv
	$(BIN)/python -m benchmarks.run_all

clean:
	rm -rf $(VENV) build dist .pytest_cache .ruff_cache
