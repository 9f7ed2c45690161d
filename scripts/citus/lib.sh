# Shared settings of the scripts in scripts/citus/ (sourced, not run).
#
# Citus's source is its release tarball, which no package registry carries: download
#   https://github.com/citusdata/citus/archive/refs/tags/v13.2.2.tar.gz
# (it saves as citus-13.2.2.tar.gz) into a folder and name that folder in CITUS_VENDOR_DIR. The tarball
# is checked by the sha256 of its uncompressed tar (what `git archive` writes for the tag, the same
# whoever compressed it); pg15-minor-have_createdb_privilege.patch beside this file is applied to it.
#
# The Citus build is cached outside the clone, keyed by the source tarball's sha256:
#   $HERALD_CITUS_CACHE/<sha256>/        the build (src/, stage/ and pg/, the overlay PostgreSQL runs from)
#   $HERALD_CITUS_CACHE/run/<port>/      a local cluster's data folders and logs (one per coordinator port)
# The default cache is ~/.cache/herald-citus, or /var/cache/herald-citus for root: the nodes then run
# as the `postgres` OS user (PostgreSQL refuses to run as root), which cannot read root's home.

CITUS_VERSION=13.2.2
# The cache key (the sha256 of the tarball the build was first made from; kept so existing caches stay valid).
CITUS_TARBALL_SHA256=dd2453caec20a830e5e63f1def5c5a98cb6f57ae510407cdcd800916fcdab430
# The sha256 of the uncompressed tar: `gzip -dc citus-13.2.2.tar.gz | sha256sum` (tag v13.2.2, commit cc91f4c2).
CITUS_TAR_SHA256=6a950cd466cb9266daac60f81652ddf353a7c520cb9354a9162192396fc59fec
CITUS_PATCH_SHA256=add536aa1c6b3971049e17066fe7cfd8e0947ed5864c420ceefa57c12c4bd671

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}

if [ -z "${HERALD_CITUS_CACHE:-}" ]; then
  if [ "$(id -u)" = 0 ]; then HERALD_CITUS_CACHE=/var/cache/herald-citus; else HERALD_CITUS_CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/herald-citus; fi
fi
BUILD_DIR=$HERALD_CITUS_CACHE/$CITUS_TARBALL_SHA256

# Ports of the local cluster: the coordinator, then the two workers.
CITUS_PORT=${CITUS_PORT:-9700}
CITUS_WORKER_PORTS="$((CITUS_PORT + 1)) $((CITUS_PORT + 2))"
CITUS_ALL_PORTS="$CITUS_PORT $CITUS_WORKER_PORTS"
RUN_DIR=$HERALD_CITUS_CACHE/run/$CITUS_PORT
# Herald's ordinary role on the cluster and the database citus:up hands out.
CITUS_ROLE=${CITUS_ROLE:-herald}
CITUS_DB=${CITUS_DB:-herald}

die() { echo "citus: $*" >&2; exit 1; }
note() { echo "citus: $*" >&2; }

# The folder holding citus-$CITUS_VERSION.tar.gz: CITUS_VENDOR_DIR, else the project's CI copy beside the clone.
vendor_dir() {
  local d
  for d in "${CITUS_VENDOR_DIR:-}" "$REPO_ROOT/../shared/vendor/citus" "$REPO_ROOT/../../shared/vendor/citus"; do
    if [ -n "$d" ] && [ -f "$d/citus-$CITUS_VERSION.tar.gz" ]; then (cd "$d" && pwd); return 0; fi
  done
  die "citus-$CITUS_VERSION.tar.gz not found${CITUS_VENDOR_DIR:+ in $CITUS_VENDOR_DIR}: download https://github.com/citusdata/citus/archive/refs/tags/v$CITUS_VERSION.tar.gz into a folder and set CITUS_VENDOR_DIR to it (or use docker-compose.citus.yml, which needs no source)"
}

# The PostgreSQL binaries the nodes run: the overlay's copies, which find Citus in the overlay's lib and share folders.
overlay_bin() {
  echo "$BUILD_DIR/pg$("$PG_CONFIG" --bindir)"
}

# Runs a command as the nodes' OS user: `postgres` when we are root, ourselves otherwise.
as_node_user() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# psql as the bootstrap superuser of a node (the OS user that ran initdb) over loopback.
node_psql() {
  local port=$1 db=$2; shift 2
  PGOPTIONS='-c client_min_messages=warning' psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U "$(node_superuser)" -d "$db" "$@"
}

node_superuser() {
  if [ "$(id -u)" = 0 ]; then echo postgres; else id -un; fi
}
