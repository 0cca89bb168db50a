"""The per-record watermark column as the JVM computes it (``RecordWatermarks``) equals the rule's reference
(``record_watermark.emitted_before``) per input partition, restarting in each; a Spark TIMESTAMP's sub-millisecond
part is floored as the rule's epoch millis are."""

from __future__ import annotations

import datetime as dt
import random

import pytest

from planengine.runtime.jvm.record_watermark_pass import with_record_watermarks
from planengine.runtime.operators.record_watermark import RECORD_WATERMARK, emitted_before

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _rowtimes(seed: int, n: int) -> list[int | None]:
    """Epoch micros around a moving point: bursts, rows behind, NULLs, steps smaller and larger than 200 ms."""
    rng = random.Random(seed)
    t, out = 1_600_000_000_000_000, []
    for _ in range(n):
        t += rng.choice([0, 1, 999, 150_000, 201_000, 5_000_000])
        out.append(None if rng.random() < 0.05 else t - rng.choice([0, 0, 0, 2_000_000, 300_500]))
    return out


def _annotated(spark, micros: list[int | None], partitions: int, delay: int, interval: int) -> list[int | None]:
    rows = [(i, None if m is None else EPOCH + dt.timedelta(microseconds=m)) for i, m in enumerate(micros)]
    df = spark.createDataFrame(spark.sparkContext.parallelize(rows, partitions), "i INT, ts TIMESTAMP")
    out = with_record_watermarks(df, "ts", delay, interval).collect()
    return [r[RECORD_WATERMARK] for r in sorted(out, key=lambda r: r["i"])]


@pytest.mark.parametrize("seed,partitions,delay,interval", [(1, 1, 1000, 200), (2, 1, 0, 0), (3, 3, 5000, 200)])
def test_the_jvm_pass_follows_the_rule_per_partition(spark, seed, partitions, delay, interval):
    micros = _rowtimes(seed, 300)
    size = -(-len(micros) // partitions)  # parallelize splits a list into equal consecutive slices
    millis = [None if m is None else m // 1000 for m in micros]
    expected = [v for p in range(partitions)
                for v in emitted_before(millis[p * size:(p + 1) * size], delay=delay, interval=interval)]
    assert _annotated(spark, micros, partitions, delay, interval) == expected
    assert any(v is not None for v in expected) and expected.count(None) < len(expected)
