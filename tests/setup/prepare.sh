#!/usr/bin/env bash
# Machine-level prerequisites the test suite needs that pip cannot install.
# Idempotent and quiet when everything is present; CI runs as root on a fresh machine.
#
#   bash tests/setup/prepare.sh [--except STEP ...]   (STEP: a prepare.d script's name without .sh)
#
# `make test` passes `--except 40-controlplane`: the test runner (tests/tiers/run.py) builds the control plane in
# the background while the tiers before e2e run.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
except=()
while [ $# -gt 0 ]; do
  case "$1" in
    --except) [ $# -ge 2 ] || { echo "prepare.sh: --except needs a step name" >&2; exit 2; }
              [ -e "$here/prepare.d/$2.sh" ] || { echo "prepare.sh: no step prepare.d/$2.sh" >&2; exit 2; }
              except+=("$2"); shift 2 ;;
    *) echo "usage: prepare.sh [--except STEP ...] (steps: $(cd "$here/prepare.d" && ls *.sh | sed 's/\.sh$//' | tr '\n' ' '))" >&2
       exit 2 ;;
  esac
done
for step in "$here"/prepare.d/*.sh; do
  [ -e "$step" ] || continue
  name="$(basename "$step" .sh)"
  [[ " ${except[*]-} " == *" $name "* ]] && continue
  started=$SECONDS
  bash "$step"
  # The CI log is where the time budget can be read: each step says how long it took (0 s when present).
  echo "prepare.sh: $name took $((SECONDS - started)) s"
done
