#!/usr/bin/env python3
"""Makes the store a release leaves behind, for the upgrade test: a broker of
that release (its device-broker and device-agent in --bin) runs on a fresh
store, real agents enroll and decide, and the store is kept with what the
broker said about it.

    make-upgrade-fixture.py --bin DIR --out DIR [--database URL]

On SQLite (the default) --out gets countersign.sqlite, written by
`device-broker backup`. With --database (an empty PostgreSQL database) it gets
dump.sql, written by pg_dump. Either way, beside it: totp.key, the agents'
config directories (agents/NAME) and expected.json, the API key, event
ids, the broker's URL and its own answers (devices, events, decisions, JWKS) that a
newer broker must still give after migrating the store.
"""
import argparse
import base64
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Fixture:
    def __init__(self, bin_dir, out, database):
        self.bin = pathlib.Path(bin_dir)
        self.out = pathlib.Path(out)
        self.database = database
        self.scratch = pathlib.Path(tempfile.mkdtemp(prefix="countersign-fixture."))
        self.store = ["--database", database] if database else ["--data-dir", str(self.scratch / "data")]
        self.url = ""
        self.key_id = self.secret = ""

    def run(self, tool, *arguments, stdin=None):
        result = subprocess.run([str(self.bin / tool), *arguments], capture_output=True, text=True, input=stdin,
                                timeout=300)
        if result.returncode != 0:
            sys.exit(f"error: {tool} {' '.join(arguments)} exited {result.returncode}:\n{result.stdout}{result.stderr}")
        return result.stdout

    def api(self, method, path, body=None):
        request = urllib.request.Request(self.url + path, method=method,
                                         data=json.dumps(body).encode() if body is not None else None)
        credentials = base64.b64encode(f"{self.key_id}:{self.secret}".encode()).decode()
        request.add_header("Authorization", "Basic " + credentials)
        if body is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                text = response.read()
                return json.loads(text) if text else None
        except urllib.error.HTTPError as error:
            sys.exit(f"error: {method} {path}: {error.code} {error.read().decode()}")

    def agent(self, name, *arguments):
        return self.run("device-agent", *arguments, "--config-dir", str(self.out / "agents" / name))

    def enroll(self, name, user):
        token = self.api("POST", f"/api/v1/users/{user}/enrollment-tokens")["token"]
        self.agent(name, "enroll", "--broker", self.url, "--api-key", self.key_id, "--user", user,
                   "--token", token, "--name", name)

    def event(self, user, **fields):
        return self.api("POST", "/api/v1/events", {"client_user_id": user, **fields})

    def make(self):
        if self.out.exists():
            sys.exit(f"error: {self.out} exists")
        (self.out / "agents").mkdir(parents=True)
        totp_key = self.out / "totp.key"
        self.run("device-broker", "totp-key", "generate", str(totp_key))
        key = json.loads(self.run("device-broker", "apikey", "create", "--name", "fixture", "--json", *self.store))
        self.key_id, self.secret = key["api_key_id"], key["api_secret_key"]
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        log = open(self.scratch / "broker.log", "w")
        broker = subprocess.Popen(
            [str(self.bin / "device-broker"), "serve", "--port", str(port), "--totp-key-file", str(totp_key),
             "--log-level", "warning", *self.store], stdout=log, stderr=log)
        try:
            self.wait_until_up(broker)
            expected = self.exercise()
        finally:
            broker.send_signal(signal.SIGTERM)
            broker.wait(timeout=60)
        if self.database:
            dump = subprocess.run(["pg_dump", "--no-owner", "--no-privileges", self.database],
                                  capture_output=True, text=True, check=True).stdout
            (self.out / "dump.sql").write_text(dump)
        else:
            self.run("device-broker", "backup", *self.store, "--to", str(self.out / "countersign.sqlite"))
        expected["api_key_id"], expected["api_secret_key"] = self.key_id, self.secret
        expected["version"] = self.run("device-broker", "--version").strip()
        # Device decisions name the broker they were made at (their `aud`).
        expected["broker"] = self.url
        (self.out / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
        shutil.rmtree(self.scratch)

    def wait_until_up(self, broker):
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if broker.poll() is not None:
                sys.exit(f"error: the broker exited:\n{(self.scratch / 'broker.log').read_text()}")
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=5):
                    return
            except OSError:
                time.sleep(0.1)
        sys.exit("error: the broker did not come up")

    def exercise(self):
        """Two users, four devices (one removed), and events in every state."""
        for name, user in [("alice-laptop", "alice"), ("alice-desktop", "alice"), ("alice-old", "alice"),
                           ("bob-phone", "bob")]:
            self.enroll(name, user)
        self.agent("alice-laptop", "devices", "remove", "alice-old", "--yes")
        shutil.rmtree(self.out / "agents" / "alice-old")
        self.agent("bob-phone", "recovery-codes", "--yes")
        events = {}

        def decide(name, agent, ticket, *verdict):
            events[name] = ticket["event"]["ID"]
            self.agent(agent, "approve", "--event", ticket["event"]["ID"], *verdict,
                       *(["--match", ticket["match_number"]] if "match_number" in ticket else []))

        decide("approved_login", "alice-laptop",
               self.event("alice", requester_name="build-host", ip="192.0.2.10", location="Lyon"), "--yes")
        decide("rejected_transaction", "alice-desktop",
               self.event("alice", event="TRANSACTION", details="Pay 120.00 EUR to ACME"), "--reject")
        decide("approved_bob", "bob-phone", self.event("bob", requester_name="ci-runner"), "--yes")
        login = json.loads(self.agent("alice-laptop", "login", "--json"))
        events["trusted_device_login"] = login["event"]["ID"]
        withdrawn = self.event("alice", requester_name="withdrawn-host")
        self.api("DELETE", f"/api/v1/events/{withdrawn['event']['ID']}")
        events["withdrawn"] = withdrawn["event"]["ID"]
        events["left_pending"] = self.event("alice", requester_name="left-pending")["event"]["ID"]
        return {
            "events": {name: self.api("GET", f"/api/v1/events/{id}") for name, id in events.items()},
            "devices": {user: self.api("GET", f"/api/v1/users/{user}/devices") for user in ["alice", "bob"]},
            "decisions": {user: self.api("GET", f"/api/v1/users/{user}/decisions") for user in ["alice", "bob"]},
            "jwks": self.api("GET", "/.well-known/jwks.json"),
        }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", required=True, help="the release's device-broker and device-agent")
    parser.add_argument("--out", required=True)
    parser.add_argument("--database", help="an empty PostgreSQL database's URL (else SQLite)")
    options = parser.parse_args()
    Fixture(options.bin, options.out, options.database).make()
    print(f"fixture: {options.out}")


if __name__ == "__main__":
    main()
