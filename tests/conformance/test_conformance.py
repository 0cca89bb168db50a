"""Flink's conformance programs through the engine, one test per program (``family/id``).

Each program runs in two phases through the in-process Python API (``harness.run_program``) on the one
shared SparkSession. A program in ``baseline.json`` must pass (a regression fails the suite); any other
failing program is xfail with its category (planner error, runtime missing translator, runtime error,
wrong result, harness limitation, needs python UDAF/UDTF, unsupported by design). The per-family pass
table is printed at the end (``conftest.pytest_terminal_summary``).

The programs are read from ``$CONFORMANCE_DIR`` or ``<repo>/../shared/conformance``; without them the
module is skipped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from planengine.testing.conformance_programs import default_conformance_dir, load_programs
from tests.conformance.baseline import load_baseline
from tests.conformance.harness import RESULTS, run_program

REPO = Path(__file__).resolve().parents[2]
CONFORMANCE_DIR = default_conformance_dir(REPO)

if not (CONFORMANCE_DIR / "flink-programs").is_dir():
    pytest.skip(f"no conformance programs at {CONFORMANCE_DIR}/flink-programs (set CONFORMANCE_DIR to the folder "
                "holding flink-programs/)", allow_module_level=True)

PROGRAMS = load_programs(CONFORMANCE_DIR)
BASELINE = load_baseline()



@pytest.mark.timeout(420)
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.key for p in PROGRAMS])
def test_program(program, spark, tmp_path: Path) -> None:
    outcome = run_program(program, tmp_path / program.id)
    RESULTS[program.key] = outcome
    if outcome.passed:
        return
    if program.id in BASELINE:
        pytest.fail(f"REGRESSION: {program.key} is in tests/conformance/baseline.json but now fails: "
                    f"{outcome.summary()}", pytrace=False)
    pytest.xfail(outcome.summary())
