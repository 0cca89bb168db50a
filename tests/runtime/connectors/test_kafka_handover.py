"""A warm-standby handover of a Real-time Mode query, as the operator's upgrade does it (issue 23, item 3).

Two ``planengine run`` processes on one job root and the real broker: the old driver runs ``GROUP BY k`` from a
topic into ``upsert-kafka`` in Real-time Mode while records keep arriving; a standby starts; ``POST /v1/stop``
with a snapshot ends the old run at the end of its long batch, and ``POST /v1/start`` hands the snapshot to the
standby, which forks it and continues in the mode. The handover is ``benchmarks/real_time_handover.py``'s (which
measures its downtime); here it is small and judged on what must hold: every key's count is the number of
records produced for it (0 lost, 0 counted twice across the handover), no count ever goes back, and the new run
is a fork of the stop's snapshot.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.latency import KEYS
from benchmarks.real_time_handover import handover

pytestmark = [pytest.mark.usefixtures("engine_process"), pytest.mark.timeout(900)]


def test_a_real_time_query_hands_over_to_a_warm_standby_exactly(tmp_path: Path, kafka_broker) -> None:
    result = handover(kafka_broker.bootstrap, kafka_broker.topic, "rtm", rate=50, warmup=5, after=10,
                      interval="5 s", work=tmp_path)
    assert result.snapshot.startswith("s-") and result.forked_from == result.snapshot, result
    assert result.produced > 0 and not result.wrong, (
        f"{len(result.wrong)} of {min(result.produced, KEYS)} keys not exact after the handover (final, expected): "
        f"{sorted(result.wrong.items())[:5]}")
    assert not result.went_back, f"counts went back for {sorted(set(result.went_back))[:5]}"
    # Real-time Mode writes one update per input record: every record produced before and after the handover
    # reached the output (a replay would add records; the stop at the long batch's end leaves none to replay)
    assert result.records >= result.produced, result
