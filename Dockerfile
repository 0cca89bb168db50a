# syntax=docker/dockerfile:1.7
# planengine images. Two targets, one build context:
#   docker build --target engine   -t ghcr.io/planengine/engine:0.1     .   # Spark driver/executor + CLI
#   docker build --target operator -t ghcr.io/planengine/operator:0.1.0 .   # kopf operator
# Both run as the unprivileged user 10001 (the Helm chart's podSecurityContext matches).

ARG PYTHON_IMAGE=python:3.11-slim-bookworm
ARG ENGINE_BASE_IMAGE=debian:bookworm-slim

# --- builder: the planengine wheel, with the JVM operator library compiled in --------------------------
# planengine-jvm (planengine/runtime/jvm/java) is compiled with the JDK against pyspark's own jars, for the
# pyspark version the `spark` extra pins (read from pyproject.toml), and shipped inside the wheel.
FROM ${PYTHON_IMAGE} AS builder
WORKDIR /src
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jdk-headless \
 && rm -rf /var/lib/apt/lists/*
RUN pip install --no-cache-dir --disable-pip-version-check "build>=1.2"
COPY pyproject.toml README.md constraints.txt ./
COPY planengine ./planengine
COPY operator ./operator
RUN pyspark="$(python -c 'import re, tomllib; print(next(r for r in tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["spark"] if re.match(r"pyspark\b", r)))')" \
 && pip install --no-cache-dir --disable-pip-version-check -c constraints.txt "$pyspark" \
 && PYTHONPATH=/src python -m planengine.runtime.jvm \
 && python -m build --wheel --outdir /dist . && ls /dist/planengine-*.whl \
 && python -m zipfile -l /dist/planengine-*.whl | grep -q 'planengine/runtime/jvm/jars/planengine-jvm-spark' \
 && cp constraints.txt /dist/

# --- connector-jars: the jars.lock groups the engine loads (planengine/runtime/connectors/jars.lock) ----------------
# kafka-connector (Spark's Kafka source and sink) and s3a (hadoop-aws and the AWS SDK v2 modules it loads, for s3a://
# checkpoints and paths; docs/object-store.md) are not in pyspark's wheel. The set-up fetches the same lock
# (tests/setup/prepare.d/25-kafka.sh, 27-s3a.sh), so the image and the tests run the same jars; the fetcher (stdlib
# only, run by path) downloads each from Maven Central and refuses one whose sha256 differs from the lock.
# docs/kafka.md says why the connector is 4.2.0.
FROM ${PYTHON_IMAGE} AS connector-jars
ARG MAVEN_REPOSITORY=https://repo1.maven.org/maven2
COPY planengine/runtime/connectors/maven_jars.py planengine/runtime/connectors/jars.lock /fetch/
RUN for group in kafka-connector s3a; do \
      PLANENGINE_MAVEN_REPOSITORY="${MAVEN_REPOSITORY}" python /fetch/maven_jars.py fetch "$group" --dest /jars || exit 1; \
    done \
 && ls -l /jars

# --- engine: JRE 17 + Python 3.11 + planengine[spark] + connector jars ----------------------------------
FROM ${ENGINE_BASE_IMAGE} AS engine
ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    VIRTUAL_ENV=/opt/planengine \
    PATH=/opt/planengine/bin:$PATH \
    PYSPARK_PYTHON=/opt/planengine/bin/python \
    PYSPARK_DRIVER_PYTHON=/opt/planengine/bin/python
# Debian bookworm ships Python 3.11 and OpenJDK 17; Spark finds `java` on PATH (no JAVA_HOME needed, so
# the image builds on amd64 and arm64 alike). tini reaps the JVM's and Python workers' child processes.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      python3 python3-venv openjdk-17-jre-headless tini procps ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && python3 -m venv "$VIRTUAL_ENV" \
 && groupadd --system --gid 10001 planengine \
 && useradd --system --uid 10001 --gid 10001 --home-dir /home/planengine --create-home planengine
COPY --from=builder /dist/ /tmp/dist/
# The dependency versions of the lock (constraints.txt, README "Dependencies"), as in `make venv` and CI.
RUN pip install --no-cache-dir --disable-pip-version-check -c /tmp/dist/constraints.txt \
      "$(ls /tmp/dist/planengine-*.whl)[spark,s3]" \
 && rm -rf /tmp/dist
COPY --from=connector-jars /jars/ /tmp/connector-jars/
RUN jars="$(python -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')" \
 && test -d "$jars" \
 && cp /tmp/connector-jars/*.jar "$jars"/ \
 && rm -rf /tmp/connector-jars \
 && python -c 'import planengine' \
 && mkdir -p /var/lib/planengine/jobs \
 && chown -R 10001:10001 /var/lib/planengine
# The connector jars are in PySpark's own jars/ (above), on every driver's and executor's class path: the engine
# adds nothing to spark.jars (planengine/runtime/connectors/extra_jars.py; set and empty turns its search for a
# checkout's set-up cache off, which an image does not have anyway).
ENV PLANENGINE_EXTRA_JARS=""
# Executor pods (Spark on Kubernetes starts them from this image) run Spark's executor backend through this
# launcher; the operator's executor pod template names it (builders.EXECUTOR_COMMAND).
COPY --chmod=0755 planengine/runtime/engine/spark-executor.sh /usr/local/bin/planengine-spark-executor
WORKDIR /home/planengine
# The operator's pods run as this user (builders.ENGINE_UID; tests/chart/test_dockerfile.py checks both).
USER 10001:10001
ENTRYPOINT ["/usr/bin/tini", "--", "planengine"]
CMD ["--help"]

# --- operator: slim Python + planengine[operator] ---------------------------------------------------
FROM ${PYTHON_IMAGE} AS operator
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
RUN groupadd --system --gid 10001 planengine \
 && useradd --system --uid 10001 --gid 10001 --home-dir /home/planengine --create-home planengine
COPY --from=builder /dist/ /tmp/dist/
RUN pip install --no-cache-dir --disable-pip-version-check -c /tmp/dist/constraints.txt \
      "$(ls /tmp/dist/planengine-*.whl)[operator]" \
 && rm -rf /tmp/dist \
 && python -c 'import planengine_operator'
WORKDIR /home/planengine
USER 10001:10001
EXPOSE 8080 8081 9443
ENTRYPOINT ["planengine-operator"]
