#!/usr/bin/env python3
"""Verifies a Countersign event token the way an app backend in Python
would: with the broker's JWKS and a standard JOSE library (joserfc), no
Countersign code. Prints the claims as JSON; exits 1 if the token is bad.

    verify-event-token.py BROKER_URL API_KEY_ID TOKEN
"""
import sys

# Asked for help (or given too few arguments), say how to run it, before
# importing what only the test script installs.
if any(argument in ("-h", "--help") for argument in sys.argv[1:]):
    print(__doc__.strip())
    sys.exit(0)
if len(sys.argv) < 4:
    print(__doc__.strip(), file=sys.stderr)
    sys.exit(2)
import json
import sys
import urllib.request

from joserfc import jwt
from joserfc.jwk import KeySet

broker, api_key_id, token = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3]
with urllib.request.urlopen(broker + "/.well-known/jwks.json", timeout=10) as response:
    keys = KeySet.import_key_set(json.load(response))
try:
    decoded = jwt.decode(token, keys, algorithms=["ES256"])
    jwt.JWTClaimsRegistry(
        iss={"essential": True, "value": broker},
        aud={"essential": True, "value": api_key_id},
        exp={"essential": True},
    ).validate(decoded.claims)
except Exception as error:  # any failure means: do not trust this login
    print(f"invalid event token: {error}", file=sys.stderr)
    sys.exit(1)
print(json.dumps(decoded.claims, sort_keys=True))
