// The console's views that act: apps (keys made, rotated, revoked),
// webhooks (endpoints disabled and enabled, failed messages sent again),
// users under attack (fraud protections ended early), and enrollment
// links with their QR code. Every value is set as text; every action asks
// first (confirmAction) and reports what it did.
import { element, table, empty, when, ago, userLink } from "./views.js";

const SVG = "http://www.w3.org/2000/svg";

function button(text, onClick, className = "secondary") {
  const node = element("button", { text, className, attributes: { type: "button" } });
  node.addEventListener("click", onClick);
  return node;
}

// A secret, shown once, with a line that says so.
function secretCard(title, rows) {
  return element("div", { className: "card secret" }, [
    element("h3", { text: title }),
    element("dl", {}, rows.flatMap(([name, value]) => [
      element("dt", { text: name }), element("dd", { text: value, className: "mono" }),
    ])),
    element("p", { text: "Copy it now: it is not shown again.", className: "muted" }),
  ]);
}

export function renderApps(container, document, console) {
  const form = element("form", { attributes: { id: "new-app" } }, [
    element("label", { text: "New app", attributes: { for: "new-app-name" } }),
    element("div", { className: "inline" }, [
      element("input", { attributes: { id: "new-app-name", required: "", maxlength: "128", placeholder: "Its name, as approvers see it" } }),
      element("button", { text: "Create", attributes: { type: "submit" } }),
    ]),
  ]);
  const shown = element("div", { attributes: { id: "app-secret" } });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const name = form.querySelector("input").value.trim();
    if (!(await console.confirmAction(`Create the app “${name}”?`))) return;
    const made = await console.act(() => console.api("apps", { method: "POST", body: { name } }), `Created the app “${name}”.`);
    if (!made) return;
    const card = secretCard(`${name}`, [["API key id", made.api_key_id], ["API secret key", made.api_secret_key]]);
    container.querySelector("#app-secret").replaceChildren(card);
    // The list again, the secret kept above it: it is shown this once.
    try { await console.refresh(); } catch { /* the secret stays shown */ }
    container.querySelector("#app-secret").replaceChildren(card);
  });
  const rows = document?.apps ?? [];
  container.replaceChildren(form, shown, table([
    ["Name", (a) => a.name + (a.console ? " (this console)" : "")],
    ["Id", (a) => a.id, "mono"],
    ["Created", (a) => when(a.created_at)],
    ["State", (a) => (a.revoked_at ? `revoked ${when(a.revoked_at)}` : "active")],
    ["User verification", (a) => a.user_verification],
    ["", (a) => (a.revoked_at || a.console ? "" : element("span", {}, [
      button("Rotate secret", async () => {
        if (!(await console.confirmAction(`Give “${a.name}” a new secret? The old one works for one more day.`))) return;
        const rotated = await console.act(() => console.api(`apps/${encodeURIComponent(a.id)}/rotate`, { method: "POST" }), `Rotated the secret of “${a.name}”.`);
        if (rotated) {
          container.querySelector("#app-secret").replaceChildren(secretCard(`${a.name}: new secret`, [
            ["API key id", rotated.api_key_id], ["API secret key", rotated.api_secret_key],
            ["Old secret works until", when(rotated.previous_secret_expires_at)],
          ]));
        }
      }),
      button("Revoke", async () => {
        if (!(await console.confirmAction(`Revoke “${a.name}” for good? Its secret, its id and its devices are refused from now on.`))) return;
        if (await console.act(() => console.api(`apps/${encodeURIComponent(a.id)}/revoke`, { method: "POST" }), `Revoked “${a.name}”.`)) {
          await console.refresh();
        }
      }, "danger"),
    ]))],
  ], rows));
}

// The apps' groups of approvers: each listed with a Delete, and a form that
// sets one (a new group, or new users for one of that name).
export function renderApproverGroups(container, document, apps, console) {
  const live = (apps?.apps ?? []).filter((app) => !app.revoked_at && !app.console);
  if (live.length === 0) {
    container.replaceChildren(empty("Create an app first: its groups are listed here."));
    return;
  }
  const choices = live.map((app) => element("option", { text: app.name, attributes: { value: app.id } }));
  const form = element("form", { attributes: { id: "approver-group-form" } }, [
    element("div", { className: "filters" }, [
      element("div", {}, [
        element("label", { text: "App", attributes: { for: "approver-group-app" } }),
        element("select", { attributes: { id: "approver-group-app" } }, choices),
      ]),
      element("div", {}, [
        element("label", { text: "Group", attributes: { for: "approver-group-name" } }),
        element("input", {
          attributes: {
            id: "approver-group-name", required: "", maxlength: "64", pattern: "[A-Za-z0-9._\\-]{1,64}",
            placeholder: "payments-approvers", autocomplete: "off",
          },
        }),
      ]),
    ]),
    element("label", { text: "Users, one per line or separated by commas", attributes: { for: "approver-group-users" } }),
    element("textarea", { attributes: { id: "approver-group-users", rows: "3", required: "", placeholder: "alice\nbob\ncarol" } }),
    element("div", { className: "actions" }, [element("button", { text: "Save group", attributes: { type: "submit" } })]),
  ]);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const app = form.querySelector("#approver-group-app").value;
    const name = form.querySelector("#approver-group-name").value.trim();
    const users = form.querySelector("#approver-group-users").value.split(/[\n,]/).map((user) => user.trim()).filter(Boolean);
    const appName = live.find((candidate) => candidate.id === app)?.name ?? app;
    if (!(await console.confirmAction(`Set the group “${name}” of “${appName}” to ${users.length} user(s): ${users.join(", ")}?`))) return;
    const saved = await console.act(
      () => console.api(`apps/${encodeURIComponent(app)}/approver-groups/${encodeURIComponent(name)}`, { method: "PUT", body: { users } }),
      `Saved the group “${name}” of “${appName}”.`,
    );
    if (saved) await console.refresh();
  });
  const rows = document?.groups ?? [];
  container.replaceChildren(
    form,
    rows.length === 0
      ? empty("No app has a group of approvers yet.")
      : table([
          ["App", (g) => g.app],
          ["Group", (g) => g.name, "mono"],
          ["Users", (g) => g.users.join(", ")],
          ["Changed", (g) => stackedWhen(g.updated_at, g.updated_via)],
          ["", (g) => button("Delete", async () => {
            if (!(await console.confirmAction(`Delete the group “${g.name}” of “${g.app}”? Events made with it keep their approvers.`))) return;
            const deleted = await console.act(
              () => console.api(`apps/${encodeURIComponent(g.api_key_id)}/approver-groups/${encodeURIComponent(g.name)}`, { method: "DELETE" }),
              `Deleted the group “${g.name}” of “${g.app}”.`,
            );
            if (deleted) await console.refresh();
          }, "danger")],
        ], rows),
  );
}

function stackedWhen(at, via) {
  return element("span", {}, [when(at), element("span", { text: via, className: "muted sub" })]);
}

export function renderWebhooks(container, document, console) {
  if (document.apps.length === 0) {
    container.replaceChildren(empty("No app has a webhook endpoint."));
    return;
  }
  container.replaceChildren(...document.apps.map((app) => element("div", { className: "card" }, [
    element("h3", { text: app.app }),
    table([
      ["URL", (e) => e.url, "mono"],
      ["Types", (e) => e.types.join(", ")],
      ["Health", (e) => (e.disabled_at ? `disabled ${when(e.disabled_at)}: ${e.disabled_reason ?? ""}`
        : e.failing_since ? `failing since ${when(e.failing_since)}` : "delivering")],
      ["", (e) => (e.disabled_at
        ? button("Enable", async () => {
          if (!(await console.confirmAction(`Send to ${e.url} again?`))) return;
          if (await console.act(() => console.api(`webhook-endpoints/${encodeURIComponent(e.id)}/enable`, { method: "POST" }), `Enabled ${e.url}.`)) await console.refresh();
        })
        : button("Disable", async () => {
          if (!(await console.confirmAction(`Stop sending to ${e.url}?`))) return;
          if (await console.act(() => console.api(`webhook-endpoints/${encodeURIComponent(e.id)}/disable`, { method: "POST" }), `Disabled ${e.url}.`)) await console.refresh();
        }, "danger"))],
    ], app.endpoints),
    element("h3", { text: app.failed_count === 0 ? "Failed messages: none"
      : `Failed messages: ${app.failed_count >= 10000 ? "10,000 or more" : app.failed_count.toLocaleString()}` }),
    app.failed.length === 0 ? null : failedMessages(app, console),
  ])));
}

// An app's failed messages, each sent again on its own, a page at a time.
function failedMessages(app, console) {
  const columns = [
    ["Created", (m) => ago(m.created_at)],
    ["Type", (m) => m.type ?? ""],
    ["Event", (m) => m.event_id ?? "", "mono"],
    ["Attempts", (m) => m.attempts],
    ["Last error", (m) => m.last_error ?? ""],
    ["", (m) => button("Send again", async () => {
      if (!(await console.confirmAction(`Send message ${m.id} again?`))) return;
      if (await console.act(() => console.api(`webhook-messages/${encodeURIComponent(m.id)}/resend`, { method: "POST" }), `Sending ${m.id} again.`)) await console.refresh();
    })],
  ];
  const shown = table(columns, app.failed);
  const wrapper = element("div", {}, [shown]);
  let next = app.failed_next ?? null;
  const more = button("Older", async () => {
    const page = await console.act(() => console.api(
      `webhooks/${encodeURIComponent(app.api_key_id)}/failed?limit=50&cursor=${encodeURIComponent(next)}`), "");
    if (!page) return;
    shown.querySelector("tbody").append(...table(columns, page.messages).querySelector("tbody").children);
    next = page.next ?? null;
    more.hidden = next === null;
  });
  more.hidden = next === null;
  wrapper.append(more);
  return wrapper;
}

export function renderWatch(container, document, console) {
  const hours = Math.round(document.window_seconds / 360) / 10;
  const atLimit = (row) => (row.api_key_id === "ck_console" ? `${row.count} (console sign-ins: no per-user limit)`
    : row.count >= row.limit ? `${row.count} of ${row.limit}: at the limit` : `${row.count} of ${row.limit}`);
  container.replaceChildren(
    element("h3", { text: "Fraud protections running" }),
    document.protections.length === 0 ? empty("None.") : table([
      ["App", (p) => console.appNames.get(p.api_key_id) ?? p.api_key_id],
      ["User", (p) => userLink(p.user, console.openUser)],
      ["Until", (p) => ago(p.until)],
      ["", (p) => button("End now", async () => {
        if (!(await console.confirmAction(`End the fraud protection of ${p.user} now? Requesters may ask for them again.`))) return;
        if (await console.act(() => console.api("protections/end", { method: "POST", body: { api_key_id: p.api_key_id, user: p.user } }), `Ended the protection of ${p.user}.`)) await console.refresh();
      }, "danger")],
    ], document.protections),
    element("h3", { text: `Users requesters asked for most, last ${hours} h` }),
    document.users.length === 0 ? empty("None.") : table([
      ["App", (c) => console.appNames.get(c.api_key_id) ?? c.api_key_id],
      ["User", (c) => userLink(c.key, console.openUser)], ["Requests", atLimit],
    ], document.users),
    element("h3", { text: `Addresses requesters asked from most, last ${hours} h` }),
    document.addresses.length === 0 ? empty("None.") : table([
      ["Address", (c) => c.key, "mono"], ["Requests", atLimit],
    ], document.addresses),
  );
}

// A QR code drawn as SVG squares from the broker's rows of 1 and 0.
export function qrCode(rows) {
  const size = rows.length;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", `0 0 ${size} ${size}`);
  svg.setAttribute("width", String(size * 5));
  svg.setAttribute("height", String(size * 5));
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", "QR code of the enrollment link");
  svg.setAttribute("class", "qr");
  const background = document.createElementNS(SVG, "rect");
  background.setAttribute("width", String(size));
  background.setAttribute("height", String(size));
  background.setAttribute("fill", "#fff");
  svg.append(background);
  rows.forEach((row, y) => {
    [...row].forEach((bit, x) => {
      if (bit !== "1") return;
      const module = document.createElementNS(SVG, "rect");
      module.setAttribute("x", String(x));
      module.setAttribute("y", String(y));
      module.setAttribute("width", "1");
      module.setAttribute("height", "1");
      module.setAttribute("fill", "#000");
      svg.append(module);
    });
  });
  return svg;
}

// The enrollment form under a user's view: which app, then the link and QR.
export function enrollmentForm(user, apps, console) {
  const select = element("select", { attributes: { id: "enroll-app" } },
    apps.map((app) => element("option", { text: `${app.app} (${app.api_key_id})`, attributes: { value: app.api_key_id } })));
  const result = element("div", { attributes: { id: "enrollment" } });
  const form = element("form", { attributes: { id: "enroll-form" } }, [
    element("h3", { text: "Enroll a device" }),
    element("label", { text: "App", attributes: { for: "enroll-app" } }),
    element("div", { className: "inline" }, [select, element("button", { text: "Make a link", attributes: { type: "submit" } })]),
    result,
  ]);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!(await console.confirmAction(`Make a one-time enrollment link for ${user}?`))) return;
    const made = await console.act(() => console.api("enrollments", { method: "POST", body: { api_key_id: select.value, user } }), `Made an enrollment link for ${user}.`);
    if (!made) return;
    result.replaceChildren(
      element("p", { text: `Works once, until ${when(made.expires_at)}. Open it on the phone, or scan:` }),
      element("p", { text: made.link, className: "mono", attributes: { id: "enrollment-link" } }),
      qrCode(made.qr),
      element("p", {
        text: `Or on a computer: device-agent enroll --broker ${location.origin} --api-key ${made.api_key_id} `
          + `--user '${made.user.replaceAll("'", "'\\''")}' --token ${made.token}`,
        className: "mono",
      }),
    );
  });
  return form;
}
