#!/usr/bin/env python3
"""Writes proto/vectors/*.json: known-good and known-bad device proofs,
decisions, event tokens, key thumbprints, TOTP codes, recovery-code digests
and sealed TOTP secrets.

An implementation independent of the Swift code (Python's `cryptography`)
makes the signatures, so the Swift tests that load these files check the
broker against the written contract, not against itself. ECDSA signatures
are randomised: regenerating changes the bytes, never the verdicts.
Run only when proto/signing.md changes: python3 scripts/generate-vectors.py
[--only FILE.json ...] (every file is made with new keys; --only rewrites
just the files named, so the others keep theirs).
"""
import sys

# Asked for help, say what it does, before doing it.
if any(argument in ("-h", "--help") for argument in sys.argv[1:]):
    print(__doc__.strip())
    sys.exit(0)
import base64
import hashlib
import hmac
import json
import pathlib

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

OUT = pathlib.Path(__file__).resolve().parent.parent / "proto" / "vectors"
NOW = 1_800_000_000
ORIGIN = "http://127.0.0.1:8080"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwk_of(key: ec.EllipticCurvePrivateKey) -> dict:
    numbers = key.public_key().public_numbers()
    return {"kty": "EC", "crv": "P-256",
            "x": b64url(numbers.x.to_bytes(32, "big")), "y": b64url(numbers.y.to_bytes(32, "big"))}


def thumbprint(jwk: dict) -> str:
    canonical = json.dumps({k: jwk[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"), sort_keys=True)
    return b64url(hashlib.sha256(canonical.encode()).digest())


def raw_signature(key, signing_input: bytes) -> bytes:
    r, s = decode_dss_signature(key.sign(signing_input, ec.ECDSA(hashes.SHA256())))
    return r.to_bytes(32, "big") + s.to_bytes(32, "big")


def jws(header: dict, claims: dict, key, *, der=False, hmac_key=None) -> str:
    signing_input = (b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())).encode()
    if hmac_key is not None:
        signature = hmac.new(hmac_key, signing_input, hashlib.sha256).digest()
    elif der:
        signature = key.sign(signing_input, ec.ECDSA(hashes.SHA256()))
    else:
        signature = raw_signature(key, signing_input)
    return signing_input.decode() + "." + b64url(signature)


def swap_payload(token: str, claims: dict) -> str:
    header, _, signature = token.split(".")
    return header + "." + b64url(json.dumps(claims).encode()) + "." + signature


ONLY = [sys.argv[i + 1] for i, argument in enumerate(sys.argv[:-1]) if argument == "--only"]


WRITTEN = []


def write(name: str, document: dict) -> None:
    if ONLY and name not in ONLY:
        return
    WRITTEN.append(name)
    for number, test in enumerate(document["tests"], start=1):
        test["tcId"] = number
    (OUT / name).write_text(json.dumps(document, indent=2) + "\n")


device = ec.generate_private_key(ec.SECP256R1())
other = ec.generate_private_key(ec.SECP256R1())
device_jwk, other_jwk = jwk_of(device), jwk_of(other)
device_id = thumbprint(device_jwk)


def proof_case(comment, result, *, error=None, header=None, claims=None, key=device, method="POST",
               path="/api/v1/events", token=None, **signing):
    h = {"typ": "countersign-proof+jwt", "alg": "ES256", "kid": device_id}
    h.update(header or {})
    c = {"jti": "proof-" + comment.replace(" ", "-"), "htm": "POST", "htu": ORIGIN + "/api/v1/events", "iat": NOW}
    c.update(claims or {})
    case = {"comment": comment, "proof": token or jws(h, c, key, **signing), "method": method, "path": path,
            "result": result}
    if error:
        case["error"] = error
    return case


valid_proof = jws({"typ": "countersign-proof+jwt", "alg": "ES256", "kid": device_id},
                  {"jti": "tampered", "htm": "POST", "htu": ORIGIN + "/api/v1/events", "iat": NOW}, device)
public_pem_bytes = json.dumps(device_jwk).encode()
write("device-proofs.json", {
    "description": "Device proofs (proto/signing.md §1). Verify each at `now` for the request `method` `path` "
                   "on a broker answering at `origins`, with the key `deviceKey`; `error` is the reason code.",
    "deviceKey": device_jwk, "deviceId": device_id, "now": NOW, "origins": [ORIGIN],
    "tests": [
        proof_case("valid proof", "valid"),
        proof_case("valid GET proof, query not part of htu", "valid", method="GET", path="/api/v1/inbox",
                   claims={"htm": "GET", "htu": ORIGIN + "/api/v1/inbox"}),
        proof_case("iat 59 s in the past is still fresh", "valid", claims={"iat": NOW - 59}),
        proof_case("iat 59 s in the future is still fresh", "valid", claims={"iat": NOW + 59}),
        proof_case("iat 61 s in the past", "invalid", error="stale", claims={"iat": NOW - 61}),
        proof_case("iat 61 s in the future", "invalid", error="stale", claims={"iat": NOW + 61}),
        proof_case("typ JWT instead of countersign-proof+jwt", "invalid", error="wrong_type", header={"typ": "JWT"}),
        proof_case("a decision used as a proof", "invalid", error="wrong_type",
                   header={"typ": "countersign-decision+jwt"}),
        proof_case("alg none with a signature part", "invalid", error="wrong_algorithm", header={"alg": "none"}),
        proof_case("alg HS256 keyed with the public key", "invalid", error="wrong_algorithm",
                   header={"alg": "HS256"}, hmac_key=public_pem_bytes),
        proof_case("kid names another key", "invalid", error="wrong_device", header={"kid": thumbprint(other_jwk)}),
        proof_case("signed by another key under this device's kid", "invalid", error="bad_signature", key=other),
        proof_case("DER signature instead of raw r||s", "invalid", error="bad_signature", der=True),
        proof_case("claims changed after signing", "invalid", error="bad_signature",
                   token=swap_payload(valid_proof, {"jti": "tampered", "htm": "DELETE",
                                                    "htu": ORIGIN + "/api/v1/events", "iat": NOW})),
        proof_case("htm GET for a POST", "invalid", error="wrong_method", claims={"htm": "GET"}),
        proof_case("htu names another path", "invalid", error="wrong_url", claims={"htu": ORIGIN + "/api/v1/inbox"}),
        proof_case("htu carries a query", "invalid", error="wrong_url",
                   claims={"htu": ORIGIN + "/api/v1/events?x=1"}),
        proof_case("htu names another origin", "invalid", error="wrong_url",
                   claims={"htu": "http://evil.example:8080/api/v1/events"}),
        proof_case("only two parts", "invalid", error="malformed", token=".".join(valid_proof.split(".")[:2])),
        proof_case("signature is not base64url", "invalid", error="malformed",
                   token=valid_proof.rsplit(".", 1)[0] + ".***"),
        proof_case("header is not JSON", "invalid", error="malformed",
                   token=b64url(b"not json") + "." + valid_proof.split(".", 1)[1]),
    ],
})


EVENT_ID, NONCE = "ev_vectors0000000000000", b64url(b"\x01" * 16)
SHOWN_FIELDS = ("event", "user", "app", "requester", "address", "location", "created", "details")


def shown_digest(shown: dict) -> str:
    """signing.md §2, what the approver was shown: the label, then per field
    LF name "=" byte-length ":" UTF-8 value, hashed with SHA-256."""
    data = b"countersign-shown-v1"
    for name in SHOWN_FIELDS:
        value = str(shown[name]).encode("utf-8")
        data += b"\n" + name.encode() + b"=" + str(len(value)).encode() + b":" + value
    return b64url(hashlib.sha256(data).digest())


SHOWN = {"event": "LOGIN", "user": "alice", "app": "Example Shop", "requester": "build-42",
         "address": "198.51.100.7", "location": "Unknown", "created": NOW - 20, "details": "Sign in to Example Shop"}
SHOWN_DIGEST = shown_digest(SHOWN)
new_device = ec.generate_private_key(ec.SECP256R1())
NEW_DEVICE_ID = thumbprint(jwk_of(new_device))


def decision_case(comment, result, *, error=None, header=None, claims=None, key=device, token=None, pairing=False):
    h = {"typ": "countersign-decision+jwt", "alg": "ES256", "kid": device_id}
    h.update(header or {})
    c = {"evt": EVENT_ID, "nonce": NONCE, "decision": "approve", "match": "42", "aud": ORIGIN, "iat": NOW,
         "jti": "decision-" + comment.replace(" ", "-"), "shown": SHOWN_DIGEST}
    c.update(claims or {})
    c = {k: v for k, v in c.items() if v is not None}
    case = {"comment": comment, "decision": token or jws(h, c, key), "result": result, "pairing": pairing}
    if error:
        case["error"] = error
    return case


reject_claims = {"evt": EVENT_ID, "nonce": NONCE, "decision": "reject", "aud": ORIGIN, "iat": NOW, "jti": "flip",
                 "shown": SHOWN_DIGEST}
signed_reject = jws({"typ": "countersign-decision+jwt", "alg": "ES256", "kid": device_id}, reject_claims, device)
write("decisions.json", {
    "description": "Decisions (proto/signing.md §2) on event `eventId` with server nonce `nonce`, verified at `now` "
                   "by a broker answering at `origins`, with `deviceKey`. Whether the verdict then settles the "
                   "event (number matching, revocation, window) is not part of these vectors. Cases with "
                   "`pairing` are verified for an ENROLL_NEW_TRUSTED_DEVICE event that would add the key with "
                   "thumbprint `newDeviceId`: an approval must name it in `jkt`. The event as the approver "
                   "was shown it is `shown`; its digest, which a decision must carry, is `shownDigest`.",
    "deviceKey": device_jwk, "deviceId": device_id, "eventId": EVENT_ID, "nonce": NONCE, "now": NOW,
    "shown": SHOWN, "shownDigest": SHOWN_DIGEST,
    "newDeviceId": NEW_DEVICE_ID,
    "origins": [ORIGIN],
    "tests": [
        decision_case("valid approval with match number", "valid"),
        decision_case("valid rejection without match number", "valid", claims={"decision": "reject", "match": None}),
        decision_case("signed for another event", "invalid", error="wrong_event", claims={"evt": "ev_other"}),
        decision_case("another nonce", "invalid", error="wrong_nonce", claims={"nonce": b64url(b"\x02" * 16)}),
        decision_case("addressed to another broker", "invalid", error="wrong_audience",
                      claims={"aud": "https://broker.example"}),
        decision_case("iat 61 s in the past", "invalid", error="stale", claims={"iat": NOW - 61}),
        decision_case("a proof used as a decision", "invalid", error="wrong_type",
                      header={"typ": "countersign-proof+jwt"}),
        decision_case("signed by another key", "invalid", error="bad_signature", key=other),
        decision_case("rejection flipped to approval under the old signature", "invalid", error="bad_signature",
                      token=swap_payload(signed_reject, dict(reject_claims, decision="approve"))),
        decision_case("alg none", "invalid", error="wrong_algorithm", header={"alg": "none"}),
        decision_case("pairing approval naming the new key", "valid", claims={"jkt": NEW_DEVICE_ID}, pairing=True),
        decision_case("pairing approval without jkt", "invalid", error="wrong_key", pairing=True),
        decision_case("pairing approval naming another key", "invalid", error="wrong_key",
                      claims={"jkt": device_id}, pairing=True),
        decision_case("pairing rejection without jkt", "valid", claims={"decision": "reject", "match": None},
                      pairing=True),
        decision_case("valid fraud report without match number", "valid",
                      claims={"decision": "fraud", "match": None}),
        decision_case("pairing reported as fraud without jkt", "valid", claims={"decision": "fraud", "match": None},
                      pairing=True),
        decision_case("fraud report turned into an approval under its signature", "invalid", error="bad_signature",
                      token=swap_payload(
                          jws({"typ": "countersign-decision+jwt", "alg": "ES256", "kid": device_id},
                              dict(reject_claims, decision="fraud", jti="flip-fraud"), device),
                          dict(reject_claims, decision="approve", jti="flip-fraud"))),
        decision_case("an unknown verdict", "invalid", error="malformed", claims={"decision": "maybe"}),
        decision_case("without what the approver was shown", "invalid", error="wrong_display",
                      claims={"shown": None}),
        decision_case("approving other details than the event holds", "invalid", error="wrong_display",
                      claims={"shown": shown_digest(dict(SHOWN, details="Sign in to Example Shop as admin"))}),
        decision_case("rejecting another app's name", "invalid", error="wrong_display",
                      claims={"decision": "reject", "match": None, "shown": shown_digest(dict(SHOWN, app="Bank"))}),
    ],
})


def shown_case(comment, shown, *, digest_of=None):
    case = {"comment": comment, "shown": shown, "digest": shown_digest(digest_of or shown),
            "result": "invalid" if digest_of else "valid"}
    return case


write("shown.json", {
    "description": "What the approver was shown (proto/signing.md §2): each `shown` is an event as an approver "
                   "displays it; `digest` is valid when it is BASE64URL(SHA-256) of that display's canonical "
                   "bytes, invalid when it was computed over another text.",
    "tests": [
        shown_case("the example in signing.md", {"event": "LOGIN", "user": "alice", "app": "Shop", "requester": "",
                                                  "address": "", "location": "", "created": NOW, "details": ""}),
        shown_case("a sign-in", SHOWN),
        shown_case("no requester name, no details", dict(SHOWN, requester="", details="")),
        shown_case("a transaction with non-ASCII text", dict(
            SHOWN, event="TRANSACTION", details="Überweisung 1 250,00 € an Zoë Ødegård — 確認 ✅")),
        shown_case("values holding line feeds, '=' and ':'", dict(
            SHOWN, location="Paris\ndetails=4:evil", details="a=b:c\nd")),
        shown_case("an IPv6 address and a 10-digit time", dict(SHOWN, address="2001:db8::7", created=9_999_999_999)),
        shown_case("an amount changed after display", dict(SHOWN, details="Pay 10.00 EUR to ACME"),
                   digest_of=dict(SHOWN, details="Pay 10000.00 EUR to ACME")),
        shown_case("text moved from location into details", dict(SHOWN, location="Paris", details="x"),
                   digest_of=dict(SHOWN, location="", details="Paris\nx")),
        shown_case("the requester name changed", SHOWN, digest_of=dict(SHOWN, requester="build-43")),
        shown_case("another user", SHOWN, digest_of=dict(SHOWN, user="mallory")),
        shown_case("created one second later", SHOWN, digest_of=dict(SHOWN, created=SHOWN["created"] + 1)),
        shown_case("look-alike letters (Cyrillic a)", dict(SHOWN, app="Example Shop"),
                   digest_of=dict(SHOWN, app="Ex\u0430mple Shop")),
    ],
})


broker = ec.generate_private_key(ec.SECP256R1())
broker_jwk = jwk_of(broker)
broker_kid = thumbprint(broker_jwk)
ISSUER, AUDIENCE, FAR = ORIGIN, "ck_vectors", 4_102_444_800  # 2100-01-01


def token_case(comment, result, *, header=None, claims=None, key=broker, token=None, **signing):
    h = {"typ": "JWT", "alg": "ES256", "kid": broker_kid}
    h.update(header or {})
    c = {"iss": ISSUER, "sub": "alice", "aud": AUDIENCE, "iat": NOW, "exp": FAR, "jti": EVENT_ID, "event": "LOGIN",
         "status": "approved", "approved": True, "method": "TRUSTED_DEVICE", "decided_by": device_id}
    c.update(claims or {})
    return {"comment": comment, "token": token or jws(h, c, key, **signing), "result": result}


good_token = token_case("valid", "valid")["token"]
write("event-tokens.json", {
    "description": "Event tokens (proto/signing.md §3), verified with the JWKS `jwks`, for issuer `issuer` and the "
                   "app `audience`, at the current time (valid tokens expire in 2100).",
    "jwks": {"keys": [dict(broker_jwk, kid=broker_kid, use="sig", alg="ES256")]},
    "issuer": ISSUER, "audience": AUDIENCE,
    "tests": [
        token_case("valid approval token", "valid"),
        token_case("valid rejection token", "valid", claims={"status": "rejected", "approved": False}),
        token_case("expired", "invalid", claims={"iat": 1_600_000_000, "exp": 1_600_000_300}),
        token_case("another issuer", "invalid", claims={"iss": "https://other.example"}),
        token_case("another app", "invalid", claims={"aud": "ck_other"}),
        token_case("unknown kid", "invalid", header={"kid": "unknown"}, key=other),
        token_case("signed by a key not in the JWKS under the broker's kid", "invalid", key=other),
        token_case("alg none", "invalid", header={"alg": "none"}),
        token_case("HS256 keyed with the JWKS public key", "invalid", header={"alg": "HS256"},
                   hmac_key=json.dumps(broker_jwk).encode()),
        token_case("claims changed after signing", "invalid",
                   token=swap_payload(good_token, {"iss": ISSUER, "sub": "mallory", "aud": AUDIENCE, "iat": NOW,
                                                   "exp": FAR, "jti": EVENT_ID, "event": "LOGIN",
                                                   "status": "approved", "approved": True,
                                                   "method": "TRUSTED_DEVICE"})),
    ],
})

def oauth_case(comment, result, kind, *, nonce=None, header=None, claims=None, key=broker, token=None, **signing):
    h = {"typ": "JWT", "alg": "ES256", "kid": broker_kid}
    h.update(header or {})
    c = {"iss": ISSUER, "sub": "4f1c2d3e-0000-4000-8000-000000000001", "aud": AUDIENCE, "iat": NOW, "exp": FAR,
         "jti": "oauth-" + comment.replace(" ", "-"), "identifier": "alice@example.com", "identifier_type": "EMAIL",
         "auth_method": "OTP"}
    if kind == "access":
        c.update({"token_type": "access_token", "client_id": AUDIENCE, "scope": "access"})
    else:
        c.update({"token_type": "id_token", "auth_time": NOW, "email": "alice@example.com", "email_verified": True,
                  "nonce": "n-0S6_WzA2Mj"})
    c.update(claims or {})
    c = {k: v for k, v in c.items() if v is not None}
    case = {"comment": comment, "kind": kind, "token": token or jws(h, c, key, **signing), "result": result}
    if kind == "id":
        case["nonce"] = nonce if nonce is not None else "n-0S6_WzA2Mj"
    return case


good_access = oauth_case("valid", "valid", "access")["token"]
write("oauth-tokens.json", {
    "description": "Access and ID tokens (proto/signing.md §4), verified with the JWKS `jwks` for issuer `issuer` "
                   "and the app `audience`; ID tokens also with the request's `nonce`. Valid tokens expire in 2100.",
    "jwks": {"keys": [dict(broker_jwk, kid=broker_kid, use="sig", alg="ES256")]},
    "issuer": ISSUER, "audience": AUDIENCE,
    "tests": [
        oauth_case("valid access token", "valid", "access"),
        oauth_case("valid ID token with its nonce", "valid", "id"),
        oauth_case("ID token checked against another request's nonce", "invalid", "id", nonce="another-nonce"),
        oauth_case("ID token without the nonce that was sent", "invalid", "id", claims={"nonce": None}),
        oauth_case("an access token presented as an ID token", "invalid", "id",
                   claims={"token_type": "access_token"}),
        oauth_case("an ID token presented as an access token", "invalid", "access",
                   claims={"token_type": "id_token"}),
        oauth_case("expired access token", "invalid", "access", claims={"iat": 1_600_000_000, "exp": 1_600_003_600}),
        oauth_case("access token for another app", "invalid", "access", claims={"aud": "ck_other"}),
        oauth_case("access token from another issuer", "invalid", "access",
                   claims={"iss": "https://other.example"}),
        oauth_case("alg none", "invalid", "access", header={"alg": "none"}),
        oauth_case("HS256 keyed with the JWKS public key", "invalid", "access", header={"alg": "HS256"},
                   hmac_key=json.dumps(broker_jwk).encode()),
        oauth_case("unknown kid, signed by its own key", "invalid", "access", header={"kid": "attacker"}, key=other),
        oauth_case("signed by a key not in the JWKS under the broker's kid", "invalid", "access", key=other),
        oauth_case("claims changed after signing", "invalid", "access",
                   token=swap_payload(good_access, {"iss": ISSUER, "sub": "someone-else", "aud": AUDIENCE,
                                                    "iat": NOW, "exp": FAR, "jti": "x", "identifier": "mallory@x.y",
                                                    "identifier_type": "EMAIL", "auth_method": "OTP",
                                                    "token_type": "access_token"})),
    ],
})

write("thumbprints.json", {
    "description": "RFC 7638 thumbprints of P-256 JWKs: base64url(SHA-256 of {\"crv\",\"kty\",\"x\",\"y\"} in that "
                   "order, no white space). The device id is this value.",
    "tests": [{"comment": "device key", "jwk": device_jwk, "thumbprint": device_id, "result": "valid"},
              {"comment": "broker key", "jwk": broker_jwk, "thumbprint": broker_kid, "result": "valid"},
              {"comment": "member order or white space changed: not the thumbprint", "jwk": device_jwk,
               "thumbprint": b64url(hashlib.sha256(json.dumps(device_jwk).encode()).digest()), "result": "invalid"}],
})


def totp(secret: str, step: int) -> str:
    """RFC 6238 with HMAC-SHA-1, 6 digits; the key is the secret's ASCII."""
    mac = hmac.new(secret.encode(), step.to_bytes(8, "big"), hashlib.sha1).digest()
    offset = mac[-1] & 0x0F
    return "%06d" % ((int.from_bytes(mac[offset:offset + 4], "big") & 0x7FFFFFFF) % 1_000_000)


def recovery_digest(canonical: str) -> str:
    return b64url(hashlib.sha256(b"countersign-recovery\x00" + canonical.encode()).digest())


def seal(key: bytes, secret: str, device: str, nonce: bytes) -> str:
    key_id = hashlib.sha256(b"countersign-totp-key" + key).digest()[:8]
    box = AESGCM(key).encrypt(nonce, secret.encode(), b"countersign-totp\x00" + device.encode())
    return b64url(b"\x01" + key_id + nonce + box)


TOTP_SECRET = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"
STEP = NOW // 30
VAULT_KEY = bytes(range(32))
sealed = seal(VAULT_KEY, TOTP_SECRET, device_id, bytes(12))
tampered = bytearray(base64.urlsafe_b64decode(sealed + "=" * (-len(sealed) % 4)))
tampered[-1] ^= 1
write("codes.json", {
    "description": "TOTP codes of a device secret (RFC 6238, HMAC-SHA-1, 6 digits, 30 s steps; the HMAC key is the "
                   "secret's 32 ASCII characters), recovery-code digests (SHA-256 of \"countersign-recovery\\0\" + "
                   "the canonical code), and TOTP secrets sealed by the broker (proto/signing.md §6).",
    "totpSecret": TOTP_SECRET,
    "vaultKey": b64url(VAULT_KEY),
    "tests": [
        *[{"comment": f"step {step}", "kind": "totp", "step": step, "code": totp(TOTP_SECRET, step),
           "result": "valid"} for step in (0, 1, STEP, STEP + 1, 20_000_000_000 // 30)],
        {"comment": "the code of the next step is not this step's", "kind": "totp", "step": STEP,
         "code": totp(TOTP_SECRET, STEP + 1), "result": "invalid"},
        {"comment": "as printed", "kind": "recovery", "typed": "7KQ2M-0ABCD-EFGHJ-KMNPQ-RSTVW",
         "digest": recovery_digest("7KQ2M0ABCDEFGHJKMNPQRSTVW"), "result": "valid"},
        {"comment": "lower case, spaces, O for 0 and l for 1", "kind": "recovery",
         "typed": "7kq2m oabcd efghj kmnpq rstvw", "digest": recovery_digest("7KQ2M0ABCDEFGHJKMNPQRSTVW"),
         "result": "valid"},
        {"comment": "I and L fold to 1", "kind": "recovery", "typed": "IL000-00000-00000-00000-00000",
         "digest": recovery_digest("1100000000000000000000000"), "result": "valid"},
        {"comment": "U is not in the alphabet", "kind": "recovery", "typed": "U0000-00000-00000-00000-00000",
         "result": "invalid"},
        {"comment": "24 symbols", "kind": "recovery", "typed": "00000-00000-00000-00000-0000", "result": "invalid"},
        {"comment": "sealed for this device", "kind": "sealed", "deviceId": device_id, "sealed": sealed,
         "result": "valid"},
        {"comment": "moved to another device's row", "kind": "sealed", "deviceId": thumbprint(other_jwk),
         "sealed": sealed, "result": "invalid"},
        {"comment": "one bit of the tag changed", "kind": "sealed", "deviceId": device_id,
         "sealed": b64url(bytes(tampered)), "result": "invalid"},
        {"comment": "sealed under another key", "kind": "sealed", "deviceId": device_id,
         "sealed": seal(bytes(32), TOTP_SECRET, device_id, bytes(12)), "result": "invalid"},
    ],
})


def openid_subject(api_key_id: str, user: str) -> str:
    """A sign-in by approval's `sub` (proto/signing.md §4)."""
    text = f"countersign sub {len(api_key_id.encode())}:{api_key_id}{user}"
    return b64url(hashlib.sha256(text.encode()).digest())


SUBJECTS = [("ck_GRAFANA", "alice"), ("ck_GRAFANA", "alice@example.com"), ("ck_OTHER", "alice"),
            ("ck_1", "23alice"), ("ck_12", "3alice"), ("ck_GRAFANA", "Zoë Ångström")]
write("openid-subjects.json", {
    "description": "The sub of a sign-in by approval's ID token: stable per app and user name, and the same "
                   "name at two apps gives two subs (proto/signing.md §4). The length prefix keeps "
                   "(ck_1, 23alice) and (ck_12, 3alice) apart.",
    "tests": [{"comment": f"{api_key_id} and {user}", "apiKeyId": api_key_id, "user": user,
               "sub": openid_subject(api_key_id, user), "result": "valid"} for api_key_id, user in SUBJECTS],
})


def rfc3339(seconds: int) -> str:
    import datetime
    moment = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")


# signing.md §11: an event several people approve, checked from its
# document, the app's name and the approvers' pinned keys alone.
QUORUM_EVENT_ID, QUORUM_NONCE = "ev_quorum00000000000000", b64url(b"\x03" * 16)
QUORUM_APP = "Example Bank"
quorum_keys = {name: ec.generate_private_key(ec.SECP256R1())
               for name in ("alice", "alice-phone", "bob", "carol", "dave", "erin", "kelvin")}
# "\u212aarl" starts with the Kelvin sign: canonically equivalent to "Karl",
# but another user id, byte for byte.
quorum_owner = {"alice": "alice", "alice-phone": "alice", "bob": "bob", "carol": "carol", "dave": "dave",
                "kelvin": "\u212aarl"}
QUORUM_PINNED = {}
for device_name, owner in quorum_owner.items():
    QUORUM_PINNED.setdefault(owner, []).append(jwk_of(quorum_keys[device_name]))
QUORUM_SHOWN = {"event": "TRANSACTION", "user": "dave", "app": QUORUM_APP, "requester": "payments",
                "address": "198.51.100.7", "location": "Unknown", "created": NOW - 20,
                "details": "Pay 5,000 EUR to ACME"}


def approval(device_name: str, **claims) -> dict:
    key = quorum_keys[device_name]
    device = thumbprint(jwk_of(key))
    c = {"evt": QUORUM_EVENT_ID, "nonce": QUORUM_NONCE, "decision": "approve", "match": "42", "aud": ORIGIN,
         "iat": NOW - 10, "jti": "approval-" + device_name, "shown": shown_digest(QUORUM_SHOWN)}
    c.update(claims)
    token = jws({"typ": "countersign-decision+jwt", "alg": "ES256", "kid": device}, c, key)
    return {"client_user_id": quorum_owner.get(device_name, device_name), "device_id": device, "decision": token,
            "approved_at": rfc3339(NOW - 10)}


def quorum_event(approvals: list, *, status="approved", users=("alice", "bob", "carol"), required=2,
                 allow_requester=False) -> dict:
    last = approvals[-1] if approvals else None
    return {
        "ID": QUORUM_EVENT_ID, "CreatedAt": rfc3339(NOW - 20), "UpdatedAt": rfc3339(NOW - 10), "DeletedAt": None,
        "client_user_id": "dave", "issuer": "ck_BANK", "event": "TRANSACTION", "ip": "198.51.100.7",
        "location": "Unknown", "timestamp": str(NOW - 20), "method": "TRUSTED_DEVICE", "new": False,
        "approved": status == "approved", "status": status, "expires_at": rfc3339(NOW + 40),
        "details": "Pay 5,000 EUR to ACME", "requester_name": "payments",
        "decided_by": last and last["device_id"], "decided_at": rfc3339(NOW - 10),
        "decision": last and last["decision"],
        "approvers": {"users": list(users), "required_approvals": required, "allow_requester": allow_requester},
        "approvals": approvals,
    }


def quorum_case(comment, approvals, result, *, error=None, counted=None, approvers=("alice", "bob", "carol"),
                required=2, allow_requester=False, **event):
    case = {"comment": comment, "event": quorum_event(approvals, users=approvers, required=required,
                                                      allow_requester=allow_requester, **event),
            "approvers": list(approvers), "requiredApprovals": required, "allowRequester": allow_requester,
            "result": result}
    if error:
        case["error"] = error
    if counted is not None:
        case["counted"] = counted
    return case


alice, alice_phone, bob, carol = approval("alice"), approval("alice-phone"), approval("bob"), approval("carol")
write("quorums.json", {
    "description": "Events approved by several people (proto/signing.md §11). Check each case's `event` "
                   "document for the app named `app`, with the device keys pinned by user in `pinnedKeys`, "
                   "against the approvers asked for (`approvers`, `requiredApprovals`, `allowRequester`: "
                   "whether the event's own user, `dave`, may count), given the broker `broker`. A valid "
                   "case lists the approvers `counted`; an invalid one the reason code `error`.",
    "app": QUORUM_APP, "broker": ORIGIN, "pinnedKeys": QUORUM_PINNED,
    "tests": [
        quorum_case("2 of 3 approved", [alice, bob], "valid", counted=["alice", "bob"]),
        quorum_case("3 of 3 approved, 2 required", [carol, alice, bob], "valid", counted=["carol", "alice", "bob"]),
        quorum_case("the same approval listed twice", [alice, alice], "invalid", error="too_few_approvals"),
        quorum_case("two devices of one user", [alice, alice_phone], "invalid", error="too_few_approvals"),
        quorum_case("one approval for two", [bob], "invalid", error="too_few_approvals"),
        quorum_case("an approval signed for another event", [alice, approval("bob", evt="ev_other")], "invalid",
                    error="wrong_event"),
        quorum_case("a rejection among the approvals", [alice, approval("bob", decision="reject", match=None)],
                    "invalid", error="wrong_verdict"),
        quorum_case("an approver shown other words", [alice, approval(
            "bob", shown=shown_digest(dict(QUORUM_SHOWN, details="Pay 50,000 EUR to ACME")))], "invalid",
            error="wrong_display"),
        quorum_case("an approval by a key nobody pinned", [alice, approval("erin")], "invalid",
                    error="wrong_device"),
        quorum_case("an approval addressed to another broker", [alice, approval("bob", aud="https://evil.example")],
                    "invalid", error="wrong_audience"),
        quorum_case("an approval whose claims were changed after signing", [alice, dict(bob, decision=swap_payload(
            bob["decision"], {"evt": QUORUM_EVENT_ID, "nonce": QUORUM_NONCE, "decision": "approve", "match": "42",
                              "aud": ORIGIN, "iat": NOW, "jti": "edited", "shown": shown_digest(QUORUM_SHOWN)}))],
                    "invalid", error="bad_signature"),
        quorum_case("an approver outside the quorum asked", [alice, carol], "invalid", error="too_few_approvals",
                    approvers=("alice", "bob")),
        quorum_case("the requesting user's own approval", [alice, approval("dave")], "invalid",
                    error="too_few_approvals", approvers=("alice", "dave")),
        quorum_case("the requesting user's own approval, allowed", [alice, approval("dave")], "valid",
                    counted=["alice", "dave"], approvers=("alice", "dave"), allow_requester=True),
        quorum_case("an event that is not approved", [alice, bob], "invalid", error="wrong_verdict",
                    status="rejected"),
        quorum_case("a look-alike user id (the Kelvin sign for K) is another user", [alice, approval("kelvin")],
                    "invalid", error="too_few_approvals", approvers=("alice", "Karl")),
        quorum_case("no approval required is no quorum", [alice, bob], "invalid", error="too_few_approvals",
                    required=0),
    ],
})
WRITTEN.sort()
print("wrote", ", ".join(WRITTEN))
