// The web approver's service worker: shows a notification for each push
// and opens the request when it is tapped. A push holds only an event id,
// the app's name and a title (proto/signing.md §8); the request itself is
// fetched by the page with the device's key.

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

function text(value, fallback) {
  return typeof value === "string" && value.length > 0 ? value.slice(0, 80) : fallback;
}

self.addEventListener("push", (event) => {
  let notice = {};
  try {
    notice = event.data ? event.data.json() : {};
  } catch {
    notice = {};
  }
  const eventID = typeof notice.event_id === "string" && /^[A-Za-z0-9_-]{1,64}$/.test(notice.event_id)
    ? notice.event_id : "";
  const app = text(notice.app, "");
  event.waitUntil((async () => {
    const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
    for (const client of windows) client.postMessage({ type: "push", event_id: eventID });
    await self.registration.showNotification(text(notice.title, "Request to approve"), {
      body: app ? `${app} asks you to approve a request. Tap to review it.` : "Tap to review the request.",
      tag: eventID || "countersign",
      data: { eventID },
      requireInteraction: true,
      icon: "icon-192.png",
    });
  })());
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const eventID = event.notification.data?.eventID ?? "";
  const target = new URL(eventID ? `./#event=${encodeURIComponent(eventID)}` : "./", self.registration.scope).href;
  event.waitUntil((async () => {
    const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
    for (const client of windows) {
      if (client.url.startsWith(self.registration.scope)) {
        await client.focus();
        client.postMessage({ type: "push", event_id: eventID });
        return;
      }
    }
    await self.clients.openWindow(target);
  })());
});
