#!/usr/bin/env bash
# Writes the man pages of device-agent and device-broker into DIRECTORY,
# made from the same text as their --help (swift-argument-parser's
# generate-manual reads each command's help as JSON).
#
#   scripts/man-pages.sh DIRECTORY [swift build options, e.g. -c release]
#
# Then: man -l DIRECTORY/device-agent.1, or copy the pages into a man1
# directory on MANPATH (e.g. /usr/local/share/man/man1).
set -euo pipefail
if [ $# -lt 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
    sed -n '2,9s/^# \{0,1\}//p' "$0"
    [ $# -ge 1 ] && exit 0 || exit 2
fi
out=$1
shift
cd "$(dirname "$0")/.."
for product in device-agent device-broker generate-manual; do
    swift build --product "$product" "$@" >/dev/null
done
bin=$(swift build --show-bin-path "$@")
mkdir -p "$out"
version=$("$bin/device-agent" --version)
for command in device-agent device-broker; do
    "$bin/generate-manual" "$bin/$command" --section 1 --authors "the Countersign authors" --output-directory "$out"
    scripts/man-finish.sh "$command" "$version" <"$out/$command.1" >"$out/$command.1.finished"
    mv "$out/$command.1.finished" "$out/$command.1"
done
ls "$out"
