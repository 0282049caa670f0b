#!/usr/bin/env bash
# A real OpenVPN 2.6 server whose logins are checked over RADIUS by the
# broker, and a client logging in to it from its own network namespace, as
# docs/radius.md sets them up; exits 0 once pings cross the tunnel.
#
# Environment: RADIUS_PORT, RADIUS_SECRET (the client the broker knows),
# AUTH=plugin (Debian's openvpn-auth-radius) or AUTH=script
# (deploy/openvpn/countersign-radius-auth with radclient), VPN_USER, WORK (a
# directory of its own), TAG (a short suffix that keeps its interfaces apart
# from another run's). Needs root, /dev/net/tun, openvpn,
# openvpn-auth-radius, iproute2, iputils-ping, openssl, freeradius-utils.
# Prints "connected" and "tunnel up" as it gets there. Every process it
# starts is stopped, and every interface removed, when it ends.
set -u
: "${RADIUS_PORT:?}" "${RADIUS_SECRET:?}" "${WORK:?}" "${TAG:?}"
AUTH=${AUTH:-plugin}
VPN_USER=${VPN_USER:-alice}
HERE=$(cd "$(dirname "$0")" && pwd)
AUTH_SCRIPT=$HERE/../../../deploy/openvpn/countersign-radius-auth
NS=ovpn$TAG
VETH_HOST=vo${TAG}a
VETH_NS=vo${TAG}b
SRV_DEV=ts$TAG
CLI_DEV=tc$TAG
# 10.201-250.x: a /30 and a /24 of their own per tag.
OCTET=$((201 + 10#${TAG: -2} % 50))
VETH_HOST_IP=10.$OCTET.0.1
VETH_NS_IP=10.$OCTET.0.2
TUN_NET=10.$OCTET.1.0
TUN_SRV_IP=10.$OCTET.1.1
SERVER_PID=
CLIENT_PID=
RESULT=1

say() { printf '[openvpn-login] %s\n' "$*"; }

# OpenVPN first, by its own pid only: the plugin's helper processes must hear
# from OpenVPN that it closes, or it hangs in PLUGIN_CLOSE.
stop() {
    local pid=$1 i=0
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null
    while kill -0 "$pid" 2>/dev/null && [ "$i" -lt 50 ]; do sleep 0.2; i=$((i + 1)); done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" $(pgrep -P "$pid") 2>/dev/null
    wait "$pid" 2>/dev/null
}

cleanup() {
    trap - EXIT INT TERM
    stop "$CLIENT_PID"
    stop "$SERVER_PID"
    # What the server's session still runs (an auth script's radclient).
    if [ -n "$SERVER_PID" ]; then
        left=$(ps -eo pid=,sid= | awk -v s="$SERVER_PID" '$2 == s {print $1}')
        [ -n "$left" ] && kill $left 2>/dev/null
    fi
    ip netns del "$NS" 2>/dev/null
    ip link del "$VETH_HOST" 2>/dev/null
    ip link del "$SRV_DEV" 2>/dev/null
    if [ "$RESULT" != 0 ]; then
        for log in server.log client.log auth.log; do
            [ -f "$WORK/$log" ] && { say "--- $log"; tail -30 "$WORK/$log"; }
        done
    fi
    exit "$RESULT"
}
trap cleanup EXIT INT TERM

# Into the client's network namespace only. `ip netns exec` (and `ip -n`)
# also make a mount namespace of their own, a copy of every mount: while
# the client runs, a file system another test unmounts stays mounted in
# that copy (a loop device it repairs would not come back writable).
in_ns() { nsenter --net="/run/netns/$NS" "$@"; }

wait_for() { # FILE REGEX SECONDS
    local i=0
    while [ "$i" -lt $(($3 * 5)) ]; do
        grep -qE "$2" "$1" 2>/dev/null && return 0
        sleep 0.2
        i=$((i + 1))
    done
    return 1
}

[ "$(id -u)" = 0 ] && [ -c /dev/net/tun ] || { say "needs root and /dev/net/tun"; exit 1; }
mkdir -p "$WORK/pki" "$WORK/ccd" "$WORK/tmp"
cd "$WORK" || exit 1

(
    set -e
    cd pki
    ossl() { openssl "$@" >/dev/null 2>&1; }
    ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.crt -days 2 \
        -subj "/CN=test-ca" -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign"
    for who in server client; do
        eku=serverAuth
        [ "$who" = client ] && eku=clientAuth
        ossl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$who.key" -out "$who.csr" \
            -subj "/CN=test-$who"
        printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyAgreement\nextendedKeyUsage=%s\n' \
            "$eku" >"$who.ext"
        ossl x509 -req -in "$who.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$who.crt" -days 2 \
            -extfile "$who.ext"
    done
) || { say "certificates failed"; exit 1; }

ip netns add "$NS" && ip link add "$VETH_HOST" type veth peer name "$VETH_NS" \
    && ip link set "$VETH_NS" netns "$NS" && ip addr add "$VETH_HOST_IP/30" dev "$VETH_HOST" \
    && ip link set "$VETH_HOST" up && in_ns ip addr add "$VETH_NS_IP/30" dev "$VETH_NS" \
    && in_ns ip link set "$VETH_NS" up && in_ns ip link set lo up || { say "network namespace failed"; exit 1; }

printf '%s\n' "$RADIUS_SECRET" >radius.secret
chmod 600 radius.secret
cat >radiusplugin.cnf <<CONF
NAS-Identifier=office-vpn
Service-Type=5
Framed-Protocol=1
NAS-Port-Type=5
NAS-IP-Address=127.0.0.1
OpenVPNConfig=$WORK/server.conf
subnet=255.255.255.0
overwriteccfiles=false
useauthcontrolfile=true
server
{
	acctport=$RADIUS_PORT
	authport=$RADIUS_PORT
	name=127.0.0.1
	retry=1
	wait=30
	sharedsecret=$RADIUS_SECRET
}
CONF
if [ "$AUTH" = plugin ]; then
    check="plugin /usr/lib/openvpn/radiusplugin.so $WORK/radiusplugin.cnf"
else
    check="script-security 2
auth-user-pass-verify \"$AUTH_SCRIPT 127.0.0.1:$RADIUS_PORT $WORK/radius.secret office-vpn\" via-file
setenv COUNTERSIGN_RADIUS_LOG $WORK/auth.log"
fi
cat >server.conf <<CONF
dev $SRV_DEV
dev-type tun
proto udp
local $VETH_HOST_IP
port 1194
topology subnet
server $TUN_NET 255.255.255.0
ca $WORK/pki/ca.crt
cert $WORK/pki/server.crt
key $WORK/pki/server.key
dh none
remote-cert-tls client
disable-dco
keepalive 2 20
status $WORK/status.log 1
status-version 1
client-config-dir $WORK/ccd
tmp-dir $WORK/tmp
$check
hand-window 90
verb 4
CONF
# Its own session: a signal to this script's process group never reaches
# the plugin's helpers directly.
setsid openvpn --config server.conf >server.log 2>&1 &
SERVER_PID=$!
wait_for server.log "Initialization Sequence Completed" 30 || { say "the server did not start"; exit 1; }

printf '%s\n%s\n' "$VPN_USER" "any password" >client.pass
chmod 600 client.pass
cat >client.conf <<CONF
client
dev $CLI_DEV
dev-type tun
proto udp
remote $VETH_HOST_IP 1194
nobind
ca $WORK/pki/ca.crt
cert $WORK/pki/client.crt
key $WORK/pki/client.key
remote-cert-tls server
disable-dco
auth-user-pass $WORK/client.pass
auth-nocache
auth-retry none
setenv IV_SSO crtext
connect-retry-max 1
hand-window 90
verb 4
CONF
say "client logging in as $VPN_USER"
in_ns openvpn --config client.conf >client.log 2>&1 &
CLIENT_PID=$!
if [ "$AUTH" = script ]; then
    # What the client shows its user: the pending authentication's text.
    if wait_for client.log "CR_TEXT|AUTH_FAILED" 60; then
        say "shown: $(grep -o 'CR_TEXT:[^,]*' client.log | head -1)"
    fi
fi
wait_for client.log "Initialization Sequence Completed|AUTH_FAILED" 100 || { say "no answer in time"; exit 1; }
grep -q AUTH_FAILED client.log && { say "AUTH_FAILED"; RESULT=3; exit 3; }
say "connected"
timeout 20 nsenter --net="/run/netns/$NS" ping -c2 -W3 "$TUN_SRV_IP" >/dev/null || { say "no ping across the tunnel"; exit 1; }
say "tunnel up"
RESULT=0
