#!/usr/bin/env bash
# dropdb.sh NAME…: drops each database from every node of the running local cluster (bench:citus
# cleans up after itself this way when it reused a cluster it did not start).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ $# -gt 0 ] || die "usage: dropdb.sh NAME…"
for db in "$@"; do
  [[ "$db" =~ ^[a-z_][a-z0-9_]*$ ]] || die "database names here are lower-case identifiers: $db"
  for port in $CITUS_ALL_PORTS; do node_psql "$port" postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)"; done
done
