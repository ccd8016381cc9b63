#!/bin/sh
# Runs once, when the postgres volume is new: one database per service, all owned by $POSTGRES_USER.
set -eu
for db in dagster mlflow mlflow_auth lakefs mlassets; do
  psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
    -c "CREATE DATABASE $db OWNER \"$POSTGRES_USER\""
done
