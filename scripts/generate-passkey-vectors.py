#!/usr/bin/env python3
"""Writes proto/vectors/passkeys.json: passkey registrations and approvals'
assertions (proto/signing.md §10), valid and tampered.

An authenticator is played here with Python's `cryptography` and `cbor2`,
and every case is also put to py_webauthn (the `webauthn` package, an
independent WebAuthn relying party): a case written as valid must pass it,
and a case written as invalid must fail it wherever py_webauthn checks that
property (the rest are rules of our own, named in `independent`). ECDSA
signatures are randomised: regenerating changes the bytes, never the
verdicts. Run only when §10 changes: python3 scripts/generate-passkey-vectors.py
"""
import sys

if any(argument in ("-h", "--help") for argument in sys.argv[1:]):
    print(__doc__.strip())
    sys.exit(0)
import base64
import hashlib
import json
import pathlib
import struct

import cbor2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from webauthn import verify_authentication_response, verify_registration_response

OUT = pathlib.Path(__file__).resolve().parent.parent / "proto" / "vectors" / "passkeys.json"
RP_ID = "localhost"
ORIGIN = "http://localhost:8080"
# Another origin the broker answers at (its address), which is no page of the RP ID.
ADDRESS_ORIGIN = "http://127.0.0.1:8080"
NOW = 1_800_000_000
AAGUID = bytes.fromhex("ea9b8d664d011d213ce4b6b48cb575d4")

UP, UV, BE, AT, ED = 0x01, 0x04, 0x08, 0x40, 0x80


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def coordinates(key):
    numbers = key.public_key().public_numbers()
    return numbers.x.to_bytes(32, "big"), numbers.y.to_bytes(32, "big")


def cose_key(key) -> bytes:
    x, y = coordinates(key)
    return cbor2.dumps({1: 2, 3: -7, -1: 1, -2: x, -3: y})


def jwk(key) -> dict:
    x, y = coordinates(key)
    return {"kty": "EC", "crv": "P-256", "x": b64url(x), "y": b64url(y)}


def raw_signature(key, data: bytes) -> bytes:
    r, s = decode_dss_signature(key.sign(data, ec.ECDSA(hashes.SHA256())))
    return r.to_bytes(32, "big") + s.to_bytes(32, "big")


def decision(verdict: str) -> str:
    """A decision JWS (§2) of the vectors' device: its signing input is what
    the assertion's challenge hashes."""
    header = {"typ": "countersign-decision+jwt", "alg": "ES256", "kid": "vectors-device"}
    claims = {"evt": "ev_vectors0000000000000", "nonce": "AQEBAQEBAQEBAQEBAQEBAQ", "decision": verdict,
              "match": "42", "aud": ORIGIN, "iat": NOW, "jti": "passkey-" + verdict,
              "shown": "_y4lI5gB4XkLg1wX6h-X7ClwYCGMvILocQrtZsv5lis"}
    signing_input = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())
    return signing_input + "." + b64url(raw_signature(device, signing_input.encode()))


def challenge_of(token: str) -> bytes:
    header, payload, _ = token.split(".")
    return hashlib.sha256(f"{header}.{payload}".encode()).digest()


def client_data(kind: str, challenge: bytes, origin=ORIGIN, **extra) -> bytes:
    return json.dumps({"type": kind, "challenge": b64url(challenge), "origin": origin, **extra},
                      separators=(",", ":")).encode()


def authenticator_data(flags: int, count: int, rp_id=RP_ID, attested: bytes = b"", extensions: bytes = b"") -> bytes:
    return hashlib.sha256(rp_id.encode()).digest() + bytes([flags]) + struct.pack(">I", count) + attested + extensions


device = ec.generate_private_key(ec.SECP256R1())
passkey = ec.generate_private_key(ec.SECP256R1())
other = ec.generate_private_key(ec.SECP256R1())
credential_id = hashlib.sha256(b"countersign vectors credential").digest()[:20]
registration_challenge = hashlib.sha256(b"countersign vectors registration").digest()


def attested(key=passkey, identifier=credential_id, cose=None) -> bytes:
    cose = cose if cose is not None else cose_key(key)
    return AAGUID + struct.pack(">H", len(identifier)) + identifier + cose


def registration_case(comment, result, *, error=None, independent=False, flags=UP | UV | BE | AT, rp_id=RP_ID,
                      kind="webauthn.create", challenge=registration_challenge, origin=ORIGIN, identifier=None,
                      cose=None, fmt="none", statement=None, trailing=b"", **extra):
    data = authenticator_data(flags, 0, rp_id, attested(cose=cose) if flags & AT else b"") + trailing
    attestation = cbor2.dumps({"fmt": fmt, "attStmt": statement or {}, "authData": data})
    collected = client_data(kind, challenge, origin, **extra)
    case = {"comment": comment, "credential_id": b64url(identifier or credential_id),
            "client_data_json": b64url(collected), "attestation_object": b64url(attestation),
            "transports": ["internal", "hybrid"], "result": result}
    if error:
        case["error"] = error
    if independent:
        case["independent"] = True
    try:
        verify_registration_response(
            credential={"id": case["credential_id"], "rawId": case["credential_id"], "type": "public-key",
                        "response": {"clientDataJSON": case["client_data_json"],
                                     "attestationObject": case["attestation_object"]}},
            expected_challenge=registration_challenge, expected_rp_id=RP_ID, expected_origin=ORIGIN,
            require_user_verification=True,
            supported_pub_key_algs=[-7])
        accepted = True
    except Exception:
        accepted = False
    if accepted != (result == "valid") and not independent:
        sys.exit(f"py_webauthn disagrees on the registration case {comment!r}: accepted={accepted}")
    return case


verdict_token = decision("approve")
other_token = decision("reject")


def assertion_case(comment, result, *, error=None, independent=False, flags=UP | UV | BE, count=8, stored=7,
                   rp_id=RP_ID, kind="webauthn.get", token=verdict_token, challenge=None, origin=ORIGIN, key=passkey,
                   identifier=None, raw=False, data=None, **extra):
    challenge = challenge if challenge is not None else challenge_of(token)
    authenticator = data if data is not None else authenticator_data(flags, count, rp_id)
    collected = client_data(kind, challenge, origin, **extra)
    signed = authenticator + hashlib.sha256(collected).digest()
    if raw:
        signature = raw_signature(key, signed)
    else:
        signature = key.sign(signed, ec.ECDSA(hashes.SHA256()))
    case = {"comment": comment, "decision": verdict_token, "storedSignCount": stored,
            "assertion": {"credential_id": b64url(identifier or credential_id),
                          "authenticator_data": b64url(authenticator), "client_data_json": b64url(collected),
                          "signature": b64url(signature)},
            "result": result}
    if error:
        case["error"] = error
    if independent:
        case["independent"] = True
    try:
        verify_authentication_response(
            credential={"id": case["assertion"]["credential_id"], "rawId": case["assertion"]["credential_id"],
                        "type": "public-key",
                        "response": {"authenticatorData": case["assertion"]["authenticator_data"],
                                     "clientDataJSON": case["assertion"]["client_data_json"],
                                     "signature": case["assertion"]["signature"]}},
            expected_challenge=challenge_of(verdict_token), expected_rp_id=RP_ID, expected_origin=ORIGIN,
            credential_public_key=cose_key(passkey), credential_current_sign_count=stored,
            require_user_verification=True)
        accepted = True
    except Exception:
        accepted = False
    if accepted != (result == "valid") and not independent:
        sys.exit(f"py_webauthn disagrees on the assertion case {comment!r}: accepted={accepted}")
    return case


def signed_then_changed():
    """Authenticator data whose counter was changed after the signature."""
    good = assertion_case("-", "valid")
    data = bytearray(unb64url(good["assertion"]["authenticator_data"]))
    data[36] ^= 0x01
    good["assertion"]["authenticator_data"] = b64url(bytes(data))
    good["comment"] = "the counter changed after the authenticator signed"
    good["result"], good["error"] = "invalid", "bad_signature"
    return good


eddsa = ed25519.Ed25519PrivateKey.generate().public_key().public_bytes_raw()
registrations = [
    registration_case("a platform passkey, user verified, no attestation", "valid"),
    registration_case("the user not verified (UV clear)", "invalid", error="user_not_verified", flags=UP | AT),
    registration_case("nobody present (UP clear)", "invalid", error="user_not_verified", flags=UV | AT),
    registration_case("another challenge", "invalid", error="wrong_challenge",
                      challenge=hashlib.sha256(b"another").digest()),
    registration_case("made on another origin", "invalid", error="wrong_origin", origin="https://evil.example"),
    registration_case("scoped to another RP ID", "invalid", error="wrong_origin", rp_id="evil.example"),
    registration_case("made on the broker's address, outside its RP ID", "invalid", error="wrong_origin",
                      origin=ADDRESS_ORIGIN),
    registration_case("client data of an assertion", "invalid", error="wrong_type", kind="webauthn.get"),
    registration_case("an Ed25519 key, not ES256", "invalid", error="wrong_algorithm",
                      cose=cbor2.dumps({1: 1, 3: -8, -1: 6, -2: eddsa})),
    registration_case("a credential id other than the authenticator's", "invalid", error="malformed",
                      identifier=b"\x01" * 20, independent=True),
    registration_case("no credential data (AT clear)", "invalid", error="malformed", flags=UP | UV),
    registration_case("bytes after the authenticator data", "invalid", error="malformed", trailing=b"\x00",
                      independent=True),
    registration_case("inside another site's frame", "invalid", error="wrong_origin", crossOrigin=True,
                      topOrigin="https://evil.example", independent=True),
]
assertions = [
    assertion_case("an approval, user verified, the counter going up", "valid"),
    assertion_case("an authenticator that keeps no counter (0 and 0)", "valid", count=0, stored=0),
    assertion_case("the user not verified (UV clear)", "invalid", error="user_not_verified", flags=UP | BE),
    assertion_case("nobody present (UP clear)", "invalid", error="user_not_verified", flags=UV | BE),
    assertion_case("made for another verdict of the same event", "invalid", error="wrong_challenge",
                   token=other_token),
    assertion_case("on another origin", "invalid", error="wrong_origin", origin="https://evil.example"),
    assertion_case("scoped to another RP ID", "invalid", error="wrong_origin", rp_id="evil.example"),
    assertion_case("made on the broker's address, outside its RP ID", "invalid", error="wrong_origin",
                   origin=ADDRESS_ORIGIN),
    assertion_case("client data of a registration", "invalid", error="wrong_type", kind="webauthn.create"),
    assertion_case("signed by another key", "invalid", error="bad_signature", key=other),
    assertion_case("a raw R||S signature, not DER", "invalid", error="bad_signature", raw=True),
    signed_then_changed(),
    assertion_case("the counter not going up (7, then 7)", "invalid", error="sign_count", count=7, stored=7),
    assertion_case("the counter going back (7, then 3)", "invalid", error="sign_count", count=3, stored=7),
    assertion_case("another credential", "invalid", error="wrong_key", identifier=b"\x02" * 20, independent=True),
    assertion_case("inside another site's frame", "invalid", error="wrong_origin", crossOrigin=True,
                   independent=True),
]
for number, case in enumerate(registrations + assertions, start=1):
    case["tcId"] = number

OUT.write_text(json.dumps({
    "description": "Passkeys (proto/signing.md §10) of a broker whose RP ID is `rpId`, serving `origins`. "
                   "`registrations` are made for `registrationChallenge`; `assertions` approve with the decision "
                   "`decision` (their challenge: SHA-256 of its signing input) with the passkey `passkey` "
                   "(credential `credentialId`), whose counter the broker last saw as `storedSignCount`. "
                   "Every case was also put to py_webauthn, except those marked `independent`, which are rules "
                   "of this format alone.",
    "rpId": RP_ID,
    "origins": [ORIGIN, ADDRESS_ORIGIN],
    "registrationChallenge": b64url(registration_challenge),
    "credentialId": b64url(credential_id),
    "aaguid": "ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4",
    "passkey": jwk(passkey),
    "decision": verdict_token,
    "registrations": registrations,
    "assertions": assertions,
}, indent=2) + "\n")
print(f"wrote {OUT.relative_to(OUT.parent.parent.parent)}: {len(registrations)} registrations, "
      f"{len(assertions)} assertions")
