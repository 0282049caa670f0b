#!/usr/bin/env python3
"""A freedesktop notification server (org.freedesktop.Notifications, as
desktops run it) for tests, written with dbus-next from the Desktop
Notifications Specification alone. It takes the session bus to use from
DBUS_SESSION_BUS_ADDRESS, says "ready" once it owns the name, and prints
each notification it is sent as one JSON line: app_name, summary, body,
urgency (from the hints), expire_timeout. It announces the body-markup
capability, as most desktops do, so that a sender must escape its text.
Needs: pip install dbus-next
"""
import sys

if any(argument in ("-h", "--help") for argument in sys.argv[1:]):
    print(__doc__.strip())
    sys.exit(0)
import asyncio
import json

from dbus_next.aio import MessageBus
from dbus_next.service import ServiceInterface, method


class Notifications(ServiceInterface):
    def __init__(self):
        super().__init__("org.freedesktop.Notifications")
        self.last = 0

    @method()
    def Notify(self, app_name: "s", replaces_id: "u", app_icon: "s", summary: "s", body: "s", actions: "as",
               hints: "a{sv}", expire_timeout: "i") -> "u":
        urgency = hints.get("urgency")
        print(json.dumps({
            "app_name": app_name, "summary": summary, "body": body,
            "urgency": urgency.value if urgency is not None else None, "expire_timeout": expire_timeout,
        }), flush=True)
        self.last += 1
        return self.last

    @method()
    def GetCapabilities(self) -> "as":
        return ["body", "body-markup"]

    @method()
    def GetServerInformation(self) -> "ssss":
        return ["test-notifications", "countersign", "1", "1.2"]

    @method()
    def CloseNotification(self, id: "u"):
        pass


async def main():
    bus = await MessageBus().connect()
    bus.export("/org/freedesktop/Notifications", Notifications())
    await bus.request_name("org.freedesktop.Notifications")
    print("ready", flush=True)
    await asyncio.Future()


asyncio.run(main())
