"""Fixtures for the time-based operator tests: one SparkSession per process and a file-stream harness.

A test writes JSON files into a directory read as a file stream with an explicit schema and a watermark,
runs the operator's query batch by batch (``processAllAvailable``), can stop and restart it from its
checkpoint, and compares the rows collected by ``foreachBatch`` with Flink's expected output.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from planengine.runtime.dataflow.stream import Stream, column_name


@pytest.fixture(scope="session")
def spark():
    """The engine's own session (``planengine.runtime.engine.session``); same object as ``tests/runtime``'s fixture."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["TZ"] = "UTC"  # collected TIMESTAMPs are converted with the process zone
    time.tzset()
    from planengine.runtime.engine.session import get_spark

    return get_spark()


class Feed:
    """A directory of JSON files read as a file stream: ``put`` one batch, ``stream`` the Stream."""

    def __init__(self, spark: Any, root: Path, schema: str, rowtime: int | None = None, delay: str = "0 seconds",
                 changelog: bool = False):
        self.spark, self.dir, self.schema = spark, root, schema
        self.rowtime, self.delay, self.changelog = rowtime, delay, changelog
        self.dir.mkdir(parents=True, exist_ok=True)
        self.count = 0
        self.mtime = 0.0

    def put(self, rows: Iterable[Sequence[Any]]) -> None:
        names = self.names
        self.count += 1
        tmp = self.dir / f".{self.count:05d}.tmp"
        with tmp.open("w") as f:
            for r in rows:
                f.write(json.dumps(dict(zip(names, r, strict=True)), default=str) + "\n")
        self._publish(tmp)

    def _publish(self, tmp: Path) -> None:
        """Rename ``tmp`` to the next batch file, with an mtime strictly after the previous file's.

        Spark's file source takes files oldest first (``maxFilesPerTrigger`` 1: one per micro-batch), and a
        file's mtime comes from the kernel's coarse clock: two files written in the same tick have equal
        mtimes and then leave in directory order, so a later batch (or the drain marker) could be read
        before an earlier one. Explicit, increasing mtimes (1 s apart) make the batch order the put order."""
        self.mtime = max(time.time(), self.mtime + 1.0)
        os.utime(tmp, (self.mtime, self.mtime))  # before the rename: Spark never lists it with another mtime
        tmp.rename(self.dir / f"{self.count:05d}.json")

    @property
    def names(self) -> list[str]:
        """Column names of the DDL schema (commas inside ``DECIMAL(10,2)`` do not split)."""
        return [part.split()[0] for part in re.split(r",(?![^()]*\))", self.schema)]

    def drain(self) -> None:
        """End of input, as ``planengine run --drain`` does it: a marker row at the largest event time."""
        assert self.rowtime is not None
        names = self.names
        marker = {n: None for n in names}
        marker[names[self.rowtime]] = "9999-12-31 23:59:59"
        marker["_eoi"] = True
        self.count += 1
        tmp = self.dir / f".{self.count:05d}.tmp"
        tmp.write_text(json.dumps(marker) + "\n")
        self._publish(tmp)

    def stream(self) -> Stream:
        from pyspark.sql import functions as F

        df = (self.spark.readStream.schema(self.schema + ", _eoi BOOLEAN").option("maxFilesPerTrigger", 1)
              .json(str(self.dir)))
        data = [n for n in df.columns if n not in ("_rowkind", "_eoi")]
        df = df.select(*[F.col(n).alias(column_name(i)) for i, n in enumerate(data)],
                       *([F.col("_rowkind")] if self.changelog else []), F.col("_eoi"))
        rowtime = None
        if self.rowtime is not None:
            rowtime = column_name(self.rowtime)
            df = df.withWatermark(rowtime, self.delay)
        # the executor's drain: an end-of-input marker moves the watermark to the end of time, then vanishes.
        # The filter mentions the event-time column so Spark cannot push it below the watermark
        # (PushPredicateThroughNonJoin moves conjuncts that do not reference the event time).
        keep = F.col("_eoi").isNull()
        if rowtime is not None:
            keep = keep | F.col(rowtime).isNull()
        df = df.filter(keep).drop("_eoi")
        return Stream(df, tuple(data), updating=self.changelog, rowtime=rowtime)


class Runner:
    """Runs a streaming DataFrame into a list, batch by batch, restartable from its checkpoint."""

    def __init__(self, df: Any, checkpoint: Path, mode: str = "append"):
        self.df, self.checkpoint, self.mode = df, checkpoint, mode
        self.rows: list[tuple[Any, ...]] = []
        self.query = None

    def start(self) -> Runner:
        def collect(batch: Any, batch_id: int) -> None:
            self.rows.extend(tuple(_plain(v) for v in r) for r in batch.collect())

        self.query = (self.df.writeStream.outputMode(self.mode).option("checkpointLocation", str(self.checkpoint))
                      .foreachBatch(collect).start())
        return self

    def run(self) -> list[tuple[Any, ...]]:
        """Process everything available (each file is one micro-batch) and return all rows so far.

        On a loaded machine Spark's Python workers sometimes fail to connect back in time; the query is
        then restarted from its checkpoint (a failed batch is replayed, nothing committed twice).
        """
        assert self.query is not None
        for attempt in range(3):
            try:
                self.query.processAllAvailable()
                break
            except Exception as e:
                if attempt == 2 or not any(s in str(e) for s in _TRANSIENT):
                    raise
                self.stop()
                self.start()
        return list(self.rows)

    def take(self) -> list[tuple[Any, ...]]:
        """Rows produced since the last ``take``."""
        self.run()
        out, self.rows = self.rows, []
        return out

    def stop(self) -> None:
        if self.query is not None:
            self.query.stop()
            self.query = None


_TRANSIENT = ("Python worker failed to connect back", "CANNOT_OPEN_SOCKET", "failed to close state server")


def _plain(v: Any) -> Any:
    if isinstance(v, dt.datetime):
        return v.replace(tzinfo=None).isoformat(sep=" ")
    return v


@pytest.fixture
def feed(spark, tmp_path):
    made: list[Feed] = []

    def make(schema: str, rowtime: int | None = None, delay: str = "0 seconds", changelog: bool = False,
             name: str | None = None) -> Feed:
        f = Feed(spark, tmp_path / (name or f"in{len(made)}"), schema, rowtime, delay, changelog)
        made.append(f)
        return f

    return make


@pytest.fixture
def runner(tmp_path):
    started: list[Runner] = []

    def make(df: Any, mode: str = "append", name: str = "ck") -> Runner:
        r = Runner(df, tmp_path / name, mode).start()
        started.append(r)
        return r

    yield make
    for r in started:
        r.stop()


def ts(text: str) -> str:
    """'00:00:05' -> '2020-10-10 00:00:05' (the conformance programs' day)."""
    return f"2020-10-10 {text}"
