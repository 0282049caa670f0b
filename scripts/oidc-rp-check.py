#!/usr/bin/env python3
"""Signs in to an OpenID Connect relying party by approval, as a third-party
app would: authlib's client does discovery, the authorization request with
PKCE (S256), state and nonce, the code exchange, userinfo, refresh and
RP-initiated logout; joserfc verifies the ID token with the JWKS. A
`requests` session plays the person's browser at the hosted page (the page
works without JavaScript) and prints the number to choose on the device:

    number: 42

then waits for the device's answer. Prints one JSON object at the end: the
outcome, the verified claims and what each later step answered. Exits
non-zero on any check that fails.

    oidc-rp-check.py BROKER_URL CLIENT_ID CLIENT_SECRET REDIRECT_URI USER
        [--auth basic|post|none] [--scope "openid profile"] [--acr-values ACR]
        [--max-age SECONDS] [--authorize-by-post] [--spend-code-twice] [--no-nonce]

--authorize-by-post sends the authorization request as a form (OpenID
Connect Core §3.1.2.1); --spend-code-twice redeems the code a second time
at once, as a thief would, and checks that the tokens the first redemption
bought stop working.
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
import argparse
import html
import json
import re
import urllib.parse

import requests
from authlib.common.security import generate_token
from authlib.integrations.requests_client import OAuth2Session, OAuthError
from joserfc import jwt
from joserfc.jwk import KeySet

parser = argparse.ArgumentParser()
for name in ("broker", "client_id", "client_secret", "redirect_uri", "user"):
    parser.add_argument(name)
parser.add_argument("--auth", choices=["basic", "post", "none"], default="basic")
parser.add_argument("--scope", default="openid profile")
parser.add_argument("--acr-values")
parser.add_argument("--max-age", type=int)
parser.add_argument("--authorize-by-post", action="store_true")
parser.add_argument("--spend-code-twice", action="store_true")
parser.add_argument("--no-nonce", action="store_true")
arguments = parser.parse_args()
broker = arguments.broker
result = {}


def check(condition, message):
    if not condition:
        result["failed"] = message
        print(json.dumps(result, sort_keys=True), flush=True)
        sys.exit(1)


def query_of(url):
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))


def token_request(data):
    """A request to the token endpoint authenticated as this client is
    (Basic, the secret in the form, or client_id alone)."""
    data = dict(data, client_id=arguments.client_id)
    auth = None
    if arguments.auth == "basic":
        auth = (arguments.client_id, arguments.client_secret)
    elif arguments.auth == "post":
        data["client_secret"] = arguments.client_secret
    return requests.post(meta["token_endpoint"], data=data, auth=auth, timeout=10)


meta = requests.get(broker + "/.well-known/openid-configuration", timeout=10).json()
check(meta["issuer"] == broker, "discovery names the broker as issuer")
for name in ("authorization_endpoint", "token_endpoint", "userinfo_endpoint", "jwks_uri", "end_session_endpoint"):
    check(meta.get(name, "").startswith(broker + "/"), f"discovery lists {name}")
check("S256" in meta["code_challenge_methods_supported"], "discovery lists S256")

methods = {"basic": "client_secret_basic", "post": "client_secret_post", "none": "none"}
client = OAuth2Session(
    arguments.client_id, arguments.client_secret if arguments.auth != "none" else None,
    redirect_uri=arguments.redirect_uri, scope=arguments.scope, code_challenge_method="S256",
    token_endpoint_auth_method=methods[arguments.auth])
verifier, nonce = generate_token(64), None if arguments.no_nonce else generate_token(24)
extra = {} if nonce is None else {"nonce": nonce}
if arguments.acr_values:
    extra["acr_values"] = arguments.acr_values
if arguments.max_age is not None:
    extra["max_age"] = str(arguments.max_age)
url, state = client.create_authorization_url(meta["authorization_endpoint"], code_verifier=verifier, **extra)

# The person's browser at the hosted page: the user name form, then the
# waiting page with the number.
browser = requests.Session()
if arguments.authorize_by_post:
    endpoint, _, query = url.partition("?")
    page = browser.post(endpoint, data=dict(urllib.parse.parse_qsl(query)), timeout=10)
else:
    page = browser.get(url, timeout=10)
check(page.status_code == 200, f"the authorization request opens the page ({page.status_code})")
fields = {name: html.unescape(value) for name, value in
          re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page.text)}
# As a browser posts a form of a page whose referrer policy is no-referrer
# (Origin: null), its own page (Sec-Fetch-Site: same-origin).
started = browser.post(broker + "/oauth/sign-in", data=dict(fields, user=arguments.user),
                       headers={"Origin": "null", "Sec-Fetch-Site": "same-origin"}, timeout=10)
check(started.status_code == 200, f"the user name starts the sign-in ({started.status_code}: {started.text[:300]})")
number = re.search(r'<p class="number" id="number">(\d+)</p>', started.text)
check(number is not None, "the waiting page shows the number")
print(f"number: {number.group(1)}", flush=True)
waiting = query_of(started.url).get("id")
check(waiting is not None and waiting.startswith("ev_"), "the waiting page names its sign-in")

# Waiting, as the page's script does, then the page's next step.
status = "pending"
while status == "pending":
    polled = browser.get(broker + "/oauth/sign-in/status", params={"wait": "25", "id": waiting}, timeout=60)
    check(polled.status_code == 200, f"the status poll answers ({polled.status_code})")
    status = polled.json()["status"]
result["status"] = status
answer = browser.get(broker + "/oauth/sign-in", params={"id": waiting}, allow_redirects=False, timeout=10)
if answer.status_code == 303:
    back = answer.headers["Location"]
else:
    refresh = re.search(r'<meta http-equiv="refresh" content="\d+;url=([^"]+)">', answer.text)
    check(refresh is not None, f"an ended sign-in leads back to the app ({answer.status_code})")
    back = html.unescape(refresh.group(1))
    result["page"] = re.search(r'<p class="error" role="alert">(.*?)</p>', answer.text).group(1)
check(back.startswith(arguments.redirect_uri), "the browser goes back to the redirect URI")
returned = query_of(back)
check(returned.get("state") == state, "state comes back")
check(returned.get("iss") == broker, "iss comes back (RFC 9207)")
if "error" in returned:
    result["outcome"] = "error"
    result["error"] = returned["error"]
    result["error_description"] = returned.get("error_description")
    print(json.dumps(result, sort_keys=True), flush=True)
    sys.exit(0)

# The app: the code for tokens, the ID token verified with the JWKS.
try:
    token = client.fetch_token(meta["token_endpoint"], authorization_response=back, code_verifier=verifier)
except OAuthError as refused:
    result["outcome"] = "token_error"
    result["error"] = refused.error
    result["error_description"] = refused.description
    # The code was not spent: the app, authenticated, still redeems it.
    spent = requests.post(meta["token_endpoint"], data={
        "grant_type": "authorization_code", "code": returned["code"], "redirect_uri": arguments.redirect_uri,
        "code_verifier": verifier}, auth=(arguments.client_id, arguments.client_secret), timeout=10)
    result["redeemed_with_secret"] = "id_token" in spent.json()
    print(json.dumps(result, sort_keys=True), flush=True)
    sys.exit(0)
keys = KeySet.import_key_set(requests.get(meta["jwks_uri"], timeout=10).json())
id_token = jwt.decode(token["id_token"], keys, algorithms=["ES256"])
claims = id_token.claims
jwt.JWTClaimsRegistry(
    iss={"essential": True, "value": broker}, aud={"essential": True, "value": arguments.client_id},
    sub={"essential": True}, nonce={"essential": nonce is not None, "value": nonce},
    auth_time={"essential": True}, sid={"essential": True}).validate(claims)
check(nonce is not None or "nonce" not in claims, "no nonce asked, none given")
result["outcome"] = "tokens"
result["claims"] = claims
result["scope"] = token.get("scope")

info = client.get(meta["userinfo_endpoint"], timeout=10)
result["userinfo"] = info.json() if info.ok else info.status_code
by_header = requests.post(meta["userinfo_endpoint"], headers={"Authorization": "Bearer " + token["access_token"]},
                          timeout=10)
result["userinfo_by_post_header"] = by_header.json().get("sub") if by_header.ok else by_header.status_code
by_body = requests.post(meta["userinfo_endpoint"], data={"access_token": token["access_token"]}, timeout=10)
result["userinfo_by_body"] = by_body.json().get("sub") if by_body.ok else by_body.status_code

if arguments.spend_code_twice:
    # The code again, as a thief would: refused, and what it bought ends.
    second = token_request({
        "grant_type": "authorization_code", "code": returned["code"], "redirect_uri": arguments.redirect_uri,
        "code_verifier": verifier})
    result["second_redemption"] = second.json().get("error")
    result["userinfo_after_reuse"] = requests.get(meta["userinfo_endpoint"], timeout=10, headers={
        "Authorization": "Bearer " + token["access_token"]}).status_code
    result["refresh_after_reuse"] = token_request({
        "grant_type": "refresh_token", "refresh_token": token["refresh_token"]}).json().get("error")
    print(json.dumps(result, sort_keys=True), flush=True)
    sys.exit(0)

refreshed = client.refresh_token(meta["token_endpoint"], refresh_token=token["refresh_token"])
again = jwt.decode(refreshed["id_token"], keys, algorithms=["ES256"]).claims
result["refreshed_sub"] = again["sub"]
result["refreshed_sid"] = again.get("sid")

# RP-initiated logout: the sign-in ends; its refresh token and access
# token stop working.
ended = requests.get(meta["end_session_endpoint"], params={
    "id_token_hint": token["id_token"], "post_logout_redirect_uri": arguments.redirect_uri, "state": "bye"},
    allow_redirects=False, timeout=10)
result["logout"] = ended.status_code
result["logout_state"] = query_of(ended.headers.get("Location", "")).get("state")
after = token_request({"grant_type": "refresh_token", "refresh_token": refreshed["refresh_token"]})
result["refresh_after_logout"] = after.json().get("error")
userinfo_after = requests.get(meta["userinfo_endpoint"], timeout=10,
                              headers={"Authorization": "Bearer " + refreshed["access_token"]})
result["userinfo_after_logout"] = userinfo_after.status_code

# The code spent again (as a thief would): refused.
second = token_request({
    "grant_type": "authorization_code", "code": returned["code"], "redirect_uri": arguments.redirect_uri,
    "code_verifier": verifier})
result["second_redemption"] = second.json().get("error")

# A redirect URI the app did not register: a page, never a redirect.
wrong, _ = client.create_authorization_url(
    meta["authorization_endpoint"], redirect_uri="https://elsewhere.example/cb", code_verifier=verifier)
refused = requests.get(wrong, allow_redirects=False, timeout=10)
result["wrong_redirect"] = refused.status_code
result["wrong_redirect_location"] = refused.headers.get("Location")
print(json.dumps(result, sort_keys=True), flush=True)
