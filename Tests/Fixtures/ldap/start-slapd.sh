#!/usr/bin/env bash
# Starts a throwaway OpenLDAP server for the directory sync tests.
#
#   Tests/Fixtures/ldap/start-slapd.sh DIR
#
# Everything lives in DIR (created if missing; files a previous run left
# there are replaced): slapd.conf, the database (db/), the log (slapd.log),
# slapd.pid, and a fresh test CA and server certificate (tls/ca.pem,
# tls/server.pem for 127.0.0.1, localhost and this machine's host name;
# tls/wrong-ca.pem is an unrelated CA for negative tests). slapd listens on
# 127.0.0.1 only, on two free ports it picks: DIR/ldap-port (ldap://,
# StartTLS available) and DIR/ldaps-port (ldaps://). It runs as the calling
# user (root or not) and stays running after this script returns; stop it
# with stop-slapd.sh DIR.
#
# Directory (suffix dc=example,dc=org):
#   cn=admin,dc=example,dc=org            rootdn, password in DIR/admin-password
#   cn=countersign,ou=services,dc=...     read-only bind user, DIR/bind-password
#                                         (both files have no trailing newline)
#   uid={alice,bob,carol,dave},ou=people  inetOrgPerson: uid, cn, sn, givenName,
#                                         displayName, mail; password <uid>-secret
#   cn=vpn-users,ou=groups                groupOfNames: alice and bob
#   cn=default,ou=policies                the password policy (ppolicy overlay)
#
# memberOf is kept by the memberof overlay (ask for it by name: it is
# operational); refint drops members that are deleted or renamed.
#
# Disabled users: OpenLDAP has no "disabled" flag of its own. The ppolicy
# overlay's administrative lock is the realistic one: pwdAccountLockedTime
# set to 000001010000Z locks the account until an administrator removes the
# attribute, and slapd then refuses the user's binds. carol starts locked.
# (A lockout after too many wrong passwords sets the same attribute to a real
# timestamp; that one expires, and the sync should not treat it as disabled.)
#
# Like Active Directory's 1000-entry cap, the bind user may get at most 3
# entries from a search without the paged results control (4 people exist);
# with the control the total is unlimited.
#
# Prints nothing on success. On failure prints the reason (and the end of
# slapd's log) to stderr and exits non-zero. SLAPD_START_TIMEOUT (seconds,
# default 60) bounds the wait for the server to answer.
set -euo pipefail

if [[ $# -ne 1 || -z "$1" ]]; then
    echo "usage: $0 DIR" >&2
    exit 2
fi
mkdir -p "$1"
DIR="$(cd "$1" && pwd)"

die() {
    echo "start-slapd: $*" >&2
    exit 1
}

find_tool() {
    local name="$1" candidate
    for candidate in "$(command -v "$name" 2>/dev/null || true)" "/usr/sbin/$name" "/usr/bin/$name" "/usr/local/sbin/$name"; do
        if [[ -n "$candidate" && -x "$candidate" ]]; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

SLAPD="$(find_tool slapd)" || die "slapd not found (apt-get install slapd)"
SLAPPASSWD="$(find_tool slappasswd)" || die "slappasswd not found (apt-get install slapd)"
LDAPSEARCH="$(find_tool ldapsearch)" || die "ldapsearch not found (apt-get install ldap-utils)"
LDAPADD="$(find_tool ldapadd)" || die "ldapadd not found (apt-get install ldap-utils)"
OPENSSL="$(find_tool openssl)" || die "openssl not found (apt-get install openssl)"
MODULE_DIR="${SLAPD_MODULE_DIR:-/usr/lib/ldap}"
SCHEMA_DIR="${SLAPD_SCHEMA_DIR:-/etc/ldap/schema}"
[[ -e "$MODULE_DIR/back_mdb.so" || -e "$MODULE_DIR/back_mdb.la" ]] || die "no slapd modules in $MODULE_DIR"
[[ -r "$SCHEMA_DIR/inetorgperson.schema" ]] || die "no schema files in $SCHEMA_DIR"

# Refuse to clobber a server that is still running from this DIR.
if [[ -s "$DIR/slapd.pid" ]]; then
    old_pid="$(cat "$DIR/slapd.pid")"
    if [[ "$old_pid" =~ ^[0-9]+$ ]] && kill -0 "$old_pid" 2>/dev/null; then
        die "slapd (pid $old_pid) is still running for $DIR: run stop-slapd.sh $DIR first"
    fi
fi

# Client tools must not pick up a developer's ~/.ldaprc or LDAP* variables.
unset LDAPURI LDAPBASE LDAPBINDDN LDAPTLS_CACERT LDAPTLS_CACERTDIR LDAPTLS_REQCERT LDAPTLS_CERT LDAPTLS_KEY
export LDAPRC=/nonexistent LDAPCONF="$DIR/ldap-client.conf"
: > "$DIR/ldap-client.conf"

rm -rf "$DIR/db" "$DIR/tls"
rm -f "$DIR/slapd.pid" "$DIR/slapd.args" "$DIR/slapd.log" "$DIR/setup.log" "$DIR/slapd.conf" \
    "$DIR/data.ldif" "$DIR/ldap-port" "$DIR/ldaps-port" "$DIR/bind-password" "$DIR/admin-password"
mkdir -p "$DIR/db" "$DIR/tls"
chmod 700 "$DIR/db" "$DIR/tls"
SETUP_LOG="$DIR/setup.log"

run_quiet() {
    if ! "$@" >>"$SETUP_LOG" 2>&1; then
        tail -n 20 "$SETUP_LOG" >&2 || true
        die "failed: $1"
    fi
}

# --- TLS: a throwaway CA and a server certificate for the loopback names ---
tls="$DIR/tls"
run_quiet "$OPENSSL" req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$tls/ca-key.pem" -out "$tls/ca.pem" -days 3650 -subj "/CN=Countersign test LDAP CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
run_quiet "$OPENSSL" req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$tls/server-key.pem" -out "$tls/server.csr" -subj "/CN=localhost"
# libldap checks a certificate against the machine's own host name, not
# "localhost", when the URI says localhost: add that name too.
san="DNS:localhost, IP:127.0.0.1"
for name in "$(hostname 2>/dev/null || true)" "$(hostname -f 2>/dev/null || true)" "$(uname -n 2>/dev/null || true)"; do
    if [[ "$name" =~ ^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$ && "$san" != *"DNS:$name,"* && "$san" != *"DNS:$name" ]]; then
        san="$san, DNS:$name"
    fi
done
cat >"$tls/server-ext.cnf" <<EOF
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = $san
EOF
run_quiet "$OPENSSL" x509 -req -in "$tls/server.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca-key.pem" \
    -set_serial "0x$("$OPENSSL" rand -hex 8)" -days 825 -extfile "$tls/server-ext.cnf" -out "$tls/server.pem"
# An unrelated CA, for tests that must see certificate verification fail.
run_quiet "$OPENSSL" req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$tls/wrong-ca-key.pem" -out "$tls/wrong-ca.pem" -days 3650 -subj "/CN=Unrelated test CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
rm -f "$tls/server.csr" "$tls/wrong-ca-key.pem"
chmod 600 "$tls"/*-key.pem

# --- Passwords ---
admin_password="$("$OPENSSL" rand -hex 16)"
bind_password="$("$OPENSSL" rand -hex 16)"
printf '%s' "$admin_password" >"$DIR/admin-password"
printf '%s' "$bind_password" >"$DIR/bind-password"
chmod 600 "$DIR/admin-password" "$DIR/bind-password"
hash() { "$SLAPPASSWD" -s "$1"; }
admin_hash="$(hash "$admin_password")"
bind_hash="$(hash "$bind_password")"

SUFFIX="dc=example,dc=org"
ADMIN_DN="cn=admin,$SUFFIX"
BIND_DN="cn=countersign,ou=services,$SUFFIX"

# --- slapd.conf ---
cat >"$DIR/slapd.conf" <<EOF
# Generated by start-slapd.sh: a throwaway server for tests.
include $SCHEMA_DIR/core.schema
include $SCHEMA_DIR/cosine.schema
include $SCHEMA_DIR/inetorgperson.schema

modulepath $MODULE_DIR
moduleload back_mdb
moduleload memberof
moduleload refint
moduleload ppolicy

pidfile $DIR/slapd.pid
argsfile $DIR/slapd.args
loglevel none

TLSCACertificateFile $tls/ca.pem
TLSCertificateFile $tls/server.pem
TLSCertificateKeyFile $tls/server-key.pem
TLSProtocolMin 3.3

database mdb
maxsize 33554432
suffix "$SUFFIX"
rootdn "$ADMIN_DN"
rootpw $admin_hash
directory $DIR/db
index objectClass eq
index uid,mail,member,memberOf eq

limits dn.exact="$BIND_DN" size.soft=3 size.hard=3 size.prtotal=unlimited

overlay memberof
memberof-group-oc groupOfNames
memberof-member-ad member
memberof-memberof-ad memberOf
memberof-refint TRUE

overlay refint
refint_attributes member

overlay ppolicy
ppolicy_default "cn=default,ou=policies,$SUFFIX"

access to dn.base="" by * read
access to dn.base="cn=Subschema" by * read
access to attrs=userPassword
    by self write
    by anonymous auth
    by * none
access to *
    by dn.exact="$BIND_DN" read
    by self read
    by * none
EOF

# --- Sample data (loaded over LDAP so that the overlays see it) ---
person() {
    local uid="$1" given="$2" sn="$3"
    cat <<EOF
dn: uid=$uid,ou=people,$SUFFIX
objectClass: inetOrgPerson
uid: $uid
cn: $given $sn
sn: $sn
givenName: $given
displayName: $given $sn
mail: $uid@example.org
userPassword: $(hash "$uid-secret")

EOF
}
{
    cat <<EOF
dn: $SUFFIX
objectClass: dcObject
objectClass: organization
dc: example
o: Example

dn: ou=people,$SUFFIX
objectClass: organizationalUnit
ou: people

dn: ou=groups,$SUFFIX
objectClass: organizationalUnit
ou: groups

dn: ou=services,$SUFFIX
objectClass: organizationalUnit
ou: services

dn: ou=policies,$SUFFIX
objectClass: organizationalUnit
ou: policies

dn: cn=default,ou=policies,$SUFFIX
objectClass: device
objectClass: pwdPolicy
cn: default
pwdAttribute: userPassword
pwdLockout: TRUE
pwdMaxFailure: 5
pwdLockoutDuration: 300
pwdFailureCountInterval: 300

dn: $BIND_DN
objectClass: organizationalRole
objectClass: simpleSecurityObject
cn: countersign
description: Countersign directory sync (read-only)
userPassword: $bind_hash

EOF
    person alice Alice Anderson
    person bob Bob Brown
    person carol Carol Clark
    person dave Dave Davis
    cat <<EOF
dn: cn=vpn-users,ou=groups,$SUFFIX
objectClass: groupOfNames
cn: vpn-users
member: uid=alice,ou=people,$SUFFIX
member: uid=bob,ou=people,$SUFFIX

EOF
} >"$DIR/data.ldif"

run_quiet "$SLAPD" -Tt -u -f "$DIR/slapd.conf"

# --- Start on free loopback ports ---
# Ports come from 20000-32767, below Linux's ephemeral range, and are
# checked with a connect; another process can still take one first, so a
# failed start is retried with new ports.
port_is_free() {
    ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}
pick_port() {
    local p
    for _ in $(seq 1 100); do
        p=$((20000 + RANDOM % 12768))
        if [[ "$p" != "${1:-}" ]] && port_is_free "$p"; then
            echo "$p"
            return 0
        fi
    done
    return 1
}

timeout_s="${SLAPD_START_TIMEOUT:-60}"
started=""
for _ in 1 2 3 4 5; do
    ldap_port="$(pick_port)" || die "no free loopback port"
    ldaps_port="$(pick_port "$ldap_port")" || die "no free loopback port"
    "$SLAPD" -d stats -h "ldap://127.0.0.1:$ldap_port/ ldaps://127.0.0.1:$ldaps_port/" \
        -f "$DIR/slapd.conf" </dev/null >"$DIR/slapd.log" 2>&1 &
    pid=$!
    deadline=$((SECONDS + timeout_s))
    while ((SECONDS < deadline)); do
        if ! kill -0 "$pid" 2>/dev/null; then
            break
        fi
        if "$LDAPSEARCH" -x -LLL -o nettimeout=2 -H "ldap://127.0.0.1:$ldap_port" -b "" -s base \
            namingContexts >/dev/null 2>&1; then
            started=yes
            break
        fi
        sleep 0.1
    done
    if [[ -n "$started" ]]; then
        break
    fi
    if kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        tail -n 20 "$DIR/slapd.log" >&2 || true
        die "slapd did not answer within ${timeout_s}s"
    fi
    wait "$pid" 2>/dev/null || true
    if grep -q -i -E "address already in use|bind\(.*\) failed" "$DIR/slapd.log"; then
        continue
    fi
    tail -n 20 "$DIR/slapd.log" >&2 || true
    die "slapd exited during startup"
done
[[ -n "$started" ]] || die "could not find free ports for slapd"

stop_on_error() {
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}
trap stop_on_error ERR

# slapd writes its pid file itself; make sure it names the process we started.
[[ "$(cat "$DIR/slapd.pid" 2>/dev/null || true)" == "$pid" ]] || echo "$pid" >"$DIR/slapd.pid"

if ! "$LDAPADD" -x -o nettimeout=10 -H "ldap://127.0.0.1:$ldap_port" -D "$ADMIN_DN" -y "$DIR/admin-password" \
    -f "$DIR/data.ldif" >>"$SETUP_LOG" 2>&1; then
    tail -n 20 "$SETUP_LOG" >&2 || true
    stop_on_error
    die "loading the sample data failed"
fi

# carol is disabled: an administrative ppolicy lock.
if ! "$LDAPADD" -x -o nettimeout=10 -H "ldap://127.0.0.1:$ldap_port" -D "$ADMIN_DN" -y "$DIR/admin-password" \
    >>"$SETUP_LOG" 2>&1 <<EOF
dn: uid=carol,ou=people,$SUFFIX
changetype: modify
replace: pwdAccountLockedTime
pwdAccountLockedTime: 000001010000Z
EOF
then
    tail -n 20 "$SETUP_LOG" >&2 || true
    stop_on_error
    die "locking carol failed"
fi

# End to end: the bind user over ldaps:// with the test CA sees the people.
if ! LDAPTLS_CACERT="$tls/ca.pem" LDAPTLS_REQCERT=demand "$LDAPSEARCH" -x -LLL -o nettimeout=10 \
    -H "ldaps://127.0.0.1:$ldaps_port" -D "$BIND_DN" -y "$DIR/bind-password" \
    -b "ou=people,$SUFFIX" -E pr=10/noprompt "(uid=alice)" memberOf >>"$SETUP_LOG" 2>&1; then
    tail -n 20 "$SETUP_LOG" >&2 || true
    stop_on_error
    die "the ldaps:// check as the bind user failed"
fi
trap - ERR

echo "$ldap_port" >"$DIR/ldap-port"
echo "$ldaps_port" >"$DIR/ldaps-port"
