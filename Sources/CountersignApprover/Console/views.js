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

// A time as the operator reads it: their own zone, named.
export function when(date) {
  if (!date) return "";
  const parsed = new Date(date);
  if (Number.isNaN(parsed.getTime())) return String(date);
  // (dateStyle and timeStyle cannot be given with timeZoneName.)
  return parsed.toLocaleString(undefined, {
    year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit",
    timeZoneName: "short",
  });
}

// How long ago (or how far ahead) a time is, in words.
export function relative(date, now = Date.now()) {
  const seconds = Math.round((new Date(date).getTime() - now) / 1000);
  const words = new Intl.RelativeTimeFormat(undefined, { numeric: "auto", style: "short" });
  const steps = [[60, "second"], [3600, "minute"], [86400, "hour"], [86400 * 30, "day"], [86400 * 365, "month"]];
  for (const [limit, unit] of steps) {
    if (Math.abs(seconds) < limit) {
      const size = { second: 1, minute: 60, hour: 3600, day: 86400, month: 86400 * 30 }[unit];
      return words.format(Math.round(seconds / size), unit);
    }
  }
  return words.format(Math.round(seconds / (86400 * 365)), "year");
}

// A time in a table: relative, the absolute time and its zone on hover.
export function ago(date) {
  if (!date) return "";
  const parsed = new Date(date);
  if (Number.isNaN(parsed.getTime())) return String(date);
  return element("time", { text: relative(parsed), attributes: { datetime: parsed.toISOString(), title: when(parsed) } });
}

// How an approval was given, in words rather than its `acr`.
const methods = {
  "urn:countersign:acr:device": "on a trusted device",
  "urn:countersign:acr:passkey": "on a device, with its passkey",
  "urn:countersign:acr:totp": "with a TOTP code",
};
export function how(acr) { return acr ? (methods[acr] ?? acr) : ""; }

// A table: `columns` are [heading, value-of-row, className?]; a value may be
// a node (a button) or anything shown as text.
export function table(columns, rows, caption) {
  const head = element("tr", {}, columns.map(([heading]) => element("th", { text: heading, attributes: { scope: "col" } })));
  const body = rows.map((row) => element("tr", {}, columns.map(([, value, className]) => {
    const shown = value(row);
    const cell = element("td", { className });
    if (shown instanceof Node) cell.append(shown);
    else cell.textContent = shown ?? "";
    return cell;
  })));
  // Wide tables scroll on their own, not the page.
  return element("div", { className: "table" }, [element("table", {}, [
    caption ? element("caption", { text: caption, className: "muted" }) : null,
    element("thead", {}, [head]), element("tbody", {}, body),
  ])]);
}

// Two lines in one cell: the value, and a muted line under it.
export function stacked(first, second) {
  return element("span", {}, [
    first instanceof Node ? first : element("span", { text: first ?? "" }),
    second ? element("span", { text: second, className: "muted sub" }) : null,
  ]);
}

export function empty(text) { return element("p", { text, className: "muted" }); }

// The doors a request comes through, as the requester column names them
// (the REST API's own requests need no word).
const channelNames = { ciba: "CIBA", openid: "OpenID sign-in", console: "console", radius: "RADIUS" };

export const channelName = (channel) => channelNames[channel] ?? "API";

// An event's row: when, what, how it ended, who asked and from where,
// which device decided. `names` gives apps' and devices' names by id.
export function eventColumns(deviceNames, { appNames, openUser } = {}) {
  const columns = [["When", (e) => ago(e.CreatedAt)]];
  if (appNames) {
    columns.push(["App", (e) => appNames.get(e.issuer) ?? e.issuer]);
    columns.push(["User", (e) => (openUser ? userLink(e.client_user_id, openUser) : e.client_user_id)]);
  }
  columns.push(
    ["Event", (e) => stacked(e.event, e.details)],
    ["Outcome", (e) => stacked(e.status, [e.status_reason?.replaceAll("_", " "), how(e.acr)].filter(Boolean).join(" · "))],
    ["Requester", (e) => stacked(e.requester_name ?? "", channelName(e.channel))],
    ["From", (e) => stacked(e.ip ?? "", e.location && e.location !== "Unknown" ? e.location : "")],
    ["Decided by", (e) => decidedBy(e, deviceNames)],
  );
  return columns;
}

// Who decided: the device, or for a request several people approve, the
// approvers who did so far and how many it takes.
function decidedBy(e, deviceNames) {
  if (e.approvers) {
    const who = (e.approvals ?? []).map((approval) => approval.client_user_id);
    return stacked(who.join(", ") || "no approval yet", `${who.length} of ${e.approvers.required_approvals} approvers`);
  }
  return e.decided_by ? stacked(deviceNames.get(e.decided_by) ?? e.decided_by, e.decided_at ? relative(e.decided_at) : "") : "";
}

// A user's id as a link to their page.
export function userLink(user, openUser) {
  const link = element("a", { text: user, attributes: { href: "#user=" + encodeURIComponent(user) } });
  link.addEventListener("click", (event) => { event.preventDefault(); openUser(user); });
  return link;
}

// A button that shows what came before the oldest row of `rows` (by `time`),
// when the page is full (50 rows): the next page.
function olderButton(rows, time, older) {
  if (rows.length < 50) return null;
  const button = element("button", { text: "Older", className: "secondary", attributes: { type: "button" } });
  button.addEventListener("click", () => older(time(rows[rows.length - 1])));
  return button;
}

// A user's events and decisions in one list, newest first: a decision
// record outlives its event, so one may be known only by its decision.
function eventsAndDecisions(app) {
  const seen = new Set(app.events.map((e) => e.ID));
  return app.events.concat(app.decisions.filter((d) => !seen.has(d.ID)))
    .sort((a, b) => new Date(b.CreatedAt) - new Date(a.CreatedAt));
}

export function renderUser(container, document, { removeDevice, enrollment, older }) {
  container.replaceChildren(element("h2", { text: document.user }));
  const person = document.directory;
  if (person) {
    container.append(element("div", { className: "card" }, [
      element("h3", { text: person.name ?? person.dn }),
      element("p", { text: [person.email, directoryStates[person.state]].filter(Boolean).join(" · ") }),
      element("p", { text: person.dn, className: "muted mono" }),
      ...(person.groups.length ? [element("p", { text: "Groups: " + person.groups.join("; "), className: "muted" })] : []),
    ]));
  }
  if (document.apps.length === 0) {
    container.append(empty(`${document.user} has no devices, events or decisions at any app.`));
  }
  for (const app of document.apps) {
    const names = new Map(app.devices.map((device) => [device.id, device.name]));
    const devices = app.devices.length === 0 ? empty("No devices.") : table([
      ["Device", (d) => stacked(d.name, d.fingerprint)],
      ["Type", (d) => d.type + (d.passkey ? " + passkey" : "")],
      ["Enrolled", (d) => ago(d.created_at)],
      ["Last used", (d) => ago(d.last_seen_at) || "never"],
      ["Push", (d) => (d.push ? "on" : "off")],
      ["State", (d) => (d.revoked_at ? stacked("removed", when(d.revoked_at))
        : d.suspended_at ? stacked("suspended", when(d.suspended_at)) : "trusted")],
      ["", (d) => d.revoked_at || app.api_key_id === "ck_console" ? "" : element("button", {
        text: "Remove", className: "danger", attributes: { type: "button", "data-device": d.id },
      })],
    ], app.devices);
    for (const button of devices.querySelectorAll?.("button[data-device]") ?? []) {
      const device = app.devices.find((d) => d.id === button.dataset.device);
      button.addEventListener("click", () => removeDevice(device));
    }
    const events = eventsAndDecisions(app);
    container.append(element("div", { className: "card" }, [
      element("h3", { text: app.app }),
      element("p", { text: `App ${app.api_key_id}`, className: "muted mono" }),
      element("h4", { text: "Devices" }), devices,
      element("h4", { text: "Events and decisions" }),
      events.length === 0 ? empty("No events kept.") : table(eventColumns(names), events),
      olderButton(app.events, (e) => e.CreatedAt, older),
    ]));
  }
  // No device is added for someone the directory does not list as enabled.
  if (enrollment && (!person || person.state === "active")) {
    container.append(element("div", { className: "card" }, [enrollment]));
  }
}

// The audit log's actions, in words.
export const auditActions = {
  "operator.added": "operator added", "operator.removed": "operator removed",
  "operator.signed_in": "signed in", "operator.signed_out": "signed out",
  "operator.sign_in_refused": "sign-in refused (not an operator)", "device.removed": "device removed",
  "fraud_protection.ended": "fraud protection ended", "webhook.resent": "webhook message sent again",
  "webhook_endpoint.disabled": "webhook endpoint disabled", "webhook_endpoint.enabled": "webhook endpoint enabled",
  "apikey.created": "app created", "apikey.rotated": "app secret rotated", "apikey.revoked": "app revoked",
  "enrollment.issued": "enrollment link made", "radius_client.added": "RADIUS client added",
  "radius_client.changed": "RADIUS client changed", "radius_client.removed": "RADIUS client removed",
  "directory.user_suspended": "suspended by the directory", "directory.user_reinstated": "reinstated by the directory",
  "invitation.sent": "invitation sent", "invitation.resent": "invitation sent again",
  "invitation.withdrawn": "invitation withdrawn",
};

// A person's state in the directory, in words.
export const directoryStates = {
  active: "enabled", disabled: "disabled: devices suspended", gone: "gone: devices suspended",
};

export function renderAudit(container, records, append, { openUser, filterBy }) {
  // A value that narrows the search to itself when clicked.
  const narrowing = (text, field, value, className) => {
    const link = element("a", { text, className, attributes: { href: "#audit", title: "Only these" } });
    link.addEventListener("click", (event) => { event.preventDefault(); filterBy(field, value); });
    return link;
  };
  const columns = [
    ["When", (r) => ago(r.at)],
    ["Who", (r) => narrowing(r.actor, "actor", r.actor)],
    ["What", (r) => narrowing(auditActions[r.action] ?? r.action, "action", r.action)],
    ["Target", (r) => {
      if (!r.target) return "";
      const shown = r.user && !r.target_name
        ? userLink(r.user, openUser)
        : element("span", { text: r.target_name ?? r.target, className: r.target_name ? "" : "mono" });
      const under = [r.target_name && r.user ? r.user : null, r.target_name ? r.target : null].filter(Boolean).join(" · ");
      return stacked(shown, under);
    }],
    ["From", (r) => r.ip ?? "", "mono"],
  ];
  if (!append || !container.querySelector("tbody")) {
    container.replaceChildren(records.length === 0 ? empty("No line matches.") : table(columns, records));
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

// The dashboard's words for its health checks.
const checkNames = {
  store_unavailable: "Store unavailable",
  outbox_queued: "Messages waiting to be sent",
  outbox_failed: "Messages given up on",
  fraud_protections: "Fraud protections running",
};

// A figure that opens the events it counts.
function figure(label, value, open) {
  const node = element("button", { className: "figure", attributes: { type: "button" } }, [
    element("span", { text: String(value), className: "value" }), element("span", { text: label, className: "label" }),
  ]);
  if (open) node.addEventListener("click", open);
  else node.disabled = true;
  return node;
}

// `datetime-local` text of a time, in the operator's zone, for the search form.
function localMinute(date) {
  const time = new Date(date);
  const pad = (n) => String(n).padStart(2, "0");
  return `${time.getFullYear()}-${pad(time.getMonth() + 1)}-${pad(time.getDate())}T${pad(time.getHours())}:${pad(time.getMinutes())}`;
}

export function renderDashboard(container, document, appNames, { openEvents, openUser }) {
  const health = document.health;
  const words = { ok: "All clear", warning: "Worth a look", critical: "Needs action" };
  container.replaceChildren(element("p", { className: `banner ${document.state}` }, [
    element("strong", { text: words[document.state] ?? document.state }),
    element("span", { text: ` · ${health.instance} · read ${when(health.read_at)} · version ${health.version}` }),
  ]));
  const totalsColumns = (label, key) => [
    [label, key],
    ["Events", (g) => String(g.totals.total)],
    ["Approved", (g) => String(g.totals.approved)],
    ["Rejected", (g) => String(g.totals.rejected)],
    ["Expired", (g) => String(g.totals.expired)],
    ["Fraud reports", (g) => String(g.totals.fraud_reported)],
    ["TOTP fallbacks", (g) => String(g.totals.totp_fallbacks)],
  ];
  for (const window of document.windows) {
    const from = localMinute(window.since);
    const t = window.totals;
    const open = (filters) => () => openEvents({ from, ...filters });
    container.append(element("div", { className: "card" }, [
      element("h3", { text: window.name === "hour" ? "The last hour" : "The last day" }),
      element("div", { className: "figures" }, [
        figure("events", t.total, open({})),
        figure("approved", t.approved, open({ status: "approved" })),
        figure("rejected", t.rejected, open({ status: "rejected" })),
        figure("expired", t.expired, open({ status: "expired" })),
        figure("fraud reports", t.fraud_reported, null),
        figure("TOTP fallbacks", t.totp_fallbacks, null),
        figure("pending", t.pending, open({ status: "pending" })),
      ]),
      window.by_app.length === 0 ? null : table(totalsColumns("App", (g) => {
        const link = element("a", { text: appNames.get(g.key) ?? g.key, attributes: { href: "#events" } });
        link.addEventListener("click", (event) => { event.preventDefault(); openEvents({ from, app: g.key }); });
        return link;
      }), window.by_app),
      window.by_channel.length === 0 ? null : table(totalsColumns("Channel", (g) => channelName(g.key)), window.by_channel),
    ]));
  }
  const watch = document.watch;
  const attack = [];
  if (watch.protections.length > 0) {
    attack.push(table([
      ["Protected user", (p) => userLink(p.user, openUser)],
      ["App", (p) => appNames.get(p.api_key_id) ?? p.api_key_id],
      ["Until", (p) => ago(p.until)],
    ], watch.protections));
  }
  if (watch.users.length > 0) {
    attack.push(table([
      ["Most prompted", (c) => userLink(c.key, openUser)],
      ["App", (c) => appNames.get(c.api_key_id) ?? c.api_key_id ?? ""],
      ["Requests", (c) => `${c.count} of ${c.limit}`],
    ], watch.users, `In the last ${Math.round(watch.window_seconds / 60)} minutes`));
  }
  if (watch.addresses.length > 0) {
    attack.push(table([
      ["Asking most", (c) => {
        const link = element("a", { text: c.key, className: "mono", attributes: { href: "#events" } });
        link.addEventListener("click", (event) => { event.preventDefault(); openEvents({ address: c.key }); });
        return link;
      }],
      ["Requests", (c) => `${c.count} of ${c.limit}`],
    ], watch.addresses));
  }
  container.append(element("div", { className: "card" }, [
    element("h3", { text: "Under attack now" }),
    ...(attack.length > 0 ? attack : [empty("No fraud protection is running, and no requester is asking.")]),
  ]));
  container.append(element("div", { className: "card" }, [
    element("h3", { text: "Health" }),
    table([
      ["Check", (c) => checkNames[c.name] ?? c.name],
      ["Now", (c) => (c.name === "store_unavailable" ? (c.value ? "yes" : "no") : String(c.value))],
      ["Worth a look at", (c) => (c.name === "store_unavailable" ? "" : String(c.warning))],
      ["Needs action at", (c) => (c.name === "store_unavailable" ? "down" : String(c.critical))],
      ["State", (c) => element("span", { text: c.state, className: `state ${c.state}` })],
    ], document.checks),
    element("p", { text: `Long-polls held here: ${health.long_polls_held}`, className: "muted" }),
  ]));
}
