#!/usr/bin/env bash
# Hadoop's S3A filesystem (hadoop-aws 3.5.0, PySpark's own Hadoop, and the AWS SDK v2 modules it loads), from Maven
# Central, pinned by planengine/runtime/connectors/jars.lock (group s3a) and checked by sha256, into
# <repo>/.tools/jars/s3a/ (git-ignored). The engine adds them to spark.jars (planengine/runtime/connectors/extra_jars.py),
# so a checkpoint or a path may be s3a:// (docs/object-store.md); the Dockerfile's connector-jars stage fetches the
# same group from the same lock into the engine image.
#
# Idempotent and quiet: jars already present with the pinned sha256 are not downloaded again (~13 MB, hashed in a
# fraction of a second). A jar that does not match the lock fails this step and is never installed.
set -euo pipefail

repo="$(cd "$(dirname "$0")/../../.." && pwd)"
fetcher="$repo/planengine/runtime/connectors/maven_jars.py"  # stdlib only: runs before and without the venv
py="$(command -v python3.11 || command -v python3)"
"$py" "$fetcher" fetch s3a --quiet || {
  echo "27-s3a.sh: the 's3a' jars could not be fetched and verified (above); see docs/object-store.md" >&2
  exit 1
}
