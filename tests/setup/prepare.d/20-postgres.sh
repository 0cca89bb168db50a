#!/usr/bin/env bash
# PostgreSQL 15 server binaries for the `postgres` test fixture (tests/fixtures/postgres.py), which starts
# its own throwaway server; nothing here starts or configures a server.
# Idempotent: does nothing when the binaries exist. CI runs as root on a fresh Debian 12 machine.
set -euo pipefail

PG_BIN=/usr/lib/postgresql/15/bin
if [ -x "$PG_BIN/initdb" ] && [ -x "$PG_BIN/pg_ctl" ] && [ -x "$PG_BIN/postgres" ]; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    exec sudo -n bash "$0" "$@"
  fi
  echo "20-postgres: PostgreSQL 15 is missing and installing it needs root;" \
    "run: sudo apt-get install postgresql-15" >&2
  exit 1
fi

echo "20-postgres: installing postgresql-15 (apt-get)"
export DEBIAN_FRONTEND=noninteractive
apt_install() {
  apt-get install -y -qq --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "$@" >/dev/null
}
apt-get update -qq >/dev/null
# The fixture creates its own cluster; stop the package from creating and starting a default one
# (same approach as the official postgres container image).
apt_install postgresql-common
sed -ri 's/^#?\s*(create_main_cluster)\s*=.*$/\1 = false/' /etc/postgresql-common/createcluster.conf
apt_install postgresql-15

if [ ! -x "$PG_BIN/initdb" ]; then
  echo "20-postgres: postgresql-15 installed but $PG_BIN/initdb is missing" >&2
  exit 1
fi
