"""What the driver asks a Kafka cluster before a query starts: is it there, do the topics exist, where does a
consumer group stand. Through kafka-clients' ``Admin`` in the session's JVM (the connector's jars bring it), so
the client properties (security, SASL) are the ones Spark's source and sink use, and no Python client is needed.

Why ask at all: Spark's Kafka source and sink meet an unreachable bootstrap server or a missing topic late, in a
task, as a Java stack trace after minutes of retries (or, for a missing source topic, never: the query waits for a
topic that will not come). Checked here, the job refuses to start with one error naming the option to fix. And
Spark's source never reads a group's committed offsets, so ``group-offsets`` asks the cluster for them here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from planengine.errors import ValidationError

#: How long one question may take: a live broker answers in well under a second, even on a loaded machine.
TIMEOUT_S = 10
BOOTSTRAP_OPTION = "properties.bootstrap.servers"
_LATEST, _EARLIEST = -1, -2  # Spark's per-partition markers in startingOffsets JSON


class KafkaUnavailable(ValidationError):
    """The cluster cannot be reached or refuses what a table needs; the message names the option to fix."""


def _servers(table: Any) -> str:
    return str(table.properties.get("bootstrap.servers", ""))


def _java_cause(error: BaseException) -> tuple[str, str]:
    """``(class name, message)`` of the innermost Java exception behind a Py4J error."""
    java = getattr(error, "java_exception", None)
    if java is None:
        return type(error).__name__, str(error).strip().splitlines()[0] if str(error).strip() else ""
    while java.getCause() is not None:
        java = java.getCause()
    return str(java.getClass().getName()), str(java.getMessage() or "")


@contextmanager
def admin_client(spark: Any, table: Any) -> Iterator[Any]:
    """An ``Admin`` for ``table``'s cluster (its ``properties.*``), closed afterwards; an error naming
    ``properties.bootstrap.servers`` when the client cannot even be built (no resolvable address)."""
    jvm = spark._jvm
    props = jvm.java.util.Properties()
    for key, value in sorted(table.properties.items()):
        props.setProperty(str(key), str(value))
    props.setProperty("request.timeout.ms", str(TIMEOUT_S * 1000))
    props.setProperty("default.api.timeout.ms", str(TIMEOUT_S * 1000))
    try:
        admin = jvm.org.apache.kafka.clients.admin.Admin.create(props)
    except Exception as error:
        cls, message = _java_cause(error)
        raise KafkaUnavailable(
            f"table {table.identifier}: cannot connect to Kafka at '{BOOTSTRAP_OPTION}' = "
            f"'{_servers(table)}': {message or cls}",
            hint=f"set '{BOOTSTRAP_OPTION}' to the brokers' host:port list") from None
    try:
        yield admin
    finally:
        admin.close()


def _get(spark: Any, future: Any) -> Any:
    return future.get(TIMEOUT_S, spark._jvm.java.util.concurrent.TimeUnit.SECONDS)


def _unreachable(table: Any, error: BaseException) -> KafkaUnavailable:
    cls, message = _java_cause(error)
    why = f"no answer within {TIMEOUT_S} s" if cls.endswith("TimeoutException") else (message or cls)
    return KafkaUnavailable(
        f"table {table.identifier}: cannot reach Kafka at '{BOOTSTRAP_OPTION}' = '{_servers(table)}' "
        f"({why})", hint=f"check '{BOOTSTRAP_OPTION}' (host:port of running brokers, reachable from the driver) "
                         "and the 'properties.security.*' / 'properties.sasl.*' options")


def existing_topics(spark: Any, admin: Any, table: Any) -> set[str]:
    """The cluster's topic names; the first question, so an unreachable cluster fails here."""
    try:
        return {str(name) for name in _get(spark, admin.listTopics().names())}
    except Exception as error:
        raise _unreachable(table, error) from None


def auto_creates_topics(spark: Any, admin: Any) -> bool:
    """Whether a broker of the cluster creates a topic on first write (``auto.create.topics.enable``)."""
    jvm = spark._jvm
    node = _get(spark, admin.describeCluster().nodes()).iterator().next()  # a java.util.Collection
    resource_type = getattr(jvm.org.apache.kafka.common.config, "ConfigResource$Type").BROKER
    resource = jvm.org.apache.kafka.common.config.ConfigResource(resource_type, str(node.idString()))
    configs = _get(spark, admin.describeConfigs(jvm.java.util.Collections.singletonList(resource)).all())
    entry = configs.get(resource).get("auto.create.topics.enable")
    return entry is not None and str(entry.value()).lower() == "true"


def _missing_topic_error(table: Any, missing: Iterable[str], known: set[str], role: str) -> KafkaUnavailable:
    names = ", ".join(f"'{t}'" for t in sorted(missing))
    others = ", ".join(sorted(t for t in known if not t.startswith("_"))[:10]) or "none"
    return KafkaUnavailable(
        f"table {table.identifier}: topic {names} does not exist on '{_servers(table)}' (option 'topic'; "
        f"the table {role} it)", hint=f"create the topic or fix 'topic' (topics there: {others})")


def check_source(spark: Any, source: Any) -> None:
    """The cluster answers and every listed ``topic`` exists (a ``topic-pattern`` may match nothing yet)."""
    with admin_client(spark, source) as admin:
        known = existing_topics(spark, admin, source)
        missing = [t for t in (source.topics or []) if t not in known]
        if missing and not source.topic_pattern:
            raise _missing_topic_error(source, missing, known, "reads")


def check_sink(spark: Any, sink: Any) -> None:
    """The cluster answers and the sink's topic exists, or the brokers create it on first write."""
    with admin_client(spark, sink) as admin:
        known = existing_topics(spark, admin, sink)
        if sink.topic not in known and not auto_creates_topics(spark, admin):
            raise _missing_topic_error(sink, [sink.topic], known, "writes")


def partition_count(spark: Any, source: Any) -> int | None:
    """How many partitions the source's listed topics have together; None for a ``topic-pattern`` (what it
    matches can change while the job runs)."""
    if source.topic_pattern or not source.topics:
        return None
    with admin_client(spark, source) as admin:
        try:
            described = _get(spark, admin.describeTopics(spark._jvm.java.util.ArrayList(list(source.topics)))
                             .allTopicNames())
        except Exception as error:
            raise _unreachable(source, error) from None
        return sum(int(described.get(topic).partitions().size()) for topic in source.topics)


def group_starting_offsets(spark: Any, source: Any, fallback: str) -> str | None:
    """Spark's ``startingOffsets`` JSON for ``group-offsets``: each partition of the source's topics at its
    group's committed offset, the others at ``fallback`` (``earliest``/``latest``, from auto.offset.reset);
    None when the group has committed nothing on these topics (the fallback alone then applies)."""
    group = source.properties.get("group.id")
    if not group or source.topic_pattern or not source.topics:
        return None
    jvm = spark._jvm
    with admin_client(spark, source) as admin:
        try:
            committed = _get(spark, admin.listConsumerGroupOffsets(str(group)).partitionsToOffsetAndMetadata())
            described = _get(spark, admin.describeTopics(jvm.java.util.ArrayList(list(source.topics)))
                             .allTopicNames())
        except Exception as error:
            raise _unreachable(source, error) from None
        at = {(str(tp.topic()), int(tp.partition())): int(meta.offset())
              for tp, meta in committed.items() if meta is not None}
        default = _EARLIEST if fallback == "earliest" else _LATEST
        offsets: dict[str, dict[str, int]] = {}
        for topic in source.topics:
            for info in described.get(topic).partitions():
                offsets.setdefault(topic, {})[str(info.partition())] = at.get((topic, int(info.partition())), default)
    if not any((t, int(p)) in at for t, parts in offsets.items() for p in parts):
        return None
    return json.dumps(offsets, sort_keys=True, separators=(",", ":"))
