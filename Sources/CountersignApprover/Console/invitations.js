// The invitations view: enrollment links sent by email to many people at
// once (typed, or a directory group), and the list of who has not enrolled
// yet, each sent again or withdrawn. Every value is set as text; every
// action asks first and says what it did.
import { element, table, empty, ago, stacked, userLink } from "./views.js";

const stateNames = {
  sending: "sending", sent: "sent, not enrolled yet", failed: "mail failed", enrolled: "enrolled",
  expired: "expired", withdrawn: "withdrawn",
};

// "alice" or "alice bob@example.org" or "alice, bob@example.org" per line.
export function parsePeople(text) {
  return text.split("\n").map((line) => line.trim()).filter(Boolean).map((line) => {
    const [user, email] = line.split(/[\s,;]+/, 2);
    return email ? { user, email } : { user };
  });
}

export class Invitations {
  constructor(nodes, { api, confirmAction, report, openUser, appNames }) {
    Object.assign(this, nodes, { api, confirmAction, report, openUser, appNames });
    this.next = null;
    this.form.addEventListener("submit", (event) => { event.preventDefault(); this.send(); });
    this.openOnly.addEventListener("change", () => this.load(true).catch((error) => report(error.message, true)));
    this.olderButton.addEventListener("click", () => this.load(false).catch((error) => report(error.message, true)));
  }

  // Fills the form's apps and groups, then lists the invitations.
  async show() {
    const apps = (await this.api("apps")).apps.filter((app) => !app.revoked_at && !app.console);
    const chosen = this.app.value;
    this.app.replaceChildren(...apps.map((app) => element("option", {
      text: `${app.name} (${app.id})`, attributes: { value: app.id },
    })));
    if (chosen) this.app.value = chosen;
    const groups = (await this.api("directory/groups")).groups;
    const group = this.group.value;
    this.group.replaceChildren(element("option", { text: "None", attributes: { value: "" } }),
      ...groups.map((g) => element("option", {
        text: `${g.name} (${g.members} ${g.members === 1 ? "person" : "people"})`, attributes: { value: g.dn, title: g.dn },
      })));
    this.group.value = group;
    this.groupField.hidden = groups.length === 0;
    await this.load(true);
  }

  async send() {
    const users = parsePeople(this.people.value);
    const group = this.group.value;
    if (users.length === 0 && !group) { this.report("Name people, or pick a group.", true); return; }
    const groupName = this.group.selectedOptions[0]?.text ?? group;
    const who = [users.length ? `${users.length} ${users.length === 1 ? "person" : "people"}` : null,
      group ? `everyone in ${groupName}` : null].filter(Boolean).join(" and ");
    const days = Number(this.lifetime.value);
    if (!(await this.confirmAction(`Email an enrollment link to ${who}? Each works once, for ${days} days.`))) return;
    let outcome;
    try {
      outcome = await this.api("invitations", {
        method: "POST",
        body: { api_key_id: this.app.value, users, ...(group ? { group } : {}), expires_in: days * 86400 },
      });
    } catch (error) {
      this.report(error.message, true);
      return;
    }
    const sent = outcome.invited.length;
    this.report(`Sent ${sent} invitation${sent === 1 ? "" : "s"}` +
      (outcome.refused.length ? `; ${outcome.refused.length} not sent (below).` : "."));
    this.refused.replaceChildren(...(outcome.refused.length ? [table([
      ["Not sent to", (r) => r.user],
      ["Why", (r) => r.message],
    ], outcome.refused, "Not invited")] : []));
    if (sent) this.people.value = "";
    await this.load(true);
  }

  async load(fresh) {
    const query = new URLSearchParams({ limit: "50", state: this.openOnly.checked ? "open" : "all" });
    if (!fresh && this.next) query.set("before", this.next);
    const page = await this.api("invitations?" + query);
    const names = await this.appNames();
    const rows = page.invitations;
    const shown = table([
      ["User", (i) => stacked(userLink(i.user, this.openUser), i.email)],
      ["App", (i) => names.get(i.api_key_id) ?? i.app ?? i.api_key_id],
      ["State", (i) => stacked(stateNames[i.state] ?? i.state, i.mail_error ?? "")],
      ["Sent", (i) => stacked(ago(i.created_at), `by ${i.invited_by}`)],
      ["Expires", (i) => ago(i.expires_at)],
      ["", (i) => this.actions(i)],
    ], rows);
    if (fresh) this.list.replaceChildren(rows.length ? shown : empty(this.openOnly.checked
      ? "Everyone invited has enrolled, or nobody was invited." : "Nobody was invited yet."));
    else if (rows.length) this.list.querySelector("tbody").append(...shown.querySelectorAll("tbody tr"));
    this.next = page.next;
    this.olderButton.hidden = this.next == null;
  }

  // Send again while nobody enrolled; withdraw while the link works (after
  // an enrollment another way too: the link works until it expires).
  actions(invitation) {
    const cell = element("span");
    if (["sending", "sent", "failed", "expired"].includes(invitation.state)) {
      const again = element("button", { text: "Send again", className: "secondary", attributes: { type: "button" } });
      again.addEventListener("click", () => this.resend(invitation));
      cell.append(again);
    }
    if (["sending", "sent", "failed", "enrolled"].includes(invitation.state) && !invitation.withdrawn_at
      && new Date(invitation.expires_at) > new Date()) {
      const withdraw = element("button", { text: "Withdraw", className: "danger", attributes: { type: "button" } });
      withdraw.addEventListener("click", () => this.withdraw(invitation));
      cell.append(withdraw);
    }
    return cell;
  }

  async resend(invitation) {
    if (!(await this.confirmAction(
      `Send ${invitation.user} a new link at ${invitation.email}? The link sent before stops working.`))) return;
    try {
      await this.api(`invitations/${encodeURIComponent(invitation.id)}/resend`, { method: "POST", body: {} });
      await this.load(true);
      this.report(`Sent ${invitation.user} a new link.`);
    } catch (error) {
      this.report(error.message, true);
    }
  }

  async withdraw(invitation) {
    if (!(await this.confirmAction(
      `Withdraw the invitation of ${invitation.user}? Its link stops working at once.`))) return;
    try {
      await this.api(`invitations/${encodeURIComponent(invitation.id)}/withdraw`, { method: "POST" });
      await this.load(true);
      this.report(`Withdrew the invitation of ${invitation.user}.`);
    } catch (error) {
      this.report(error.message, true);
    }
  }
}
