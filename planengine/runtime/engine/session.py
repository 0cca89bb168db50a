"""The driver's one SparkSession (DESIGN §6: one SparkSession per driver).

Settings that Spark freezes into a checkpoint must never depend on the machine a run lands on:

* the state store provider and the session time zone are constants here (``FIXED_CONF``);
* the shuffle partition count is the job's **max parallelism**: decided once, when the plan is compiled
  (``pipeline.max-parallelism``, recorded in the plan's ``config``), and applied by :func:`use_plan_partitions`
  before a run starts its queries. A plan that records none ran with ``LEGACY_SHUFFLE_PARTITIONS`` (2) before
  the number was recorded, so it keeps 2. Spark itself keeps a restored query on its checkpoint's number
  (the offset log records it); the plan's number makes fresh queries (a new run without a snapshot, a
  stateless upgrade, ``check``'s state probe) agree with it whatever the executors of the day.

Everything else may be tuned per deployment, later sources winning:

* ``PLANENGINE_SPARK_MASTER`` (default ``local[2]``);
* ``PLANENGINE_SPARK_CONF``: extra ``key=value`` pairs separated by newlines or ``;``;
* ``--conf key=value`` of ``planengine run`` / ``check`` (:func:`set_cli_conf`; ``spark.master`` among them);
* ``PLANENGINE_LOG_LEVEL`` for Spark's own logs (default ``ERROR``);
* ``PLANENGINE_SPARK_LOG``: a file that receives the JVM's output (Spark's log lines and the Python workers'
  chatter) instead of the terminal.

The JVM operator library's jar (``planengine.runtime.jvm``) is appended to ``spark.jars``, then the extra jars of
``planengine.runtime.connectors.extra_jars`` (Spark's Kafka connector and Hadoop's S3A from ``PLANENGINE_EXTRA_JARS``
or the set-up's cache). The S3A settings of an object store are not session-start settings: they are applied when a
path is ``s3a://`` (``planengine.runtime.storage.object_store``), so a local job's configuration stays as it was.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any

from planengine.runtime.connectors.extra_jars import with_extra_jars
from planengine.runtime.jvm import session_conf

# The shuffle partitions of a plan that records no max parallelism (every plan compiled before it was recorded).
LEGACY_SHUFFLE_PARTITIONS = 2
# The plan option (Flink's name) that fixes the shuffle partitions, i.e. the number of state partitions.
MAX_PARALLELISM = "pipeline.max-parallelism"
SHUFFLE_PARTITIONS_KEY = "spark.sql.shuffle.partitions"
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

# Checkpoint-relevant settings: never overridden by PLANENGINE_SPARK_CONF or --conf.
FIXED_CONF: dict[str, str] = {
    # transformWithState needs RocksDB; every stateful operator uses it so checkpoints are uniform.
    "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
    "spark.sql.session.timeZone": "UTC",
}

DEFAULT_CONF: dict[str, str] = {
    SHUFFLE_PARTITIONS_KEY: str(LEGACY_SHUFFLE_PARTITIONS),  # every run sets its plan's number before it starts
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.adaptive.enabled": "false",  # AQE is off for streaming anyway; keep batch plans the same
    "spark.sql.streaming.stateStore.stateSchemaCheck": "true",
    "spark.sql.streaming.transformWithState.stateSchemaVersion": "3",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
    "spark.driver.memory": "2g",
    "spark.sql.streaming.metricsEnabled": "false",
    "spark.sql.streaming.numRecentProgressUpdates": "20",
    "spark.python.worker.reuse": "true",
    # A loaded machine (CI, laptops running several JVMs) can take longer than the 15 s default.
    "spark.python.authenticate.socketTimeout": "120s",
    "spark.sql.legacy.timeParserPolicy": "CORRECTED",
    "spark.driver.extraJavaOptions": "-Dlog4j2.level=ERROR",
}

_lock = threading.Lock()
_spark: Any = None
_cli_conf: dict[str, str] = {}


def set_cli_conf(conf: dict[str, str]) -> None:
    """Spark settings of the command line (``--conf``), applied when the session is created."""
    _cli_conf.clear()
    _cli_conf.update(conf)


def cli_conf() -> dict[str, str]:
    return dict(_cli_conf)


def spark_conf() -> dict[str, str]:
    """The effective configuration: defaults, the environment's extras, ``--conf``, then the fixed settings."""
    conf = dict(DEFAULT_CONF)
    extra = os.environ.get("PLANENGINE_SPARK_CONF", "")
    for item in extra.replace(";", "\n").splitlines():
        if "=" in item:
            key, value = item.split("=", 1)
            conf[key.strip()] = value.strip()
    conf.update(_cli_conf)
    conf.update(FIXED_CONF)
    return conf


def plan_shuffle_partitions(plan_config: dict[str, Any]) -> int:
    """The shuffle partitions a plan runs with: its recorded max parallelism, else the legacy 2.

    >>> plan_shuffle_partitions({"pipeline.max-parallelism": "8"}), plan_shuffle_partitions({})
    (8, 2)
    """
    recorded = plan_config.get(MAX_PARALLELISM)
    return int(recorded) if recorded is not None else LEGACY_SHUFFLE_PARTITIONS


def use_plan_partitions(spark: Any, plan_config: dict[str, Any]) -> int:
    """Set the session's shuffle partitions to the plan's before its queries start (each query copies the
    session's settings when it starts); returns the number."""
    partitions = plan_shuffle_partitions(plan_config)
    spark.conf.set(SHUFFLE_PARTITIONS_KEY, str(partitions))
    return partitions


def get_spark() -> Any:
    """The shared SparkSession, created on first use (about 8 s for the JVM)."""
    global _spark
    with _lock:
        if _spark is not None and _spark.sparkContext._jsc is not None:
            return _spark
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        from pyspark.sql import SparkSession  # noqa: PLC0415 — pyspark is an optional extra

        master = os.environ.get("PLANENGINE_SPARK_MASTER", "local[2]")
        settings = with_extra_jars(session_conf(spark_conf()))  # + the JVM operator library's jar, the connectors'
        builder = SparkSession.builder.master(master).appName(
            "planengine")  # a spark.master in the conf (--conf, PLANENGINE_SPARK_CONF) wins
        for key, value in settings.items():
            builder = builder.config(key, value)
        log_file = os.environ.get("PLANENGINE_SPARK_LOG")
        if log_file:
            _launch_jvm_logging_to(log_file, {"spark.master": master, "spark.app.name": "planengine", **settings})
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel(os.environ.get("PLANENGINE_LOG_LEVEL", "ERROR"))
        _spark = spark
        return spark


def _launch_jvm_logging_to(path: str, settings: dict[str, str]) -> None:
    """Start the JVM with its stdout and stderr appended to ``path``: Spark's own log lines, its start-up notes
    and the Python workers' chatter (which Spark copies to the JVM's stderr) go there instead of the
    terminal. Used by ``make run`` and the interactive SQL client, where they would bury the results."""
    from pyspark import SparkConf, SparkContext  # noqa: PLC0415 — pyspark is an optional extra
    from pyspark.java_gateway import launch_gateway  # noqa: PLC0415 — pyspark is an optional extra

    if SparkContext._gateway is not None:  # the JVM is already up (its output goes where it went)
        return
    conf = SparkConf(loadDefaults=False)
    for key, value in settings.items():
        conf.set(key, value)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as log:  # the child keeps its own copy of the descriptor
        gateway = launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log})
    SparkContext._ensure_initialized(gateway=gateway, conf=conf)


def stop_spark() -> None:
    global _spark
    with _lock:
        if _spark is not None:
            _spark.stop()
            _spark = None
