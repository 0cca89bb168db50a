"""planengine's JVM operator library: Java ``StatefulProcessor``s that Spark runs through
``KeyValueGroupedDataset.transformWithState``, driven from Python through the session's Py4J gateway.

Why: the changelog operators that Spark has no native form for (group aggregates with retraction, joins over
updating inputs, Top-N, ...) ran as Python ``transformWithStateInPandas`` operators at ~60 k rows/s; the same
logic on the JVM avoids the Arrow round trip to Python workers and the per-row Python interpreter.

How it is wired:

* ``build``: the Java 17 sources under ``java/`` are compiled against the installed PySpark's ``jars/`` into
  ``planengine-jvm-spark<version>.jar`` (``make venv``; rebuilt when the sources or the Spark version change).
* ``session_conf``: ``planengine.runtime.engine.session`` adds the jar to ``spark.jars`` before the JVM starts, so
  the driver's gateway and the executors load it. When it is missing and cannot be built (no JDK), the session
  still starts and only translating a node that needs the library fails, with the remedy.
* ``run_operator``: a translator hands the input DataFrame and the node's spec (a dataclass of ``specs``, sent as
  JSON: keys, aggregate calls, Spark types, flags; the family's Java record reads it) to a static entry point of
  ``io.planengine.jvm.Operators`` and gets the output back as a DataFrame. Expressions stay in Spark SQL around the
  operator; nothing runs in a Python worker.
"""

from __future__ import annotations

import logging
from typing import Any

from planengine.errors import InternalError
from planengine.plan.strategies import state_type_refusal
from planengine.runtime.jvm.build import JvmLibraryUnavailable, ensure_jar
from planengine.runtime.jvm.specs import JvmSpec

log = logging.getLogger("planengine.runtime.jvm")

OPERATORS_CLASS = "io.planengine.jvm.Operators"
_unavailable: JvmLibraryUnavailable | None = None

__all__ = ["JvmLibraryUnavailable", "build_info", "holds_state_of", "run_operator", "session_conf"]


def session_conf(conf: dict[str, str]) -> dict[str, str]:
    """``conf`` with the library's jar appended to ``spark.jars`` (built first if needed)."""
    global _unavailable
    try:
        jar = str(ensure_jar(log=log.info))
    except JvmLibraryUnavailable as error:
        _unavailable = error
        log.warning("JVM operators are unavailable in this session: %s", error)
        return conf
    _unavailable = None
    jars = [j for j in conf.get("spark.jars", "").split(",") if j.strip()]
    if jar not in jars:
        jars.append(jar)
    return {**conf, "spark.jars": ",".join(jars)}


def operators(spark: Any) -> Any:
    """The ``Operators`` class in the session's JVM; ``JvmLibraryUnavailable`` with the remedy otherwise."""
    from py4j.java_gateway import JavaClass  # noqa: PLC0415 — pyspark is an optional extra

    if _unavailable is not None:
        raise _unavailable
    cls = spark._jvm
    for part in OPERATORS_CLASS.split("."):
        cls = getattr(cls, part)
    if not isinstance(cls, JavaClass):
        raise JvmLibraryUnavailable(
            f"the JVM operator library ({OPERATORS_CLASS}) is not on this SparkSession's classpath",
            hint="start the session with planengine.runtime.engine.session.get_spark() (it adds the jar to "
                 "spark.jars), or add the jar printed by `python -m planengine.runtime.jvm` to spark.jars")
    return cls


def build_info(spark: Any) -> dict[str, str]:
    """What the loaded jar was built from: ``sparkVersion``, ``sourceDigest``, and the ``runtimeSparkVersion``."""
    text = str(operators(spark).buildInfo())
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def holds_state_of(node: Any, types: Any, ctx: Any, what: str) -> bool:
    """Whether the JVM processor can keep rows of ``types`` for ``node`` (``strategies.state_type_refusal``); logs
    why not, and the caller runs the node's Python operator instead."""
    reason = state_type_refusal(types)
    if reason is None:
        return True
    log.info("node %d (%s): transformWithState (Python): %s", ctx.node_id(node), what, reason)
    return False


def run_operator(df: Any, entry: str, spec: JvmSpec) -> Any:
    """``Operators.<entry>(df, spec as JSON)`` as a PySpark DataFrame.

    The JVM validates the spec when the operator is built (on the driver, before the query starts); a
    rejected spec is a planengine bug and surfaces as ``InternalError`` with the JVM's message.
    """
    from pyspark.sql import DataFrame  # noqa: PLC0415 — pyspark is an optional extra

    spark = df.sparkSession
    method = getattr(operators(spark), entry)
    try:
        jdf = method(df._jdf, spec.to_text())
    except Exception as error:  # py4j.protocol.Py4JJavaError or pyspark's converted JVM exception
        raise InternalError(f"the JVM operator {entry} rejected its spec: {_java_message(error)}") from error
    return DataFrame(jdf, spark)


def _java_message(error: Exception) -> str:
    java = getattr(error, "java_exception", None)
    if java is not None:
        try:
            return str(java.toString())
        except Exception:  # pragma: no cover - the gateway is gone
            pass
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
