#!/usr/bin/env bash
# A private PostgreSQL 15 for the tests: a Unix socket in its own directory and no TCP port, so
# it collides with nothing; fsync off (a test's data need not survive the machine).
#   test-postgres.sh start   starts it unless it runs (safe to call at once from many tests);
#                            prints the URL to give gpupool (--store URL)
#   test-postgres.sh url     prints the URL
#   test-postgres.sh stop    stops it and removes its directory
# GPUPOOL_TEST_PG_DIR chooses the directory (default /tmp/gpupool-test-pg-UID), GPUPOOL_TEST_PG_FSYNC=on
# makes it durable (for benchmarks against SQLite's synchronous=FULL). As root, the
# server runs as the postgres user (initdb refuses root).
set -euo pipefail
dir=${GPUPOOL_TEST_PG_DIR:-/tmp/gpupool-test-pg-$(id -u)}
bin=/usr/lib/postgresql/15/bin
url="postgresql:///postgres?host=$dir&user=postgres"
as_owner=()
[ "$(id -u)" -eq 0 ] && as_owner=(runuser -u postgres --)

case "${1:-}" in
  url) echo "$url" ;;
  start)
    [ -x "$bin/postgres" ] || { echo "test-postgres: $bin/postgres is missing (apt-get install postgresql-15)" >&2; exit 1; }
    mkdir -p "$dir"
    [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$dir"
    exec 9>"$dir.lock"
    flock 9
    if ! "${as_owner[@]}" "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
      if [ ! -f "$dir/data/PG_VERSION" ]; then
        "${as_owner[@]}" "$bin/initdb" -D "$dir/data" -A trust -U postgres --no-sync >"$dir/initdb.log" 2>&1 ||
          { cat "$dir/initdb.log" >&2; exit 1; }
      fi
      "${as_owner[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 30 start \
        -o "-k $dir -c listen_addresses= -c fsync=${GPUPOOL_TEST_PG_FSYNC:-off} -c synchronous_commit=on -c max_connections=300" >/dev/null 9>&- ||
        { tail -20 "$dir/postgres.log" >&2; exit 1; }
    fi
    echo "$url"
    ;;
  stop)
    if [ -f "$dir/data/PG_VERSION" ]; then
      "${as_owner[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir" "$dir.lock"
    ;;
  *) echo "usage: $0 start|url|stop" >&2; exit 2 ;;
esac
