#!/usr/bin/env bash
# `npm run test:citus [jest args…]`: Herald's tests on a three-node Citus cluster of its own.
# Builds Citus when needed, starts the cluster on 127.0.0.1:$CITUS_TEST_PORT (default 9720, and
# the next two ports), prepares one database (migrations, distribution, seeds) and copies it on
# every node for the main test database and each isolated one (test/setup/isolated.ts), runs jest
# with test/citus/jest.config.js — every statement the app runs checked to be routed to one node
# (test/citus/router-check.ts) — then starts `herald serve` on an empty database of the cluster
# and calls the API with the first account's keys, and stops and deletes the cluster whatever
# the outcome. Without arguments it runs test/citus and the files below; with arguments, those.
# The files of test/citus/alone stop a node of the cluster: they run afterwards, one at a time,
# on a database of their own (test/citus/jest.alone.config.js), when the arguments name them.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CITUS_PORT=${CITUS_TEST_PORT:-9720}
. scripts/citus/lib.sh
started=$SECONDS

# The API, delivery (the worker on the cluster: sending, events, webhooks, automations, bounces,
# clicks, unsubscribes) and import files, and the cluster's own (test/citus). Not yet:
# csv-import.test.ts stages its races by reading lock waits from the coordinator's
# pg_stat_activity, where Citus shows the coordinator waiting on a worker, not on a lock; the
# browser-driven click test needs Chromium only (docs/scaling.md, "Citus").
DEFAULT_FILES=(test/citus test/api test/delivery test/team --testPathIgnorePatterns /node_modules/ /test/citus/alone/ test/api/csv-import.test.ts)

cleanup() { bash scripts/citus/down.sh || true; }
trap cleanup EXIT

BASE=herald_test
URL=$(CITUS_DB=${BASE}_template bash scripts/citus/up.sh | tail -1)
PREFIX=${URL%/*}
note "cluster up in $((SECONDS - started)) s; preparing ${BASE}_template"
DATABASE_URL=$URL LOG_LEVEL=warn npx tsx src/cli.ts seed >/dev/null
ISOLATED=$(npx tsx -e "import { ISOLATED_DATABASES } from './test/setup/isolated'; console.log(ISOLATED_DATABASES.filter((n) => n !== 'template').map((n) => '${BASE}_' + n).join(' '))")
# shellcheck disable=SC2086 # a list of names
bash scripts/citus/clonedb.sh "${BASE}_template" "$BASE" "${BASE}_ddl" "${BASE}_alone" $ISOLATED
note "databases ready in $((SECONDS - started)) s"

# test/citus/worker.test.ts runs `herald worker` processes from the compiled CLI.
[ -f dist/src/cli.js ] || npm run build >/dev/null
status=0
HERALD_CITUS_TEST_URL="$PREFIX/$BASE" HERALD_TEST_ROUTER_CHECK=1 npx jest -c test/citus/jest.config.js "${@:-${DEFAULT_FILES[@]}}" || status=$?
note "jest exit $status after $((SECONDS - started)) s"
# Nothing else runs on the cluster now: the files that stop a node (none when the arguments name none of them).
HERALD_CITUS_TEST_URL="$PREFIX/${BASE}_alone" npx jest -c test/citus/jest.alone.config.js --passWithNoTests "${@:-test/citus/alone}" || status=$?
note "jest (test/citus/alone) exit $status after $((SECONDS - started)) s"

# Smoke: `herald serve` on an empty database of the cluster migrates, distributes and seeds it, makes
# the first account and serves the API with its keys (what `npm start` does, run from the sources).
smoke() {
  local dir port pk sk body pid
  dir=$(mktemp -d)
  bash scripts/citus/createdb.sh herald_smoke
  port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
  # A process group of its own (setsid), stopped whole: npx and tsx's wrapper do not pass SIGTERM on to
  # the server, which was left running after the script ended.
  DATABASE_URL="$PREFIX/herald_smoke" PORT=$port HOST=127.0.0.1 DATA_DIR="$dir/data" LOG_LEVEL=warn setsid npx tsx src/cli.ts serve >"$dir/serve.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 240); do curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; kill -0 $pid 2>/dev/null || break; sleep 0.5; done
  pk=$(sed -n 's/.*PublicKey: \(pk_[A-Za-z0-9]*\).*/\1/p' "$dir/serve.log")
  sk=$(sed -n 's/.*SecretKey: \(sk_[A-Za-z0-9]*\).*/\1/p' "$dir/serve.log")
  body=$(curl -fsS "http://127.0.0.1:$port/contacts-type" -H "PublicKey: $pk" -H "SecretKey: $sk" || true)
  kill -TERM -- -"$pid" 2>/dev/null; wait $pid || true
  if echo "$body" | grep -q '"status":"success"'; then note "smoke: herald serve on the cluster answered $body"; rm -rf "$dir"; return 0; fi
  note "smoke: herald serve on the cluster failed"; cat "$dir/serve.log" >&2; rm -rf "$dir"; return 1
}
smoke || status=1
note "test:citus finished in $((SECONDS - started)) s (exit $status)"
exit $status
