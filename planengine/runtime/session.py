"""The driver's one SparkSession (DESIGN §6: one SparkSession per driver).

Settings that Spark freezes into a checkpoint must never depend on the plan or the machine: the shuffle
partition count (``SHUFFLE_PARTITIONS``) and the state store provider are constants here, so a snapshot
taken on one machine restores on another. Everything else may be tuned per deployment:

* ``PLANENGINE_SPARK_MASTER`` (default ``local[2]``);
* ``PLANENGINE_SPARK_CONF``: extra ``key=value`` pairs separated by newlines or ``;``;
* ``PLANENGINE_LOG_LEVEL`` for Spark's own logs (default ``ERROR``).
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

# Fixed in every checkpoint: changing it later breaks state restore, so it is not a plan option.
SHUFFLE_PARTITIONS = 2
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

# Checkpoint-relevant settings: never overridden by PLANENGINE_SPARK_CONF.
FIXED_CONF: dict[str, str] = {
    "spark.sql.shuffle.partitions": str(SHUFFLE_PARTITIONS),
    # transformWithState needs RocksDB; every stateful operator uses it so checkpoints are uniform.
    "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
    "spark.sql.session.timeZone": "UTC",
}

DEFAULT_CONF: dict[str, str] = {
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


def spark_conf() -> dict[str, str]:
    """The effective configuration: defaults, then the environment's extras, then the fixed settings."""
    conf = dict(DEFAULT_CONF)
    extra = os.environ.get("PLANENGINE_SPARK_CONF", "")
    for item in extra.replace(";", "\n").splitlines():
        if "=" in item:
            key, value = item.split("=", 1)
            conf[key.strip()] = value.strip()
    conf.update(FIXED_CONF)
    return conf


def get_spark() -> Any:
    """The shared SparkSession, created on first use (about 8 s for the JVM)."""
    global _spark
    with _lock:
        if _spark is not None and _spark.sparkContext._jsc is not None:
            return _spark
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        from pyspark.sql import SparkSession

        builder = SparkSession.builder.master(os.environ.get("PLANENGINE_SPARK_MASTER", "local[2]")).appName(
            "planengine")
        for key, value in spark_conf().items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel(os.environ.get("PLANENGINE_LOG_LEVEL", "ERROR"))
        _spark = spark
        return spark


def stop_spark() -> None:
    global _spark
    with _lock:
        if _spark is not None:
            _spark.stop()
            _spark = None
