#!/usr/bin/env bash
# A throwaway PostgreSQL server for the store/postgres tests.
#
#   scripts/pg-test.sh start DIR   initdb a cluster in DIR (once), start it and
#                                  print its DSN on stdout
#   scripts/pg-test.sh stop DIR    stop the server of DIR (DIR is kept)
#
# It installs Debian's postgresql package when initdb is missing. The server
# runs as the postgres system user (it refuses to run as root), listens on
# 127.0.0.1 only, on $WEFT_PG_PORT (default 55432), with trust
# authentication: for local tests only. fsync and synchronous_commit keep
# their defaults (on), so commits are as durable as in production.
#
#   export WEFT_TEST_POSTGRES=$(scripts/pg-test.sh start /tmp/pg)
#   go test -race ./store/postgres/
#   scripts/pg-test.sh stop /tmp/pg
set -euo pipefail

usage() {
	echo "usage: $0 start|stop DIR" >&2
	exit 2
}

[ $# -eq 2 ] || usage
cmd=$1
dir=$2
port=${WEFT_PG_PORT:-55432}

# bindir finds the server binaries: on PATH, or Debian's versioned directory.
bindir() {
	if command -v pg_ctl >/dev/null 2>&1; then
		dirname "$(command -v pg_ctl)"
		return
	fi
	local d
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
	if [ -n "$d" ] && [ -x "$d/initdb" ]; then
		echo "$d"
	fi
}

# as_postgres runs a command as the postgres user when we are root.
as_postgres() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

start() {
	local bin
	bin=$(bindir)
	if [ -z "$bin" ]; then
		echo "pg-test: installing postgresql" >&2
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq >&2
		apt-get install -y -qq postgresql >&2
		bin=$(bindir)
		[ -n "$bin" ] || {
			echo "pg-test: no initdb after installing postgresql" >&2
			exit 1
		}
	fi
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	if [ "$(id -u)" -eq 0 ]; then
		chown postgres: "$dir"
		chmod 700 "$dir"
	fi
	if [ ! -f "$dir/PG_VERSION" ]; then
		as_postgres "$bin/initdb" -D "$dir" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >&2
	fi
	if as_postgres "$bin/pg_ctl" -D "$dir" status >/dev/null 2>&1; then
		echo "pg-test: server of $dir already running" >&2
	else
		# The socket directory is DIR itself: /run/postgresql may not exist
		# and needs no sharing with a system server.
		if ! as_postgres "$bin/pg_ctl" -D "$dir" -l "$dir/server.log" -w -t 60 \
			-o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=200 -c fsync=on -c synchronous_commit=on" \
			start >&2; then
			echo "pg-test: the server did not start (port $port taken? set WEFT_PG_PORT); its log:" >&2
			tail -n 20 "$dir/server.log" >&2 || true
			exit 1
		fi
	fi
	echo "postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
}

stop() {
	local bin
	bin=$(bindir)
	[ -n "$bin" ] || exit 0
	[ -f "$dir/PG_VERSION" ] || exit 0
	if as_postgres "$bin/pg_ctl" -D "$dir" status >/dev/null 2>&1; then
		as_postgres "$bin/pg_ctl" -D "$dir" -m fast -w stop >&2
	fi
}

case $cmd in
start) start ;;
stop) stop ;;
*) usage ;;
esac
