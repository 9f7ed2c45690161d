#!/usr/bin/env bash
# `npm run citus:down`: stops the local cluster's three nodes (fast shutdown) and deletes their data.
# The Citus build stays cached. Fails if a node's postmaster is still alive afterwards.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

BIN=$(overlay_bin)
left=""
stopped=0
for port in $CITUS_ALL_PORTS; do
  data="$RUN_DIR/$port/data"
  [ -f "$data/postmaster.pid" ] || continue
  stopped=1
  pid=$(head -1 "$data/postmaster.pid")
  if [ -x "$BIN/pg_ctl" ]; then as_node_user "$BIN/pg_ctl" -D "$data" -m fast -w -t 60 stop >/dev/null 2>&1 || true; fi
  # A postmaster whose pg_ctl is gone (the cache was deleted): stop it by its own pid, from its pid file.
  if kill -0 "$pid" 2>/dev/null && grep -q "$data" "/proc/$pid/cmdline" 2>/dev/null; then
    kill -INT "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  if kill -0 "$pid" 2>/dev/null && grep -q "$data" "/proc/$pid/cmdline" 2>/dev/null; then left="$left $port"; fi
done
[ -z "$left" ] || die "nodes still running on port(s)$left"
rm -rf "$RUN_DIR"
[ "$stopped" = 0 ] || note "cluster on $CITUS_ALL_PORTS stopped"
