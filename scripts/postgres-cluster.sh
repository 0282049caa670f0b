#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests, from the server binaries on
# this machine: initdb in a temporary directory, pg_ctl on 127.0.0.1 and a
# free port, trust authentication (loopback only).
#   scripts/postgres-cluster.sh start DIR   prints the URL to connect to
#   scripts/postgres-cluster.sh stop DIR    stops the server and removes DIR
# The outage and failover tests also use:
#   scripts/postgres-cluster.sh crash DIR    stops the server as a crash would (immediate mode)
#   scripts/postgres-cluster.sh halt DIR     stops the server (fast mode), keeping DIR
#   scripts/postgres-cluster.sh resume DIR   starts it again on its port
#   scripts/postgres-cluster.sh standby DIR NEWDIR   a synchronous streaming standby of DIR's server
#                                            (pg_basebackup -R) on a port of its own; prints its URL
#   scripts/postgres-cluster.sh promote DIR  promotes a standby to primary
#   scripts/postgres-cluster.sh read-only DIR    makes the server refuse writes, keeping its connections
# PostgreSQL refuses to run as root: as root, the cluster runs as the user
# "postgres" (created if missing), so DIR's parents must be searchable by it
# (as /tmp is).
set -euo pipefail
command=${1:?start or stop}
directory=${2:?a directory for the cluster}

find_binary() {
    if command -v "$1" >/dev/null 2>&1; then command -v "$1"; return; fi
    ls /usr/lib/postgresql/*/bin/"$1" 2>/dev/null | sort -V | tail -n 1
}
initdb=$(find_binary initdb)
pg_ctl=$(find_binary pg_ctl)
createuser=$(find_binary createuser)
if [[ -z "$initdb" || -z "$pg_ctl" || -z "$createuser" ]]; then
    echo "error: no PostgreSQL server binaries (initdb, pg_ctl, createuser) on this machine; install Debian's postgresql package" >&2
    exit 1
fi

as_owner=()
if [[ $(id -u) == 0 ]]; then
    id postgres >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin postgres
    as_owner=(runuser -u postgres --)
fi

# The server's options; the port is kept in DIR/port. The suite runs each
# store conformance case on a store of its own, side by side, each with up
# to ten connections: at 1,000 the cluster refused connections for minutes
# at a time, and the tests that wait for one gave up.
server_options() {
    local dir=$1 port=$2 tls="$1/tls"
    [[ -d "$dir/tls" ]] || tls="$3/tls"
    echo "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=2000 -c fsync=on \
        -c ssl=on -c ssl_cert_file=$tls/server.pem -c ssl_key_file=$tls/server.key -c ssl_ca_file=$tls/ca.pem"
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

pg_binary() {
    local found
    found=$(find_binary "$1")
    [[ -n "$found" ]] || { echo "error: no $1 on this machine; install Debian's postgresql package" >&2; exit 1; }
    echo "$found"
}

case "$command" in
start)
    mkdir -p "$directory"
    if [[ ${#as_owner[@]} -gt 0 ]]; then chown postgres "$directory"; chmod 0755 "$directory"; fi
    port=$(free_port)
    echo "$port" >"$directory/port"
    "${as_owner[@]}" "$initdb" --pgdata="$directory/data" --username=countersign --auth=trust \
        --encoding=UTF8 --locale=C.UTF-8 >"$directory/initdb.log" 2>&1 \
        || { cat "$directory/initdb.log" >&2; exit 1; }
    # TLS with a certificate from a CA of its own (DIR/tls/ca.pem), for the
    # host name "localhost" only: verify-full must name that host, verify-ca
    # and require need not. Clients may also connect without TLS.
    tls="$directory/tls"
    mkdir -p "$tls"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=Test CA" \
        -keyout "$tls/ca.key" -out "$tls/ca.pem" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
        -keyout "$tls/server.key" -out "$tls/server.csr" 2>/dev/null
    printf 'subjectAltName=DNS:localhost\n' >"$tls/server.ext"
    openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial -days 2 \
        -extfile "$tls/server.ext" -out "$tls/server.pem" 2>/dev/null
    # The role countersign_cert signs in with a client certificate from the
    # same CA (DIR/tls/client.pem and client.key), over TLS only.
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=countersign_cert" \
        -keyout "$tls/client.key" -out "$tls/client.csr" 2>/dev/null
    openssl x509 -req -in "$tls/client.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial -days 2 \
        -out "$tls/client.pem" 2>/dev/null
    hba="$directory/data/pg_hba.conf"
    { printf 'hostssl all countersign_cert 127.0.0.1/32 cert\nhost all countersign_cert 127.0.0.1/32 reject\n'
      cat "$hba"; } >"$hba.new"
    mv "$hba.new" "$hba"
    chmod 0600 "$tls/server.key" "$tls/client.key"
    chmod 0644 "$tls/ca.pem" "$tls/server.pem" "$tls/client.pem"
    if [[ ${#as_owner[@]} -gt 0 ]]; then
        chown postgres "$tls/server.key" "$tls/server.pem" "$hba"
        chmod 0755 "$tls"
    fi
    "${as_owner[@]}" "$pg_ctl" --pgdata="$directory/data" --log="$directory/server.log" --wait \
        --options="$(server_options "$directory" "$port")" start >/dev/null || { cat "$directory/server.log" >&2; exit 1; }
    "$createuser" --host=127.0.0.1 --port="$port" --username=countersign countersign_cert
    echo "postgres://countersign@127.0.0.1:$port/postgres"
    ;;
stop)
    if [[ -f "$directory/data/postmaster.pid" ]]; then
        "${as_owner[@]}" "$pg_ctl" --pgdata="$directory/data" --mode=fast --wait stop >/dev/null || true
    fi
    rm -rf "$directory"
    ;;
crash)
    "${as_owner[@]}" "$pg_ctl" --pgdata="$directory/data" --mode=immediate --wait stop >/dev/null
    ;;
halt)
    "${as_owner[@]}" "$pg_ctl" --pgdata="$directory/data" --mode=fast --wait stop >/dev/null
    ;;
resume)
    port=$(cat "$directory/port")
    "${as_owner[@]}" "$pg_ctl" --pgdata="$directory/data" --log="$directory/server.log" --wait \
        --options="$(server_options "$directory" "$port" "$(cat "$directory/primary" 2>/dev/null || true)")" \
        start >/dev/null || { tail -n 20 "$directory/server.log" >&2; exit 1; }
    ;;
standby)
    standby=${3:?a directory for the standby}
    mkdir -p "$standby"
    if [[ ${#as_owner[@]} -gt 0 ]]; then chown postgres "$standby"; chmod 0755 "$standby"; fi
    primary_port=$(cat "$directory/port")
    port=$(free_port)
    echo "$port" >"$standby/port"
    # The certificate the server it copies uses (a standby's is its primary's).
    source_tls="$directory/tls"
    [[ -d "$source_tls" ]] || source_tls="$(cat "$directory/primary")/tls"
    echo "${source_tls%/tls}" >"$standby/primary"
    "${as_owner[@]}" "$(pg_binary pg_basebackup)" --host=127.0.0.1 --port="$primary_port" --username=countersign \
        --pgdata="$standby/data" --write-recovery-conf --wal-method=stream --checkpoint=fast >/dev/null
    "${as_owner[@]}" "$pg_ctl" --pgdata="$standby/data" --log="$standby/server.log" --wait \
        --options="$(server_options "$standby" "$port" "$(cat "$standby/primary")")" start >/dev/null \
        || { cat "$standby/server.log" >&2; exit 1; }
    # Synchronous, as docs/operations.md has it for production: a commit is
    # acknowledged once the standby has it, so a failover to the standby
    # loses no acknowledged decision. (Asynchronous, the last commits before
    # a promotion can be missing on the new primary.)
    "$(pg_binary psql)" --host=127.0.0.1 --port="$primary_port" --username=countersign --dbname=postgres --quiet \
        --command="ALTER SYSTEM SET synchronous_standby_names = '*'" --command="SELECT pg_reload_conf()" >/dev/null
    for _ in $(seq 600); do
        state=$("$(pg_binary psql)" --host=127.0.0.1 --port="$primary_port" --username=countersign \
            --dbname=postgres --tuples-only --no-align \
            --command="SELECT sync_state FROM pg_stat_replication LIMIT 1")
        [[ "$state" = sync ]] && break
        sleep 0.1
    done
    [[ "$state" = sync ]] || { echo "error: the standby did not become synchronous" >&2; exit 1; }
    echo "postgres://countersign@127.0.0.1:$port/postgres"
    ;;
promote)
    "${as_owner[@]}" "$pg_ctl" --pgdata="$directory/data" --wait promote >/dev/null
    ;;
read-only)
    port=$(cat "$directory/port")
    "$(pg_binary psql)" --host=127.0.0.1 --port="$port" --username=countersign --dbname=postgres --quiet \
        --command="ALTER SYSTEM SET default_transaction_read_only = on" --command="SELECT pg_reload_conf()" >/dev/null
    ;;
*)
    echo "usage: $0 start|stop|crash|halt|resume|promote|read-only DIR, or standby DIR NEWDIR" >&2
    exit 64
    ;;
esac
