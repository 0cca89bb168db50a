#!/usr/bin/env bash
# The "second engine": the same planengine working tree installed into <repo>/.venv-spark42 on the previous
# Spark minor line (pyspark 4.2.x), for the cross-Spark-version restore tests (tests/cross_version/) and the
# operator's upgrade tests. <repo>/.venv-spark42/bin/planengine is then this checkout's engine on Spark 4.2;
# <repo>/.venv/bin/planengine is the same engine on Spark 4.3 (docs/engines.md).
#
# planengine is installed editable with --no-deps so pip never replaces the pinned pyspark by the 4.3.0 that
# pyproject's `spark` extra asks for; its other runtime dependencies are read from pyproject.toml
# (`dependencies` + the `spark` extra minus pyspark) and installed next to pyspark==$SPARK42.
#
# Idempotent and quiet: a stamp file records python, pyspark, the repo path and a hash of the dependency
# list; when it matches, the script exits at once without output. The first run downloads the pyspark
# wheel (~400 MB) through pip's cache, so later re-creations reuse it.
set -euo pipefail

SPARK42="4.2.1"  # newest 4.2.x on PyPI when this was written (4.3.0, 4.2.1, 4.2.0, …)

repo="$(cd "$(dirname "$0")/../../.." && pwd)"
venv="$repo/.venv-spark42"
stamp="$venv/.planengine-stamp"

pick_python() {
  for candidate in "${PYTHON:-}" python3.11 python3; do
    [ -n "$candidate" ] || continue
    command -v "$candidate" >/dev/null || continue
    if "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}
py="$(pick_python)" || { echo "30-second-engine: Python 3.11 is required (python3.11 not found)" >&2; exit 1; }

# The stamp covers pyproject.toml (the runtime dependencies come from it), so editing it re-installs.
want="python=$("$py" -c 'import platform; print(platform.python_version())') pyspark=$SPARK42 repo=$repo"
want="$want pyproject=$(sha256sum "$repo/pyproject.toml" | cut -c1-16)"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/planengine" ]; then
  # The JVM operator library for pyspark $SPARK42, compiled against that venv's own jars (a no-op when
  # its stamp matches the Java sources; rebuilt after they change).
  "$venv/bin/python" -m planengine.runtime.jvm --quiet
  exit 0
fi

# One installer at a time (two `make test` in the same checkout); the loser re-checks the stamp.
mkdir -p "$venv"
exec 9>"$venv/.lock"
flock 9
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/planengine" ]; then
  exit 0
fi

start=$(date +%s)
echo "30-second-engine: installing planengine on pyspark==$SPARK42 into $venv"
rm -f "$stamp"
deps="$("$py" - "$repo/pyproject.toml" <<'PY'
import re, sys, tomllib
with open(sys.argv[1], "rb") as f:
    project = tomllib.load(f)["project"]
reqs = list(project.get("dependencies", [])) + list(project.get("optional-dependencies", {}).get("spark", []))
print("\n".join(r for r in reqs if re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0].lower() != "pyspark"))
PY
)"
[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
echo '*' >"$venv/.gitignore"  # self-ignoring, like virtualenv's venvs: git status stays clean
mapfile -t dep_array <<<"$deps"
pip_install() {  # pip's notes about this machine's unused local index locations are noise; errors stay
  "$venv/bin/python" -m pip --quiet --disable-pip-version-check --no-input install "$@" 2> >(
    grep -v 'is ignored: it is neither a file nor a directory' >&2)
}
pip_install "pyspark==$SPARK42" "${dep_array[@]}"
pip_install --no-deps -e "$repo"

got="$("$venv/bin/python" -c 'import pyspark; print(pyspark.__version__)')"
if [ "$got" != "$SPARK42" ]; then
  echo "30-second-engine: expected pyspark $SPARK42 in $venv, found $got" >&2
  exit 1
fi
"$venv/bin/python" -c 'import planengine.cli' || { echo "30-second-engine: planengine does not import" >&2; exit 1; }
"$venv/bin/python" -m planengine.runtime.jvm --quiet
printf '%s' "$want" >"$stamp"
echo "30-second-engine: done in $(( $(date +%s) - start ))s"
