// Finding people and events: the user list, searched by the start of an
// id as it is typed, and the event search with its downloads. Every value
// is set as text.
import { element, table, empty, ago, eventColumns, userLink, stacked, directoryStates } from "./views.js";

// The user list: `prefix` as typed, a page at a time ("More").
export class UserList {
  constructor(container, moreButton, { api, openUser, appNames }) {
    Object.assign(this, { container, moreButton, api, openUser, appNames });
    this.next = null;
    this.asked = 0;
    moreButton.addEventListener("click", () => this.load(this.prefix, this.next));
  }

  // Forgets the answers on their way: a user's page was opened meanwhile.
  cancel() { this.asked += 1; }

  async load(prefix, after = null) {
    this.prefix = prefix;
    // Only the latest answer is shown: typing fast sends several.
    const asked = ++this.asked;
    const query = new URLSearchParams({ prefix, limit: "50" });
    if (after) query.set("after", after);
    const page = await this.api("users?" + query);
    if (asked !== this.asked) return;
    const names = await this.appNames();
    const rows = table([
      ["User", (u) => stacked(userLink(u.user, this.openUser), u.name ?? "")],
      ["Directory", (u) => directoryStates[u.directory] ?? "not listed"],
      ["Apps", (u) => u.apps.map((id) => names.get(id) ?? id).join(", ")],
      ["Devices", (u) => (u.active_devices === u.devices ? String(u.devices) : `${u.active_devices} (${u.devices - u.active_devices} removed)`)],
      ["Last used", (u) => ago(u.last_seen_at) || "never"],
    ], page.users);
    if (after) {
      this.container.querySelector("tbody")?.append(...rows.querySelector("tbody").children);
    } else if (page.users.length === 0) {
      this.container.replaceChildren(empty(prefix
        ? `No user id starts with “${prefix}”. Ids are matched exactly as typed, case counting.`
        : "No user has a device yet, and no directory was read."));
    } else {
      this.container.replaceChildren(rows);
    }
    this.next = page.next ?? null;
    this.moreButton.hidden = this.next === null;
  }
}

// A search form's filters as the API's query: the named text fields
// as typed, trimmed; `from` and `to` the operator's local time, to the
// minute, `to` taking in the whole minute chosen.
export function searchQuery(form, names) {
  const query = new URLSearchParams();
  for (const name of names) {
    const value = form.elements[name].value.trim();
    if (value) query.set(name, value);
  }
  for (const [name, extra] of [["from", 0], ["to", 60000]]) {
    const value = form.elements[name].value;
    if (!value) continue;
    const time = new Date(value);
    if (!Number.isNaN(time.getTime())) query.set(name, new Date(time.getTime() + extra).toISOString());
  }
  return query;
}

const eventFilters = ["user", "app", "status", "type", "channel", "address"];

export class EventSearch {
  constructor({ form, container, olderButton, exportLine, csvLink, jsonlLink }, { api, openUser, appNames, fail }) {
    Object.assign(this, { form, container, olderButton, exportLine, csvLink, jsonlLink, api, openUser, appNames, fail });
    this.next = null;
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.load().catch((error) => fail(error.message));
    });
    olderButton.addEventListener("click", () => this.load(this.next).catch((error) => fail(error.message)));
  }

  // The apps in the form's list, by name.
  async fillApps() {
    const select = this.form.elements.app;
    const chosen = select.value;
    const names = await this.appNames();
    select.replaceChildren(element("option", { text: "Any", attributes: { value: "" } }),
      ...[...names].sort((a, b) => a[1].localeCompare(b[1])).map(([id, name]) => element("option", { text: name, attributes: { value: id } })));
    select.value = chosen;
  }

  // Searches for one user's events (from a user's page, say).
  async forUser(user) {
    this.form.reset();
    this.form.elements.user.value = user;
    await this.load();
  }

  async load(cursor = null) {
    const query = searchQuery(this.form, eventFilters);
    this.query = query;
    const paged = new URLSearchParams(query);
    paged.set("limit", "50");
    if (cursor) paged.set("cursor", cursor);
    const page = await this.api("events?" + paged);
    const names = await this.appNames();
    const devices = new Map(Object.entries(page.devices ?? {}));
    const rows = table(eventColumns(devices, { appNames: names, openUser: this.openUser }), page.events);
    if (cursor) {
      this.container.querySelector("tbody")?.append(...rows.querySelector("tbody").children);
    } else {
      this.container.replaceChildren(page.events.length === 0 ? empty("No event matches.") : rows);
    }
    this.next = page.next ?? null;
    this.olderButton.hidden = this.next === null;
    // The downloads are of the whole search, from its newest event.
    for (const [link, format] of [[this.csvLink, "csv"], [this.jsonlLink, "jsonl"]]) {
      const exported = new URLSearchParams(query);
      exported.set("format", format);
      link.href = "api/events/export?" + exported;
    }
    this.exportLine.hidden = page.events.length === 0;
  }
}
