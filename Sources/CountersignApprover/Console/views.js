// The console's views: tables built from the broker's documents, every
// value set as text.

export function element(tag, { text, className, attributes } = {}, children = []) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  for (const [name, value] of Object.entries(attributes ?? {})) node.setAttribute(name, value);
  for (const child of children) if (child) node.append(child);
  return node;
}

export function when(date) {
  if (!date) return "";
  const parsed = new Date(date);
  return Number.isNaN(parsed.getTime()) ? String(date) : parsed.toLocaleString();
}

// A table: `columns` are [heading, value-of-row, className?]; a value may be
// a node (a button) or anything shown as text.
export function table(columns, rows, caption) {
  const head = element("tr", {}, columns.map(([heading]) => element("th", { text: heading })));
  const body = rows.map((row) => element("tr", {}, columns.map(([, value, className]) => {
    const shown = value(row);
    const cell = element("td", { className });
    if (shown instanceof Node) cell.append(shown);
    else cell.textContent = shown ?? "";
    return cell;
  })));
  return element("table", {}, [
    caption ? element("caption", { text: caption, className: "muted" }) : null,
    element("thead", {}, [head]), element("tbody", {}, body),
  ]);
}

export function empty(text) { return element("p", { text, className: "muted" }); }

// The doors a request comes through, as the requester column names them
// (the REST API's own requests need no word).
const channelNames = { ciba: "CIBA", openid: "OpenID sign-in", console: "console", radius: "RADIUS" };

// An event's row: when, what, outcome, who asked, from where, which device decided.
function eventColumns(deviceNames) {
  return [
    ["Created", (e) => when(e.CreatedAt)],
    ["Event", (e) => e.event],
    ["Status", (e) => e.status],
    ["Reason", (e) => e.status_reason ?? ""],
    ["Requester", (e) => [e.requester_name, channelNames[e.channel]].filter(Boolean).join(" · ")],
    ["Address", (e) => e.ip ?? "", "mono"],
    ["Location", (e) => e.location ?? ""],
    ["Details", (e) => e.details ?? ""],
    ["Decided by", (e) => (e.decided_by ? (deviceNames.get(e.decided_by) ?? e.decided_by) : "")],
    ["Decided", (e) => when(e.decided_at)],
    ["How", (e) => e.acr ?? ""],
    ["Id", (e) => e.ID, "mono"],
  ];
}

// A button that shows what came before the oldest row of `rows` (by `time`),
// when the page is full (50 rows): the next page.
function olderButton(rows, time, older) {
  if (rows.length < 50) return null;
  const button = element("button", { text: "Older", className: "secondary", attributes: { type: "button" } });
  button.addEventListener("click", () => older(time(rows[rows.length - 1])));
  return button;
}

export function renderUser(container, document, { removeDevice, enrollment, older }) {
  container.replaceChildren();
  if (document.apps.length === 0) {
    container.append(empty(`${document.user} has no devices, events or decisions at any app.`));
  }
  for (const app of document.apps) {
    const names = new Map(app.devices.map((device) => [device.id, device.name]));
    const devices = app.devices.length === 0 ? empty("No devices.") : table([
      ["Name", (d) => d.name],
      ["Type", (d) => d.type],
      ["Fingerprint", (d) => d.fingerprint, "mono"],
      ["Enrolled", (d) => when(d.created_at)],
      ["Last seen", (d) => when(d.last_seen_at)],
      ["Passkey", (d) => (d.passkey ? "yes" : "no")],
      ["Push", (d) => (d.push ? "on" : "off")],
      ["State", (d) => (d.revoked_at ? `removed ${when(d.revoked_at)}` : "trusted")],
      ["", (d) => d.revoked_at || app.api_key_id === "ck_console" ? "" : element("button", {
        text: "Remove", className: "danger", attributes: { type: "button", "data-device": d.id },
      })],
    ], app.devices);
    for (const button of devices.querySelectorAll?.("button[data-device]") ?? []) {
      const device = app.devices.find((d) => d.id === button.dataset.device);
      button.addEventListener("click", () => removeDevice(device));
    }
    container.append(element("div", { className: "card" }, [
      element("h2", { text: `${app.app}` }),
      element("p", { text: `App ${app.api_key_id} · user ${document.user}`, className: "muted mono" }),
      element("h3", { text: "Devices" }), devices,
      element("h3", { text: "Events" }),
      app.events.length === 0 ? empty("No events kept.") : table(eventColumns(names), app.events),
      olderButton(app.events, (e) => e.CreatedAt, older),
      element("h3", { text: "Decisions" }),
      app.decisions.length === 0 ? empty("No decisions.") : table(eventColumns(names), app.decisions),
      olderButton(app.decisions, (e) => e.decided_at, older),
    ]));
  }
  if (enrollment) container.append(element("div", { className: "card" }, [enrollment]));
}

export function renderAudit(container, records, append) {
  const columns = [
    ["When", (r) => when(r.at)],
    ["Who", (r) => r.actor],
    ["What", (r) => r.action],
    ["Target", (r) => r.target ?? "", "mono"],
    ["From", (r) => r.ip ?? "", "mono"],
  ];
  if (!append || !container.querySelector("tbody")) {
    container.replaceChildren(records.length === 0 ? empty("Nothing yet.") : table(columns, records));
    return;
  }
  const more = table(columns, records).querySelector("tbody");
  container.querySelector("tbody").append(...more.children);
}

export function renderHealth(container, health) {
  const capped = (count) => (count >= health.outbox_count_cap ? `${count} or more` : String(count));
  const rows = [
    ["Version", health.version],
    ["Store", health.store_available ? "available" : "NOT AVAILABLE"],
    ["Long-polls held here", String(health.long_polls_held)],
    ["Messages waiting to be sent", capped(health.outbox_queued)],
    ["Messages given up on", capped(health.outbox_failed)],
  ];
  container.replaceChildren(element("dl", {}, rows.flatMap(([name, value]) => [
    element("dt", { text: name }), element("dd", { text: value }),
  ])));
}
