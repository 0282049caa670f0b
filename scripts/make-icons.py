#!/usr/bin/env python3
"""Draws the web approver's PNG icons (192 and 512 pixels) from the same
shapes as its icon.svg: a rounded square with a check mark. Pure Python
(zlib), so it runs anywhere; the PNGs are committed, run this only when the
icon changes: python3 scripts/make-icons.py DIRECTORY
"""
import sys

if any(argument in ("-h", "--help") for argument in sys.argv[1:]) or len(sys.argv) != 2:
    print(__doc__.strip())
    sys.exit(0 if len(sys.argv) == 2 else 2)
import math
import pathlib
import struct
import zlib

BLUE = (0x1D, 0x4F, 0x7A)
WHITE = (0xFF, 0xFF, 0xFF)
CHECK = [(150, 268), (222, 340), (362, 180)]  # in the 512-unit box of icon.svg


def inside_square(x, y):
    r = 96
    cx = min(max(x, r), 512 - r)
    cy = min(max(y, r), 512 - r)
    return (x - cx) ** 2 + (y - cy) ** 2 <= r * r


def on_check(x, y):
    for (ax, ay), (bx, by) in zip(CHECK, CHECK[1:]):
        dx, dy = bx - ax, by - ay
        t = max(0.0, min(1.0, ((x - ax) * dx + (y - ay) * dy) / (dx * dx + dy * dy)))
        if math.hypot(x - ax - t * dx, y - ay - t * dy) <= 24:
            return True
    return False


def pixel(px, py, size, samples=4):
    coverage = [0.0, 0.0]  # square, check
    for i in range(samples):
        for j in range(samples):
            x = (px + (i + 0.5) / samples) * 512 / size
            y = (py + (j + 0.5) / samples) * 512 / size
            if inside_square(x, y):
                coverage[1 if on_check(x, y) else 0] += 1
    total = samples * samples
    alpha = (coverage[0] + coverage[1]) / total
    if alpha == 0:
        return (0, 0, 0, 0)
    share = coverage[1] / (coverage[0] + coverage[1])
    color = [round(b + (w - b) * share) for b, w in zip(BLUE, WHITE)]
    return (*color, round(alpha * 255))


def png(size):
    rows = b"".join(
        b"\0" + b"".join(bytes(pixel(x, y, size)) for x in range(size)) for y in range(size))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")


out = pathlib.Path(sys.argv[1])
for size in (192, 512):
    (out / f"icon-{size}.png").write_bytes(png(size))
    print(f"wrote {out / f'icon-{size}.png'}")
