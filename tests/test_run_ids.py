"""One run-id format for the engine and the operator (planengine/runtime/storage/job_root.py documents it).

The operator names the runs it launches (``PLANENGINE_RUN_ID``) but must not import the engine, so it keeps
its own three-line ``new_run_id``; this test is where the two meet.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from planengine.errors import UserError
from planengine.runtime.storage.job_root import ID_PATTERN, JobRoot, parse_run_id
from planengine_operator.reconciler import new_run_id

T0 = datetime(2026, 11, 26, 23, 59, 58, 900_000, tzinfo=UTC)


def test_operator_run_ids_parse_with_the_engines_pattern():
    for step in range(5):
        now = T0 + timedelta(seconds=step)
        run_id = new_run_id(now)
        assert ID_PATTERN.match(run_id), run_id
        assert parse_run_id(run_id) == now.replace(microsecond=0)


def test_operator_run_ids_sort_by_time():
    times = [T0 + timedelta(seconds=s) for s in (0, 1, 2, 61, 3600, 86_400 * 40)]
    ids = [new_run_id(t) for t in times]
    assert sorted(ids) == ids
    assert [parse_run_id(i) for i in ids] == [t.replace(microsecond=0) for t in times]


def test_operator_run_ids_are_utc_whatever_the_zone_of_now():
    local = T0.astimezone(__import__("datetime").timezone(timedelta(hours=-5)))
    assert parse_run_id(new_run_id(local)) == T0.replace(microsecond=0)


def test_engine_run_ids_parse_and_an_operator_named_run_is_one_of_the_roots_runs(tmp_path):
    root = JobRoot(tmp_path)
    engine_run = root.new_run()
    assert parse_run_id(engine_run.run_id) <= datetime.now(UTC)
    operator_run = root.open_run(new_run_id(datetime.now(UTC) + timedelta(seconds=2)), None)
    assert [r.run_id for r in root.runs()] == [engine_run.run_id, operator_run.run_id]
    assert root.latest_run() == operator_run
    # The engine's next id stays above the operator's, even within the operator's second.
    assert root.new_run().run_id > operator_run.run_id


@pytest.mark.parametrize("bad", ["r20261124T233910-ab12cd", "s-20261122T081500Z-0000", "r-20261122T081500-0000"])
def test_parse_run_id_rejects_other_shapes(bad):
    with pytest.raises(UserError, match="is not a run id"):
        parse_run_id(bad)
