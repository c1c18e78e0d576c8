#!/usr/bin/env bash
# Development Citus cluster for Dense-Mem: build Citus from a source tree for this machine's
# PostgreSQL, and run a coordinator with two workers on 127.0.0.1. See docs/scaling.md.
#
#   cluster.sh build SRC_DIR   patch, configure, make, make install (needs root for install)
#   cluster.sh create NAME     initdb + start coordinator and 2 workers, add the nodes
#   cluster.sh destroy NAME    stop the three servers and remove their data
#   cluster.sh env NAME        print the environment the Citus tests read (eval it)
#   cluster.sh status NAME     show the servers and the nodes the coordinator knows
#
# Nothing of Citus is vendored: SRC_DIR is a release tree the developer fetched (v13.2.2 is the last
# release supporting PostgreSQL 15).
set -euo pipefail

PG_CONFIG=${PG_CONFIG:-pg_config}
BINDIR=$("$PG_CONFIG" --bindir)
CLUSTER_ROOT=${DENSEMEM_CITUS_ROOT:-/var/tmp/densemem-citus}
# The servers run as this user (initdb refuses root).
RUN_USER=${DENSEMEM_CITUS_USER:-postgres}
# Ports: coordinator, worker 1, worker 2. Override with DENSEMEM_CITUS_PORT (coordinator; the
# workers take the next two).
BASE_PORT=${DENSEMEM_CITUS_PORT:-9700}
# The database, with the citus extension on every node.
DB=densemem

die() { echo "cluster.sh: $*" >&2; exit 1; }

as_user() {
	if [ "$(id -un)" = "$RUN_USER" ]; then "$@"; else runuser -u "$RUN_USER" -- "$@"; fi
}

ports() { echo "$BASE_PORT" $((BASE_PORT + 1)) $((BASE_PORT + 2)); }

node_dirs() {
	local dir=$CLUSTER_ROOT/$1
	echo "$dir/coordinator" "$dir/worker1" "$dir/worker2"
}

cmd_build() {
	local src=${1:?usage: cluster.sh build SRC_DIR}
	[ -f "$src/configure" ] || die "$src is not a Citus source tree (no configure)"
	local hdr=$src/src/include/pg_version_compat.h
	local server_inc
	server_inc=$("$PG_CONFIG" --includedir-server)
	# PostgreSQL 15.20 (and later 15.x) exports have_createdb_privilege() from
	# commands/dbcommands.h; Citus 13.2's compatibility header defines a static inline of the same
	# name for PostgreSQL < 16, which then conflicts. Rename Citus's copy out of the way; the
	# server's function does the same thing.
	if grep -q 'have_createdb_privilege' "$server_inc/commands/dbcommands.h" 2>/dev/null &&
		grep -q '^have_createdb_privilege(void)' "$hdr"; then
		sed -i 's/^have_createdb_privilege(void)/citus_compat_have_createdb_privilege_unused(void)/' "$hdr"
		echo "patched $hdr: have_createdb_privilege (exported by this PostgreSQL)"
	fi
	cd "$src"
	# No libcurl (anonymous statistics collection); no LLVM bitcode (halves the build time).
	./configure --without-libcurl PG_CONFIG="$PG_CONFIG"
	make -j"$(nproc)" with_llvm=no
	make install with_llvm=no
	echo "installed citus into $("$PG_CONFIG" --pkglibdir)"
}

start_node() {
	local dir=$1 port=$2
	as_user "$BINDIR/pg_ctl" -D "$dir" -l "$dir/server.log" -w -t 60 -o "-p $port -k $dir" start >/dev/null
}

psql_node() {
	local port=$1
	shift
	as_user "$BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U "$RUN_USER" "$@"
}

cmd_create() {
	local name=${1:?usage: cluster.sh create NAME}
	[ -f "$("$PG_CONFIG" --pkglibdir)/citus.so" ] || die "citus is not installed: run cluster.sh build SRC_DIR first"
	local dir=$CLUSTER_ROOT/$name
	[ -e "$dir" ] && die "cluster $name exists ($dir): destroy it first"
	mkdir -p "$dir"
	chown "$RUN_USER" "$CLUSTER_ROOT" "$dir"
	local -a p d
	read -r -a p <<<"$(ports)"
	read -r -a d <<<"$(node_dirs "$name")"
	echo "${p[*]}" >"$dir/ports"
	for i in 0 1 2; do
		as_user "$BINDIR/initdb" -D "${d[$i]}" -U "$RUN_USER" -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
		cat >>"${d[$i]}/postgresql.conf" <<CONF
# densemem citus cluster
listen_addresses = '127.0.0.1'
port = ${p[$i]}
shared_preload_libraries = 'citus'
max_connections = 200
shared_buffers = 128MB
fsync = off
synchronous_commit = off
full_page_writes = off
max_prepared_transactions = 100
wal_level = logical
max_wal_senders = 10
max_replication_slots = 10
citus.shard_count = 32
CONF
		start_node "${d[$i]}" "${p[$i]}"
	done
	# Citus keeps its metadata per database: the database the tests use is created on every node,
	# with the extension, and the workers are added from the coordinator's.
	for i in 0 1 2; do
		psql_node "${p[$i]}" -d postgres -c "CREATE DATABASE $DB"
		psql_node "${p[$i]}" -d "$DB" -c 'CREATE EXTENSION citus'
	done
	psql_node "${p[0]}" -d "$DB" -c "SELECT citus_set_coordinator_host('127.0.0.1', ${p[0]})" >/dev/null
	psql_node "${p[0]}" -d "$DB" -c "SELECT citus_add_node('127.0.0.1', ${p[1]})" >/dev/null
	psql_node "${p[0]}" -d "$DB" -c "SELECT citus_add_node('127.0.0.1', ${p[2]})" >/dev/null
	echo "cluster $name: coordinator 127.0.0.1:${p[0]}, workers ${p[1]} ${p[2]} (data in $dir)"
}

cmd_destroy() {
	local name=${1:?usage: cluster.sh destroy NAME}
	local dir=$CLUSTER_ROOT/$name
	[ -d "$dir" ] || die "no cluster $name ($dir)"
	for d in $(node_dirs "$name"); do
		if [ -f "$d/postmaster.pid" ]; then
			as_user "$BINDIR/pg_ctl" -D "$d" -m immediate -w stop >/dev/null || true
		fi
	done
	rm -rf "$dir"
	echo "cluster $name destroyed"
}

cmd_env() {
	local name=${1:?usage: cluster.sh env NAME}
	local dir=$CLUSTER_ROOT/$name
	[ -f "$dir/ports" ] || die "no cluster $name ($dir)"
	local -a p
	read -r -a p <"$dir/ports"
	echo "export DENSEMEM_CITUS_URL='postgres://$RUN_USER@127.0.0.1:${p[0]}/$DB?sslmode=disable'"
	echo "export DENSEMEM_CITUS_WORKER_PORTS='${p[1]},${p[2]}'"
}

cmd_status() {
	local name=${1:?usage: cluster.sh status NAME}
	for d in $(node_dirs "$name"); do
		as_user "$BINDIR/pg_ctl" -D "$d" status | head -1 || true
	done
	local -a p
	read -r -a p <"$CLUSTER_ROOT/$name/ports"
	psql_node "${p[0]}" -d "$DB" -c 'SELECT nodename, nodeport, noderole, shouldhaveshards FROM pg_dist_node ORDER BY nodeport'
}

case ${1:-} in
build | create | destroy | env | status)
	sub=$1
	shift
	"cmd_$sub" "$@"
	;;
*)
	sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
	;;
esac
