#!/usr/bin/env python3
"""A real SMTP server for the SMTP sender's tests (aiosmtpd).

It makes its own certificate authority and server certificate (for
127.0.0.1 and localhost), writes the CA to --ca-out, and appends one JSON
line per accepted message to --spool: envelope, whether TLS was on, who
logged in, and the parsed headers and body. Mail to any address at
refused.test is refused for good (550).

Modes:
  starttls     STARTTLS offered and required before AUTH and MAIL
  tls          TLS from the first byte (implicit TLS, RFC 8314)
  cleartext    no STARTTLS offered (a client must refuse to go on)
  inject       answers STARTTLS with "220" plus an injected reply in the
               same packet, then stops (a client must refuse to go on)
"""
import sys

# Asked for help (or given too few arguments), say how to run it, before
# importing what only the test script installs.
if any(argument in ("-h", "--help") for argument in sys.argv[1:]):
    print(__doc__.strip())
    sys.exit(0)

import argparse
import asyncio
import datetime
import email
import email.policy
import ipaddress
import json
import signal
import ssl
import sys
import tempfile

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def make_certificates(ca_out):
    """A CA, written to ca_out, and a server certificate signed by it."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Countersign test mail CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    with open(ca_out, "wb") as out:
        out.write(ca.public_bytes(serialization.Encoding.PEM))
    directory = tempfile.mkdtemp()
    cert_file, key_file = f"{directory}/server.pem", f"{directory}/server.key"
    with open(cert_file, "wb") as out:
        out.write(leaf.public_bytes(serialization.Encoding.PEM))
    with open(key_file, "wb") as out:
        out.write(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    return context


class Spool:
    def __init__(self, path):
        self.path = path

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        # A mailbox that does not exist, refused for good (RFC 5321 §4.2.2).
        if address.endswith("@refused.test"):
            return "550 5.1.1 No such mailbox here"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        message = email.message_from_bytes(envelope.original_content, policy=email.policy.default)
        record = {
            "mail_from": envelope.mail_from,
            "rcpt_tos": envelope.rcpt_tos,
            "tls": session.ssl is not None or server.transport.get_extra_info("ssl_object") is not None,
            "login": (session.auth_data.login.decode() if isinstance(session.auth_data, LoginPassword) else None),
            "headers": {name: str(value) for name, value in message.items()},
            "body": message.get_content(),
        }
        with open(self.path, "a") as out:
            out.write(json.dumps(record) + "\n")
        return "250 2.0.0 Message accepted"


class Authenticator:
    def __init__(self, username, password):
        self.username, self.password = username.encode(), password.encode()

    def __call__(self, server, session, envelope, mechanism, auth_data):
        ok = (
            isinstance(auth_data, LoginPassword)
            and auth_data.login == self.username
            and auth_data.password == self.password
        )
        return AuthResult(success=ok, handled=False, auth_data=auth_data if ok else None)


async def inject(port):
    """An attacker in the path: plaintext after the STARTTLS answer."""

    async def talk(reader, writer):
        writer.write(b"220 mail.test ESMTP\r\n")
        while line := await reader.readline():
            verb = line.strip().upper()
            if verb.startswith(b"EHLO"):
                writer.write(b"250-mail.test\r\n250-AUTH PLAIN\r\n250 STARTTLS\r\n")
            elif verb == b"STARTTLS":
                writer.write(b"220 2.0.0 Ready\r\n250-mail.test\r\n250 AUTH PLAIN\r\n")
                await writer.drain()
                with open(sys.argv[sys.argv.index("--spool") + 1] + ".plaintext", "ab") as out:
                    out.write(await reader.read(4096))
                break
            else:
                writer.write(b"250 OK\r\n")
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(talk, "127.0.0.1", port)
    print(f"listening on 127.0.0.1:{port}", flush=True)
    async with server:
        await server.serve_forever()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--spool", required=True)
    parser.add_argument("--ca-out", required=True)
    parser.add_argument("--username", default="mailer")
    parser.add_argument("--password", default="correct horse")
    parser.add_argument("--mode", choices=["starttls", "tls", "cleartext", "inject"], default="starttls")
    arguments = parser.parse_args()
    # The test runner may hand its children SIGTERM blocked or ignored.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    context = make_certificates(arguments.ca_out)
    if arguments.mode == "inject":
        asyncio.run(inject(arguments.port))
        return
    options = dict(
        handler=Spool(arguments.spool),
        hostname="127.0.0.1",
        port=arguments.port,
        authenticator=Authenticator(arguments.username, arguments.password),
        # Implicit TLS is not STARTTLS to aiosmtpd: it would hide AUTH.
        auth_require_tls=arguments.mode == "starttls",
    )
    if arguments.mode == "starttls":
        options.update(tls_context=context, require_starttls=True)
    elif arguments.mode == "tls":
        options.update(ssl_context=context)
    controller = Controller(**options)
    controller.start()
    print(f"listening on 127.0.0.1:{arguments.port}", flush=True)
    try:
        asyncio.run(asyncio.Event().wait())
    finally:
        controller.stop()


if __name__ == "__main__":
    main()
