#!/usr/bin/env python3
"""Writes proto/vectors/webhooks.json: Standard Webhooks messages signed by
the `standardwebhooks` package from PyPI, an implementation independent of
the broker's, with fixed secrets, ids and timestamps (HMAC is
deterministic, so the broker must produce exactly these signatures). Each
case also records whether that package's receiver accepts the message at
the given time: a tampered body, a wrong secret and a stale timestamp are
refused. Needs: pip install standardwebhooks
Run: python3 scripts/generate-webhook-vectors.py
"""
import sys

if any(argument in ("-h", "--help") for argument in sys.argv[1:]):
    print(__doc__.strip())
    sys.exit(0)
import base64
import hashlib
import json
import pathlib
from datetime import datetime, timezone
from unittest import mock

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

OUT = pathlib.Path(__file__).resolve().parent.parent / "proto" / "vectors" / "webhooks.json"
NOW = 1_800_000_000


def secret(label: str) -> str:
    return "whsec_" + base64.b64encode(hashlib.sha256(label.encode()).digest()).decode()


def accepted(secret_text: str, body: str, headers: dict, at: int) -> bool:
    with mock.patch("standardwebhooks.webhooks.datetime") as clock:
        clock.now.return_value = datetime.fromtimestamp(at, tz=timezone.utc)
        clock.fromtimestamp = datetime.fromtimestamp
        try:
            Webhook(secret_text).verify(body, headers)
            return True
        except WebhookVerificationError:
            return False


BODY = ('{"data":{"event":{"ID":"ev_0123456789abcdef","status":"approved"}},'
        '"timestamp":"2027-01-15T08:00:00.000Z","type":"event.approved"}')
cases = []


def case(comment, secrets, body=BODY, msg_id="msg_2zVbq5QzPfjhYqR8ZtuvkQ", timestamp=NOW, receiver=None,
         sent_body=None, at=NOW):
    signature = " ".join(
        Webhook(s).sign(msg_id, datetime.fromtimestamp(timestamp, tz=timezone.utc), body) for s in secrets)
    headers = {"webhook-id": msg_id, "webhook-timestamp": str(timestamp), "webhook-signature": signature}
    receiver = receiver or secrets[0]
    cases.append({
        "tcId": len(cases) + 1, "comment": comment, "secrets": secrets, "id": msg_id, "timestamp": timestamp,
        "body": body, "signature": signature, "receiver_secret": receiver,
        "received_body": sent_body or body, "received_at": at,
        "result": "valid" if accepted(receiver, sent_body or body, headers, at) else "invalid",
    })


case("one secret", [secret("endpoint 1")])
case("two secrets during a rotation: the receiver with the new one accepts", [secret("old"), secret("new")],
     receiver=secret("new"))
case("two secrets during a rotation: the receiver with the old one accepts", [secret("old"), secret("new")],
     receiver=secret("old"))
case("a body with non-ASCII text", [secret("endpoint 2")], body='{"data":{"name":"Zoë’s 東京 laptop"},"type":"device.enrolled"}')
case("a tampered body is refused", [secret("endpoint 1")], sent_body=BODY.replace("approved", "rejected"))
case("a receiver with another secret refuses", [secret("endpoint 1")], receiver=secret("someone else"))
case("a message older than five minutes is refused", [secret("endpoint 1")], at=NOW + 301)
case("a message from the future is refused", [secret("endpoint 1")], timestamp=NOW + 301)
OUT.write_text(json.dumps({"specification": "Standard Webhooks, v1 signatures", "tests": cases}, indent=2,
                          ensure_ascii=False) + "\n")
print(f"wrote {OUT}")
