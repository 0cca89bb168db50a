# Two commands on a fresh machine: `make run` and `make test`. Both build .venv first.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv jvm run test test-fast test-jvm test-spark test-e2e lint lock conformance benchmarks clean

venv: $(STAMP) jvm

# Idempotent: re-runs only when pyproject.toml or constraints.txt changes (or the venv is missing). The versions
# are constraints.txt's: the same tree on every machine until someone runs `make lock` (README, "Dependencies").
$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[spark,operator,s3,dev]'
	touch $(STAMP)

# Write constraints.txt from the venv's installed tree: after `pip install --upgrade ...` in it, on purpose.
lock:
	$(BIN)/python -m tests.setup.lock > constraints.txt.new && mv constraints.txt.new constraints.txt

# The JVM operator library, compiled against this venv's PySpark jars (needs a JDK 17; no-op when up to date:
# the jar's stamp covers the Java sources and the Spark version). docs/jvm-operators.md.
jvm: $(STAMP)
	$(BIN)/python -m planengine.runtime.jvm --quiet

run: venv
	$(BIN)/python -m examples.clicks.main

lint: venv
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/vulture

# The tiers in order, each only if the one before passed: fast -> jvm -> spark -> e2e (docs/testing.md). The last
# line of the output sums them: `N passed, N failed, N skipped`. The control plane (e2e only) builds in the
# background at nice 19 from the first moment (tests/tiers/background.py), overlapping the venv's downloads, the
# other set-up steps and the fast and Spark tiers; the runner waits for it before e2e. Log: .tools/logs/.
test:
	$(PYTHON) -m tests.tiers.background start 40-controlplane
	@start=$$(date +%s); $(MAKE) venv lint && echo "make test: venv and lint took $$(( $$(date +%s) - start )) s"
	bash tests/setup/prepare.sh --except 40-controlplane
	PLANENGINE_BACKGROUND_STARTED=1 $(BIN)/python -m tests.tiers.run

# The quick verdict: no Spark, no PostgreSQL, no CLI processes, no JVM (a few minutes on a loaded 2-core machine).
test-fast: venv
	$(BIN)/python -m tests.tiers.run fast

# The JVM operator library's Java unit tests (one JVM, no SparkSession).
test-jvm: venv
	$(BIN)/python -m tests.tiers.run jvm

test-spark: venv
	bash tests/setup/prepare.sh
	$(BIN)/python -m tests.tiers.run spark

test-e2e: venv
	bash tests/setup/prepare.sh
	$(BIN)/python -m tests.tiers.run e2e

conformance: venv
	$(BIN)/python -m pytest tests/conformance -q

benchmarks: venv
	$(BIN)/python -m benchmarks.run_all

clean:
	rm -rf $(VENV) build dist .pytest_cache .ruff_cache
