#!/usr/bin/env python3
"""Reads a QR code drawn with block characters (two rows of modules per
line, as `device-agent devices add-phone` prints it) from standard input,
draws it as a PNG and decodes it with zbarimg (Debian's zbar-tools), an
implementation independent of the one that drew it. Prints what it says.

Usage: device-agent devices add-phone ... | python3 scripts/read-terminal-qr.py
"""
import sys

if any(argument in ("-h", "--help") for argument in sys.argv[1:]):
    print(__doc__.strip())
    sys.exit(0)
import re
import struct
import subprocess
import tempfile
import zlib

HALVES = {"█": (1, 1), "▀": (1, 0), "▄": (0, 1), " ": (0, 0)}
text = re.sub(r"\x1b\[[0-9;]*m", "", sys.stdin.read())
lines = [line.strip("\n") for line in text.splitlines() if any(c in line for c in "█▀▄")]
if not lines:
    sys.exit("no QR code in the input")
indent = min(len(line) - len(line.lstrip(" ")) for line in lines)
width = max(len(line) for line in lines) - indent
rows = []
for line in lines:
    cells = line[indent:].ljust(width)
    top, bottom = zip(*(HALVES[c] for c in cells))
    rows += [top, bottom]

scale, border = 6, 4
size_x, size_y = (width + 2 * border) * scale, (len(rows) + 2 * border) * scale
raw = bytearray()
for y in range(size_y):
    raw.append(0)
    my = y // scale - border
    for x in range(size_x):
        mx = x // scale - border
        dark = 0 <= my < len(rows) and 0 <= mx < width and rows[my][mx]
        raw.append(0 if dark else 255)


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size_x, size_y, 8, 0, 0, 0, 0))
       + chunk(b"IDAT", zlib.compress(bytes(raw))) + chunk(b"IEND", b""))
with tempfile.NamedTemporaryFile(suffix=".png") as image:
    image.write(png)
    image.flush()
    result = subprocess.run(["zbarimg", "--raw", "-q", image.name], capture_output=True, text=True)
if result.returncode != 0:
    sys.exit(f"zbarimg could not read the code: {result.stderr.strip()}")
print(result.stdout.strip())
