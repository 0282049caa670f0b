#!/usr/bin/env python3
"""A relying party that a real browser signs in to by approval, as a
third-party web app would: authlib's client does discovery and the
authorization request with PKCE (S256), state and nonce; the app listens on
127.0.0.1:PORT for its redirect URI, http://127.0.0.1:PORT/callback, and
prints the address to open in the browser:

    authorize: http://127.0.0.1:8080/oauth/authorize?...

When the browser comes back to the callback, the app checks state and iss
(RFC 9207), redeems the code (client_secret_basic, with the code_verifier),
verifies the ID token with joserfc and the JWKS (iss, aud, nonce, sub,
auth_time, acr, amr, sid), calls userinfo, and answers the browser with a
small page: "Signed in as NAME", or "Error: ERROR". Prints one JSON object
at the end: the outcome with the verified claims and userinfo, or the OAuth
error with its state and iss checks. Exits non-zero on any check that
fails, or if no browser came back within --timeout seconds.

    oidc-rp-browser.py BROKER_URL CLIENT_ID CLIENT_SECRET PORT
        [--scope "openid profile"] [--timeout SECONDS]
"""
import sys

# Asked for help (or given too few arguments), say how to run it, before
# importing what only the test script installs.
if any(argument in ("-h", "--help") for argument in sys.argv[1:]):
    print(__doc__.strip())
    sys.exit(0)
if len(sys.argv) < 5:
    print(__doc__.strip(), file=sys.stderr)
    sys.exit(2)
import argparse
import html
import http.server
import json
import time
import traceback
import urllib.parse

import requests
from authlib.common.security import generate_token
from authlib.integrations.requests_client import OAuth2Session
from joserfc import jwt
from joserfc.jwk import KeySet

parser = argparse.ArgumentParser()
for name in ("broker", "client_id", "client_secret"):
    parser.add_argument(name)
parser.add_argument("port", type=int)
parser.add_argument("--scope", default="openid profile")
parser.add_argument("--timeout", type=float, default=300)
arguments = parser.parse_args()
broker = arguments.broker
redirect_uri = f"http://127.0.0.1:{arguments.port}/callback"
result = {}


class Failed(Exception):
    """A check that failed: the page says so, and the JSON names it."""


def check(condition, message):
    if not condition:
        raise Failed(message)


def fail(message):
    result["failed"] = message
    print(json.dumps(result, sort_keys=True), flush=True)
    sys.exit(1)


meta = requests.get(broker + "/.well-known/openid-configuration", timeout=10).json()
if meta.get("issuer") != broker:
    fail("discovery names the broker as issuer")
for name in ("authorization_endpoint", "token_endpoint", "userinfo_endpoint", "jwks_uri"):
    if not meta.get(name, "").startswith(broker + "/"):
        fail(f"discovery lists {name}")
if "S256" not in meta.get("code_challenge_methods_supported", []):
    fail("discovery lists S256")

client = OAuth2Session(
    arguments.client_id, arguments.client_secret, redirect_uri=redirect_uri, scope=arguments.scope,
    code_challenge_method="S256", token_endpoint_auth_method="client_secret_basic")
verifier, nonce = generate_token(64), generate_token(24)
url, state = client.create_authorization_url(meta["authorization_endpoint"], code_verifier=verifier, nonce=nonce)


def finish(back):
    """The browser came back to `back`: the outcome, and the page's words."""
    returned = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(back).query))
    result["state_ok"] = returned.get("state") == state
    result["iss_ok"] = returned.get("iss") == broker
    check(result["state_ok"], "state comes back")
    check(result["iss_ok"], "iss comes back (RFC 9207)")
    if "error" in returned:
        result["outcome"] = "error"
        result["error"] = returned["error"]
        result["error_description"] = returned.get("error_description")
        return "Error: " + returned["error"]
    check("code" in returned, "a code comes back")

    # The code for tokens (authlib checks state again), the ID token
    # verified with the JWKS.
    token = client.fetch_token(
        meta["token_endpoint"], authorization_response=back, state=state, code_verifier=verifier)
    keys = KeySet.import_key_set(requests.get(meta["jwks_uri"], timeout=10).json())
    claims = jwt.decode(token["id_token"], keys, algorithms=["ES256"]).claims
    jwt.JWTClaimsRegistry(
        iss={"essential": True, "value": broker}, aud={"essential": True, "value": arguments.client_id},
        sub={"essential": True}, nonce={"essential": True, "value": nonce},
        auth_time={"essential": True}, acr={"essential": True}, amr={"essential": True},
        sid={"essential": True}).validate(claims)
    check(isinstance(claims["amr"], list), "amr is a list")
    check(claims["auth_time"] <= time.time() + 60, "auth_time is not in the future")
    result["outcome"] = "tokens"
    result["claims"] = claims
    result["scope"] = token.get("scope")

    info = client.get(meta["userinfo_endpoint"], timeout=10)
    check(info.ok, f"userinfo answers ({info.status_code}: {info.text[:300]})")
    result["userinfo"] = info.json()
    check(result["userinfo"].get("sub") == claims["sub"], "userinfo's sub is the ID token's")
    return "Signed in as " + str(claims.get("preferred_username", claims["sub"]))


class Callback(http.server.BaseHTTPRequestHandler):
    """The app's redirect URI; anything else (a favicon) is not found."""

    def do_GET(self):
        if urllib.parse.urlsplit(self.path).path != "/callback":
            self.send_error(404)
            return
        try:
            words = finish(f"http://127.0.0.1:{arguments.port}{self.path}")
        except Failed as failure:
            result["failed"] = str(failure)
            words = "Error: " + str(failure)
        except Exception as error:
            result["failed"] = f"{type(error).__name__}: {error}"
            result["traceback"] = traceback.format_exc()
            words = "Error: " + str(error)
        page = (
            "<!doctype html><html><head><meta charset=\"utf-8\"><title>Demo app</title></head>"
            f"<body><p id=\"outcome\">{html.escape(words)}</p></body></html>").encode()
        self.send_response(200 if "failed" not in result and result.get("outcome") == "tokens" else 400)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(page)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(page)
        self.server.came_back = True

    def log_message(self, format, *args):
        pass


# Listening before the address is printed: the browser cannot come back
# before the app hears it.
server = http.server.HTTPServer(("127.0.0.1", arguments.port), Callback)
server.came_back = False
server.timeout = 1
print(f"authorize: {url}", flush=True)
deadline = time.monotonic() + arguments.timeout
while not server.came_back:
    if time.monotonic() > deadline:
        fail(f"no browser came back to {redirect_uri} within {arguments.timeout:g} s")
    server.handle_request()
server.server_close()
print(json.dumps(result, sort_keys=True), flush=True)
sys.exit(1 if "failed" in result else 0)
