#!/usr/bin/env bash
# node.sh stop|start PORT: stops (fast shutdown) or starts one node of the running local cluster
# ($CITUS_PORT's), as the nodes' OS user — what test/citus/alone/node-stop.test.ts does to a worker
# node to see Herald answer 503 for the accounts it holds and recover once it is back.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ $# -eq 2 ] || die "usage: node.sh stop|start PORT"
action=$1 port=$2
case " $CITUS_ALL_PORTS " in *" $port "*) ;; *) die "port $port is not a node of the cluster on $CITUS_PORT ($CITUS_ALL_PORTS)" ;; esac
node="$RUN_DIR/$port"
[ -d "$node/data" ] || die "no node data in $node"
BIN=$(overlay_bin)
case "$action" in
  stop) as_node_user "$BIN/pg_ctl" -D "$node/data" -m fast -w -t 60 stop >/dev/null ;;
  start) as_node_user "$BIN/pg_ctl" -D "$node/data" -l "$node/postgres.log" -w -t 60 start >/dev/null ||
    { tail -20 "$node/postgres.log" >&2; die "the node on port $port did not start"; } ;;
  *) die "usage: node.sh stop|start PORT" ;;
esac
note "node $port: $action"
