#!/usr/bin/env bash
# Machine-level prerequisites the test suite needs that pip cannot install.
# Idempotent and quiet when everything is present; CI runs as root on a fresh machine.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
for step in "$here"/prepare.d/*.sh; do
  [ -e "$step" ] || continue
  bash "$step"
done
