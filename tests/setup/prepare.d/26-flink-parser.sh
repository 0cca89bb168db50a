#!/usr/bin/env bash
# Apache Flink's own SQL parser (flink-sql-parser 2.3.0, Calcite 1.36.0, Guava and the few jars parsing loads), from
# Maven Central, pinned by planengine/runtime/connectors/jars.lock (group flink-sql-parser) and checked by sha256,
# into <repo>/.tools/jars/flink-sql-parser/ (git-ignored). Tests only: the grammar drift guard (tests/grammar,
# docs/testing.md "The grammar drift guard") parses its corpus with it and with planengine's parser.
#
# Idempotent and quiet: jars already present with the pinned sha256 are not downloaded again (~16 MB, hashed in a
# fraction of a second). A jar that does not match the lock fails this step and is never installed.
set -euo pipefail

repo="$(cd "$(dirname "$0")/../../.." && pwd)"
fetcher="$repo/planengine/runtime/connectors/maven_jars.py"  # stdlib only: runs before and without the venv
py="$(command -v python3.11 || command -v python3)"
"$py" "$fetcher" fetch flink-sql-parser --quiet || {
  echo "26-flink-parser.sh: the 'flink-sql-parser' jars could not be fetched and verified (above); see docs/testing.md" >&2
  exit 1
}
