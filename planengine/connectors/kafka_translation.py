"""Flink Kafka options → Spark Kafka source/sink options (used by the Spark runtime).

The planner-side source/sink hold typed Flink options; Spark's Kafka integration wants its own names
(``kafka.bootstrap.servers``, ``subscribe``, ``startingOffsets``, …). Kept as pure functions so the
mapping is tested as a table and the runtime only adds ``.options(**…)``.

Differences that cannot be hidden: Spark's consumer never reads committed group offsets (its checkpoint is
the position), so ``group-offsets`` translates here to where ``properties.auto.offset.reset`` says (default
``latest``), and the runtime replaces that with the group's committed offsets when it has some
(``planengine.runtime.connectors.kafka_admin``); Spark never commits offsets back to the group. ``timestamp``
starts a partition whose records are all older at its end (Flink's behaviour; Spark's default would fail the
query). Spark rejects some client properties outright (deserializers, auto-commit, …), which are dropped here
rather than failing the query.
"""

from __future__ import annotations

import json
from typing import Any

from planengine.connectors.kafka import KafkaTableSink, KafkaTableSource

#: Client properties Spark's Kafka source/sink refuses or manages itself.
UNSUPPORTED_SPARK_PROPERTIES = frozenset({
    "auto.offset.reset", "enable.auto.commit", "interceptor.classes",
    "key.deserializer", "value.deserializer", "key.serializer", "value.serializer",
})


def _client_properties(table: KafkaTableSource | KafkaTableSink) -> dict[str, str]:
    return {f"kafka.{k}": str(v) for k, v in sorted(table.properties.items())
            if k not in UNSUPPORTED_SPARK_PROPERTIES}


def _starting_offsets(source: KafkaTableSource) -> dict[str, str]:
    mode = source.startup_mode
    if mode == "earliest-offset":
        return {"startingOffsets": "earliest"}
    if mode == "latest-offset":
        return {"startingOffsets": "latest"}
    if mode == "timestamp":
        return {"startingTimestamp": str(source.startup_timestamp_ms), "startingOffsetsByTimestampStrategy": "latest"}
    if mode == "specific-offsets":
        offsets = source.startup_specific_offsets or {}
        topic = (source.topics or [""])[0]
        document = {topic: {str(p): o for p, o in sorted(offsets.items())}}
        return {"startingOffsets": json.dumps(document, separators=(",", ":"))}
    # group-offsets: Spark cannot read committed offsets; fall back like a Kafka consumer without them.
    reset = str(source.properties.get("auto.offset.reset", "latest")).lower()
    return {"startingOffsets": "earliest" if reset == "earliest" else "latest"}


def to_spark_kafka_options(source: KafkaTableSource) -> dict[str, str]:
    """Options for ``spark.readStream.format("kafka")``, sorted by key."""
    out: dict[str, Any] = _client_properties(source)
    if source.topic_pattern:
        out["subscribePattern"] = source.topic_pattern
    else:
        out["subscribe"] = ",".join(source.topics or [])
    out.update(_starting_offsets(source))
    if "headers" in source.metadata_keys:
        out["includeHeaders"] = "true"
    return dict(sorted(out.items()))


def to_spark_kafka_sink_options(sink: KafkaTableSink) -> dict[str, str]:
    """Options for ``df.writeStream.format("kafka")``, sorted by key."""
    out = _client_properties(sink)
    out["topic"] = sink.topic
    return dict(sorted(out.items()))
