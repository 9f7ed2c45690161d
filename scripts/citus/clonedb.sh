#!/usr/bin/env bash
# clonedb.sh TEMPLATE NAME…: copies a prepared (migrated, distributed, seeded) database of the local
# cluster to each NAME, on every node at once: the coordinator's copy keeps the catalog of shards and
# nodes, each worker's copy holds the same shards, so the copies form a cluster database of their own
# (test:citus makes its databases this way: distributing and seeding once, not once per database).
# Citus's maintenance daemon keeps sessions open on every database that has the extension, and
# CREATE DATABASE … TEMPLATE needs none: the template stops taking connections while it is copied.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ $# -ge 2 ] || die "usage: clonedb.sh TEMPLATE NAME…"
template=$1; shift
for db in "$template" "$@"; do [[ "$db" =~ ^[a-z_][a-z0-9_]*$ ]] || die "database names here are lower-case identifiers: $db"; done

for port in $CITUS_ALL_PORTS; do
  node_psql "$port" postgres -c "ALTER DATABASE $template ALLOW_CONNECTIONS false" \
    -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '$template'" -o /dev/null
done
status=0
for db in "$@"; do
  for port in $CITUS_ALL_PORTS; do
    node_psql "$port" postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db TEMPLATE $template OWNER $CITUS_ROLE" || { status=1; break 2; }
  done
done
for port in $CITUS_ALL_PORTS; do node_psql "$port" postgres -c "ALTER DATABASE $template ALLOW_CONNECTIONS true"; done
exit $status
