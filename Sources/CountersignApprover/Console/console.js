// The operator's console: signing in by approving on a trusted device, and
// the views (views.js). Every value from the broker is set as text, never
// as markup.
import { renderUser, renderAudit, renderHealth, renderDashboard, auditActions, element } from "./views.js";
import { renderApps, renderApproverGroups, renderWebhooks, renderWatch, enrollmentForm } from "./manage.js";
import { UserList, EventSearch, searchQuery } from "./search.js";
import { Invitations } from "./invitations.js";

const $ = (id) => document.getElementById(id);
let csrfToken = null;
let signInAbort = null;

function status(text, isError = false) {
  $("status").textContent = text;
  $("status").className = isError ? "error" : "";
}

class APIError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// A call to the console's API: JSON both ways, the CSRF token on every
// change. A 401 means the session ended: back to signing in.
export async function api(path, { method = "GET", body, signal } = {}) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && csrfToken) headers["X-CSRF-Token"] = csrfToken;
  const response = await fetch("api/" + path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin", cache: "no-store", signal,
  });
  if (response.status === 204) return null;
  let document = null;
  try { document = await response.json(); } catch { document = null; }
  if (!response.ok) {
    const message = document?.message ?? document?.error ?? `the broker answered ${response.status}`;
    if (response.status === 401 && csrfToken) signedOut("Your session ended. Sign in again.");
    throw new APIError(response.status, document?.code ?? document?.error, message);
  }
  return document;
}

// Asks for a yes before an action; resolves true on Confirm.
export function confirmAction(text) {
  const dialog = $("confirm");
  $("confirm-text").textContent = text;
  return new Promise((resolve) => {
    let answer = false;
    // Escape closes the dialog too: that is a no.
    dialog.onclose = () => {
      dialog.onclose = null;
      resolve(answer);
    };
    $("confirm-yes").onclick = () => { answer = true; dialog.close(); };
    $("confirm-no").onclick = () => dialog.close();
    dialog.showModal();
  });
}

export function report(text, isError = false) { status(text, isError); }

function showSignIn() {
  $("console").hidden = true;
  $("sign-out").hidden = true;
  $("signed-in-as").hidden = true;
  $("sign-in").hidden = false;
  $("sign-in-form").hidden = false;
  $("waiting").hidden = true;
}

function signedOut(text) {
  csrfToken = null;
  showSignIn();
  status(text);
}

function signedIn(session) {
  csrfToken = session.csrf_token;
  $("sign-in").hidden = true;
  $("console").hidden = false;
  $("signed-in-as").textContent = `Signed in as ${session.operator}`;
  $("signed-in-as").hidden = false;
  $("sign-out").hidden = false;
  status("");
  show("dashboard");
}

// A failed wait is tried again, later each time, until the login expires.
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function signIn(name) {
  status("");
  signInAbort?.abort();
  const abort = new AbortController();
  signInAbort = abort;
  let attempt;
  try {
    attempt = await api("sign-in", { method: "POST", body: { operator: name }, signal: abort.signal });
  } catch (error) {
    status(error.message, true);
    return;
  }
  $("sign-in-form").hidden = true;
  $("waiting").hidden = false;
  $("match-number").textContent = attempt.match_number ?? "";
  $("match-number").hidden = !attempt.match_number;
  $("waiting-status").textContent = "Waiting for your approval…";
  let failures = 0;
  const expires = new Date(attempt.expires_at).getTime();
  while (!abort.signal.aborted) {
    if (Date.now() > expires + 60000) { fail("The sign-in ran out of time."); return; }
    let state;
    try {
      state = await api("sign-in?wait=25", { signal: abort.signal });
      failures = 0;
    } catch (error) {
      if (abort.signal.aborted) return;
      if (error instanceof APIError && error.status < 500) { fail(error.message); return; }
      failures += 1;
      $("waiting-status").textContent = "The broker does not answer; trying again…";
      await sleep(Math.min(30000, 1000 * 2 ** failures));
      continue;
    }
    if (state.status === "pending") continue;
    if (state.status !== "approved") {
      fail(state.status === "rejected" ? "The sign-in was refused on your device." : "The sign-in ran out of time.");
      return;
    }
    try {
      signedIn(await api("session", { method: "POST", signal: abort.signal }));
    } catch (error) {
      fail(error.message);
    }
    return;
  }
}

function fail(text) {
  showSignIn();
  status(text, true);
}

// What the views that act are given: the API, the question before an
// action, a way to run one and say how it went, and to show the view again.
const consoleActions = {
  api,
  confirmAction,
  async act(run, done) {
    try {
      const result = await run();
      status(done);
      return result ?? true;
    } catch (error) {
      status(error.message, true);
      return null;
    }
  },
  refresh: () => views[current](),
};

// The apps' names by id, read once a view needs them.
let appNamesRead = null;
function appNames() {
  appNamesRead ??= api("apps").then((document) => new Map(document.apps.map((app) => [app.id, app.name])))
    .catch((error) => { appNamesRead = null; throw error; });
  return appNamesRead;
}

const reportError = (text) => status(text, true);
let userList = null;
// The user list's search, waiting for the typing to end.
let typing = null;
let eventSearch = null;
let invitations = null;

let current = "dashboard";
const views = {
  dashboard: async () => renderDashboard($("dashboard-result"), await api("dashboard"), await appNames(), {
    openEvents: (filters) => openEvents(filters), openUser,
  }),
  users: async () => {
    if (!$("user-result").hasChildNodes()) await userList.load($("user-prefix").value.trim());
  },
  invitations: async () => invitations.show(),
  events: async () => {
    await eventSearch.fillApps();
    if (!$("event-result").hasChildNodes()) await eventSearch.load();
  },
  apps: async () => {
    appNamesRead = null;
    const apps = await api("apps");
    renderApps($("apps-result"), apps, consoleActions);
    renderApproverGroups($("approver-groups-result"), await api("approver-groups"), apps, consoleActions);
  },
  watch: async () => renderWatch($("watch-result"), await api("watch"), { ...consoleActions, appNames: await appNames(), openUser }),
  webhooks: async () => renderWebhooks($("webhooks-result"), await api("webhooks"), consoleActions),
  audit: async () => loadAudit(true),
  health: async () => renderHealth($("health-result"), await api("health")),
};

// The events view, searching with `filters` (names of the form's fields).
async function openEvents(filters) {
  const form = $("event-search");
  form.reset();
  for (const [name, value] of Object.entries(filters)) form.elements[name].value = value;
  $("event-result").replaceChildren();
  await show("events");
}

// A user's page, from a link anywhere.
async function openUser(user) {
  // A search still waiting for the typing to end would clear the page.
  clearTimeout(typing);
  userList.cancel();
  await show("users", { keep: true });
  $("user-list").replaceChildren();
  $("users-more").hidden = true;
  await lookUp(user);
}

let auditNext = null;
// The audit filters as the API's query; the time fields are local, to the minute.
const auditFilters = () => searchQuery($("audit-search"), ["actor", "action", "target"]);

async function loadAudit(fresh) {
  const query = auditFilters();
  $("audit-export").href = "api/audit/export?" + query;
  query.set("limit", "50");
  if (!fresh && auditNext) query.set("before", auditNext);
  const page = await api("audit?" + query);
  renderAudit($("audit-result"), page.records, !fresh, {
    openUser,
    filterBy: (field, value) => {
      $("audit-search").elements[field].value = value;
      loadAudit(true).catch((error) => reportError(error.message));
    },
  });
  auditNext = page.next;
  $("audit-older").hidden = auditNext == null;
}

async function show(name, { keep = false } = {}) {
  current = name;
  // A message belongs to the view it was said in.
  status("");
  for (const button of document.querySelectorAll("nav button")) {
    if (button.dataset.view === name) button.setAttribute("aria-current", "page");
    else button.removeAttribute("aria-current");
  }
  for (const view of document.querySelectorAll(".view")) view.hidden = view.id !== "view-" + name;
  if (keep) return;
  try {
    await views[name]();
  } catch (error) {
    status(error.message, true);
  }
}

// A user's page: their devices, events and decisions at every app. Only a
// user who has something here gets an enrollment link from it; someone new
// is enrolled from "Enroll someone new", which asks for the id on purpose.
async function lookUp(user, keepStatus = false, before = null, { enroll = false } = {}) {
  if (!keepStatus) status("");
  try {
    const query = before ? `?before=${encodeURIComponent(before)}` : "";
    const document = await api("users/" + encodeURIComponent(user) + query);
    const apps = (await api("apps")).apps
      .filter((app) => !app.revoked_at && !app.console)
      .map((app) => ({ app: app.name, api_key_id: app.id }));
    const known = document.apps.length > 0;
    const enrollment = apps.length === 0 || (!known && !enroll) ? null : enrollmentForm(user, apps, consoleActions);
    renderUser($("user-result"), document, {
      removeDevice, enrollment, older: (time) => lookUp(user, false, time),
    });
    $("user-result").scrollIntoView?.({ block: "start" });
  } catch (error) {
    status(error.message, true);
  }
}

async function removeDevice(device) {
  const yes = await confirmAction(
    `Remove the device “${device.name}” of ${device.client_user_id}? It can approve nothing more.`);
  if (!yes) return;
  try {
    await api(`devices/${encodeURIComponent(device.id)}/remove`, { method: "POST" });
    await lookUp(device.client_user_id, true);
    status(`Removed the device “${device.name}”.`);
  } catch (error) {
    status(error.message, true);
  }
}

async function start() {
  $("sign-in-form").addEventListener("submit", (event) => {
    event.preventDefault();
    signIn($("operator").value.trim());
  });
  $("cancel-sign-in").addEventListener("click", async () => {
    signInAbort?.abort();
    showSignIn();
    // The earlier request stops asking the device.
    try { await api("sign-in", { method: "DELETE" }); } catch { /* it ends with its window anyway */ }
  });
  $("sign-out").addEventListener("click", async () => {
    try {
      await api("sign-out", { method: "POST" });
    } catch (error) {
      // A 401: the session had already ended, and api() has said so.
      // Anything else leaves the session open on the server: say so.
      if (!(error instanceof APIError && error.status === 401)) {
        status(`Not signed out: ${error.message}. Try again.`, true);
      }
      return;
    }
    signedOut("Signed out.");
  });
  for (const button of document.querySelectorAll("nav button")) {
    button.addEventListener("click", () => show(button.dataset.view));
  }
  userList = new UserList($("user-list"), $("users-more"), { api, openUser, appNames });
  eventSearch = new EventSearch({
    form: $("event-search"), container: $("event-result"), olderButton: $("events-older"),
    exportLine: $("event-export"), csvLink: $("event-export-csv"), jsonlLink: $("event-export-jsonl"),
  }, { api, openUser, appNames, fail: reportError });
  invitations = new Invitations({
    form: $("invite-form"), app: $("invite-app"), people: $("invite-people"), group: $("invite-group"),
    groupField: $("invite-group-field"), lifetime: $("invite-lifetime"), refused: $("invite-refused"),
    list: $("invite-list"), openOnly: $("invite-open-only"), olderButton: $("invites-older"),
  }, { api, confirmAction, report: status, openUser, appNames });
  // The list follows what is typed, a moment after the last key.
  const search = () => {
    $("user-result").replaceChildren();
    userList.load($("user-prefix").value.trim()).catch((error) => reportError(error.message));
  };
  $("user-prefix").addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(search, 200); });
  $("user-search").addEventListener("submit", (event) => { event.preventDefault(); clearTimeout(typing); search(); });
  $("new-user-form").addEventListener("submit", (event) => {
    event.preventDefault();
    $("user-list").replaceChildren();
    $("users-more").hidden = true;
    lookUp($("new-user-id").value.trim(), false, null, { enroll: true });
  });
  $("audit-older").addEventListener("click", () => loadAudit(false).catch((error) => status(error.message, true)));
  $("audit-action").append(...Object.entries(auditActions).map(([value, text]) => element("option", { text, attributes: { value } })));
  $("audit-search").addEventListener("submit", (event) => {
    event.preventDefault();
    loadAudit(true).catch((error) => reportError(error.message));
  });
  try {
    signedIn(await api("session"));
  } catch {
    showSignIn();
  }
}

start();
