#!/usr/bin/env python3
"""Prints the frame (async context) size of every async function in a binary.

A suspended task keeps the frames of its whole call chain, in slabs of its
task allocator that it keeps until it ends; a held long-poll keeps its
connection task's. The size is the second 32-bit word of each async
function pointer (the symbols ending in "Tu").

usage: scripts/async-frame-sizes.py .build/release/device-broker [REGEX]
"""
import sys

# Asked for help (or given too few arguments), say how to run it, before
# importing what only the test script installs.
if any(argument in ("-h", "--help") for argument in sys.argv[1:]):
    print(__doc__.strip())
    sys.exit(0)
if len(sys.argv) < 2:
    print(__doc__.strip(), file=sys.stderr)
    sys.exit(2)
import re
import signal
import subprocess
import sys


def sections(binary):
    out = subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if m and m.group(2) != "NOBITS" and int(m.group(3), 16):
            found.append((int(m.group(3), 16), int(m.group(4), 16), int(m.group(5), 16)))
    return found


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet when piped to head
    binary = sys.argv[1]
    pattern = re.compile(sys.argv[2]) if len(sys.argv) > 2 else None
    data = open(binary, "rb").read()
    mapped = sections(binary)
    sizes = []
    for line in subprocess.run(["nm", binary], capture_output=True, text=True, check=True).stdout.splitlines():
        parts = line.split()
        if len(parts) != 3 or not parts[2].endswith("Tu"):
            continue
        address = int(parts[0], 16)
        for start, offset, size in mapped:
            if start <= address < start + size:
                at = offset + address - start
                sizes.append((int.from_bytes(data[at + 4:at + 8], "little"), parts[2]))
                break
    sizes.sort(reverse=True)
    names = subprocess.run(
        ["swift", "demangle", "--simplified"], input="\n".join(name for _, name in sizes),
        capture_output=True, text=True, check=True).stdout.splitlines()
    for (size, _), name in zip(sizes, names):
        name = name.removeprefix("async function pointer to ")
        if pattern is None or pattern.search(name):
            print(f"{size:6d}  {name}")


if __name__ == "__main__":
    main()
