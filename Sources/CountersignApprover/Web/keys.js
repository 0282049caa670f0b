// The device key and what it signs: proofs and decisions, byte for byte as
// proto/signing.md §1-2 fixes them. The private key is made with
// extractable: false, so no script (this one included) can ever read it;
// WebCrypto's ECDSA signature is already the 64-byte R || S of ES256.

const utf8 = new TextEncoder();

export function base64url(bytes) {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function fromBase64url(text) {
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  return Uint8Array.from(binary, (character) => character.charCodeAt(0));
}

function encodedJSON(value) {
  return base64url(utf8.encode(JSON.stringify(value)));
}

/** A new P-256 signing key pair whose private half cannot be exported. */
export function newKeyPair() {
  return crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign"]);
}

/** The public key as the broker takes it: a P-256 JWK. */
export async function publicJWK(publicKey) {
  const jwk = await crypto.subtle.exportKey("jwk", publicKey);
  return { kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y };
}

/** The device id: the RFC 7638 thumbprint of the public key. */
export async function thumbprint(jwk) {
  const canonical = `{"crv":"P-256","kty":"EC","x":"${jwk.x}","y":"${jwk.y}"}`;
  return base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", utf8.encode(canonical))));
}

/** The short fingerprint people compare: 8 bytes of SHA-256(thumbprint), in four groups of hex. */
export async function fingerprint(deviceID) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", utf8.encode(deviceID))).slice(0, 8);
  const hex = Array.from(digest, (byte) => byte.toString(16).padStart(2, "0").toUpperCase()).join("");
  return hex.match(/.{4}/g).join("-");
}

export function randomID() {
  return base64url(crypto.getRandomValues(new Uint8Array(16)));
}

async function sign(privateKey, header, claims) {
  const input = `${encodedJSON(header)}.${encodedJSON(claims)}`;
  const signature = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, privateKey, utf8.encode(input));
  return `${input}.${base64url(new Uint8Array(signature))}`;
}

/** A device proof (signing.md §1) for one request. `now` is seconds on the broker's clock. */
export function deviceProof(privateKey, deviceID, method, url, now) {
  return sign(
    privateKey,
    { typ: "countersign-proof+jwt", alg: "ES256", kid: deviceID },
    { jti: randomID(), htm: method, htu: url, iat: now },
  );
}

/**
 * What the approver is shown of an inbox item (signing.md §2, "What the
 * approver was shown"): the card is drawn from these fields, and a decision
 * commits to their digest.
 */
export function shownRequest(item) {
  const event = item.event;
  return {
    event: event.event,
    user: event.client_user_id,
    app: item.app,
    requester: event.requester_name ?? "",
    address: event.ip,
    location: event.location,
    created: Number(event.timestamp),
    details: event.details ?? "",
  };
}

const SHOWN_FIELDS = ["event", "user", "app", "requester", "address", "location", "created", "details"];

/** BASE64URL(SHA-256) of the label, then per field LF name "=" UTF-8 byte length ":" UTF-8 value. */
export async function shownDigest(shown) {
  const parts = [utf8.encode("countersign-shown-v1")];
  for (const name of SHOWN_FIELDS) {
    const value = utf8.encode(String(shown[name]));
    parts.push(utf8.encode(`\n${name}=${value.length}:`), value);
  }
  const bytes = new Uint8Array(parts.reduce((total, part) => total + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    bytes.set(part, offset);
    offset += part.length;
  }
  return base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)));
}

/** A decision (signing.md §2) on one inbox item, committing to `shown`, the digest of what was displayed. */
export function decision(privateKey, deviceID, { eventID, nonce, verdict, match, shown, audience, newDeviceID, now }) {
  const claims = { evt: eventID, nonce, decision: verdict, aud: audience, iat: now, jti: randomID(), shown };
  if (match) claims.match = match;
  if (newDeviceID) claims.jkt = newDeviceID;
  return sign(privateKey, { typ: "countersign-decision+jwt", alg: "ES256", kid: deviceID }, claims);
}
