#!/usr/bin/env bash
# createdb.sh NAME…: (re)creates each database, empty, on every node of the running local cluster,
# owned by Herald's role, with the citus extension and the nodes registered. Citus does not create
# databases on the workers by itself, and its extension needs a superuser: this is the administrator's
# part, done once per database; Herald itself connects as the ordinary role only.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ $# -gt 0 ] || die "usage: createdb.sh NAME…"

for db in "$@"; do
  [[ "$db" =~ ^[a-z_][a-z0-9_]*$ ]] || die "database names here are lower-case identifiers: $db"
  for port in $CITUS_ALL_PORTS; do
    node_psql "$port" postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db OWNER $CITUS_ROLE"
    node_psql "$port" "$db" -c "CREATE EXTENSION citus"
  done
  {
    echo "SELECT citus_set_coordinator_host('127.0.0.1', $CITUS_PORT);"
    for port in $CITUS_WORKER_PORTS; do echo "SELECT citus_add_node('127.0.0.1', $port);"; done
  } | node_psql "$CITUS_PORT" "$db" -o /dev/null
done
