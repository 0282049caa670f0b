#!/usr/bin/env bash
# Stops the slapd that start-slapd.sh DIR started (and only that one).
#
#   Tests/Fixtures/ldap/stop-slapd.sh DIR
#
# Quiet, and a no-op when nothing is running. DIR itself is left in place.
set -euo pipefail

if [[ $# -ne 1 || -z "$1" ]]; then
    echo "usage: $0 DIR" >&2
    exit 2
fi
[[ -d "$1" ]] || exit 0
DIR="$(cd "$1" && pwd)"
pid_file="$DIR/slapd.pid"
[[ -s "$pid_file" ]] || exit 0
pid="$(cat "$pid_file")"
[[ "$pid" =~ ^[0-9]+$ ]] || { rm -f "$pid_file"; exit 0; }

# The pid must still be our slapd (its command line names DIR's slapd.conf),
# not an unrelated process that reused the number.
ours() {
    [[ -r "/proc/$pid/cmdline" ]] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -F -- "$DIR/slapd.conf"
}
if ! kill -0 "$pid" 2>/dev/null || ! ours; then
    rm -f "$pid_file"
    exit 0
fi

kill -TERM "$pid" 2>/dev/null || true
for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
if kill -0 "$pid" 2>/dev/null && ours; then
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
fi
rm -f "$pid_file"
