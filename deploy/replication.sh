#!/bin/sh
# Run once, when the compose file's Postgres is first made: lets the
# standby (db-replica) stream from it with the same password.
echo "host replication all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
