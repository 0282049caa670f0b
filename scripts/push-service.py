#!/usr/bin/env python3
"""A Web Push service for tests, written from RFC 8030, RFC 8291 and
RFC 8292 with Python's http_ece and py_vapid, independent of the broker.

It plays both the push service and the subscriber: it makes subscriptions
(an EC key pair and an auth secret per subscription), takes the broker's
pushes, checks each one's VAPID token (signature with py_vapid, then the
audience, expiry and subject; the key must be the broker's published one)
and decrypts its payload with http_ece. A push that fails a check is
answered 400 and recorded as refused, with why.

Control API (JSON): POST /control/subscriptions makes one and returns
{id, endpoint, p256dh, auth}; POST /control/subscriptions/ID/status with
{"status": 410} makes its pushes answer that status from then on (0: take
the push, record it as hanging, and never answer);
GET /control/received lists what arrived.

Usage: push-service.py --broker URL --state FILE [--port N]
Prints "listening on http://127.0.0.1:PORT" once it listens. The state file
keeps subscriptions and what arrived, so a restart on the same port and
file continues where it stopped. Needs: pip install http-ece py-vapid
"""
import sys

if any(argument in ("-h", "--help") for argument in sys.argv[1:]):
    print(__doc__.strip())
    sys.exit(0)
import argparse
import base64
import json
import os
import secrets
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import http_ece
import py_vapid
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


parser = argparse.ArgumentParser()
parser.add_argument("--broker", required=True)
parser.add_argument("--state", required=True)
parser.add_argument("--port", type=int, default=0)
args = parser.parse_args()

lock = threading.Lock()
state = {"subscriptions": {}, "received": []}
if os.path.exists(args.state):
    with open(args.state) as file:
        state = json.load(file)


def save():
    with open(args.state + ".new", "w") as file:
        json.dump(state, file)
    os.replace(args.state + ".new", args.state)


def broker_vapid_key() -> str:
    with urllib.request.urlopen(args.broker + "/api/v1/push/vapid-key", timeout=10) as response:
        return json.load(response)["public_key"]


def check_vapid(header: str, origin: str) -> dict:
    """The token's claims, once every RFC 8292 check holds; raises otherwise."""
    scheme, _, params = header.partition(" ")
    if scheme.lower() != "vapid":
        raise ValueError(f"Authorization scheme is {scheme!r}, not vapid")
    parts = dict(part.strip().split("=", 1) for part in params.split(","))
    if not py_vapid.Vapid02.verify(header):
        raise ValueError("the VAPID token's signature does not verify with k")
    if parts["k"] != broker_vapid_key():
        raise ValueError("k is not the broker's published VAPID key")
    header_b64, claims_b64, _ = parts["t"].split(".")
    if json.loads(unb64url(header_b64)).get("alg") != "ES256":
        raise ValueError("the VAPID token is not ES256")
    claims = json.loads(unb64url(claims_b64))
    if claims.get("aud") != origin:
        raise ValueError(f"aud is {claims.get('aud')!r}, not this push service's origin {origin!r}")
    now = time.time()
    if not isinstance(claims.get("exp"), int):
        raise ValueError(f"exp {claims.get('exp')!r} is not an integer (NumericDate, as push services parse it)")
    if not now < claims["exp"] <= now + 86400:
        raise ValueError(f"exp {claims.get('exp')} is not within the next 24 hours")
    if not str(claims.get("sub", "")).startswith(("mailto:", "https:")):
        raise ValueError(f"sub {claims.get('sub')!r} is not a mailto: or https: URL")
    return claims


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *_):
        pass

    def answer(self, status: int, document=None):
        body = json.dumps(document).encode() if document is not None else b""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def do_GET(self):
        if self.path == "/control/received":
            with lock:
                return self.answer(200, state["received"])
        self.answer(404)

    def do_POST(self):
        origin = f"http://127.0.0.1:{self.server.server_port}"
        path = self.path.split("?")[0]
        if path == "/control/subscriptions":
            key = ec.generate_private_key(ec.SECP256R1())
            sid = secrets.token_urlsafe(12)
            subscription = {
                "id": sid, "endpoint": f"{origin}/push/{sid}",
                "p256dh": b64url(key.public_key().public_bytes(
                    serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)),
                "auth": b64url(secrets.token_bytes(16)),
                "private_key": key.private_bytes(
                    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                    serialization.NoEncryption()).decode(),
                "status": 201,
            }
            with lock:
                state["subscriptions"][sid] = subscription
                save()
            return self.answer(201, {k: subscription[k] for k in ("id", "endpoint", "p256dh", "auth")})
        if path.startswith("/control/subscriptions/") and path.endswith("/status"):
            sid = path.split("/")[3]
            with lock:
                state["subscriptions"][sid]["status"] = json.loads(self.body())["status"]
                save()
            return self.answer(200, {})
        if path.startswith("/push/"):
            return self.push(path.split("/")[2], origin)
        self.answer(404)

    def push(self, sid: str, origin: str):
        body = self.body()
        with lock:
            subscription = state["subscriptions"].get(sid)
        if subscription is None:
            return self.answer(404)
        if subscription["status"] == 0:
            with lock:
                state["received"].append({"subscription": sid, "at": time.time(), "status": 0, "hanging": True})
                save()
            time.sleep(3600)
            return
        record = {
            "subscription": sid, "at": time.time(), "ttl": self.headers.get("TTL"),
            "urgency": self.headers.get("Urgency"), "content_encoding": self.headers.get("Content-Encoding"),
            "status": subscription["status"],
        }
        try:
            if self.headers.get("Content-Encoding") != "aes128gcm":
                raise ValueError("Content-Encoding is not aes128gcm")
            if self.headers.get("TTL") is None:
                raise ValueError("no TTL header (RFC 8030 requires one)")
            record["vapid"] = check_vapid(self.headers.get("Authorization", ""), origin)
            key = serialization.load_pem_private_key(subscription["private_key"].encode(), None)
            plaintext = http_ece.decrypt(
                body, private_key=key, auth_secret=unb64url(subscription["auth"]), version="aes128gcm")
            record["payload"] = json.loads(plaintext)
        except Exception as error:  # recorded for the test to read, answered 400
            record["refused"] = f"{type(error).__name__}: {error}"
            record["status"] = 400
        with lock:
            state["received"].append(record)
            save()
        self.answer(record["status"], {} if record["status"] < 300 else {"error": record.get("refused", "gone")})


server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
print(f"listening on http://127.0.0.1:{server.server_port}", flush=True)
server.serve_forever()
