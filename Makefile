# Two commands on a fresh machine: `make run` and `make test`. Both build .venv first.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv run test lint conformance benchmarks clean

venv: $(STAMP)

# Idempotent: re-runs only when pyproject.toml changes (or the venv is missing).
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[spark,operator,dev]'
	touch $(STAMP)

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
