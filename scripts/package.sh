#!/usr/bin/env bash
# Builds Countersign's Debian packages and release tarball from this
# checkout, with the Swift runtime linked into each binary, so that a host
# without a Swift toolchain runs them.
#
#   scripts/package.sh [--out DIR] [--configuration release|debug]
#
# DIR (default dist/) then holds:
#   countersign-broker_VERSION_amd64.deb   the broker, its unit, user, settings
#   countersign-agent_VERSION_amd64.deb    device-agent and the PAM module
#   countersign-VERSION-linux-amd64.tar.gz the three binaries
#   SHA256SUMS
# Releases are built in release mode (the default); CI packages its debug
# build, to keep to one build mode. The build has its own directory,
# .build/package-CONFIGURATION. Needs Debian's dpkg-dev, make, libpam0g-dev
# and libqrencode-dev; lintian, when present, checks the packages.
set -euo pipefail
usage() { sed -n '2,18s/^# \{0,1\}//p' "$0"; }
out=dist
configuration=release
while [ $# -gt 0 ]; do
    case "$1" in
    --out) out=$2; shift 2 ;;
    --configuration) configuration=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "error: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
done
case "$configuration" in release | debug) ;; *) echo "error: --configuration is release or debug" >&2; exit 2 ;; esac
cd "$(dirname "$0")/.."
root=$PWD
# Whoever made the commit packaged is the maintainer the packages name.
maintainer=${COUNTERSIGN_MAINTAINER:-$(git log -1 --format='%an <%ae>')}
years="$(git log --reverse --format=%ad --date=format:%Y | head -n 1)-$(git log -1 --format=%ad --date=format:%Y)"
mkdir -p "$out"
out=$(cd "$out" && pwd)
version=$(sed -n 's/.*static let current = "\(.*\)".*/\1/p' Sources/CountersignCore/CountersignVersion.swift)
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
[ "$arch" = amd64 ] || { echo "error: packages are made for amd64, not $arch" >&2; exit 1; }

# The Swift runtime and Foundation linked in; no RUNPATH into the build
# directory or the toolchain (readelf -d shows only Debian's libraries).
build=(swift build -c "$configuration" --static-swift-stdlib --disable-local-rpath
    --scratch-path "$root/.build/package-$configuration")
for product in device-broker device-agent countersign-bench generate-manual; do
    "${build[@]}" --product "$product" >&2
done
bin=$("${build[@]}" --show-bin-path)
for binary in device-broker device-agent countersign-bench; do
    if readelf -d "$bin/$binary" | grep -E 'RUNPATH|RPATH|libswift|libFoundation|libdispatch' >&2; then
        echo "error: $binary still needs the toolchain's libraries" >&2
        exit 1
    fi
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Stripped: the symbols are for the build that made them (the debug build
# keeps its own copy in .build).
for binary in device-broker device-agent countersign-bench; do
    strip --strip-unneeded -o "$work/$binary" "$bin/$binary"
done
mkdir "$work/man"
make -s -C deploy/pam OUT="$work/pam_countersign.so" CFLAGS="-O2" >&2
strip --strip-unneeded "$work/pam_countersign.so"
"$bin/generate-manual" "$bin/device-broker" --section 1 --authors "the Countersign authors" \
    --output-directory "$work/man" >&2
"$bin/generate-manual" "$bin/device-agent" --section 1 --authors "the Countersign authors" \
    --output-directory "$work/man" >&2

# What every package of ours holds besides its files: the documents
# Debian's policy asks for, completions and the man page.
common() {
    local tree=$1 package=$2 command=$3
    install -d "$tree/DEBIAN" "$tree/usr/share/doc/$package" "$tree/usr/share/man/man1" \
        "$tree/usr/share/bash-completion/completions" "$tree/usr/share/zsh/vendor-completions" \
        "$tree/usr/share/fish/vendor_completions.d"
    scripts/man-finish.sh "$command" "$version" <"$work/man/$command.1" | gzip -9n \
        >"$tree/usr/share/man/man1/$command.1.gz"
    # Sourced, not run: without its #! line.
    "$work/$command" --generate-completion-script bash | sed '1{/^#!/d}' \
        >"$tree/usr/share/bash-completion/completions/$command"
    install -D -m 0644 "deploy/debian/$package.lintian-overrides" "$tree/usr/share/lintian/overrides/$package"
    "$work/$command" --generate-completion-script zsh >"$tree/usr/share/zsh/vendor-completions/_$command"
    "$work/$command" --generate-completion-script fish >"$tree/usr/share/fish/vendor_completions.d/$command.fish"
    cat >"$tree/usr/share/doc/$package/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: countersign
Source: the Countersign source repository

Files: *
Copyright: $years the Countersign authors
License: unspecified
 The Countersign source repository states the terms under which it may be
 used and distributed.
EOF
    local date
    date=$(git log -1 --format=%aD 2>/dev/null || date -R)
    printf '%s (%s) unstable; urgency=medium\n\n  * Release %s.\n\n -- %s  %s\n' \
        "$package" "$version" "$version" "$maintainer" "$date" | gzip -9n >"$tree/usr/share/doc/$package/changelog.gz"
}

# Depends: what dpkg-shlibdeps finds the binaries need, from the packages
# installed here that provide those libraries.
depends() {
    local scratch
    scratch=$(mktemp -d)
    mkdir "$scratch/debian"
    touch "$scratch/debian/control"
    (cd "$scratch" && dpkg-shlibdeps -O "$@" 2>/dev/null) | sed -n 's/^shlibs:Depends=//p'
    rm -rf "$scratch"
}

finish() {
    local tree=$1 package=$2
    find "$tree" -path "$tree/DEBIAN" -prune -o -type f -print0 | sort -z \
        | xargs -0 md5sum | sed "s|  $tree/|  |" >"$tree/DEBIAN/md5sums"
    dpkg-deb --root-owner-group -Zxz --build "$tree" "$out/${package}_${version}_${arch}.deb" >&2
}

# The agent: device-agent, the PAM module where Debian's own are, the user
# service that raises a notification for each request.
agent=$work/agent
common "$agent" countersign-agent device-agent
install -D -m 0755 "$work/device-agent" "$agent/usr/bin/device-agent"
install -D -m 0644 "$work/pam_countersign.so" "$agent/lib/$multiarch/security/pam_countersign.so"
install -D -m 0644 deploy/countersign-watch.service "$agent/usr/lib/systemd/user/countersign-watch.service"
gzip -9n <docs/pam.md >"$agent/usr/share/doc/countersign-agent/pam.md.gz"
cat >"$agent/DEBIAN/control" <<EOF
Package: countersign-agent
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $(du -sk "$agent" | cut -f1)
Depends: $(depends "$agent/usr/bin/device-agent" "$agent/lib/$multiarch/security/pam_countersign.so")
Recommends: libglib2.0-bin
Section: admin
Priority: optional
Description: sign in by approving on a device you trust (agent and PAM module)
 device-agent enrolls this machine as a user's trusted device, logs in by
 approval, and approves or rejects requests, with desktop notifications.
 pam_countersign.so makes SSH and sudo logins wait for an approval on the
 user's trusted device (see /usr/share/doc/countersign-agent/pam.md.gz).
EOF
finish "$agent" countersign-agent

# The broker: its unit, system user, settings and data directory.
broker=$work/broker
common "$broker" countersign-broker device-broker
install -D -m 0755 "$work/device-broker" "$broker/usr/bin/device-broker"
install -D -m 0644 deploy/countersign-broker.service "$broker/lib/systemd/system/countersign-broker.service"
# 0644 as shipped, with nothing secret in it; postinst makes it 0640
# root:countersign, as it must be once it holds a database password.
install -D -m 0644 deploy/broker.conf "$broker/etc/countersign/broker.conf"
gzip -9n <docs/operations.md >"$broker/usr/share/doc/countersign-broker/operations.md.gz"
gzip -9n <docs/radius.md >"$broker/usr/share/doc/countersign-broker/radius.md.gz"
# For the OpenVPN server's machine (docs/radius.md): copied there, not run here.
install -D -m 0644 deploy/openvpn/countersign-radius-auth "$broker/usr/share/countersign/openvpn/countersign-radius-auth"
# An app backend's own checks, run as python3 FILE (joserfc, and
# py_webauthn for passkeys, from pip: README): not executables of the package.
for check in verify-event-token.py verify-decision.py; do
    install -D -m 0644 "scripts/$check" "$broker/usr/share/countersign/$check"
done
echo /etc/countersign/broker.conf >"$broker/DEBIAN/conffiles"
for script in postinst prerm postrm; do
    install -m 0755 "deploy/debian/countersign-broker.$script" "$broker/DEBIAN/$script"
done
cat >"$broker/DEBIAN/control" <<EOF
Package: countersign-broker
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $(du -sk "$broker" | cut -f1)
Depends: $(depends "$broker/usr/bin/device-broker"), adduser
Suggests: python3
Section: admin
Priority: optional
Description: sign in by approving on a device you trust (broker)
 The Countersign broker: devices countersign login and transaction requests
 with their own keys, and requesters are woken when the decision lands.
 SQLite by default, PostgreSQL for several instances. Settings are in
 /etc/countersign/broker.conf, data in /var/lib/countersign.
EOF
finish "$broker" countersign-broker

# The binaries alone, for a machine that does not take Debian packages.
tarball=countersign-$version-linux-$arch
mkdir "$work/$tarball"
cp "$work/device-broker" "$work/device-agent" "$work/countersign-bench" "$work/pam_countersign.so" \
    deploy/countersign-broker.service deploy/broker.conf README.md scripts/verify-event-token.py \
    scripts/verify-decision.py deploy/openvpn/countersign-radius-auth "$work/$tarball/"
tar -C "$work" --owner=0 --group=0 --numeric-owner --sort=name -czf "$out/$tarball.tar.gz" "$tarball"

cd "$out"
sha256sum "countersign-broker_${version}_${arch}.deb" "countersign-agent_${version}_${arch}.deb" \
    "$tarball.tar.gz" >SHA256SUMS
if command -v lintian >/dev/null; then
    lintian --fail-on error ./*.deb >&2
fi
ls -l "$out"
