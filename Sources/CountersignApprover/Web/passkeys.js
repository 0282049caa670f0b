// The passkey that protects this device's approvals (proto/signing.md §10):
// a WebAuthn credential on this phone's or computer's screen lock (or a
// security key), made and used with the owner verified. The broker is the
// relying party; its RP ID is this page's host, so `rp.id` is left to the
// browser. Every challenge is SHA-256 of a JWS signing input this page just
// signed: a device proof for the request that carries it, or a decision.

import { base64url, fromBase64url } from "./keys.js";

const utf8 = new TextEncoder();
const bytes = (buffer) => base64url(new Uint8Array(buffer));

/**
 * Why this browser cannot make and use passkeys on this page, or null when
 * it can: WebAuthn needs a secure context, and an RP ID that is a name, so
 * a page opened at an address (192.0.2.7, [2001:db8::1]) can have none.
 */
export function passkeysUnavailable() {
  // In this order: a browser defines PublicKeyCredential only in a secure
  // context, so its absence says nothing until the other two are ruled out.
  const host = location.hostname;
  if (/^\d+(\.\d+){3}$/.test(host) || host.startsWith("[")) {
    return "A screen lock works only at the approver's name, not at an address like this one.";
  }
  if (!window.isSecureContext) return "A screen lock needs the approver's https address.";
  if (typeof window.PublicKeyCredential !== "function") return "This browser has no passkeys.";
  return null;
}

/** SHA-256 of the signing input (`header.payload`) of a compact JWS. */
export async function challengeOf(jws) {
  const input = jws.split(".").slice(0, 2).join(".");
  return new Uint8Array(await crypto.subtle.digest("SHA-256", utf8.encode(input)));
}

/**
 * A new passkey for this device, its owner verified: what the broker's
 * `PUT /api/v1/devices/self/passkey` takes. The screen lock of this device
 * is offered first; a security key is still allowed.
 */
export async function createPasskey(challenge, { deviceID, user, deviceName }) {
  const credential = await navigator.credentials.create({
    publicKey: {
      rp: { name: "Countersign" },
      // The device id (43 characters) names this credential's account: one
      // passkey per trusted device, not per person.
      user: { id: utf8.encode(deviceID), name: user, displayName: `${user} (${deviceName})` },
      challenge,
      pubKeyCredParams: [{ type: "public-key", alg: -7 }],
      authenticatorSelection: { userVerification: "required", residentKey: "discouraged" },
      hints: ["client-device"],
      attestation: "none",
      timeout: 120_000,
    },
  });
  return {
    credential_id: bytes(credential.rawId),
    client_data_json: bytes(credential.response.clientDataJSON),
    attestation_object: bytes(credential.response.attestationObject),
    transports: credential.response.getTransports?.() ?? [],
  };
}

/** An assertion of the passkey `credentialID` for `challenge`, its owner verified. */
export async function assertPasskey(challenge, credentialID) {
  const credential = await navigator.credentials.get({
    publicKey: {
      challenge,
      allowCredentials: [{ type: "public-key", id: fromBase64url(credentialID) }],
      userVerification: "required",
      timeout: 120_000,
    },
  });
  return {
    credential_id: bytes(credential.rawId),
    authenticator_data: bytes(credential.response.authenticatorData),
    client_data_json: bytes(credential.response.clientDataJSON),
    signature: bytes(credential.response.signature),
  };
}

/**
 * The way out when the screen lock cannot be confirmed because the passkey
 * itself is gone (deleted in the phone's settings, or with the browser's
 * data): nothing on this device can bring it back or turn it off.
 */
export const lostPasskeyHelp =
  "If its passkey was deleted, this device cannot confirm it again: remove this device from another trusted " +
  "device (device-agent devices remove, or the approver there), then pair this browser again.";

/** What to tell the person when the browser's passkey prompt failed. */
export function passkeyFailure(error) {
  if (error?.name === "NotAllowedError") {
    return "The screen lock was not confirmed: it was cancelled or timed out, or this device no longer holds " +
      "its passkey.";
  }
  if (error?.name === "InvalidStateError") return "This authenticator already holds a passkey for this device.";
  if (error?.name === "SecurityError") return "Passkeys do not work at this address; open the approver at the broker's own name.";
  if (error?.name === "NotSupportedError") return "This browser has no screen lock or security key to use.";
  return `The screen lock could not be used: ${error?.message ?? error}`;
}
