#!/bin/sh
# Run once by the citusdata/citus image on each node's empty data directory
# (docker-entrypoint-initdb.d, after the image's own 001-create-citus-extension.sql, which made the
# extension in POSTGRES_DB, `herald`): Herald's ordinary role, owning its database on every node —
# Citus opens its connections between nodes as the same role. docker-compose.citus.yml.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres --set=password="$HERALD_DB_PASSWORD" <<'SQL'
CREATE ROLE herald LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION PASSWORD :'password';
ALTER DATABASE herald OWNER TO herald;
SQL
