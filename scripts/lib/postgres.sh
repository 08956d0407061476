# scripts/lib/postgres.sh: a throwaway PostgreSQL 15 cluster in a folder, for the tests, the demo
# and the benchmarks alike (scripts/services start postgres DIR is its command line). Source it
# after scripts/lib/common.sh:
#
#   pg_start DIR        make the cluster in DIR/postgres if there is none (initdb: superuser backlot
#                       with a random password for TCP, scram-sha-256; the Unix socket in
#                       DIR/postgres, trust), then start it on 127.0.0.1 if it is not running: on the
#                       port it had (kept in DIR/postgres/port; tried again for 10 s when taken), or
#                       on a free one (another one when that is taken meanwhile). Writes
#                       DIR/postgres/env. Tuned for tests: fsync, synchronous commit and full-page
#                       writes off (kept on with BACKLOT_POSTGRES_DURABLE=1, as benchmarks want),
#                       32 MB of shared buffers, 200 connections.
#   pg_stop DIR         fast shutdown (connections closed), the data kept; nothing when not running
#   pg_createdb DIR NAME
#                       a new, empty database NAME
#   pg_url DIR [DB]     postgresql://backlot:PASSWORD@127.0.0.1:PORT/DB (DB: postgres)
#
# As root, initdb and postgres run as the postgres user (runuser), which they require; DIR/postgres
# then belongs to it. Missing PostgreSQL 15 (Debian's postgresql-15, which scripts/bootstrap
# installs) fails with exit status 3, naming the package.

backlot_pg_bin=${BACKLOT_POSTGRES_BIN:-/usr/lib/postgresql/15/bin}

backlot_as_postgres() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

backlot_pg_need() {
  local b
  for b in initdb pg_ctl createdb; do
    if [ ! -x "$backlot_pg_bin/$b" ]; then
      echo "$(backlot_me): PostgreSQL 15 is not installed ($backlot_pg_bin/$b is missing): run scripts/bootstrap (as root), or: sudo apt-get install -y postgresql-15" >&2
      exit 3
    fi
  done
}

backlot_pg_running() { # FOLDER
  backlot_as_postgres "$backlot_pg_bin/pg_ctl" -D "$1/data" status >/dev/null 2>&1
}

pg_start() { # DIR
  local pg="$1/postgres" port="" attempt saved=no log_start tuning
  backlot_pg_need
  if [ ! -f "$pg/initialised" ]; then
    rm -rf "$pg"
    mkdir -p "$pg"
    chmod 0755 "$pg"
    (umask 077; head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$pg/password")
    if [ "$(id -u)" = 0 ]; then
      chown -R postgres:postgres "$pg"
      if ! runuser -u postgres -- test -r "$pg/password"; then
        echo "$(backlot_me): the postgres user cannot reach $pg: give every folder above it o+x (a folder of mktemp -d is 0700)" >&2
        return 1
      fi
    fi
    backlot_as_postgres "$backlot_pg_bin/initdb" -D "$pg/data" -U backlot --pwfile "$pg/password" \
      --auth-local=trust --auth-host=scram-sha-256 --no-sync --no-instructions -E UTF8 --locale=C \
      > "$pg/initdb.log" 2>&1 || { echo "$(backlot_me): initdb failed:" >&2; tail -n 20 "$pg/initdb.log" >&2; return 1; }
    touch "$pg/initialised"
  fi
  backlot_pg_running "$pg" && return 0
  [ -s "$pg/port" ] && { port=$(cat "$pg/port"); saved=yes; }
  tuning="-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c shared_buffers=32MB"
  [ "${BACKLOT_POSTGRES_DURABLE:-}" = 1 ] && tuning=""
  for attempt in $(seq 1 50); do
    [ -n "$port" ] || port=$(free_port) || return 1
    log_start=$(stat -c %s "$pg/log" 2>/dev/null || echo 0)
    if backlot_as_postgres "$backlot_pg_bin/pg_ctl" -D "$pg/data" -l "$pg/log" -w -s -t 60 start -o \
      "-k $pg -p $port -c listen_addresses=127.0.0.1 $tuning -c max_connections=200"
    then
      echo "$port" > "$pg/port"
      printf 'BACKLOT_POSTGRES_URL=%s\nBACKLOT_POSTGRES_PORT=%s\nBACKLOT_POSTGRES_SOCKET=%s\nBACKLOT_POSTGRES_PASSWORD=%s\n' \
        "$(pg_url "$1")" "$port" "$pg" "$(cat "$pg/password")" > "$pg/env"
      return 0
    fi
    # A port taken meanwhile is the one failure another try mends: the same port for 10 s when it
    # was the cluster's (a restart keeps its address), else another port, a few times.
    if tail -c +"$((log_start + 1))" "$pg/log" 2>/dev/null | grep -q 'Address already in use'; then
      if [ "$saved" = yes ] && [ "$attempt" -lt 50 ]; then sleep 0.2; continue; fi
      if [ "$saved" = no ] && [ "$attempt" -lt 4 ]; then
        echo "$(backlot_me): port $port was taken meanwhile; trying another" >&2
        port=""; continue
      fi
    fi
    echo "$(backlot_me): PostgreSQL did not start; the end of $pg/log:" >&2
    tail -c +"$((log_start + 1))" "$pg/log" 2>/dev/null | tail -n 20 | sed 's/^/  /' >&2
    return 1
  done
}

pg_stop() { # DIR
  local pg="$1/postgres"
  [ -d "$pg/data" ] || return 0
  backlot_pg_running "$pg" || return 0
  backlot_as_postgres "$backlot_pg_bin/pg_ctl" -D "$pg/data" -m fast -w -s -t 60 stop
}

pg_url() { # DIR [DB]
  printf 'postgresql://backlot:%s@127.0.0.1:%s/%s' "$(cat "$1/postgres/password")" "$(cat "$1/postgres/port")" "${2:-postgres}"
}

pg_createdb() { # DIR NAME
  backlot_as_postgres "$backlot_pg_bin/createdb" -h "$1/postgres" -p "$(cat "$1/postgres/port")" -U backlot "$2"
}
