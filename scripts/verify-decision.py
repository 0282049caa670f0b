#!/usr/bin/env python3
"""Checks a Countersign event's decision the way an app backend in Python
would, without trusting the broker: the deciding device's signature with a
key the backend pinned itself, and the event's own fields against the digest
of what the approver was shown (proto/signing.md §2). Uses joserfc and the
standard library only, no Countersign code; an event approved with a passkey
(signing.md §10) is checked further with py_webauthn.

    verify-decision.py EVENT_JSON PINNED_KEYS_JSON APP_NAME [BROKER_ORIGIN]
    verify-decision.py EVENT_JSON PINNED_KEYS_JSON APP_NAME [BROKER_ORIGIN] --quorum M --approvers A,B,C
                       [--allow-requester]

EVENT_JSON is the event document (GET /api/v1/events/{id}); PINNED_KEYS_JSON
is a JWK, a list of JWKs, or a devices document ({"devices": [{"public_key":
...}]}) saved when the devices enrolled (a devices document also pins their
passkeys); APP_NAME is the app's name as approvers see it. An event that
required user verification holds only with BROKER_ORIGIN and the passkey
pinned for the deciding device, whose assertion, its owner verified, is over
this decision. Prints the decision's claims as JSON and exits 0 when it
holds; prints why and exits 1 when it does not.

With --quorum, the event is one several people approved (signing.md §11):
it holds when at least M distinct users of the approvers named (the
event's own user only with --allow-requester) approved it, each with a
device key pinned for them, over what the event shows. PINNED_KEYS_JSON
is then an object of JWKs (or lists of JWKs) by user id, or a devices
document whose devices name their client_user_id. Prints the approvals
that counted.
"""
import sys

if any(argument in ("-h", "--help") for argument in sys.argv[1:]):
    print(__doc__.strip())
    sys.exit(0)


def option(name: str) -> str | None:
    """Takes `name VALUE` out of the arguments."""
    if name not in sys.argv:
        return None
    index = sys.argv.index(name)
    if index + 1 >= len(sys.argv):
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    value = sys.argv[index + 1]
    del sys.argv[index:index + 2]
    return value


QUORUM, APPROVERS = option("--quorum"), option("--approvers")
ALLOW_REQUESTER = "--allow-requester" in sys.argv
if ALLOW_REQUESTER:
    sys.argv.remove("--allow-requester")
if len(sys.argv) not in (4, 5) or (QUORUM is None) != (APPROVERS is None) or (
        QUORUM is not None and not QUORUM.isdigit()):
    print(__doc__.strip(), file=sys.stderr)
    sys.exit(2)
import base64
import hashlib
import ipaddress
import json
import urllib.parse

from joserfc import jws
from joserfc.jwk import ECKey

FIELDS = ("event", "user", "app", "requester", "address", "location", "created", "details")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def thumbprint(jwk: dict) -> str:
    members = ",".join(f'"{name}":"{jwk[name]}"' for name in ("crv", "kty", "x", "y"))
    return b64url(hashlib.sha256(("{" + members + "}").encode()).digest())


def shown_digest(event: dict, app: str) -> str:
    shown = {"event": event["event"], "user": event["client_user_id"], "app": app,
             "requester": event.get("requester_name") or "", "address": event["ip"],
             "location": event["location"], "created": int(event["timestamp"]),
             "details": event.get("details") or ""}
    data = b"countersign-shown-v1"
    for name in FIELDS:
        value = str(shown[name]).encode("utf-8")
        data += b"\n" + name.encode() + b"=" + str(len(value)).encode() + b":" + value
    return b64url(hashlib.sha256(data).digest())


def origin(url: str) -> tuple:
    parts = urllib.parse.urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


def loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def same_broker(audience: tuple, broker: tuple) -> bool:
    """A decision's aud names the broker: the same origin, or, for a broker
    on loopback, any loopback name of it on its scheme and port (it answers
    at all of them; its web approver is linked at localhost)."""
    return audience == broker or (loopback(audience[1]) and loopback(broker[1]) and audience[0] == broker[0]
                                  and audience[2] == broker[2])


def pinned(document) -> tuple:
    """The pinned device keys, and each device's pinned passkeys by its id (only a devices document has those)."""
    if isinstance(document, dict) and "devices" in document:
        devices = document["devices"]
        passkeys = {device["id"]: [device["passkey"]] for device in devices if device.get("passkey")}
        return [device["public_key"] for device in devices], passkeys
    return (document if isinstance(document, list) else [document]), {}


def cose_key(jwk: dict) -> bytes:
    """A P-256 JWK as the COSE EC2 key py_webauthn takes (RFC 9053)."""
    import cbor2

    def raw(text: str) -> bytes:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))

    return cbor2.dumps({1: 2, 3: -7, -1: 1, -2: raw(jwk["x"]), -3: raw(jwk["y"])})


def check_assertion(event: dict, token: str, passkeys: dict, broker: str | None) -> None:
    """The event's passkey assertion: of the deciding device's pinned passkey, its owner verified, over this
    decision at `broker`."""
    from webauthn import verify_authentication_response

    assertion = event.get("assertion")
    if not assertion:
        raise ValueError("the event required user verification and carries no assertion")
    if broker is None:
        raise ValueError("checking a passkey assertion needs BROKER_ORIGIN")
    pinned = passkeys.get(event.get("decided_by"), [])
    passkey = next((key for key in pinned if key["credential_id"] == assertion["credential_id"]), None)
    if passkey is None:
        raise ValueError("the assertion is not of a passkey pinned for the deciding device")
    scheme, host, port = origin(broker)
    default = {"http": 80, "https": 443}.get(scheme)
    # A broker on a loopback address is the relying party `localhost`, at
    # its origin there, where it answers too (signing.md §10).
    try:
        if ipaddress.ip_address(host).is_loopback:
            host = "localhost"
    except ValueError:
        pass
    expected_origin = f"{scheme}://{host}" + ("" if port == default else f":{port}")
    verify_authentication_response(
        credential={
            "id": assertion["credential_id"], "rawId": assertion["credential_id"], "type": "public-key",
            "response": {
                "authenticatorData": assertion["authenticator_data"],
                "clientDataJSON": assertion["client_data_json"],
                "signature": assertion["signature"],
            },
        },
        # The challenge commits to the decision: SHA-256 of its signing input.
        expected_challenge=hashlib.sha256(token.rsplit(".", 1)[0].encode("ascii")).digest(),
        expected_rp_id=host,
        expected_origin=expected_origin,
        credential_public_key=cose_key(passkey["public_key"]),
        # The counter was the broker's to check when the decision arrived.
        credential_current_sign_count=0,
        require_user_verification=True,
    )


def check(event: dict, keys: list, passkeys: dict, app: str, broker: str | None) -> dict:
    token, device = event.get("decision"), event.get("decided_by")
    if not token or not device:
        raise ValueError(f"the event carries no device's decision (status {event.get('status')})")
    header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    if header.get("kid") != device:
        raise ValueError("the decision is signed by another device than the event names")
    if header.get("typ") != "countersign-decision+jwt" or header.get("alg") != "ES256":
        raise ValueError("not an ES256 Countersign decision")
    key = next((jwk for jwk in keys if thumbprint(jwk) == device), None)
    if key is None:
        raise ValueError(f"the deciding device {device} is not one of the pinned keys")
    verified = jws.deserialize_compact(token, ECKey.import_key(key), algorithms=["ES256"])
    claims = json.loads(verified.payload)
    if claims.get("evt") != event["ID"]:
        raise ValueError("the decision was signed for another event")
    if claims.get("shown") != shown_digest(event, app):
        raise ValueError("the event's fields are not what the approver was shown and signed")
    expected = {"approve": "approved", "reject": "rejected", "fraud": "rejected"}.get(claims.get("decision"))
    if expected != event.get("status"):
        raise ValueError(f"the device signed {claims.get('decision')} but the event says {event.get('status')}")
    if broker is not None and not same_broker(origin(claims.get("aud", "")), origin(broker)):
        raise ValueError("the decision is addressed to another broker")
    if event.get("user_verification") == "required" or event.get("assertion"):
        check_assertion(event, token, passkeys, broker)
    return claims


def pinned_by_user(document) -> tuple:
    """The pinned device keys by user id, and each device's pinned passkeys by its id."""
    if isinstance(document, dict) and "devices" in document:
        devices = document["devices"]
        keys = {}
        for device in devices:
            keys.setdefault(device["client_user_id"], []).append(device["public_key"])
        return keys, {device["id"]: [device["passkey"]] for device in devices if device.get("passkey")}
    return {user: (jwks if isinstance(jwks, list) else [jwks]) for user, jwks in document.items()}, {}


def check_quorum(event: dict, keys: dict, passkeys: dict, app: str, broker: str | None, approvers: list,
                 required: int, allow_requester: bool) -> list:
    """signing.md §11: each approval signed by a key pinned for a user, for this event, approving what it
    shows; at least `required` distinct users of `approvers` counted."""
    if required < 1:
        raise ValueError("a quorum takes at least one approval; give the number you asked for")
    if event.get("status") != "approved":
        raise ValueError(f"the event says {event.get('status')}, not approved")
    shown = shown_digest(event, app)
    eligible = {user for user in approvers if allow_requester or user != event["client_user_id"]}
    counted = []
    for entry in event.get("approvals") or []:
        token = entry.get("decision")
        if not token:
            raise ValueError("an approval carries no decision: read the event as its backend")
        header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
        if header.get("typ") != "countersign-decision+jwt" or header.get("alg") != "ES256":
            raise ValueError("an approval is not an ES256 Countersign decision")
        device = header.get("kid")
        owner = next(((user, jwk) for user, jwks in keys.items() for jwk in jwks if thumbprint(jwk) == device), None)
        if owner is None:
            raise ValueError(f"an approval is signed by {device}, not a pinned device key")
        user, key = owner
        claims = json.loads(jws.deserialize_compact(token, ECKey.import_key(key), algorithms=["ES256"]).payload)
        if claims.get("evt") != event["ID"]:
            raise ValueError("an approval was signed for another event")
        if claims.get("decision") != "approve":
            raise ValueError(f"an approval's device signed {claims.get('decision')}")
        if claims.get("shown") != shown:
            raise ValueError("the event's fields are not what an approver was shown and signed")
        if broker is not None and not same_broker(origin(claims.get("aud", "")), origin(broker)):
            raise ValueError("an approval is addressed to another broker")
        if event.get("user_verification") == "required" or entry.get("assertion"):
            check_assertion(dict(event, assertion=entry.get("assertion"), decided_by=device), token, passkeys,
                            broker)
        if user in eligible and user not in [approval["client_user_id"] for approval in counted]:
            counted.append({"client_user_id": user, "device_id": device, "claims": claims})
    if len(counted) < required:
        raise ValueError(f"{len(counted)} distinct approver(s) of the quorum approved; {required} are required")
    return counted


with open(sys.argv[1], encoding="utf-8") as file:
    event_document = json.load(file)
with open(sys.argv[2], encoding="utf-8") as file:
    pinned_document = json.load(file)
broker_origin = sys.argv[4] if len(sys.argv) == 5 else None
try:
    if QUORUM is not None:
        keys_by_user, pinned_passkeys = pinned_by_user(pinned_document)
        result = check_quorum(
            event_document, keys_by_user, pinned_passkeys, sys.argv[3], broker_origin,
            [user for user in APPROVERS.split(",") if user], int(QUORUM), ALLOW_REQUESTER)
    else:
        pinned_keys, pinned_passkeys = pinned(pinned_document)
        if event_document.get("approvers"):
            raise ValueError("the event needed several approvers; check them all (--quorum)")
        result = check(event_document, pinned_keys, pinned_passkeys, sys.argv[3], broker_origin)
except Exception as error:  # any failure means: do not trust this decision
    print(f"decision does not hold: {error}", file=sys.stderr)
    sys.exit(1)
print(json.dumps(result, sort_keys=True))
