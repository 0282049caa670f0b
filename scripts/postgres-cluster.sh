#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests, from the server binaries on
# this machine: initdb in a temporary directory, pg_ctl on 127.0.0.1 and a
# free port, trust authentication (loopback only).
#   scripts/postgres-cluster.sh start DIR   prints the URL to connect to
#   scripts/postgres-cluster.sh stop DIR
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

case "$command" in
start)
    mkdir -p "$directory"
    if [[ ${#as_owner[@]} -gt 0 ]]; then chown postgres "$directory"; chmod 0755 "$directory"; fi
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
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
        --options="-c listen_addresses=127.0.0.1 -p $port -k $directory -c max_connections=1000 -c fsync=on \
            -c ssl=on -c ssl_cert_file=$tls/server.pem -c ssl_key_file=$tls/server.key -c ssl_ca_file=$tls/ca.pem" \
        start >/dev/null || { cat "$directory/server.log" >&2; exit 1; }
    "$createuser" --host=127.0.0.1 --port="$port" --username=countersign countersign_cert
    echo "postgres://countersign@127.0.0.1:$port/postgres"
    ;;
stop)
    [[ -d "$directory/data" ]] && "${as_owner[@]}" "$pg_ctl" --pgdata="$directory/data" --mode=fast --wait stop >/dev/null
    rm -rf "$directory"
    ;;
*)
    echo "usage: $0 start|stop DIR" >&2
    exit 64
    ;;
esac
