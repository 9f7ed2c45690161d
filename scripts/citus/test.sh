#!/usr/bin/env bash
# `npm run test:citus [jest args…]`: Herald's tests on a three-node Citus cluster of its own.
# Builds Citus when needed, starts the cluster on 127.0.0.1:$CITUS_TEST_PORT (default 9720, and
# the next two ports), prepares one database (migrations, distribution, seeds) and copies it on
# every node for the main test database and each isolated one (test/setup/isolated.ts), runs jest
# with test/citus/jest.config.js, and stops and deletes the cluster whatever the outcome.
# Without arguments it runs test/citus and the test files listed below; with arguments, those.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CITUS_PORT=${CITUS_TEST_PORT:-9720}
. scripts/citus/lib.sh
started=$SECONDS

# The files that pass on Citus today (docs/scaling.md, "Citus": what runs on the cluster and what not).
DEFAULT_FILES=(test/citus test/api)

cleanup() { bash scripts/citus/down.sh || true; }
trap cleanup EXIT

BASE=herald_test
URL=$(CITUS_DB=${BASE}_template bash scripts/citus/up.sh | tail -1)
PREFIX=${URL%/*}
note "cluster up in $((SECONDS - started)) s; preparing ${BASE}_template"
DATABASE_URL=$URL LOG_LEVEL=warn npx tsx src/cli.ts seed >/dev/null
ISOLATED=$(npx tsx -e "import { ISOLATED_DATABASES } from './test/setup/isolated'; console.log(ISOLATED_DATABASES.filter((n) => n !== 'template').map((n) => '${BASE}_' + n).join(' '))")
# shellcheck disable=SC2086 # a list of names
bash scripts/citus/clonedb.sh "${BASE}_template" "$BASE" $ISOLATED
note "databases ready in $((SECONDS - started)) s"

status=0
HERALD_CITUS_TEST_URL="$PREFIX/$BASE" HERALD_TEST_ROUTER_CHECK=1 npx jest -c test/citus/jest.config.js "${@:-${DEFAULT_FILES[@]}}" || status=$?
note "test:citus finished in $((SECONDS - started)) s (jest exit $status)"
exit $status
