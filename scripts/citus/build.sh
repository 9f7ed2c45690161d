#!/usr/bin/env bash
# Builds Citus from its release source tarball (CITUS_VENDOR_DIR, see lib.sh), once per tarball checksum
# and PostgreSQL version, and lays out the overlay the local cluster runs from. Nothing is installed into the system's PostgreSQL:
#
#   $BUILD_DIR/stage/   `make install DESTDIR=…`: citus.so and the extension's SQL and control files
#   $BUILD_DIR/pg/      the overlay: copies of postgres, initdb and pg_ctl at the same paths below pg/
#                       as in the system (/usr/lib/postgresql/15/bin), beside lib/ and share/ folders of
#                       symbolic links to the system's files plus Citus's. PostgreSQL finds its lib and
#                       share folders relative to its own executable (after resolving symbolic links,
#                       hence copies), so these binaries load Citus and the system's stay untouched.
#
# Prints the overlay's bin folder. A second run with the same tarball and PostgreSQL skips everything.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PG_VERSION=$("$PG_CONFIG" --version) || die "no PostgreSQL 15 server development files ($PG_CONFIG): apt-get install postgresql-server-dev-15 (README of scripts/citus)"
STAMP="$BUILD_DIR/.built"
WANT="citus $CITUS_VERSION; patch $CITUS_PATCH_SHA256; $PG_VERSION; $(sha256sum "$("$PG_CONFIG" --bindir)/postgres" | cut -d' ' -f1)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ]; then
  overlay_bin
  exit 0
fi

VENDOR=$(vendor_dir)
TARBALL="$VENDOR/citus-$CITUS_VERSION.tar.gz"
PATCH="$(cd "$(dirname "$0")" && pwd)/pg15-minor-have_createdb_privilege.patch"
[ "$(gzip -dc "$TARBALL" | sha256sum | cut -d' ' -f1)" = "$CITUS_TAR_SHA256" ] ||
  die "$TARBALL is not Citus $CITUS_VERSION's release source (the sha256 of its uncompressed tar differs)"
echo "$CITUS_PATCH_SHA256  $PATCH" | sha256sum -c --quiet - || die "$PATCH: checksum mismatch"
for tool in gcc make flex patch; do command -v "$tool" >/dev/null || die "$tool is missing (apt-get install, README of scripts/citus)"; done

started=$SECONDS
note "building Citus $CITUS_VERSION against $PG_VERSION into $BUILD_DIR (first run only)"
rm -rf "$BUILD_DIR"
mkdir -p "$BUILD_DIR"
tar -xzf "$TARBALL" -C "$BUILD_DIR"
mv "$BUILD_DIR/citus-$CITUS_VERSION" "$BUILD_DIR/src"
(cd "$BUILD_DIR/src" && patch -s -p1 <"$PATCH")
(
  cd "$BUILD_DIR/src"
  PG_CONFIG="$PG_CONFIG" ./configure --quiet >"$BUILD_DIR/configure.log" 2>&1 || { tail -30 "$BUILD_DIR/configure.log" >&2; exit 1; }
  make -s -j"$(nproc)" >"$BUILD_DIR/make.log" 2>&1 || { tail -30 "$BUILD_DIR/make.log" >&2; exit 1; }
  make -s install DESTDIR="$BUILD_DIR/stage" >>"$BUILD_DIR/make.log" 2>&1 || { tail -30 "$BUILD_DIR/make.log" >&2; exit 1; }
)
note "compiled in $((SECONDS - started)) s"

# The overlay: the system's lib and share folders, entry by entry, plus what Citus installed.
BIN=$("$PG_CONFIG" --bindir)
LIB=$("$PG_CONFIG" --pkglibdir)
SHARE=$("$PG_CONFIG" --sharedir)
O="$BUILD_DIR/pg"
mkdir -p "$O$BIN" "$O$LIB" "$O$SHARE/extension"
for exe in postgres initdb pg_ctl; do cp -p "$BIN/$exe" "$O$BIN/$exe"; done
link_entries() { # link_entries FROM TO [SKIP]: a symbolic link in TO for every entry of FROM (but SKIP)
  local e
  for e in "$1"/*; do
    [ "$(basename "$e")" = "${3:-}" ] && continue
    ln -sfn "$e" "$2/$(basename "$e")"
  done
}
link_entries "$LIB" "$O$LIB"
link_entries "$BUILD_DIR/stage$LIB" "$O$LIB" bitcode
link_entries "$SHARE" "$O$SHARE" extension
link_entries "$SHARE/extension" "$O$SHARE/extension"
link_entries "$BUILD_DIR/stage$SHARE/extension" "$O$SHARE/extension"
[ -e "$O$LIB/citus.so" ] || die "the build installed no citus.so (see $BUILD_DIR/make.log)"
# The nodes may run as another OS user (postgres, when we are root): the cache must be readable.
chmod -R a+rX "$HERALD_CITUS_CACHE"
echo "$WANT" >"$STAMP"
note "Citus $CITUS_VERSION built and laid out in $((SECONDS - started)) s"
overlay_bin
