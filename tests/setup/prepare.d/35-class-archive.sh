#!/usr/bin/env bash
# The test JVMs' class archive (tests/setup/class_archive.py): built once per machine from `make run`'s job, under
# .tools/class-archive/ (git-ignored); a no-op when it is there. A failed build does not fail the set-up: the tests
# then load classes from the jars, as before, only slower.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../../.." && pwd)"
py="$repo/.venv/bin/python"
[ -x "$py" ] || { echo "35-class-archive.sh: no $py yet (make venv first); skipped"; exit 0; }
cd "$repo" && "$py" -m tests.setup.class_archive build --quiet
