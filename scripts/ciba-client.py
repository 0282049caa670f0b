#!/usr/bin/env python3
"""A CIBA client written from OpenID CIBA Core 1.0 alone (requests for HTTP,
joserfc for the ID token), no Countersign code: what an identity provider or
an app that speaks CIBA does against the broker.

    ciba-client.py BROKER_URL CLIENT_ID CLIENT_SECRET USER [options]

Poll mode: discovers the endpoints, sends the backchannel authentication
request, prints "auth_req_id: ..." and polls the token endpoint (waiting
`interval`, and longer after slow_down) until the user answers. On tokens it
verifies the ID token with the JWKS (iss, aud, exp, sub, auth_time, acr, the
auth_req_id claim), refreshes them once, and checks the auth_req_id does not
work twice. Prints one JSON object: {"outcome": "tokens" or the error code,
...}; exits 0 whenever the broker answered as the specification says.

Ping mode (--ping-port PORT, for a client the broker's operator registered
with `device-broker apikey set-ciba-ping KEY http://127.0.0.1:PORT/ciba`):
sends a client_notification_token, listens on PORT for the notification,
checks its bearer token and auth_req_id, and only then calls the token
endpoint once. It also checks that a request without the token is refused.

Options: --binding-message TEXT, --requested-expiry SECONDS, --acr-values
VALUES (sent as acr_values, each checked against the discovery's
acr_values_supported), --auth basic|post (client authentication, default
basic), --errors (instead of a flow, send each malformed request and print
the error each one got).
"""
import sys

if any(argument in ("-h", "--help") for argument in sys.argv[1:]):
    print(__doc__.strip())
    sys.exit(0)
if len(sys.argv) < 5:
    print(__doc__.strip(), file=sys.stderr)
    sys.exit(2)
import http.server
import json
import secrets
import threading
import time

import requests
from joserfc import jwt
from joserfc.jwk import KeySet

GRANT = "urn:openid:params:grant-type:ciba"
broker, client_id, client_secret, user = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3], sys.argv[4]
options = sys.argv[5:]


def option(name, default=None):
    return options[options.index(name) + 1] if name in options else default


auth_method = option("--auth", "basic")
meta = requests.get(broker + "/.well-known/openid-configuration", timeout=30).json()
assert meta["backchannel_authentication_endpoint"] == broker + "/oauth/bc-authorize", meta
assert "poll" in meta["backchannel_token_delivery_modes_supported"], meta
assert meta["backchannel_user_code_parameter_supported"] is False, meta
assert GRANT in meta["grant_types_supported"], meta
for acr in (option("--acr-values") or "").split():
    assert acr in meta["acr_values_supported"], meta


def post(url, form, *, secret=None, method=None):
    """A form POST authenticated as the client (CIBA Core §7.1, RFC 6749 §2.3.1)."""
    secret = client_secret if secret is None else secret
    method = method or auth_method
    if method == "basic":
        return requests.post(url, data=form, auth=(client_id, secret), timeout=30)
    return requests.post(url, data=dict(form, client_id=client_id, client_secret=secret), timeout=30)


def authenticate(**form):
    form.setdefault("scope", "openid")
    return post(meta["backchannel_authentication_endpoint"], {k: v for k, v in form.items() if v is not None})


def token(form, **kwargs):
    return post(meta["token_endpoint"], form, **kwargs)


def verified(id_token, auth_req_id):
    keys = KeySet.import_key_set(requests.get(meta["jwks_uri"], timeout=30).json())
    decoded = jwt.decode(id_token, keys, algorithms=meta["id_token_signing_alg_values_supported"])
    jwt.JWTClaimsRegistry(
        iss={"essential": True, "value": meta["issuer"]},
        aud={"essential": True, "value": client_id},
        sub={"essential": True, "value": user},
        exp={"essential": True},
        iat={"essential": True},
        auth_time={"essential": True},
        acr={"essential": True},
    ).validate(decoded.claims)
    if auth_req_id is not None:
        assert decoded.claims["urn:openid:params:jwt:claim:auth_req_id"] == auth_req_id, decoded.claims
    return decoded.claims


def error_of(response):
    try:
        return response.json().get("error", f"HTTP {response.status_code}")
    except ValueError:
        return f"HTTP {response.status_code}"


class Notifications(http.server.BaseHTTPRequestHandler):
    """The client's notification endpoint (CIBA Core §10.2)."""
    received = []
    arrived = threading.Event()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        Notifications.received.append((self.path, self.headers.get("Authorization"),
                                       self.headers.get("Content-Type"), body))
        self.send_response(204)
        self.end_headers()
        Notifications.arrived.set()

    def log_message(self, *arguments):
        pass


def ping_flow(port):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Notifications)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    assert "ping" in meta["backchannel_token_delivery_modes_supported"], meta
    without = authenticate(login_hint=user)
    notification_token = secrets.token_urlsafe(32)
    answer = authenticate(login_hint=user, binding_message=option("--binding-message"),
                          client_notification_token=notification_token)
    if answer.status_code != 200:
        return {"outcome": error_of(answer), "status": answer.status_code}
    auth_req_id = answer.json()["auth_req_id"]
    print("auth_req_id:", auth_req_id, flush=True)
    if not Notifications.arrived.wait(answer.json()["expires_in"] + 60):
        return {"outcome": "no notification"}
    path, authorization, content_type, body = Notifications.received[0]
    notified = json.loads(body)
    tokens = token({"grant_type": GRANT, "auth_req_id": notified["auth_req_id"]})
    result = {"outcome": "tokens" if tokens.status_code == 200 else error_of(tokens),
              "without_notification_token": error_of(without),
              "notification": {"path": path, "bearer_matches": authorization == "Bearer " + notification_token,
                               "content_type": content_type, "auth_req_id_matches": notified == {
                                   "auth_req_id": auth_req_id}}}
    if tokens.status_code == 200:
        result["claims"] = verified(tokens.json()["id_token"], auth_req_id)
    time.sleep(2)
    result["notifications"] = len(Notifications.received)
    return result


def flow():
    if option("--ping-port"):
        return ping_flow(int(option("--ping-port")))
    answer = authenticate(login_hint=user, binding_message=option("--binding-message"),
                          requested_expiry=option("--requested-expiry"), acr_values=option("--acr-values"))
    if answer.status_code != 200:
        return {"outcome": error_of(answer), "status": answer.status_code}
    body = answer.json()
    auth_req_id, interval = body["auth_req_id"], body.get("interval", 5)
    assert len(auth_req_id) >= 22 and body["expires_in"] > 0, body
    assert answer.headers.get("Cache-Control") == "no-store", answer.headers
    print("auth_req_id:", auth_req_id, flush=True)
    deadline = time.monotonic() + body["expires_in"] + 60
    while True:
        time.sleep(interval)
        polled = token({"grant_type": GRANT, "auth_req_id": auth_req_id})
        if polled.status_code == 200:
            break
        error = error_of(polled)
        if error == "authorization_pending" and time.monotonic() < deadline:
            continue
        if error == "slow_down":
            interval += 5
            continue
        return {"outcome": error, "status": polled.status_code}
    tokens = polled.json()
    assert tokens["token_type"].lower() == "bearer" and tokens["expires_in"] > 0, tokens
    claims = verified(tokens["id_token"], auth_req_id)
    again = token({"grant_type": GRANT, "auth_req_id": auth_req_id})
    refreshed = token({"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]})
    refreshed_claims = verified(refreshed.json()["id_token"], None) if refreshed.status_code == 200 else None
    without_secret = requests.post(meta["token_endpoint"], data={
        "grant_type": "refresh_token", "refresh_token": refreshed.json().get("refresh_token", ""),
        "client_id": client_id}, timeout=30)
    return {"outcome": "tokens", "claims": claims, "second_redemption": error_of(again),
            "refreshed": refreshed.status_code, "refreshed_sub": (refreshed_claims or {}).get("sub"),
            "refreshed_acr": (refreshed_claims or {}).get("acr"),
            "refresh_without_secret": error_of(without_secret)}


def errors():
    seen = {}
    seen["wrong_secret"] = error_of(post(meta["backchannel_authentication_endpoint"],
                                         {"scope": "openid", "login_hint": user}, secret="wrong"))
    seen["no_secret"] = error_of(requests.post(meta["backchannel_authentication_endpoint"], data={
        "scope": "openid", "login_hint": user, "client_id": client_id}, timeout=30))
    seen["no_openid_scope"] = error_of(authenticate(scope="email", login_hint=user))
    seen["id_token_hint"] = error_of(authenticate(id_token_hint="eyJhbGciOiJFUzI1NiJ9.e30.sig"))
    seen["login_hint_token"] = error_of(authenticate(login_hint_token="token"))
    seen["two_hints"] = error_of(authenticate(login_hint=user, login_hint_token="token"))
    seen["user_code"] = error_of(authenticate(login_hint=user, user_code="1234"))
    seen["unknown_user"] = error_of(authenticate(login_hint="nobody-enrolled-this"))
    seen["binding_message_control"] = error_of(authenticate(login_hint=user, binding_message="Pay\u202eRUE 01"))
    seen["binding_message_long"] = error_of(authenticate(login_hint=user, binding_message="x" * 65))
    seen["requested_expiry_large"] = error_of(authenticate(login_hint=user, requested_expiry="100000"))
    seen["requested_expiry_text"] = error_of(authenticate(login_hint=user, requested_expiry="soon"))
    seen["notification_token_in_poll_mode"] = error_of(
        authenticate(login_hint=user, client_notification_token="abc"))
    seen["unknown_auth_req_id"] = error_of(token({"grant_type": GRANT, "auth_req_id": "ev_nothing.secret"}))
    started = authenticate(login_hint=user, binding_message="Fast poller")
    auth_req_id = started.json()["auth_req_id"]
    seen["first_poll"] = error_of(token({"grant_type": GRANT, "auth_req_id": auth_req_id}))
    seen["second_poll_at_once"] = error_of(token({"grant_type": GRANT, "auth_req_id": auth_req_id}))
    seen["tampered_secret"] = error_of(token({"grant_type": GRANT, "auth_req_id": auth_req_id[:-2] + "xx"}))
    seen["poll_without_secret"] = error_of(requests.post(meta["token_endpoint"], data={
        "grant_type": GRANT, "auth_req_id": auth_req_id, "client_id": client_id}, timeout=30))
    seen["poll_with_post_auth"] = error_of(token({"grant_type": GRANT, "auth_req_id": auth_req_id}, method="post"))
    print("auth_req_id:", auth_req_id, flush=True)
    return seen


print(json.dumps(errors() if "--errors" in options else flow(), sort_keys=True), flush=True)
