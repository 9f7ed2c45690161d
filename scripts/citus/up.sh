#!/usr/bin/env bash
# `npm run citus:up`: builds Citus when needed (build.sh), starts a local cluster — a coordinator on
# 127.0.0.1:$CITUS_PORT (default 9700) and two workers on the next two ports, each its own PostgreSQL 15
# with shared_preload_libraries = citus — and makes an empty database $CITUS_DB (default herald) owned
# by the ordinary role $CITUS_ROLE (default herald, not a superuser). A cluster already running on
# these ports is reused; the database is made afresh. The last line printed is its DATABASE_URL.
#
# The cluster is for development and tests: loopback only, trust authentication, fsync off.
# `npm run citus:down` stops it and deletes its data.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

BIN=$(bash "$(dirname "$0")/build.sh")
# Shards per distributed table. Citus's default is 32; a throwaway cluster with two workers needs few,
# and each shard is a table per node that every distributed DDL statement visits.
SHARD_COUNT=${CITUS_SHARD_COUNT:-4}

running() { as_node_user "$BIN/pg_ctl" -D "$RUN_DIR/$1/data" status >/dev/null 2>&1; }

all_running=1
for port in $CITUS_ALL_PORTS; do running "$port" || all_running=0; done

if [ "$all_running" = 0 ]; then
  bash "$(dirname "$0")/down.sh" >&2
  mkdir -p "$RUN_DIR"
  [ "$(id -u)" = 0 ] && chown postgres: "$RUN_DIR"
  for port in $CITUS_ALL_PORTS; do
    node="$RUN_DIR/$port"
    as_node_user mkdir -p "$node"
    as_node_user "$BIN/initdb" -D "$node/data" -A trust -E UTF8 --locale=C.UTF-8 -N >"$RUN_DIR/initdb-$port.log" 2>&1 ||
      { cat "$RUN_DIR/initdb-$port.log" >&2; die "initdb failed for the node on port $port"; }
    as_node_user tee -a "$node/data/postgresql.conf" >/dev/null <<CONF

# scripts/citus/up.sh: a node of Herald's local Citus cluster (throwaway: no durability)
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$node'
shared_preload_libraries = 'citus'
max_connections = 300
# Citus commits writes that touch several nodes (reference tables) with two-phase commit.
max_prepared_transactions = 300
citus.shard_count = $SHARD_COUNT
fsync = off
synchronous_commit = off
full_page_writes = off
logging_collector = off
log_min_messages = warning
CONF
    as_node_user "$BIN/pg_ctl" -D "$node/data" -l "$node/postgres.log" -w -t 60 start >/dev/null ||
      { tail -20 "$node/postgres.log" >&2; die "the node on port $port did not start"; }
  done
  for port in $CITUS_ALL_PORTS; do
    node_psql "$port" postgres <<SQL
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$CITUS_ROLE') THEN CREATE ROLE $CITUS_ROLE LOGIN; END IF;
END \$\$;
ALTER ROLE $CITUS_ROLE LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION;
SQL
  done
  note "cluster started: coordinator 127.0.0.1:$CITUS_PORT, workers $(echo "$CITUS_WORKER_PORTS" | sed 's/ /, /') (data in $RUN_DIR)"
else
  note "cluster already running on $CITUS_ALL_PORTS (data in $RUN_DIR)"
fi

bash "$(dirname "$0")/createdb.sh" "$CITUS_DB"
test "$(psql -X -h 127.0.0.1 -p "$CITUS_PORT" -U "$CITUS_ROLE" -d "$CITUS_DB" -Atc 'SHOW is_superuser')" = off ||
  die "$CITUS_ROLE must not be a superuser"
echo "postgres://$CITUS_ROLE@127.0.0.1:$CITUS_PORT/$CITUS_DB"
