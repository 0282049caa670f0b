#!/usr/bin/env python3
"""Writes proto/vectors/web-push.json: Web Push payloads encrypted with the
aes128gcm content coding (RFC 8188) under RFC 8291's keys, made by Python's
http_ece, an implementation independent of the broker's.

The keys and salts are fixed, so the output is the same on every run and
the Swift tests can require the broker's bytes to be exactly these. Each
case also carries the subscriber's private key, so that a reader can check
by decrypting. Needs: pip install http-ece cryptography
Run: python3 scripts/generate-push-vectors.py
"""
import sys

if any(argument in ("-h", "--help") for argument in sys.argv[1:]):
    print(__doc__.strip())
    sys.exit(0)
import base64
import hashlib
import json
import pathlib

import http_ece
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives import serialization

OUT = pathlib.Path(__file__).resolve().parent.parent / "proto" / "vectors" / "web-push.json"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def key(label: str) -> ec.EllipticCurvePrivateKey:
    # A fixed private scalar derived from a label (well inside the curve's order).
    scalar = int.from_bytes(hashlib.sha256(label.encode()).digest(), "big") >> 1
    return ec.derive_private_key(scalar, ec.SECP256R1())


def point(private: ec.EllipticCurvePrivateKey) -> bytes:
    return private.public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)


def case(number: int, comment: str, plaintext: bytes) -> dict:
    subscriber = key(f"subscriber {number}")
    sender = key(f"sender {number}")
    auth = hashlib.sha256(f"auth {number}".encode()).digest()[:16]
    salt = hashlib.sha256(f"salt {number}".encode()).digest()[:16]
    body = http_ece.encrypt(
        plaintext, salt=salt, private_key=sender, dh=point(subscriber), auth_secret=auth,
        version="aes128gcm", rs=4096)
    # Checked here too: the subscriber's side opens it.
    assert http_ece.decrypt(body, private_key=subscriber, auth_secret=auth, version="aes128gcm") == plaintext
    return {
        "tcId": number, "comment": comment,
        "plaintext": b64url(plaintext),
        "p256dh": b64url(point(subscriber)), "auth": b64url(auth),
        "subscriber_private_key": b64url(subscriber.private_numbers().private_value.to_bytes(32, "big")),
        "sender_private_key": b64url(sender.private_numbers().private_value.to_bytes(32, "big")),
        "salt": b64url(salt),
        "body": b64url(body),
    }


cases = [
    case(1, "a push notice as the broker sends it",
         b'{"app":"demo","event_id":"ev_0123456789abcdef","expires_at":"2027-01-15T08:00:00.000Z",'
         b'"title":"Sign-in request","type":"event.pending"}'),
    # Not an empty payload: http_ece writes no record at all for one, where
    # RFC 8188 wants one record holding only the delimiter (as the broker does).
    case(2, "a one-byte payload", b"{"),
    case(3, "the largest payload one 4096-byte record takes", b"x" * (4096 - 86 - 16 - 1)),
]
OUT.write_text(json.dumps({
    "algorithm": "Web Push message encryption, RFC 8291 (aes128gcm, RFC 8188), record size 4096",
    "tests": cases,
}, indent=2) + "\n")
print(f"wrote {OUT}")
