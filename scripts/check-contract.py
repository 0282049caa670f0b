#!/usr/bin/env python3
"""Checks a real broker against proto/openapi.yaml with schemathesis, an
independent implementation of OpenAPI on the other side: its examples,
coverage, fuzzing and stateful phases (the last one following the spec's
links), with every check it has, and fails on any server error or contract
failure.

    check-contract.py [--bin DIR] [--seconds N] [--seed N]

A request the schema allows must not be refused for its shape.
Schemathesis' own `positive_data_acceptance` cannot tell that from the
refusals this API owes its callers (a schema-valid request mostly names a
key, code, token or id the broker never issued, and some of those are 400s,
as OAuth's `invalid_grant` is), so this file replaces it with
`refused_valid_request` (below; schemathesis loads this file as its hooks).
A request generated as schema-valid may get 401, 403, 404, 409, 410 or 429
for what it names; a 400 or 422 only with an error code about what it names
(`invalid_grant`, `wrong_code`, ...), and the hosted page's HTML 400 only
for an unknown app or redirect URL. Any other refusal fails the run: a code
that says the request is malformed (`invalid_request`, `malformed_body`,
...) or one the check does not know, any other 4xx, a redirect back to the
app with `error=invalid_request`. A refusal under a rule the contract can
state in words only (a character a pattern cannot name, a JWK off the
curve, ...) passes once the check has seen that the request breaks it.

It starts `device-broker serve` from DIR (default .build/debug) on a free
loopback port with a fresh data directory and TOTP key, creates an API key
with the real `device-broker apikey create`, and stops the broker at the end.
"""
import argparse
import base64
import html
import json
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unicodedata
import urllib.parse
import urllib.request

root = pathlib.Path(__file__).resolve().parent.parent


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_up(url, broker, seconds=120):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if broker.poll() is not None:
            sys.exit(f"error: the broker exited ({broker.returncode})")
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    sys.exit("error: the broker did not come up")


def console_session(bin_dir, data, url, scratch):
    """Signs an operator in to the console as a person would: `operator add`
    on the host, the device enrolled with the command it prints, a sign-in
    started by the page's API and approved on that device with the number.
    Returns the session cookie's header value."""
    added = subprocess.run(
        [os.path.join(bin_dir, "device-broker"), "operator", "add", "contract-operator", "--data-dir", data,
         "--public-url", url], check=True, capture_output=True, text=True).stdout
    token = re.search(r"--token (et_[A-Za-z0-9_-]+)", added).group(1)
    agent = [os.path.join(bin_dir, "device-agent")]
    account = ["--broker", url, "--api-key", "ck_console", "--user", "contract-operator",
               "--config-dir", os.path.join(scratch, "operator")]
    subprocess.run(agent + ["enroll", "--token", token, "--name", "contract"] + account, check=True,
                   capture_output=True, timeout=120)
    request = urllib.request.Request(
        url + "/console/api/sign-in", data=json.dumps({"operator": "contract-operator"}).encode(),
        headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        number = json.load(response)["match_number"]
        attempt = response.headers["Set-Cookie"].split(";")[0]
    subprocess.run(agent + ["approve", "--timeout", "60"] + account, input=f"y\n{number}\n", text=True,
                   check=True, capture_output=True, timeout=120)
    request = urllib.request.Request(url + "/console/api/session", headers={"Cookie": attempt}, method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.headers["Set-Cookie"].split(";")[0]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=str(root / ".build" / "debug"))
    parser.add_argument("--seconds", type=int, default=120, help="time budget of the fuzzing phase")
    parser.add_argument("--seed", type=int, default=20261124)
    options = parser.parse_args()
    binary = os.path.join(options.bin, "device-broker")

    with tempfile.TemporaryDirectory() as scratch:
        data = os.path.join(scratch, "data")
        totp_key = os.path.join(scratch, "totp.key")
        subprocess.run([binary, "totp-key", "generate", totp_key], check=True, capture_output=True)
        key = json.loads(subprocess.run(
            [binary, "apikey", "create", "--name", "contract", "--json", "--data-dir", data,
             "--redirect-url", "http://127.0.0.1:9/cb"], check=True, capture_output=True, text=True).stdout)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        log = open(os.path.join(scratch, "broker.log"), "w")
        # The fuzzer is one client at one address, making many connections.
        broker = subprocess.Popen(
            [binary, "serve", "--port", str(port), "--data-dir", data, "--totp-key-file", totp_key,
             "--log-level", "warning", "--max-connections-per-address", "4096"], stdout=log, stderr=log)
        try:
            wait_until_up(url, broker)
            # The console's reads, signed in: only GETs, since its changes
            # would revoke the run's own key or sign it out.
            cookie = console_session(options.bin, data, url, scratch)
            environment = dict(os.environ, SCHEMATHESIS_HOOKS=str(pathlib.Path(__file__).resolve()))
            started = time.monotonic()
            console = subprocess.run([
                sys.executable, "-m", "schemathesis.cli", "run", str(root / "proto" / "openapi.yaml"), "--url", url,
                "--include-path-regex", "^/console/api/",
                "--exclude-method", "POST", "--exclude-method", "DELETE", "--exclude-path", "/console/api/sign-in",
                "--phases", "examples,coverage,fuzzing", "--max-time", str(max(20, options.seconds // 4)),
                "--seed", str(options.seed), "--workers", "2", "--checks", "all",
                # Schemathesis cannot take away a cookie it knows by another
                # name (see ConsoleSession below); the run after this one
                # finds every console operation refused without it.
                "--exclude-checks", "positive_data_acceptance,ignored_auth", "--no-color",
            ], text=True, capture_output=True, cwd=scratch,
                env=dict(environment, CONTRACT_CONSOLE_COOKIE=cookie.split("=", 1)[1]))
            if console.returncode != 0:
                failures = console.stdout.find("FAILURES")
                print(console.stdout[failures:] if failures >= 0 else console.stdout[-6000:])
                print(console.stderr[-3000:], file=sys.stderr)
                sys.exit(f"error: schemathesis found contract failures in the signed-in console (exit {console.returncode})")
            command = [
                sys.executable, "-m", "schemathesis.cli", "run", str(root / "proto" / "openapi.yaml"), "--url", url,
                "--auth", f"{key['api_key_id']}:{key['api_secret_key']}",
                "--phases", "examples,coverage,fuzzing,stateful", "--max-time", str(options.seconds),
                "--seed", str(options.seed), "--workers", "2", "--checks", "all",
                # Replaced by refused_valid_request (below), which tells a
                # refusal of the request's shape from one of a made-up key,
                # code, token or id.
                "--exclude-checks", "positive_data_acceptance",
                # Rotating or revoking the key would lock the run out of
                # every operation after them; their own tests cover them.
                "--exclude-operation-id", "rotateAPIKey", "--exclude-operation-id", "revokeAPIKey",
                "--no-color",
            ]
            result = subprocess.run(command, text=True, capture_output=True, cwd=scratch, env=environment)
            if result.returncode != 0:
                # Every failure, and the summary after them.
                failures = result.stdout.find("FAILURES")
                print(result.stdout[failures:] if failures >= 0 else result.stdout[-6000:])
                print(result.stderr[-3000:], file=sys.stderr)
                sys.exit(f"error: schemathesis found contract failures (exit {result.returncode})")
        finally:
            broker.send_signal(signal.SIGTERM)
            try:
                broker.wait(timeout=60)
            except subprocess.TimeoutExpired:
                broker.kill()
    summary = re.search(r"(\d+) generated", result.stdout)
    cases = f" in {summary.group(1)} generated cases" if summary else ""
    print(f"contract: schemathesis found no server error, no contract failure and no schema-valid request "
          f"refused{cases} ({time.monotonic() - started:.0f} s)")


# What follows runs inside schemathesis, which loads this file as its hooks.

# Codes that say the request is malformed: a schema-valid request must
# never get one.
SHAPE_CODES = {
    "invalid_request", "malformed_body", "malformed_form", "malformed_request", "invalid_code", "invalid_scope",
    "invalid_binding_message", "unsupported_grant_type", "unsupported_response_type",
}

# 400s and 422s about what a request names or holds rather than its shape:
# a schema-valid request made up by a fuzzer earns them.
NAMED_THING_CODES = {
    # An authorization code, refresh token or auth_req_id never issued (OAuth, get_identity).
    "invalid_grant",
    # A console search's cursor the broker never gave.
    "invalid_cursor",
    # CIBA's login_hint names no user, or one without a trusted device.
    "unknown_user_id",
    # A TOTP code that is wrong, or was used.
    "wrong_code", "code_used",
    # A decision JWS that does not check out, or carries the wrong number.
    "invalid_decision", "match_required", "wrong_match", "too_many_wrong_matches",
    # ProtocolError's codes: a JWS or key the broker cannot use (a decision
    # the broker cannot even read is refused with its reason as the code).
    "malformed", "invalid_key", "wrong_type", "wrong_algorithm", "bad_signature", "wrong_method", "wrong_url",
    "wrong_audience", "wrong_event", "wrong_nonce", "wrong_display", "wrong_verdict", "stale", "wrong_device",
    "wrong_key",
}

# The hosted page's HTML 400s about who is asking, not the request's
# shape: an unknown app, or a redirect URL it did not register (an error
# page, since nothing says the redirect can be trusted); a wrong code.
PAGE_NAMED_THING_ERRORS = (
    "Unknown app: the api_key is not registered here.",
    "The redirect_url is not registered for this app",
    "This app's redirect URL is not registered.",
    "That code is not right.",
    # Sign-in by approval and logout name an app, a redirect URI, a waiting
    # sign-in or an ID token the fuzzer cannot know.
    "Unknown app: the client_id is not registered here.",
    "The redirect_uri is not registered for this app",
    "No sign-in is waiting in this browser.",
    "The id_token_hint is not an ID token this broker issued.",
    "The client_id is not the app the id_token_hint was issued to.",
    "The post_logout_redirect_uri is not registered for this app",
)


def hidden_beyond_pattern(character):
    """Whether ShownText's pattern cannot name this hidden character: it names
    every one of the Basic Multilingual Plane that Unicode assigned, but no
    unassigned code point (which the broker's newer Unicode may assign) and
    nothing past U+FFFF (an ECMA-262 pattern without the u flag cannot)."""
    category = unicodedata.category(character)
    return category == "Cn" or (ord(character) > 0xFFFF and category in ("Cf", "Co", "Cs"))


def user_id_beyond_pattern(user):
    """Whether a user id breaks a rule of ClientUserID that its schema states
    in words only: at most 256 bytes of UTF-8, or a hidden character."""
    return len(user.encode("utf-8", "surrogatepass")) > 256 or any(map(hidden_beyond_pattern, user))


def on_p256(jwk):
    """Whether a JWK's x and y are a point on P-256 (y² = x³ - 3x + b mod p)."""
    p = 2**256 - 2**224 + 2**192 + 2**96 - 1
    b = 0x5AC635D8AA3A93E7B3EBBD55769886BC651D06B0CC53B0F63BCE3C3E27D2604B
    try:
        x, y = (int.from_bytes(base64.urlsafe_b64decode(jwk[name] + "=" * (-len(jwk[name]) % 4)), "big")
                for name in ("x", "y"))
    except (KeyError, TypeError, ValueError):
        return False
    return x < p and y < p and (y * y - (x * x * x - 3 * x + b)) % p == 0


def stacks_marks(text, most=4):
    """Whether more than `most` combining marks follow one another in `text`."""
    run = 0
    for character in text:
        run = run + 1 if unicodedata.category(character) in ("Mn", "Me") else 0
        if run > most:
            return True
    return False


class Sent:
    """The request as it went out: its path, query, headers and body."""

    def __init__(self, request):
        parts = urllib.parse.urlsplit(request.url)
        self.segments = [urllib.parse.unquote(segment) for segment in parts.path.split("/")]
        self.query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        self.headers = request.headers
        body = request.body or b""
        self.size = len(body.encode() if isinstance(body, str) else body)
        body = body.decode("utf-8", "surrogateescape") if isinstance(body, bytes) else body
        content_type = request.headers.get("Content-Type", "")
        self.form = urllib.parse.parse_qsl(body, keep_blank_values=True) if "urlencoded" in content_type else []
        try:
            self.json = json.loads(body) if "json" in content_type else None
        except ValueError:
            self.json = None

    def strings(self):
        """Every text the request carries."""
        def walk(value):
            if isinstance(value, str):
                yield value
            elif isinstance(value, dict):
                for key, item in value.items():
                    yield key
                    yield from walk(item)
            elif isinstance(value, list):
                for item in value:
                    yield from walk(item)
        yield from self.segments
        for pair in self.query + self.form:
            yield from pair
        yield from walk(self.json)

    def path_user(self):
        if self.segments[1:4] == ["api", "v1", "users"] and len(self.segments) > 4:
            return self.segments[4]
        return None

    def at(self, path):
        value = self.json
        for name in path.split("."):
            value = value.get(name) if isinstance(value, dict) else None
        return value


def rule_in_words(code, message, sent):
    """Whether the refusal is under a rule the contract states in words only,
    and the request breaks it."""
    if code == "body_too_large":
        return sent.size > 64 * 1024
    hidden = re.search(r"holds a character that would not be shown as itself \(U\+([0-9A-F]+) at", message)
    if hidden:
        character = chr(int(hidden.group(1), 16))
        return hidden_beyond_pattern(character) and any(character in text for text in sent.strings())
    if "combining marks on one character" in message:
        # ShownText: at most 4 combining marks on one character.
        return any(map(stacks_marks, sent.strings()))
    if message == "invalid client_user_id in the path":
        return sent.path_user() is not None and user_id_beyond_pattern(sent.path_user())
    if message == "client_user_id is missing or invalid":
        # Required of every caller but a device, which the schema cannot say.
        user = (sent.json or {}).get("client_user_id") if isinstance(sent.json, dict) else None
        return user is None or (isinstance(user, str) and user_id_beyond_pattern(user))
    if message == "operator is missing or invalid":
        # The console's operator name is a ClientUserID of the console's app.
        name = (sent.json or {}).get("operator") if isinstance(sent.json, dict) else None
        return name is None or (isinstance(name, str) and user_id_beyond_pattern(name))
    document = sent.json if isinstance(sent.json, dict) else {}
    approvers = document.get("approvers") if isinstance(document.get("approvers"), dict) else document
    if message.startswith(("users names an invalid user id", "approvers names an invalid user id")):
        # ClientUserID items: the characters the pattern cannot name.
        users = approvers.get("users") if isinstance(approvers.get("users"), list) else []
        return any(isinstance(user, str) and user_id_beyond_pattern(user) for user in users)
    if re.match(r"required_approvals is \d+ but only \d+ approver\(s\) may approve", message):
        # Stated in words: no more approvals required than approvers who may give them.
        return True
    if message.startswith(("no approver group of this app, nor directory group, is named",
                           "groups in several branches are named", "approvers needs users, or a group")):
        # A group as the app and the directory hold it, which the schema cannot know.
        return isinstance(approvers.get("group"), str)
    if message.startswith("this app's policy sets the approvers of"):
        # The app's quorum policies, which the schema cannot know.
        return "approvers" in document
    if message == "a pairing is approved by the user's own device, not by approvers":
        return document.get("event") == "ENROLL_NEW_TRUSTED_DEVICE" or sent.segments[-1:] == [
            "ENROLL_NEW_TRUSTED_DEVICE"]
    off_curve = re.search(r"the point is not on the P-256 curve at ([\w.]+)", message)
    if off_curve:
        return isinstance(sent.at(off_curve.group(1)), dict) and not on_p256(sent.at(off_curve.group(1)))
    if message.startswith("this client is registered for the poll mode"):
        # As the client is registered, which the schema cannot know: the
        # run's key has no CIBA ping endpoint.
        return any(name == "client_notification_token" for name, _ in sent.form)
    if message.startswith("authenticate with one method"):
        # RFC 6749 §2.3: one client authentication, never two; the run
        # sends Basic with every request, the fuzzer a client_secret.
        return (sent.headers.get("Authorization", "").startswith("Basic ")
                and any(name == "client_secret" for name, _ in sent.form))
    return False


def refusal(response):
    """The refusal's code (None for an HTML page) and message."""
    if "text/html" in ";".join(response.headers.get("content-type", [])):
        alert = re.search(r'<p class="error" role="alert">(.*?)</p>', response.text, re.S)
        return None, html.unescape(alert.group(1)) if alert else response.text[:200]
    try:
        document = json.loads(response.text)
    except ValueError:
        return "", response.text[:200]
    if not isinstance(document, dict):
        return "", response.text[:200]
    return document.get("error", ""), document.get("message") or document.get("error_description") or ""


def load_as_hooks():
    import schemathesis

    @schemathesis.check
    def refused_valid_request(ctx, response, case):
        """A request generated as schema-valid must not be refused for its shape."""
        if case.meta is None or not case.meta.generation.mode.is_positive:
            return None
        status = response.status_code
        # Success, a server error (not_a_server_error's), and the refusals
        # of what a request names: credentials, ids, state, limits.
        if status < 300 or status >= 500 or status in (401, 403, 404, 409, 410, 429):
            return None
        if status < 400:
            location = dict(urllib.parse.parse_qsl(
                urllib.parse.urlsplit(";".join(response.headers.get("location", []))).query))
            if location.get("error") in SHAPE_CODES:
                raise AssertionError(
                    f"A schema-valid request was sent back as malformed: {status} to "
                    f"error={location['error']} ({location.get('error_description', '')})")
            return None
        code, message = refusal(response)
        if code is None:
            if status == 400 and any(message.startswith(known) for known in PAGE_NAMED_THING_ERRORS):
                return None
            refused = f"the page says: {message}"
        elif status in (400, 422) and code in NAMED_THING_CODES:
            return None
        elif rule_in_words(code, message, Sent(response.request)):
            return None
        elif status in (400, 422) and code not in SHAPE_CODES:
            refused = (f"{code or 'no error code'}: {message} (a code this check does not know: is it about "
                       f"the request's shape, or what it names?)")
        else:
            refused = f"{code}: {message}"
        raise AssertionError(f"A schema-valid request was refused: {status} {refused}")

    # The console's session cookie, signed in by console_session(): on a
    # loopback http broker it is `countersign_console`, not the `__Host-`
    # name the scheme gives, so it is given here as the scheme's value.
    cookie = os.environ.get("CONTRACT_CONSOLE_COOKIE")
    if cookie:
        @schemathesis.auth().apply_to(path_regex="^/console/api/")
        class ConsoleSession:
            def get(self, case, context):
                return cookie

            def set(self, case, data, context):
                case.cookies = dict(case.cookies or {}, countersign_console=data)


if __name__ == "__main__":
    main()
else:
    load_as_hooks()
