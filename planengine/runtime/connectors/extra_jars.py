"""Jars the engine adds to ``spark.jars`` besides its own JVM library: Spark's Kafka connector and Hadoop's S3A.

Why: PySpark's wheel carries no connector jars, and resolving them when a session starts (``spark.jars.packages``)
would need the network on every driver. The set-up fetches the pinned, checked jars once (``maven_jars``); this
module only finds them, in this order:

* ``PLANENGINE_EXTRA_JARS``: jar files or folders of jars, separated by ``os.pathsep`` (``:``) or commas; set and
  empty, it turns the default off;
* otherwise the set-up's cache of the checkout, ``<checkout>/.tools/jars/<group>/`` for each group of
  ``DEFAULT_GROUPS`` that is there whole: ``kafka-connector`` (``bash tests/setup/prepare.d/25-kafka.sh`` fills it)
  and ``s3a`` (``27-s3a.sh``). A group is all or nothing: half a connector would fail later, inside a task.

The engine image needs neither: its Dockerfile copies the same jars into PySpark's own ``jars/`` folder.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from planengine.runtime.connectors import maven_jars

log = logging.getLogger("planengine.runtime.extra_jars")

ENV = "PLANENGINE_EXTRA_JARS"
KAFKA_GROUP = "kafka-connector"
#: hadoop-aws and the AWS SDK modules it loads: ``s3a://`` paths (docs/object-store.md).
S3A_GROUP = "s3a"
#: The lock's groups the engine loads from the set-up's cache, in ``spark.jars`` order.
DEFAULT_GROUPS = (KAFKA_GROUP, S3A_GROUP)
#: What a user runs to get the connector jars into the default place (shown by the missing-jar error).
FETCH_COMMAND = f"python -m planengine.runtime.connectors.maven_jars fetch {KAFKA_GROUP}"


def _listed(value: str) -> list[Path]:
    """The jars named by a ``PLANENGINE_EXTRA_JARS`` value (folders expand to their ``*.jar``, sorted)."""
    jars: list[Path] = []
    for item in value.replace(",", os.pathsep).split(os.pathsep):
        if not item.strip():
            continue
        path = Path(item.strip()).expanduser()
        if path.is_dir():
            jars.extend(sorted(path.glob("*.jar")))
        elif path.is_file():
            jars.append(path)
        else:
            log.warning("%s names %s, which does not exist; ignored", ENV, path)
    return jars


def extra_jars() -> list[Path]:
    """The jars to add to ``spark.jars``, from ``PLANENGINE_EXTRA_JARS`` or the set-up's cache (module doc)."""
    value = os.environ.get(ENV)
    if value is not None:
        return _listed(value)
    jars: list[Path] = []
    for group in DEFAULT_GROUPS:
        try:
            jars.extend(maven_jars.cached(group) or [])
        except (OSError, maven_jars.JarCheckFailed) as error:  # no lock in this installation: nothing to look for
            log.debug("no default extra jars of %s: %s", group, error)
    return jars


def with_extra_jars(conf: dict[str, str]) -> dict[str, str]:
    """``conf`` with :func:`extra_jars` appended to ``spark.jars`` (each once).

    >>> os.environ[ENV] = ""
    >>> with_extra_jars({"spark.jars": "/a.jar"})
    {'spark.jars': '/a.jar'}
    >>> del os.environ[ENV]
    """
    jars = [j for j in conf.get("spark.jars", "").split(",") if j.strip()]
    for jar in map(str, extra_jars()):
        if jar not in jars:
            jars.append(jar)
    return {**conf, "spark.jars": ",".join(jars)} if jars else conf


def where_searched() -> str:
    """Where :func:`extra_jars` looked, for an error that says how to get the jars there."""
    value = os.environ.get(ENV)
    if value is not None:
        return f"{ENV}={value!r}"
    return f"{maven_jars.CACHE / KAFKA_GROUP} ({ENV} unset)"
