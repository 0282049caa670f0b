#!/usr/bin/env python3
"""Runs the broker's OAuth 2.0 + PKCE flow with a standard client library
(authlib), as a third-party app would, and verifies the ID token with
joserfc and the JWKS. A `requests` session plays the user at the hosted page,
reading the code from the development sender's outbox. Prints the verified
claims as JSON; exits non-zero on any failure.

    oauth-client-check.py BROKER_URL CLIENT_ID REDIRECT_URI OUTBOX EMAIL
"""
import sys

# Asked for help (or given too few arguments), say how to run it, before
# importing what only the test script installs.
if any(argument in ("-h", "--help") for argument in sys.argv[1:]):
    print(__doc__.strip())
    sys.exit(0)
if len(sys.argv) < 6:
    print(__doc__.strip(), file=sys.stderr)
    sys.exit(2)
import json
import re
import sys
import time

import requests
from authlib.common.security import generate_token
from authlib.integrations.requests_client import OAuth2Session
from joserfc import jwt
from joserfc.jwk import KeySet

broker, client_id, redirect_uri, outbox, email = sys.argv[1:6]
meta = requests.get(broker + "/.well-known/openid-configuration", timeout=10).json()

# The app: a public client (no secret), PKCE S256, OpenID Connect nonce.
client = OAuth2Session(client_id, redirect_uri=redirect_uri, scope="openid email",
                       code_challenge_method="S256", token_endpoint_auth_method="none")
verifier, nonce = generate_token(64), generate_token(24)
url, state = client.create_authorization_url(meta["authorization_endpoint"], code_verifier=verifier, nonce=nonce)

# The user, at the hosted page.
user = requests.Session()
page = user.get(url, timeout=10)
page.raise_for_status()
fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page.text))
fields = {name: value.replace("&amp;", "&").replace("&quot;", '"').replace("&#39;", "'").replace("&lt;", "<")
          .replace("&gt;", ">") for name, value in fields.items()}
sent = user.post(broker + "/app/code", data=dict(fields, identifier=email), timeout=10)
sent.raise_for_status()
challenge_id = re.search(r'name="challenge_id" value="(\d+)"', sent.text).group(1)
code = None
for _ in range(100):
    with open(outbox) as lines:
        codes = [json.loads(line) for line in lines if line.strip()]
    matching = [entry["code"] for entry in codes if entry["to"] == email.lower()]
    if matching:
        code = matching[-1]
        break
    time.sleep(0.05)
done = user.post(broker + "/app/verify", data={"challenge_id": challenge_id, "code": code},
                 allow_redirects=False, timeout=10)
assert done.status_code == 303, f"expected a redirect, got {done.status_code}: {done.text[:200]}"

# The app again: the library checks state, exchanges the code with the verifier.
token = client.fetch_token(meta["token_endpoint"], authorization_response=done.headers["Location"],
                           code_verifier=verifier)
keys = KeySet.import_key_set(requests.get(meta["jwks_uri"], timeout=10).json())
id_token = jwt.decode(token["id_token"], keys, algorithms=["ES256"])
jwt.JWTClaimsRegistry(iss={"essential": True, "value": meta["issuer"]},
                      aud={"essential": True, "value": client_id},
                      nonce={"essential": True, "value": nonce},
                      exp={"essential": True}).validate(id_token.claims)
assert id_token.claims["email"] == email.lower() and id_token.claims["email_verified"] is True

# Refresh with the library; the rotated token must differ and still verify.
refreshed = client.refresh_token(meta["token_endpoint"], refresh_token=token["refresh_token"])
assert refreshed["refresh_token"] != token["refresh_token"]
jwt.decode(refreshed["access_token"], keys, algorithms=["ES256"])
print(json.dumps({"sub": id_token.claims["sub"], "email": id_token.claims["email"], "nonce_ok": True}))
