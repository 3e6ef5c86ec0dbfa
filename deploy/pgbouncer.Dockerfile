# PgBouncer as Debian packages it (1.18 on bookworm), with the compose
# file's configuration.
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends pgbouncer && rm -rf /var/lib/apt/lists/*
COPY deploy/pgbouncer.ini /etc/pgbouncer/pgbouncer.ini
COPY deploy/pgbouncer-users.txt /etc/pgbouncer/userlist.txt
USER postgres
EXPOSE 6432
CMD ["pgbouncer", "/etc/pgbouncer/pgbouncer.ini"]
