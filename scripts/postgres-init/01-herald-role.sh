#!/bin/sh
# Run once by the postgres image on an empty data directory (docker-entrypoint-initdb.d):
# Herald's own role — it logs in and owns its database (so its schema), and is not a
# superuser, may not create databases or roles. This is all Herald needs (README, "A
# least-privilege role"); the superuser stays with the administrator.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
  --set=password="$HERALD_DB_PASSWORD" <<'SQL'
CREATE ROLE herald LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION PASSWORD :'password';
CREATE DATABASE herald OWNER herald;
SQL
