#!/usr/bin/env python3
"""Writes Tests/Fixtures/radius/vectors.json: RADIUS packets made by pyrad
(PyPI), an implementation independent of the broker's, with fixed secrets,
identifiers and authenticators: Access-Requests with hidden passwords of
one and of several blocks, with and without a Message-Authenticator (RFC
3579), and the answers pyrad's server side signs for them. The broker's
codec must read each request as pyrad meant it and accept each answer.
Needs: pip install pyrad
Run: python3 scripts/generate-radius-vectors.py
"""
import sys

if any(argument in ("-h", "--help") for argument in sys.argv[1:]):
    print(__doc__.strip())
    sys.exit(0)
import io
import json
import pathlib

from pyrad import packet
from pyrad.dictionary import Dictionary

OUT = pathlib.Path(__file__).resolve().parent.parent / "Tests" / "Fixtures" / "radius" / "vectors.json"
DICTIONARY = """
ATTRIBUTE User-Name 1 string
ATTRIBUTE User-Password 2 string
ATTRIBUTE NAS-IP-Address 4 ipaddr
ATTRIBUTE Reply-Message 18 string
ATTRIBUTE State 24 octets
ATTRIBUTE Calling-Station-Id 31 string
ATTRIBUTE NAS-Identifier 32 string
ATTRIBUTE Proxy-State 33 octets
ATTRIBUTE Message-Authenticator 80 octets
"""


def dictionary():
    return Dictionary(io.StringIO(DICTIONARY))


def request(secret, identifier, authenticator, user, password, authenticated, state=None):
    made = packet.AuthPacket(
        code=packet.AccessRequest, id=identifier, secret=secret, authenticator=authenticator,
        dict=dictionary())
    made["User-Name"] = user
    made["NAS-IP-Address"] = "192.0.2.10"
    made["Calling-Station-Id"] = "198.51.100.23"
    if state is not None:
        made["State"] = state
    made["User-Password"] = made.PwCrypt(password)
    if authenticated:
        made.add_message_authenticator()
    return made


def answer(to, code, attributes):
    reply = to.CreateReply()
    reply.code = code
    for name, value in attributes:
        reply[name] = value
    reply.add_message_authenticator()
    return reply.ReplyPacket()


cases = []
for name, secret, identifier, user, password, authenticated in [
    ("one block", b"xyzzy5461", 7, "alice", "arctangent", True),
    ("three blocks", b"a longer shared secret, 32 chars", 200, "bob@example.org",
     "correct horse battery staple, longer", True),
    ("a 6-digit code", b"s3cret", 1, "carol", "123456", True),
    ("no Message-Authenticator", b"s3cret", 2, "dave", "", False),
]:
    authenticator = bytes((identifier + i * 37) % 256 for i in range(16))
    made = request(secret, identifier, authenticator, user, password, authenticated)
    raw = made.RequestPacket()
    replies = [
        ("accept", answer(made, packet.AccessAccept, [])),
        ("challenge", answer(made, packet.AccessChallenge,
                             [("Reply-Message", "Approve on your device: type 42"), ("State", b"st_0123456789")])),
        ("reject", answer(made, packet.AccessReject, [("Reply-Message", "refused")])),
    ]
    cases.append({
        "name": name,
        "secret": secret.decode(),
        "request": raw.hex(),
        "user": user,
        "password": password,
        "message_authenticator": authenticated,
        "answers": {label: reply.hex() for label, reply in replies},
    })

OUT.parent.mkdir(parents=True, exist_ok=True)
OUT.write_text(json.dumps({"generator": "pyrad", "cases": cases}, indent=2) + "\n")
print(f"wrote {OUT}")
