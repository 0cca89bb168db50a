"""Bounded fuzzing of the SQL front end in the normal test suite (issue 20).

Fixed seeds, mutated golden and conformance programs (``tests/fuzz/sql_mutants.py``), each compiled
in-process through the compile path (``tests/fuzz/harness.py``), Spark never started. Every input must
compile or fail with a ``planengine.errors`` error that names a location. The budget is a fixed number of
inputs per seed, cut short by a wall-clock budget so a loaded machine cannot stretch the suite; the long
campaign is ``benchmarks/fuzz/sql_campaign.py``.
"""

from __future__ import annotations

import logging
import time

import pytest

from tests.fuzz.harness import CLEAN_ERROR, COMPILED, no_spark, run_one
from tests.fuzz.sql_mutants import MUTATIONS, mutants, seeds

SEEDS = (1, 2, 3)
INPUTS_PER_SEED = 60
BUDGET_SECONDS = 12.0  # per seed: with the seed check, the fuzz tests stay within 60 s even on a loaded machine


def test_seed_programs_are_many_and_mostly_compile():
    """The generator starts from real programs; if they stopped compiling, every mutant would die early."""
    pool = seeds()
    assert len(pool) >= 40
    with no_spark():
        outcomes = [run_one(seed.text.encode()).kind for seed in pool[::20]]
    assert outcomes.count(COMPILED) >= len(outcomes) - 1, outcomes


def test_mutants_are_reproducible_from_the_seed():
    first = [m.data for m in mutants(11, 20)]
    assert first == [m.data for m in mutants(11, 20)]
    assert first != [m.data for m in mutants(12, 20)]


@pytest.mark.parametrize("seed", SEEDS)
def test_fuzzed_scripts_compile_or_fail_with_a_located_user_error(seed: int, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.ERROR)
    deadline = time.monotonic() + BUDGET_SECONDS
    seen: dict[str, int] = {}
    failures = []
    with no_spark():
        for i, mutant in enumerate(mutants(seed, INPUTS_PER_SEED)):
            if time.monotonic() > deadline:
                break
            outcome = run_one(mutant.data, f"fuzz-{seed}-{i}.sql")
            seen[outcome.kind] = seen.get(outcome.kind, 0) + 1
            if outcome.kind not in (COMPILED, CLEAN_ERROR):
                failures.append(f"seed {seed} input {i} ({mutant.seed}, {mutant.mutation}): {outcome.kind}\n"
                                f"{outcome.message[-1500:]}")
    assert not failures, "\n\n".join(failures)
    assert sum(seen.values()) >= 5, f"the budget ran out after {sum(seen.values())} inputs"


def test_every_mutation_class_is_exercised():
    kinds = {m.mutation.split("+")[0] for m in mutants(SEEDS[0], 200)}
    assert kinds == set(MUTATIONS)
