#!/usr/bin/env python3
"""A webhook receiver for tests that checks every message with the
`standardwebhooks` package from PyPI, independent of the broker.

Messages are POSTed to /hooks/NAME; NAME's secrets (any one may verify)
and the status it answers a verified message with are set over the
control API. The package's own checks apply, its five-minute timestamp
tolerance included, so a message signed at the wrong time is refused.
A refused message is answered 400 and recorded with why.

Control API (JSON): POST /control/endpoints/NAME with {"secrets": [...],
"status": N} sets NAME's secrets (and status, 204 by default);
POST /control/endpoints/NAME/status with {"status": N} sets the status
(0: take the message, record it, and never answer);
GET /control/received[?name=NAME] lists what arrived, in order.

Usage: webhook-receiver.py --state FILE [--port N]
Prints "listening on http://127.0.0.1:PORT" once it listens. The state
file keeps the endpoints and what arrived, so a restart on the same port
and file continues where it stopped. Needs: pip install standardwebhooks
"""
import sys

if any(argument in ("-h", "--help") for argument in sys.argv[1:]):
    print(__doc__.strip())
    sys.exit(0)
import argparse
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

from standardwebhooks.webhooks import Webhook

parser = argparse.ArgumentParser()
parser.add_argument("--state", required=True)
parser.add_argument("--port", type=int, default=0)
args = parser.parse_args()

lock = threading.Lock()
state = {"endpoints": {}, "received": []}
if os.path.exists(args.state):
    with open(args.state) as file:
        state = json.load(file)


def save():
    temporary = args.state + ".tmp"
    with open(temporary, "w") as file:
        json.dump(state, file)
    os.replace(temporary, args.state)


def verdict(name, headers, body):
    """None if one of NAME's secrets verifies the message, else why not."""
    endpoint = state["endpoints"].get(name)
    if not endpoint or not endpoint["secrets"]:
        return "unknown endpoint"
    reasons = []
    for secret in endpoint["secrets"]:
        try:
            Webhook(secret).verify(body, headers)
            return None
        except Exception as error:  # the package's refusal, whatever its class
            reasons.append(f"{type(error).__name__}: {error}")
    return "; ".join(reasons)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    def answer(self, status, document=None):
        body = json.dumps(document).encode() if document is not None else b""
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        if body:
            self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length > 1 << 20:
            return None
        return self.rfile.read(length)

    def do_GET(self):
        url = urlparse(self.path)
        if url.path != "/control/received":
            return self.answer(404, {"error": "not_found"})
        name = parse_qs(url.query).get("name", [None])[0]
        with lock:
            received = [entry for entry in state["received"] if name is None or entry["name"] == name]
        self.answer(200, received)

    def do_POST(self):
        parts = urlparse(self.path).path.strip("/").split("/")
        body = self.read_body()
        if parts[:2] == ["control", "endpoints"] and len(parts) in (3, 4):
            document = json.loads(body or b"{}")
            with lock:
                endpoint = state["endpoints"].setdefault(parts[2], {"secrets": [], "status": 204})
                if len(parts) == 3:
                    endpoint["secrets"] = document.get("secrets", [])
                if "status" in document:
                    endpoint["status"] = int(document["status"])
                save()
            return self.answer(200, {})
        if len(parts) != 2 or parts[0] != "hooks":
            return self.answer(404, {"error": "not_found"})
        name = parts[1]
        headers = {key.lower(): value for key, value in self.headers.items()}
        entry = {
            "name": name,
            "id": headers.get("webhook-id"),
            "timestamp": int(headers["webhook-timestamp"]) if headers.get("webhook-timestamp", "").isdigit() else None,
            "signature": headers.get("webhook-signature"),
            "body": None,
            "raw": "",
            "verified": False,
            "refused": None,
            "answered": 400,
            "at": time.time(),
        }
        if body is None:
            entry["refused"] = "too large"
            entry["answered"] = 413
        else:
            entry["raw"] = body.decode("utf-8", "replace")
            try:
                entry["body"] = json.loads(body)
            except ValueError:
                pass
            with lock:
                why = verdict(name, headers, body)
                status = state["endpoints"].get(name, {}).get("status", 204)
            if why is None:
                entry["verified"] = True
                entry["answered"] = status
            else:
                entry["refused"] = why
                entry["answered"] = 404 if why == "unknown endpoint" else 400
        with lock:
            state["received"].append(entry)
            save()
        if entry["answered"] == 0:
            # Taken and never answered: the sender gives up first.
            time.sleep(120)
            self.close_connection = True
            return
        self.answer(entry["answered"], {"refused": entry["refused"]} if entry["refused"] else None)


server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
server.daemon_threads = True
print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
server.serve_forever()
