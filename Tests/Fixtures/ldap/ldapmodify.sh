#!/usr/bin/env bash
# Changes the test directory as its administrator (cn=admin,dc=example,dc=org)
# over StartTLS: LDIF on standard input, as ldapmodify reads it. Extra
# arguments go to ldapmodify (e.g. -c to continue after errors).
#
#   Tests/Fixtures/ldap/ldapmodify.sh DIR < change.ldif
#
# Disable a user (administrative ppolicy lock, as start-slapd.sh does for carol):
#   dn: uid=bob,ou=people,dc=example,dc=org
#   changetype: modify
#   replace: pwdAccountLockedTime
#   pwdAccountLockedTime: 000001010000Z
#
# Enable again:
#   dn: uid=carol,ou=people,dc=example,dc=org
#   changetype: modify
#   delete: pwdAccountLockedTime
#
# Remove a user (refint also drops them from groups):
#   dn: uid=dave,ou=people,dc=example,dc=org
#   changetype: delete
#
# Add to a group (memberOf follows):
#   dn: cn=vpn-users,ou=groups,dc=example,dc=org
#   changetype: modify
#   add: member
#   member: uid=dave,ou=people,dc=example,dc=org
#
# Quiet on success; on failure ldapmodify's messages go to stderr and the
# exit status is non-zero.
set -euo pipefail

if [[ $# -lt 1 || -z "$1" ]]; then
    echo "usage: $0 DIR [ldapmodify options] < change.ldif" >&2
    exit 2
fi
DIR="$(cd "$1" && pwd)"
shift
[[ -s "$DIR/ldap-port" ]] || { echo "ldapmodify.sh: no slapd started in $DIR" >&2; exit 1; }
LDAPMODIFY="$(command -v ldapmodify || echo /usr/bin/ldapmodify)"

unset LDAPURI LDAPBASE LDAPBINDDN LDAPTLS_CACERTDIR LDAPTLS_CERT LDAPTLS_KEY
export LDAPRC=/nonexistent LDAPCONF="$DIR/ldap-client.conf"
LDAPTLS_CACERT="$DIR/tls/ca.pem" LDAPTLS_REQCERT=demand \
    "$LDAPMODIFY" -x -ZZ -o nettimeout=10 -H "ldap://127.0.0.1:$(cat "$DIR/ldap-port")" \
    -D "cn=admin,dc=example,dc=org" -y "$DIR/admin-password" "$@" >/dev/null
