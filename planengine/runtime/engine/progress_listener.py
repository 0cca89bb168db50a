"""Spark's progress events, reduced to what the executor counts: query id, batch id, commit time, input rows.

Why not PySpark's ``StreamingQueryListener``: its Py4J wrapper turns every event into a complete Python
``StreamingQueryProgress`` before the listener sees it: a few dozen JVM round trips per event (each source, each
state operator, every metric map entry), on the listener bus's one thread, for each batch of each query. A job
with four queries posts an event per query per batch, and profiling the test suite's JVM showed that thread busy
for about a fifth of the driver's CPU, almost all of it spent converting fields nobody reads. This listener reads
the four fields the executor needs: five calls per event. It plugs into the same JVM wrapper class PySpark uses
(``PythonStreamingQueryListenerWrapper``), so events arrive exactly as before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: The Java interface Spark's wrapper calls into Python through (PySpark's own listener implements it too).
PYTHON_LISTENER_INTERFACE = "org.apache.spark.sql.streaming.PythonStreamingQueryListener"
#: The JVM listener that forwards each event to such a Python object.
PYTHON_LISTENER_WRAPPER = "org.apache.spark.sql.streaming.PythonStreamingQueryListenerWrapper"


@dataclass(frozen=True)
class Progress:
    """One committed micro-batch of one query."""

    query_id: str
    batch_id: int
    timestamp: str
    input_rows: int


class _JavaListener:
    """The Python side of the Java interface (hence its method names): progress events read lean, the others
    ignored."""

    def __init__(self, on_progress: Callable[[Progress], None]) -> None:
        self._on_progress = on_progress

    def onQueryStarted(self, jevent: Any) -> None:
        pass

    def onQueryProgress(self, jevent: Any) -> None:
        jprogress = jevent.progress()
        self._on_progress(Progress(str(jprogress.id().toString()), int(jprogress.batchId()),
                                   str(jprogress.timestamp()), int(jprogress.numInputRows())))

    def onQueryIdle(self, jevent: Any) -> None:
        pass

    def onQueryTerminated(self, jevent: Any) -> None:
        pass

    class Java:
        implements = [PYTHON_LISTENER_INTERFACE]


class ProgressListener:
    """Registered on a session's query manager until ``remove``; calls ``on_progress`` for every committed batch of
    every query of the session (the callback filters its own)."""

    def __init__(self, spark: Any, on_progress: Callable[[Progress], None]) -> None:
        from py4j.java_gateway import JavaClass  # noqa: PLC0415 — pyspark (and py4j) are an optional extra
        from pyspark.java_gateway import ensure_callback_server_started  # noqa: PLC0415

        gateway = spark.sparkContext._gateway
        ensure_callback_server_started(gateway)
        self._manager = spark.streams._jsqm
        wrapper = JavaClass(PYTHON_LISTENER_WRAPPER, gateway._gateway_client)  # by name: no package walk
        self._jlistener = wrapper(_JavaListener(on_progress))
        self._manager.addListener(self._jlistener)

    def remove(self) -> None:
        if self._jlistener is not None:
            self._manager.removeListener(self._jlistener)
            self._jlistener = None
