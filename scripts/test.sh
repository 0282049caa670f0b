#!/usr/bin/env bash
# Runs every check CI runs: formatting, the API contract, then the whole
# Swift suite (unit, store conformance, router, and real processes end to end).
set -euo pipefail
cd "$(dirname "$0")/.."

# What this script starts or makes is stopped and removed at exit.
cluster=""
scratch=""
cleanup() {
    if [ -n "$cluster" ]; then scripts/postgres-cluster.sh stop "$cluster"; fi
    if [ -n "$scratch" ]; then rm -rf "$scratch"; fi
}
trap cleanup EXIT

# Temporary files and directories of the build, the tests and the processes
# they start (brokers' data, agents' key files) all go under one directory.
scratch=$(mktemp -d /tmp/countersign-tests.XXXXXX)
export TMPDIR="$scratch"

# The build's and the suite's full output goes to files under .build/logs,
# kept after the run; what is printed here is short: a line per step, and
# on a failure the part of the log that says why. (A CI log is read by a
# person, and a runner may keep only its first part.)
logs="$PWD/.build/logs"
mkdir -p "$logs"
quietly() {
    local name=$1
    shift
    if ! "$@" >"$logs/$name.log" 2>&1; then
        echo "error: $name failed; the end of $logs/$name.log:" >&2
        grep -E "error:|warning:" "$logs/$name.log" | head -n 40 >&2 || true
        tail -n 60 "$logs/$name.log" >&2
        exit 1
    fi
    echo "$name: ok"
}

scripts/check-format.sh

# The end-to-end suite verifies event tokens with a Python JOSE library too,
# and the contract check validates proto/openapi.yaml as OpenAPI 3.1.
# authlib runs the OAuth flow as a third-party client would, and aiosmtpd is
# the real mail server the SMTP sender is tested against. pyte is the
# terminal emulator that shows what a person at the approver's terminal reads.
# http_ece and py_vapid are the push service's side of Web Push; dbus-next
# is the desktop's notification server; standardwebhooks is the app
# backend's side of webhooks; paramiko is the ssh client of the PAM tests;
# webauthn (py_webauthn) checks stored passkey assertions as a backend would;
# pyrad is a RADIUS client (a NAS) of the broker's listener.
if ! python3 -c "import joserfc, openapi_spec_validator, yaml, authlib, requests, aiosmtpd, cryptography, pyte, http_ece, py_vapid, dbus_next, standardwebhooks, paramiko, webauthn, cbor2, pyrad" 2>/dev/null; then
    python3 -m pip install --quiet joserfc openapi-spec-validator pyyaml authlib requests aiosmtpd cryptography pyte \
        http-ece py-vapid dbus-next standardwebhooks paramiko webauthn cbor2 pyrad
fi
python3 scripts/check-openapi.py

# The agent draws QR codes with Debian's libqrencode, and the tests read them
# back with zbar. Desktop notifications go over a real D-Bus session bus
# (dbus-daemon, GLib's gdbus), and systemd-analyze checks the user unit.
if [ ! -f /usr/include/qrencode.h ] || ! command -v zbarimg >/dev/null || ! command -v dbus-daemon >/dev/null \
    || ! command -v gdbus >/dev/null || ! command -v systemd-analyze >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libqrencode-dev zbar-tools dbus libglib2.0-bin \
            systemd >/dev/null
    else
        echo "error: building the agent needs Debian's libqrencode-dev; its tests zbar-tools, dbus," \
            "libglib2.0-bin and systemd" >&2
        exit 1
    fi
fi

# The broker reads directories with Debian's OpenLDAP client library; the
# tests run a throwaway slapd (not the system's: no_configuration keeps the
# package from setting one up) and its ldap-utils.
if [ ! -f /usr/include/ldap.h ] || [ ! -x /usr/sbin/slapd ] || ! command -v ldapadd >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
        echo "slapd slapd/no_configuration boolean true" | debconf-set-selections
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libldap-dev slapd ldap-utils >/dev/null
    else
        echo "error: building the broker needs Debian's libldap-dev; its tests slapd and ldap-utils" >&2
        exit 1
    fi
fi

# The PAM module is built with the system compiler against Debian's PAM
# headers and driven through a real PAM stack by pamtester, by a real sshd
# that paramiko logs into, and by the real sudo.
if [ ! -f /usr/include/security/pam_modules.h ] || ! command -v pamtester >/dev/null || ! command -v make >/dev/null \
    || [ ! -x /usr/sbin/sshd ] || [ ! -x /usr/bin/sudo ]; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libpam0g-dev pamtester make openssh-server sudo >/dev/null
    else
        echo "error: the PAM tests need root and Debian's libpam0g-dev, pamtester, make, openssh-server and sudo" >&2
        exit 1
    fi
fi

# Apache's mod_auth_openidc is a relying party in front of a site, run with
# the settings docs/sign-in-to-apps.md gives.
if [ ! -x /usr/sbin/apache2 ] || [ ! -f /usr/lib/apache2/modules/mod_auth_openidc.so ]; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq apache2 libapache2-mod-auth-openidc >/dev/null
    else
        echo "error: the Apache sign-in tests need Debian's apache2 and libapache2-mod-auth-openidc" >&2
        exit 1
    fi
fi

# FreeRADIUS's radclient is the other independent RADIUS client of the
# listener's tests, and FreeRADIUS itself the upstream server that checks
# a password before the approval. A real OpenVPN server and client, in a
# network namespace of their own, log in through the broker with Debian's
# RADIUS plugin and with deploy/openvpn's script (radclient).
if ! command -v radclient >/dev/null || [ ! -x /usr/sbin/freeradius ] || ! command -v openvpn >/dev/null \
    || [ ! -f /usr/lib/openvpn/radiusplugin.so ] || ! command -v ping >/dev/null || ! command -v ip >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq freeradius-utils freeradius openvpn \
            openvpn-auth-radius iputils-ping iproute2 openssl >/dev/null
    else
        echo "error: the RADIUS tests need Debian's freeradius-utils, freeradius, openvpn, openvpn-auth-radius," \
            "iputils-ping and iproute2" >&2
        exit 1
    fi
fi

# The hosted page is tested in a real headless browser, driven over WebDriver.
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
    else
        echo "error: the browser tests need Debian's chromium and chromium-driver packages" >&2
        exit 1
    fi
fi

# The PostgreSQL store and the multi-instance tests run against a throwaway
# cluster made here from the server binaries on this machine, stopped at exit.
if [ -z "${COUNTERSIGN_TEST_POSTGRES:-}" ]; then
    if ! command -v initdb >/dev/null && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
        if [ "$(id -u)" = 0 ]; then
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
        else
            echo "error: NO POSTGRESQL SERVER BINARIES (initdb, pg_ctl): install Debian's postgresql package;" \
                "the PostgreSQL tests are never skipped" >&2
            exit 1
        fi
    fi
    # The cluster serves TLS with a certificate made by openssl.
    if ! command -v openssl >/dev/null; then
        if [ "$(id -u)" = 0 ]; then
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssl >/dev/null
        else
            echo "error: the PostgreSQL test cluster needs Debian's openssl package" >&2
            exit 1
        fi
    fi
    cluster=$(mktemp -d /tmp/countersign-postgres.XXXXXX)
    COUNTERSIGN_TEST_POSTGRES=$(scripts/postgres-cluster.sh start "$cluster")
    export COUNTERSIGN_TEST_POSTGRES COUNTERSIGN_TEST_POSTGRES_CA="$cluster/tls/ca.pem"
    echo "PostgreSQL test cluster: $COUNTERSIGN_TEST_POSTGRES"
fi

# deploy/ is checked without a container engine: the compose file against
# the Compose specification's JSON schema, as docker-compose's Python package
# ships it (only the schema is read from the package; nothing is installed),
# and the systemd unit through systemd-analyze.
python3 -m pip download --quiet --no-deps --dest "$scratch/compose-schema" docker-compose==1.29.2
COUNTERSIGN_COMPOSE_WHEEL=$(ls "$scratch"/compose-schema/docker_compose-*.whl)
export COUNTERSIGN_COMPOSE_WHEEL

quietly build swift build --build-tests
# Our own code builds without warnings. A cold build (as in CI) compiles and
# reports every file; an incremental one only the files it compiled again.
ours=$(grep -E "^$PWD/(Sources|Tests)/[^:]+:[0-9]+:[0-9]+: warning:" "$logs/build.log" | sort -u || true)
if [ -n "$ours" ]; then
    echo "error: the build warns in our code:" >&2
    echo "$ours" >&2
    exit 1
fi
python3 scripts/check-deploy.py

# The man pages are made from the commands' help; each must render, name
# what it documents and Countersign in its header, show no Markdown
# backticks, and have FILES and EXIT STATUS sections.
if ! command -v man >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq man-db >/dev/null
    else
        echo "error: the man pages are checked with man(1): install Debian's man-db package" >&2
        exit 1
    fi
fi
scripts/man-pages.sh "$scratch/man" >/dev/null
for command in device-agent device-broker; do
    page=$(MANWIDTH=100 man -l "$scratch/man/$command.1" 2>/dev/null)
    grep -q "^ *$command subcommand" <<<"$page" \
        || { echo "error: the man page of $command does not render" >&2; exit 1; }
    head -n 1 <<<"$page" | grep -q "Countersign General Commands Manual" \
        || { echo "error: the man page of $command has another header: $(head -n 1 <<<"$page")" >&2; exit 1; }
    if grep -q '`' <<<"$page" || ! grep -q "^FILES" <<<"$page" || [ "$(grep -c "^EXIT STATUS" <<<"$page")" != 1 ]; then
        echo "error: the man page of $command shows backticks, or lacks FILES or one EXIT STATUS" >&2
        exit 1
    fi
done

# The contract, from the other side: schemathesis (an independent OpenAPI
# implementation) against a real broker, in its examples, coverage, fuzzing
# and stateful phases, with a fixed seed and a time budget; a schema-valid
# request refused for its shape fails it, as a server error does.
if ! python3 -c "import schemathesis" 2>/dev/null; then
    python3 -m pip install --quiet schemathesis
fi
python3 scripts/check-contract.py --bin .build/debug --seconds 90

# The suite runs in about two minutes on two cores, five on a slow machine.
# A test that waits for something that never comes must not hold CI until
# its own limit: past 40 minutes the run is stopped, and the summary names
# the tests that had not finished and the processes still running.
status=0
timeout --kill-after=30s 40m swift test --skip-build >"$logs/test.log" 2>&1 || status=$?
if [ "$status" = 124 ] || [ "$status" = 137 ]; then
    echo "error: the suite did not finish within 40 minutes" >&2
    ps -eo pid,ppid,etime,args --forest | cut -c1-200 >&2
fi
python3 scripts/test-summary.py "$logs/test.log" --status "$status"

# The packages, as a host without Swift installs them: built from this
# checkout (in debug, the suite's one build mode) with the Swift runtime
# linked in, checked by lintian, installed with dpkg. Then the broker runs
# from its unit's command line, and the PAM suites run against the module
# and helper the package installed.
if ! command -v lintian >/dev/null || ! command -v dpkg-shlibdeps >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq lintian dpkg-dev >/dev/null
    else
        echo "error: the packages are made with Debian's dpkg-dev and checked with lintian" >&2
        exit 1
    fi
fi
quietly package scripts/package.sh --configuration debug --out "$scratch/dist"
# The image's runtime packages against the libraries this build needs.
python3 scripts/check-deploy.py --with-package-build
if [ "$(id -u)" != 0 ]; then
    echo "error: the install test needs root (dpkg -i)" >&2
    exit 1
fi
dpkg --purge countersign-broker countersign-agent >/dev/null 2>&1 || true
quietly install dpkg -i "$scratch"/dist/countersign-broker_*.deb "$scratch"/dist/countersign-agent_*.deb
# Where no systemd runs (as here, often), the package says how to start it.
if [ ! -d /run/systemd/system ] && ! grep -q "systemd is not running here" "$logs/install.log"; then
    echo "error: without systemd, installing countersign-broker did not say how to start the broker" >&2
    exit 1
fi
status=0
COUNTERSIGN_TEST_PACKAGES=1 COUNTERSIGN_BIN_DIR=/usr/bin COUNTERSIGN_PAM_MODULE=pam_countersign.so \
    timeout --kill-after=30s 20m swift test --skip-build \
    --filter "InstalledPackagesTests|PAMEndToEndTests|SSHEndToEndTests|SudoEndToEndTests" \
    >"$logs/installed.log" 2>&1 || status=$?
if [ "$status" = 124 ] || [ "$status" = 137 ]; then
    echo "error: the installed packages' tests did not finish within 20 minutes" >&2
fi
python3 scripts/test-summary.py "$logs/installed.log" --status "$status"
# Installed over itself, the package takes its upgrade path (postinst's
# migrate on the store it finds) and keeps what the store holds.
as_broker=(runuser -u countersign -- device-broker)
"${as_broker[@]}" apikey create --name upgrade-check --config /etc/countersign/broker.conf >/dev/null
quietly reinstall dpkg -i "$scratch"/dist/countersign-broker_*.deb
if ! "${as_broker[@]}" apikey list --no-header --config /etc/countersign/broker.conf | grep -q "upgrade-check"; then
    echo "error: installing countersign-broker again lost the store's API key" >&2
    exit 1
fi
# Removing the broker's package keeps its data, and so does purging it.
dpkg --remove countersign-broker countersign-agent >/dev/null
if [ -e /usr/bin/device-broker ] || [ ! -f /var/lib/countersign/countersign.sqlite ]; then
    echo "error: removing countersign-broker left its binary or lost its data" >&2
    exit 1
fi
dpkg --purge countersign-broker countersign-agent >/dev/null 2>&1
if [ ! -f /var/lib/countersign/countersign.sqlite ] || [ -e /lib/systemd/system/countersign-broker.service ]; then
    echo "error: purging countersign-broker lost its data or left its unit" >&2
    exit 1
fi
echo "packages: built, installed, tested against, removed and purged (the data kept)"
