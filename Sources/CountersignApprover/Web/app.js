// The web approver: a trusted device in a browser. Everything the broker
// or a requester wrote is put on the page as text (textContent), never as
// HTML; the page's CSP allows no inline script and no other origin.

import { forgetAccount, forgetPairing, loadAccount, loadPairing, saveAccount, savePairing } from "./account.js";
import { Broker, BrokerError } from "./broker.js";
import { fingerprint, fromBase64url, newKeyPair, publicJWK, shownRequest, thumbprint } from "./keys.js";
import { lostPasskeyHelp, passkeyFailure, passkeysUnavailable } from "./passkeys.js";

const broker = new Broker(location.origin);
const $ = (id) => document.getElementById(id);
let account = null;
// Counts this page's own changes to its passkey: a device list asked for
// before one does not undo it.
let passkeyChanges = 0;
const cards = new Map(); // event id -> { item, element, ended }
let focusEventID = null;

function show(...ids) {
  for (const section of document.querySelectorAll("main > section")) section.hidden = !ids.includes(section.id);
}

let statusTimer = null;

/** Says `text` at the top; news (not an error) goes away after a while. */
function status(text, isError = false, { fades = false } = {}) {
  clearTimeout(statusTimer);
  $("status").textContent = text;
  $("status").classList.toggle("error", isError);
  if (fades) statusTimer = setTimeout(() => status(""), 15_000);
}

/** What the person holds: "phone" or "computer". */
function deviceNoun() {
  return /Android|iPhone|iPad|Mobile/.test(navigator.userAgent) ? "phone" : "computer";
}

function element(tag, { text, className, attributes } = {}, children = []) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  for (const [name, value] of Object.entries(attributes ?? {})) node.setAttribute(name, value);
  for (const child of children) node.append(child);
  return node;
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function secondsLeft(expiresAt) {
  return Math.max(0, Math.floor(Date.parse(expiresAt) / 1000 - broker.now()));
}

function formatLeft(seconds) {
  return seconds >= 60 ? `${Math.floor(seconds / 60)} min ${seconds % 60} s left` : `${seconds} s left`;
}

function defaultDeviceName() {
  const agent = navigator.userAgent;
  const system = /Android/.test(agent) ? "Android" : /iPhone|iPad/.test(agent) ? "iPhone" : /Mac/.test(agent) ? "Mac"
    : /Windows/.test(agent) ? "Windows" : /Linux/.test(agent) ? "Linux" : "";
  const browser = /Firefox\//.test(agent) ? "Firefox" : /Edg\//.test(agent) ? "Edge"
    : /Chrom(e|ium)\//.test(agent) ? "Chrome" : /Safari\//.test(agent) ? "Safari" : "Browser";
  return system ? `${browser} on ${system}` : browser;
}

// MARK: What the link asks for

/** The fragment's parameters, then the fragment gone from the address bar and history. */
function takeFragment() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (location.hash) history.replaceState(null, "", location.pathname);
  return fragment;
}

// MARK: Becoming a trusted device

function askForDevice({ apiKey, user, token }) {
  show("setup");
  $("setup-title").textContent = token ? "Add this browser as a trusted device" : "Pair this browser with a trusted device";
  $("setup-lead").textContent = token
    ? `It will approve log-ins and other requests for ${user}.`
    : `It will approve log-ins and other requests for ${user} once a device you already trust confirms it.`;
  $("setup-button").textContent = token ? "Add this device" : "Start pairing";
  $("device-name").value = defaultDeviceName();
  $("setup-form").onsubmit = async (submit) => {
    submit.preventDefault();
    $("setup-button").disabled = true;
    try {
      await becomeDevice({ apiKey, user, token, name: $("device-name").value.trim() });
    } catch (error) {
      status(error.message, true);
    } finally {
      $("setup-button").disabled = false;
    }
  };
}

async function becomeDevice({ apiKey, user, token, name }) {
  const keys = await newKeyPair();
  const jwk = await publicJWK(keys.publicKey);
  const deviceID = await thumbprint(jwk);
  const candidate = { apiKey, user, name, jwk, deviceID, privateKey: keys.privateKey };
  const device = { apiKey, user, name, deviceID, privateKey: keys.privateKey, publicKey: keys.publicKey };
  if (token) {
    status("Adding this device…");
    await broker.enroll({ ...candidate, token });
    return becomeTrusted(device);
  }
  status("Asking your trusted devices…");
  const ticket = await broker.requestPairing(candidate);
  const pending = { ...device, ticket };
  await savePairing(pending);
  await waitForPairing(pending);
}

async function becomeTrusted({ deviceID, apiKey, user, name, privateKey, publicKey }) {
  account = { deviceID, apiKey, user, name, privateKey, publicKey, added: Date.now() };
  await saveAccount(account);
  await forgetPairing();
  status(`This ${deviceNoun()} is now a trusted device of ${user}.`, false, { fades: true });
  await startApprover();
  // Offered at once: the moment someone pairs is when they hold the device.
  if (!passkeysUnavailable() && !account.passkey) {
    $("screen-lock").classList.add("highlight");
    $("screen-lock").scrollIntoView({ block: "center" });
  }
}

/**
 * Shows the pairing code and waits for a trusted device's answer; this
 * browser becomes the device once approved. The pairing is kept until it
 * ends, so a reload or another tab waits for the same one.
 */
async function waitForPairing(pending) {
  const ticket = pending.ticket;
  show("pairing");
  status("");
  $("pairing-code").textContent = ticket.match_number;
  $("pairing-fingerprint").textContent = await fingerprint(pending.deviceID);
  const stop = new AbortController();
  $("pairing-cancel").onclick = () => stop.abort();
  const countdown = () => {
    $("pairing-left").textContent = formatLeft(secondsLeft(ticket.event.expires_at));
  };
  countdown();
  const timer = setInterval(countdown, 250);
  let event = ticket.event;
  try {
    while (event.status === "pending") {
      try {
        event = await broker.pollEvent(event.ID, ticket.requester_token, 25, stop.signal);
      } catch (error) {
        if (error.name === "AbortError") {
          await broker.withdraw(ticket.event.ID, ticket.requester_token).catch(() => {});
          await forgetPairing();
          status("Pairing cancelled.");
          show("welcome");
          return;
        }
        if (error.status !== 0 && error.status < 500) {
          await forgetPairing();
          show("welcome");
          status(`The pairing ended: ${error.message}`, true);
          return;
        }
        if (secondsLeft(ticket.event.expires_at) === 0) break;
        await sleep(1000);
      }
    }
  } finally {
    clearInterval(timer);
  }
  if (event.status === "approved") return becomeTrusted(pending);
  await forgetPairing();
  show("welcome");
  const why = {
    rejected: "Your trusted device refused the pairing.",
    withdrawn: "The pairing was cancelled.",
  };
  status(why[event.status] ?? "The pairing expired before a trusted device confirmed it. Start again.", true);
}

// MARK: Requests

const TITLES = {
  LOGIN: "Log-in request",
  TRANSACTION: "Transaction to confirm",
  ENROLL_NEW_TRUSTED_DEVICE: "Add a new device",
};

function requestCard(item) {
  const event = item.event;
  const pairing = event.event === "ENROLL_NEW_TRUSTED_DEVICE" && item.new_device;
  // What the requester wrote (its machine's name) and what the broker saw
  // (its address) on rows of their own: a name cannot pass for an address.
  // Drawn from the fields a decision's digest commits to (keys.js shownRequest).
  const shown = shownRequest(item);
  const rows = pairing
    ? [
        ["New device", `${item.new_device.name} (${item.new_device.type})`],
        ["Fingerprint", item.new_device.fingerprint],
        ["App", shown.app],
        ["Address", shown.address],
      ]
    : [
        ["App", shown.app],
        ["Machine", shown.requester || "an unnamed machine"],
        ["Address", shown.address],
      ];
  if (shown.location && shown.location !== "Unknown") rows.push(["Place", shown.location]);
  rows.push(["Requested", new Date(shown.created * 1000).toLocaleString(undefined, { timeZoneName: "short" })]);
  if (shown.details) rows.push(["Details", shown.details]);
  // Several people approve it: who asks, who may approve, and how far it got.
  const quorum = event.approvers;
  if (quorum) {
    rows.push(["Asked by", shown.user]);
    rows.push(["Approvers", `${quorum.required_approvals} of ${quorum.users.join(", ")}`]);
  }
  // The event id stays out of sight (the card's data-event-id has it):
  // nobody holding a phone compares one.
  const list = element("dl");
  for (const [label, value] of rows) list.append(element("dt", { text: label }), element("dd", { text: value }));
  const progress = element("dd", { className: "progress" });
  if (quorum) list.append(element("dt", { text: "Approvals" }), progress);

  const left = element("span", { className: "left muted" });
  const error = element("p", { className: "error", attributes: { role: "alert" } });
  const outcome = element("p", { className: "outcome", attributes: { role: "status" } });
  const fieldID = `match-${event.ID}`;
  const number = element("input", {
    className: "number",
    attributes: {
      id: fieldID, name: "match", inputmode: "numeric", autocomplete: "one-time-code", pattern: "[0-9]*",
      maxlength: String(item.match_digits ?? (pairing ? 6 : 2)), required: "",
    },
  });
  const approve = element("button", { text: "Approve", attributes: { type: "submit", name: "approve" } });
  const reject = element("button", { text: "Reject", className: "reject", attributes: { type: "button", name: "reject" } });
  const fraud = element("button", {
    text: "This wasn't me",
    className: "fraud",
    attributes: { type: "button", name: "fraud" },
  });
  // An event that requires user verification is approved only with this
  // device's passkey; without one, it can still be rejected here.
  const verified = event.user_verification === "required";
  const canApprove = !verified || Boolean(account.passkey);
  const verification = verified
    ? element("p", {
        className: canApprove ? "muted needs" : "needs",
        text: canApprove
          ? `Approving asks for this ${deviceNoun()}'s screen lock (fingerprint, face or PIN).`
          : "This request must be approved on a device that can verify you (a fingerprint, face or screen " +
            "lock). You can still reject it here.",
      })
    : null;
  if (!canApprove) approve.hidden = true;
  // A device that could have a passkey but has none is offered one here,
  // where the request that needs it is.
  const offer = !canApprove && !passkeysUnavailable()
    ? element("button", {
        text: `Turn on this ${deviceNoun()}'s screen lock to approve`,
        className: "secondary",
        attributes: { type: "button", name: "screen-lock" },
      })
    : null;
  if (offer) offer.onclick = screenLockOn;
  const form = element("form", {}, [
    ...(verification ? [verification] : []),
    ...(offer ? [element("div", { className: "actions" }, [offer])] : []),
    ...(item.match_required && canApprove
      ? [element("label", {
          text: pairing ? "Pairing code shown on the new device" : "Number shown on the requesting machine",
          attributes: { for: fieldID },
        }), number]
      : []),
    element("div", { className: "actions" }, [approve, reject]),
    // An approver of someone else's request did not make it: no "this wasn't me".
    ...(quorum ? [] : [element("div", { className: "actions" }, [fraud])]),
  ]);
  const card = element("article", { className: "card", attributes: { "data-event-id": event.ID } }, [
    element("div", { className: "card-title" }, [element("h3", { text: TITLES[event.event] ?? `${event.event} request` }), left]),
    list,
    form,
    error,
    outcome,
  ]);
  const entry = { item, element: card, ended: false, list, left, form, error, outcome, number, progress };
  showProgress(entry, event);
  form.onsubmit = (submit) => {
    submit.preventDefault();
    answer(entry, "approve");
  };
  reject.onclick = () => answer(entry, "reject");
  fraud.onclick = () => answer(entry, "fraud");
  return entry;
}

/**
 * "1 of 2: alice at 10:02" for a request several people approve; once this
 * user approved it, the card waits for the others with nothing to answer.
 */
function showProgress(entry, event) {
  if (!event.approvers) return;
  const approvals = event.approvals ?? [];
  const who = approvals.map((approval) =>
    `${approval.client_user_id} at ${new Date(approval.approved_at).toLocaleTimeString(undefined, { timeZoneName: "short" })}`);
  entry.progress.textContent =
    `${approvals.length} of ${event.approvers.required_approvals}` + (who.length ? `: ${who.join(", ")}` : "");
  if (approvals.some((approval) => approval.client_user_id === account.user)) {
    entry.form.hidden = true;
    entry.outcome.textContent = "You approved. Waiting for the other approvers.";
    entry.outcome.className = "outcome approved";
    entry.element.dataset.state = "waiting";
  }
}

/** Closes the notifications of a request that no longer waits. */
function closeNotifications(eventID) {
  navigator.serviceWorker?.getRegistration().then((registration) =>
    registration?.getNotifications({ tag: eventID }).then((shown) => shown.forEach((notice) => notice.close())),
  ).catch(() => {});
}

function end(entry, text, kind) {
  entry.ended = true;
  closeNotifications(entry.item.event.ID);
  entry.form.hidden = true;
  entry.left.hidden = true;
  // Only the title and what happened stay: nothing left to read or answer.
  entry.list.hidden = true;
  entry.error.textContent = "";
  entry.outcome.textContent = text;
  entry.outcome.className = `outcome ${kind}`;
  entry.element.dataset.state = kind;
  // Kept a while so the person sees what happened, then cleared.
  setTimeout(() => {
    entry.element.remove();
    cards.delete(entry.item.event.ID);
    updateEmpty();
  }, 60_000);
}

async function answer(entry, verdict) {
  if (entry.ended) return;
  const match = entry.number.value.trim();
  if (verdict === "approve" && entry.item.match_required && !/^[0-9]+$/.test(match)) {
    entry.error.textContent = "Type the number the requesting machine shows.";
    entry.number.focus();
    return;
  }
  for (const button of entry.form.querySelectorAll("button")) button.disabled = true;
  entry.error.textContent = "";
  // Its own answer ends the card, not the inbox's news that it ended.
  entry.answering = true;
  try {
    const decided = await broker.decide(account, entry.item, verdict, match);
    // An approval that leaves it waiting for other approvers keeps the card.
    if (decided.approvers && decided.status === "pending") {
      showProgress(entry, decided);
      return;
    }
    const outcomes = {
      approve: ["Approved. The requesting machine goes ahead.", "approved"],
      reject: ["Rejected. The requesting machine is told so.", "rejected"],
      fraud: [
        "Reported as not yours and rejected. Your other waiting requests are rejected too, and new ones are " +
          "refused for a while. If someone may know your password, change it.",
        "rejected",
      ],
    };
    // The other requests a report rejected end as the inbox changes.
    end(entry, ...outcomes[verdict]);
  } catch (error) {
    if (error instanceof DOMException) {
      entry.error.textContent = `Not approved. ${passkeyFailure(error)}` +
        (error.name === "NotAllowedError" ? ` ${lostPasskeyHelp}` : "");
    } else if (!(error instanceof BrokerError)) {
      entry.error.textContent = `Could not sign the answer: ${error.message}`;
    } else if (error.code === "user_verification_required") {
      entry.error.textContent = "This request must be approved with your screen lock; turn it on below, or reject it.";
    } else if (error.code === "sign_count") {
      entry.error.textContent =
        "Not approved: your passkey's counter did not go up. It was used for another answer meanwhile (answer " +
        "again), or it was copied (if this repeats, remove this device).";
    } else if (error.code === "wrong_match") {
      entry.error.textContent = `Wrong number: ${error.message}.`;
      entry.number.value = "";
      entry.number.focus();
    } else if (error.code === "too_many_wrong_matches") {
      end(entry, "Rejected: that was the third wrong number.", "rejected");
    } else if (isRemoved(error)) {
      showRemoved();
    } else if (error.code === "already_approved") {
      entry.form.hidden = true;
      entry.outcome.textContent = "You approved it already, on another device. Waiting for the other approvers.";
    } else if (["already_decided", "expired", "withdrawn"].includes(error.code)) {
      end(entry, `No longer waiting: ${error.message}.`, "ended");
    } else {
      entry.error.textContent = error.message;
    }
  } finally {
    entry.answering = false;
    for (const button of entry.form.querySelectorAll("button")) button.disabled = false;
  }
}

function updateEmpty() {
  $("no-requests").hidden = cards.size > 0;
}

function render(items) {
  const waiting = new Set(items.map((item) => item.event.ID));
  for (const item of items) {
    if (cards.has(item.event.ID)) {
      // The approvals so far of a request several people approve.
      const entry = cards.get(item.event.ID);
      if (!entry.ended) showProgress(entry, item.event);
      continue;
    }
    const entry = requestCard(item);
    cards.set(item.event.ID, entry);
    $("request-list").prepend(entry.element);
  }
  for (const [id, entry] of cards) {
    if (!entry.ended && !entry.answering && !waiting.has(id)) {
      end(entry, "No longer waiting.", "ended");
      sayWhyEnded(entry);
    }
  }
  tick();
  focusRequested();
  updateEmpty();
}

/** Brings forward the request a notification was tapped for, once shown. */
function focusRequested() {
  if (!focusEventID || !cards.has(focusEventID)) return;
  const card = cards.get(focusEventID).element;
  card.classList.add("highlight");
  card.scrollIntoView({ block: "center" });
  focusEventID = null;
}

/** Asks the broker what became of a request that left the inbox, and says it. */
async function sayWhyEnded(entry) {
  let event;
  try {
    event = await broker.inboxEvent(account, entry.item.event.ID);
  } catch {
    entry.outcome.textContent = "No longer waiting: answered on another device, withdrawn, or expired.";
    return;
  }
  if (event.decided_by === account.deviceID) {
    // This page's answer landed though its reply was lost: told as the
    // answer itself would have been, in its own colour.
    const approved = event.status === "approved";
    entry.outcome.textContent = approved ? "Approved on this device." : "Rejected on this device.";
    entry.outcome.className = `outcome ${approved ? "approved" : "rejected"}`;
    entry.element.dataset.state = approved ? "approved" : "rejected";
    return;
  }
  if (event.approvers && event.status === "approved") {
    const who = (event.approvals ?? []).map((approval) => approval.client_user_id).join(", ");
    entry.outcome.textContent = `Approved by ${event.approvals?.length} of ${event.approvers.required_approvals}: ${who}.`;
    entry.outcome.className = "outcome approved";
    entry.element.dataset.state = "approved";
    return;
  }
  if (event.approvers && event.status === "rejected") {
    entry.outcome.textContent = "No longer waiting: rejected by one of the approvers.";
    return;
  }
  const why = {
    withdrawn: "No longer waiting: the requesting machine withdrew it.",
    fraud_reported: "No longer waiting: reported as not yours on another device.",
    user_protected: "No longer waiting: rejected because another request was reported as not yours.",
    too_many_wrong_matches: "No longer waiting: rejected after three wrong numbers.",
  };
  entry.outcome.textContent =
    why[event.status_reason] ??
    {
      approved: "No longer waiting: approved on another device.",
      rejected: "No longer waiting: rejected on another device.",
      expired: "Expired: nobody answered in time.",
    }[event.status] ??
    "No longer waiting.";
}

function tick() {
  for (const entry of cards.values()) {
    if (entry.ended) continue;
    const left = secondsLeft(entry.item.event.expires_at);
    entry.left.textContent = formatLeft(left);
    if (left === 0) end(entry, "Expired: nobody answered in time.", "ended");
  }
}

/**
 * Follows the inbox: each poll is held while the waiting requests are the
 * ones shown (the state of the last answer), so the broker answers as soon
 * as one is added or one ends, whatever ended it.
 */
async function watchInbox() {
  let retry = 1000;
  let state = null;
  while (account && !account.removed) {
    try {
      const inbox = await broker.inbox(account, 25, state);
      retry = 1000;
      if ($("status").classList.contains("error")) status("");
      render(inbox.events);
      // A broker without states answers at once while something waits.
      if (!inbox.state && inbox.events.length > 0) await sleep(3000);
      state = inbox.state ?? null;
    } catch (error) {
      if (isRemoved(error)) return showRemoved();
      status(`${error.message}. Trying again…`, true);
      await sleep(retry);
      retry = Math.min(retry * 2, 30_000);
    }
  }
}

// MARK: Devices

async function refreshDevices() {
  const changesBefore = passkeyChanges;
  let list;
  try {
    list = await broker.devices(account);
  } catch (error) {
    if (isRemoved(error)) showRemoved();
    return;
  }
  const items = list.devices
    .filter((device) => !device.revoked_at)
    .map((device) => {
      const self = device.id === list.this_device;
      const name = element("span", { className: "device-name", text: device.name });
      const about = element("span", {
        className: "muted",
        text: `${self ? "this device · " : ""}${device.type} · added ${new Date(device.created_at).toLocaleDateString()}${device.push ? " · notifications" : ""}${device.passkey ? " · screen lock" : ""}`,
      });
      const remove = element("button", { text: "Remove", className: "reject", attributes: { type: "button" } });
      remove.onclick = async () => {
        const question = self
          ? "Remove this device? It will no longer be able to approve anything."
          : `Remove ${device.name}? It will no longer be able to approve anything.`;
        if (!confirm(question)) return;
        try {
          await broker.removeDevice(account, device.id);
          if (self) return showRemoved();
          status(`${device.name} was removed.`);
        } catch (error) {
          status(error instanceof DOMException ? `Not removed: ${passkeyFailure(error)}` : error.message, true);
        }
        refreshDevices();
      };
      return element("li", { attributes: { "data-device-id": device.id } }, [
        element("div", {}, [name, element("br"), about]),
        remove,
      ]);
    });
  $("device-list").replaceChildren(...items);
  // The passkey may have gone with a re-pairing or been changed elsewhere.
  const self = list.devices.find((device) => device.id === list.this_device);
  const changed = (self?.passkey?.credential_id ?? null) !== (account.passkey?.credential_id ?? null);
  if (self && changed && changesBefore === passkeyChanges) {
    account.passkey = self.passkey ?? null;
    refreshScreenLock();
    rerenderCards();
  }
}

/** Whether the broker said this device is gone (removed, or its app). */
function isRemoved(error) {
  return error instanceof BrokerError && ["device_revoked", "unknown_device"].includes(error.code);
}

function showRemoved() {
  if (account) account.removed = true;
  show("removed");
  status("");
  $("account").textContent = account ? `${account.name}, removed from ${account.user}` : "";
  $("forget").onclick = async () => {
    await forgetAccount(account.deviceID);
    account = null;
    location.replace(location.pathname);
  };
}

// MARK: Notifications

async function pushRegistration() {
  if (!("serviceWorker" in navigator) || !("PushManager" in window) || !("Notification" in window)) return null;
  return navigator.serviceWorker.ready;
}

async function refreshNotifications() {
  const registration = await pushRegistration();
  $("notifications").hidden = false;
  if (!registration) {
    $("notifications-state").textContent = "This browser cannot show notifications; keep this page open to see requests.";
    return;
  }
  const subscription = await registration.pushManager.getSubscription();
  const on = subscription && Notification.permission === "granted" && account.pushKeyID;
  $("notifications-state").textContent = on
    ? "On: new requests are announced even when this page is closed."
    : Notification.permission === "denied"
      ? "Blocked in this browser's settings; keep this page open to see requests."
      : "Off: requests show only while this page is open.";
  $("notifications-on").hidden = Boolean(on) || Notification.permission === "denied";
  $("notifications-off").hidden = !on;
  if (on) {
    // After a VAPID key rotation, subscribe again with the new key.
    const key = await broker.vapidKey().catch(() => null);
    if (key && key.key_id !== account.pushKeyID) await subscribe(registration, key).catch(() => {});
  }
}

async function subscribe(registration, key) {
  const existing = await registration.pushManager.getSubscription();
  if (existing) await existing.unsubscribe();
  const subscription = await registration.pushManager.subscribe({
    userVisibleOnly: true,
    applicationServerKey: fromBase64url(key.public_key),
  });
  await broker.subscribePush(account, subscription, key.key_id);
  account.pushKeyID = key.key_id;
  await saveAccount(account);
}

/** Rejects once `ms` pass: a browser's push service may never answer. */
function within(ms, promise, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

async function notificationsOn() {
  $("notifications-on").disabled = true;
  try {
    if ((await Notification.requestPermission()) !== "granted") {
      status("Notifications were not allowed.", true);
    } else {
      status("Turning notifications on…");
      await within(30_000, (async () => subscribe(await pushRegistration(), await broker.vapidKey()))(),
        "The browser's push service");
      status("Notifications are on.");
    }
  } catch (error) {
    status(`Notifications are not available here: ${error.message}`, true);
  } finally {
    $("notifications-on").disabled = false;
  }
  refreshNotifications();
}

async function notificationsOff() {
  try {
    const registration = await pushRegistration();
    const subscription = await registration?.pushManager.getSubscription();
    await subscription?.unsubscribe();
    await broker.unsubscribePush(account);
    account.pushKeyID = null;
    await saveAccount(account);
    status("Notifications are off.");
  } catch (error) {
    status(error.message, true);
  }
  refreshNotifications();
}

// MARK: Screen lock (the passkey)

/** Shows whether this device's approvals are protected by its passkey, and what can be done. */
function refreshScreenLock() {
  const noun = deviceNoun();
  $("screen-lock").hidden = false;
  $("screen-lock-on").textContent = `Protect approvals with this ${noun}'s screen lock`;
  const unavailable = passkeysUnavailable();
  if (unavailable) {
    $("screen-lock-state").textContent = unavailable;
    $("screen-lock-on").hidden = true;
    $("screen-lock-off").hidden = true;
    return;
  }
  const on = Boolean(account.passkey);
  $("screen-lock-state").textContent = on
    ? `On: requests that ask for it are approved only after this ${noun} checks it is you (fingerprint, face or PIN).`
    : `Off: some apps ask that only you, verified by this ${noun}'s screen lock, can approve. ` +
      "Without it, those requests must be approved on another device.";
  $("screen-lock-on").hidden = on;
  $("screen-lock-off").hidden = !on;
}

/** Says what became of a screen lock change beside its buttons, where the person looks. */
function screenLockSays(text, isError = false) {
  $("screen-lock-error").textContent = text;
  $("screen-lock-error").className = isError ? "error" : "muted";
  $("screen-lock-error").hidden = !text;
  if (text) $("screen-lock").scrollIntoView({ block: "nearest" });
}

/** Makes this device's passkey (the browser asks for the screen lock), then shows the new state. */
async function screenLockOn() {
  $("screen-lock-on").disabled = true;
  try {
    screenLockSays("Waiting for the screen lock…");
    const device = await broker.registerPasskey(account);
    passkeyChanges += 1;
    account.passkey = device.passkey ?? null;
    screenLockSays("");
    status(`Approvals are now protected with this ${deviceNoun()}'s screen lock.`, false, { fades: true });
  } catch (error) {
    if (isRemoved(error)) return showRemoved();
    screenLockSays(error instanceof DOMException ? passkeyFailure(error) : `Not turned on: ${error.message}`, true);
  } finally {
    $("screen-lock-on").disabled = false;
  }
  refreshScreenLock();
  rerenderCards();
  refreshDevices();
}

async function screenLockOff() {
  if (!confirm("Stop asking for the screen lock? Requests that need it must then be approved on another device.")) {
    return;
  }
  try {
    screenLockSays("Confirm with the screen lock to turn it off…");
    const device = await broker.removePasskey(account);
    passkeyChanges += 1;
    account.passkey = device.passkey ?? null;
    screenLockSays("");
    status("The screen lock no longer protects approvals here.", false, { fades: true });
  } catch (error) {
    if (isRemoved(error)) return showRemoved();
    screenLockSays(
      error instanceof DOMException
        ? `Not turned off. ${passkeyFailure(error)}` + (error.name === "NotAllowedError" ? ` ${lostPasskeyHelp}` : "")
        : `Not turned off: ${error.message}`,
      true,
    );
  }
  refreshScreenLock();
  rerenderCards();
  refreshDevices();
}

/** Draws the waiting cards again: whether they can be approved here changed. */
function rerenderCards() {
  for (const [id, entry] of cards) {
    if (entry.ended || entry.answering) continue;
    const fresh = requestCard(entry.item);
    entry.element.replaceWith(fresh.element);
    cards.set(id, fresh);
  }
  tick();
}

// MARK: Start

async function startApprover() {
  show("requests", "screen-lock", "devices", "notifications");
  $("account").textContent = `${account.name}, trusted device of ${account.user}`;
  try {
    account.passkey = (await broker.whoAmI(account)).passkey ?? null;
  } catch (error) {
    // Only the broker saying so: a clock that is off or a lost connection
    // must never lead anyone to forget a key that cannot be recovered.
    if (isRemoved(error)) return showRemoved();
  }
  $("notifications-on").onclick = notificationsOn;
  $("notifications-off").onclick = notificationsOff;
  $("screen-lock-on").onclick = screenLockOn;
  $("screen-lock-off").onclick = screenLockOff;
  refreshScreenLock();
  setInterval(tick, 250);
  setInterval(() => account && !account.removed && refreshDevices(), 60_000);
  refreshDevices();
  refreshNotifications().catch(() => {});
  updateEmpty();
  watchInbox();
}

async function start() {
  if ("serviceWorker" in navigator) {
    navigator.serviceWorker.register("sw.js", { scope: "./" }).catch(() => {});
    navigator.serviceWorker.addEventListener("message", (message) => {
      if (message.data?.type !== "push") return;
      if (typeof message.data.event_id === "string") focusEventID = message.data.event_id;
      focusRequested();
    });
  }
  // The welcome section is also where a failed or cancelled pairing returns.
  $("manual-pairing").onsubmit = (submit) => {
    submit.preventDefault();
    askForDevice({ apiKey: $("manual-api-key").value.trim(), user: $("manual-user").value.trim(), token: null });
  };
  const fragment = takeFragment();
  focusEventID = fragment.get("event");
  account = await loadAccount();
  if (account) {
    if (fragment.has("enroll") || fragment.has("pair")) {
      status(
        `This browser is already a trusted device of ${account.user}; the link was not used. ` +
          "To use it for another account, forget this device first (remove it in the list below).",
      );
    }
    return startApprover();
  }
  const apiKey = fragment.get("api_key");
  const user = fragment.get("user");
  const linked = apiKey && user && (fragment.has("enroll") || fragment.has("pair"));
  const pending = await loadPairing();
  if (pending) {
    // The same pairing link again (a reload, the QR code scanned twice)
    // waits for the pairing under way; another link starts afresh.
    const same = !linked || (fragment.has("pair") && pending.apiKey === apiKey && pending.user === user);
    if (same) return waitForPairing(pending);
    await broker.withdraw(pending.ticket.event.ID, pending.ticket.requester_token).catch(() => {});
    await forgetPairing();
  }
  if (linked) {
    return askForDevice({ apiKey, user, token: fragment.get("enroll") || null });
  }
  show("welcome");
}

start().catch((error) => status(`The approver could not start: ${error.message}`, true));
