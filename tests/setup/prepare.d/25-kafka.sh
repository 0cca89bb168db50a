#!/usr/bin/env bash
# The Kafka jars from Maven Central, pinned by planengine/runtime/connectors/jars.lock and checked by sha256, into
# <repo>/.tools/jars/<group>/ (git-ignored):
#   kafka-connector  Spark's Kafka source and sink; the engine loads them from there
#                    (planengine/runtime/connectors/extra_jars.py)
#   kafka-broker     a single-node KRaft broker for the tests (tests/fixtures/kafka.py)
# The same lock feeds the Dockerfile's kafka-jars stage, so the engine image and the tests run the same jars.
#
# Idempotent and quiet: jars already present with the pinned sha256 are not downloaded again (hashing the ~55 MB
# takes a fraction of a second). A jar that does not match the lock fails this step and is never installed.
set -euo pipefail

repo="$(cd "$(dirname "$0")/../../.." && pwd)"
fetcher="$repo/planengine/runtime/connectors/maven_jars.py"  # stdlib only: runs before and without the venv
py="$(command -v python3.11 || command -v python3)"
for group in kafka-connector kafka-broker; do
  "$py" "$fetcher" fetch "$group" --quiet || {
    echo "25-kafka.sh: the '$group' jars could not be fetched and verified (above); see docs/kafka.md" >&2
    exit 1
  }
done
