"""The conformance programs that can run in Spark's Real-time Mode, run in it on the real Kafka broker (both phases,
a stop with a snapshot and a restore between them), against the same expected tables as the micro-batch run of
``test_conformance.py``: "both ways" of issue 23.

Which programs run here is the planner's decision (``real_time.eligibility``); ``ELIGIBLE`` pins it, so a change
in what the mode admits is seen in review, and the drift test says which programs came or went. They run in one
child process with enough task slots (``real_time.run_in_child``), then each program's verdict is its own test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from planengine.testing.conformance_programs import default_conformance_dir, load_programs
from tests.conformance.real_time import eligibility, run_in_child

REPO = Path(__file__).resolve().parents[2]
CONFORMANCE_DIR = default_conformance_dir(REPO)

if not (CONFORMANCE_DIR / "flink-programs").is_dir():
    pytest.skip(f"no conformance programs at {CONFORMANCE_DIR}/flink-programs", allow_module_level=True)

PROGRAMS = {p.key: p for p in load_programs(CONFORMANCE_DIR)}
# The programs the planner puts into the mode (on Kafka tables; see real_time.py for how they are put there).
ELIGIBLE = (
    "changelog_normalize/changelog-normalize-filter",
    "changelog_normalize/changelog-normalize-source",
    "changelog_normalize/kafka-with-non-key-filter",
    "changelog_normalize/retract-source-with-non-key-filter",
    "changelog_normalize/upsert-with-non-key-filter",
    "calc/calc-filter-pushdown",
    "calc/calc-simple",
    "expand_watermark/expand",
    "group_aggregate/group-aggregate-distinct-mini-batch",
    "group_aggregate/group-aggregate-simple",
    "group_aggregate/incremental-group-aggregate-simple",
    "join/join-anti-join",
    "join/join-left-join",
    "join/join-non-window-inner-join",
    "join/join-with-filter",
    "join/left-join-not-null-nested-row",
    "join/left-join-nullable-nested-row",
    "rank/rank-n-test",
    "rank/rank-test-append-fast-strategy",
    "union/union-two-sources",
)
RUNNABLE = [k for k in ELIGIBLE if k in PROGRAMS]


def test_the_programs_the_mode_admits_are_the_pinned_ones() -> None:
    decided = {key for key, program in PROGRAMS.items() if eligibility(program).eligible}
    assert decided == set(RUNNABLE), (f"now admitted, not pinned: {sorted(decided - set(RUNNABLE))}; pinned, no "
                                      f"longer admitted: {sorted(set(RUNNABLE) - decided)}")


@pytest.fixture(scope="module")
def verdicts(kafka_broker, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    return run_in_child(RUNNABLE, kafka_broker.bootstrap, tmp_path_factory.mktemp("real-time-conformance"),
                        timeout_s=60.0 * len(RUNNABLE) + 120)


@pytest.mark.timeout(1800)
@pytest.mark.usefixtures("jvm_process")
@pytest.mark.parametrize("key", RUNNABLE)
def test_program_in_real_time_mode(key: str, verdicts: dict[str, dict[str, Any]]) -> None:
    verdict = verdicts[key]
    assert verdict["passed"], f"{key} in Real-time Mode ({verdict['seconds']} s): {verdict['error']}"
