// The broker's REST API as the web approver uses it; the broker is this
// page's own origin (the page's CSP allows no other).

import { decision, deviceProof, shownDigest, shownRequest } from "./keys.js";
import { assertPasskey, challengeOf, createPasskey } from "./passkeys.js";

export class BrokerError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export class Broker {
  constructor(origin) {
    this.origin = origin;
    // Seconds to add to this device's clock to get the broker's: proofs
    // must be within a minute of it, and phones' clocks drift.
    this.offset = 0;
  }

  now() {
    return Math.floor(Date.now() / 1000 + this.offset);
  }

  async request(method, path, { headers = {}, body, signal } = {}) {
    let response;
    try {
      response = await fetch(this.origin + path, {
        method,
        headers: body === undefined ? headers : { ...headers, "Content-Type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
        cache: "no-store",
        credentials: "omit",
        signal,
      });
    } catch (error) {
      if (error.name === "AbortError") throw error;
      throw new BrokerError(0, "unreachable", "the broker cannot be reached; check the connection");
    }
    // The Date header counts whole seconds: only a clock that is off by
    // more than that is corrected.
    const date = Date.parse(response.headers.get("Date") ?? "");
    if (!Number.isNaN(date)) {
      const offset = (date - Date.now()) / 1000;
      this.offset = Math.abs(offset) > 2 ? offset : 0;
    }
    const text = await response.text();
    let document = null;
    try {
      document = text ? JSON.parse(text) : null;
    } catch {
      document = null;
    }
    if (!response.ok) {
      throw new BrokerError(
        response.status,
        document?.error ?? "http_" + response.status,
        document?.message ?? `the broker answered ${response.status}`,
      );
    }
    return document;
  }

  async proof(account, method, path) {
    return deviceProof(account.privateKey, account.deviceID, method, this.origin + path, this.now());
  }

  async asDevice(account, method, path, { query = "", body, signal } = {}) {
    for (let attempt = 1; ; attempt += 1) {
      const headers = { "Device-Proof": await this.proof(account, method, path) };
      try {
        return await this.request(method, path + query, { headers, body, signal });
      } catch (error) {
        // A refused proof changed nothing; the refusal's Date header has
        // set the clock offset, so a proof signed now is on time.
        if (attempt === 1 && error.code === "invalid_proof") continue;
        throw error;
      }
    }
  }

  enroll({ apiKey, user, token, name, jwk, deviceID, privateKey }) {
    const path = "/api/v1/enrollments";
    return deviceProof(privateKey, deviceID, "POST", this.origin + path, this.now()).then((proof) =>
      this.request("POST", path, {
        headers: { API_KEY_ID: apiKey, "Device-Proof": proof },
        body: { client_user_id: user, enrollment_token: token, public_key: jwk, name, type: "browser" },
      }),
    );
  }

  async requestPairing({ apiKey, user, name, jwk, deviceID, privateKey }) {
    const path = "/api/v1/events";
    const proof = await deviceProof(privateKey, deviceID, "POST", this.origin + path, this.now());
    return this.request("POST", path, {
      headers: { API_KEY_ID: apiKey, "New-Device-Proof": proof },
      body: {
        client_user_id: user,
        event: "ENROLL_NEW_TRUSTED_DEVICE",
        requester_name: name,
        new_device: { public_key: jwk, name, type: "browser" },
      },
    });
  }

  pollEvent(id, requesterToken, wait, signal) {
    return this.request("GET", `/api/v1/events/${encodeURIComponent(id)}?wait=${wait}`, {
      headers: { Authorization: `Bearer ${requesterToken}` },
      signal,
    });
  }

  withdraw(id, requesterToken) {
    return this.request("DELETE", `/api/v1/events/${encodeURIComponent(id)}`, {
      headers: { Authorization: `Bearer ${requesterToken}` },
    });
  }

  /**
   * The pending requests and the state naming them; held up to `wait` s
   * while they are still the set `state` names (none, without one).
   */
  inbox(account, wait, state, signal) {
    const query = `?wait=${wait}` + (state ? `&state=${encodeURIComponent(state)}` : "");
    return this.asDevice(account, "GET", "/api/v1/inbox", { query, signal });
  }

  /** One event of the account's user, whatever became of it. */
  inboxEvent(account, id) {
    return this.asDevice(account, "GET", `/api/v1/inbox/${encodeURIComponent(id)}`);
  }

  /**
   * Signs and sends a decision. Approving an event that requires user
   * verification takes an assertion of this device's passkey over the
   * decision itself (signing.md §10): the browser asks for the screen lock.
   */
  async decide(account, item, verdict, match) {
    const jws = await decision(account.privateKey, account.deviceID, {
      eventID: item.event.ID,
      nonce: item.nonce,
      verdict,
      match: verdict === "approve" ? match : undefined,
      shown: await shownDigest(shownRequest(item)),
      audience: this.origin,
      newDeviceID: item.new_device?.id,
      now: this.now(),
    });
    const body = { decision: jws };
    if (verdict === "approve" && item.event.user_verification === "required" && account.passkey) {
      body.assertion = await assertPasskey(await challengeOf(jws), account.passkey.credential_id);
    }
    return this.request("POST", `/api/v1/events/${encodeURIComponent(item.event.ID)}/decision`, { body });
  }

  /**
   * A request with a device proof whose signing input is also the
   * challenge of a passkey ceremony: `makeBody` runs it with that challenge.
   */
  async withPasskey(account, method, path, makeBody) {
    const proof = await this.proof(account, method, path);
    const body = await makeBody(await challengeOf(proof));
    return this.request(method, path, { headers: { "Device-Proof": proof }, body });
  }

  /** Protects this device's approvals with a new passkey (replacing one takes the one in place). */
  registerPasskey(account) {
    return this.withPasskey(account, "PUT", "/api/v1/devices/self/passkey", async (challenge) => {
      const assertion = account.passkey ? await assertPasskey(challenge, account.passkey.credential_id) : undefined;
      const registration = await createPasskey(challenge, account);
      return assertion ? { ...registration, assertion } : registration;
    });
  }

  /** Removes this device's passkey, its owner verified by it. */
  removePasskey(account) {
    return this.withPasskey(account, "DELETE", "/api/v1/devices/self/passkey", async (challenge) => ({
      assertion: await assertPasskey(challenge, account.passkey.credential_id),
    }));
  }

  whoAmI(account) {
    return this.asDevice(account, "GET", "/api/v1/devices/self");
  }

  devices(account) {
    return this.asDevice(account, "GET", "/api/v1/devices");
  }

  async removeDevice(account, id) {
    const path = `/api/v1/devices/${encodeURIComponent(id)}`;
    try {
      return await this.asDevice(account, "DELETE", path);
    } catch (error) {
      // Under an app that requires user verification, removing another
      // device takes the screen lock (signing.md §10).
      if (error.code !== "user_verification_required" || !account.passkey) throw error;
      return this.withPasskey(account, "DELETE", path, async (challenge) => ({
        assertion: await assertPasskey(challenge, account.passkey.credential_id),
      }));
    }
  }

  vapidKey() {
    return this.request("GET", "/api/v1/push/vapid-key");
  }

  subscribePush(account, subscription, vapidKeyID) {
    const { endpoint, keys } = subscription.toJSON();
    return this.asDevice(account, "PUT", "/api/v1/devices/self/push", {
      body: { endpoint, keys, vapid_key_id: vapidKeyID },
    });
  }

  unsubscribePush(account) {
    return this.asDevice(account, "DELETE", "/api/v1/devices/self/push");
  }
}
