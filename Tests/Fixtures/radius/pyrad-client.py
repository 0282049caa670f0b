#!/usr/bin/env python3
"""A RADIUS client made with pyrad (PyPI), for the broker's end-to-end tests:
sends one Access-Request (PAP) and prints what came back as one JSON line:
{"code": "Access-Accept" | "Access-Reject" | "Access-Challenge", "reply_message",
"state" (hex), "session_timeout", "verified", "length", "request_length"}, or
{"code": null} when nothing came back in time. Every reply's Response
Authenticator and Message-Authenticator are checked by pyrad.

  --server HOST:PORT --secret S --user U [--password P] [--state HEX]
  [--no-message-authenticator] [--forge-message-authenticator]
  [--send-twice] [--timeout SECONDS] [--calling-station-id ADDRESS] [--status-server]
  [--accounting]  (an Accounting-Request, Acct-Status-Type Start, instead)
  [--source ADDRESS] [--pad N]  (N Proxy-State attributes of 253 bytes)

--send-twice sends the very same datagram again once the first answer came
(a NAS's retransmission) and prints both answers as a JSON list.
"""
import argparse
import io
import json
import os
import socket
import sys

from pyrad import packet
from pyrad.dictionary import Dictionary

DICTIONARY = """
ATTRIBUTE User-Name 1 string
ATTRIBUTE User-Password 2 string
ATTRIBUTE NAS-IP-Address 4 ipaddr
ATTRIBUTE Reply-Message 18 string
ATTRIBUTE State 24 octets
ATTRIBUTE Session-Timeout 27 integer
ATTRIBUTE Calling-Station-Id 31 string
ATTRIBUTE NAS-Identifier 32 string
ATTRIBUTE Proxy-State 33 octets
ATTRIBUTE Acct-Status-Type 40 integer
ATTRIBUTE Acct-Session-Id 44 string
ATTRIBUTE Message-Authenticator 80 octets
"""
NAMES = {packet.AccessAccept: "Access-Accept", packet.AccessReject: "Access-Reject",
         packet.AccessChallenge: "Access-Challenge", packet.AccountingResponse: "Accounting-Response"}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--secret", required=True)
    parser.add_argument("--user", default="alice")
    parser.add_argument("--password", default="")
    parser.add_argument("--state")
    parser.add_argument("--calling-station-id", default="198.51.100.23")
    parser.add_argument("--no-message-authenticator", action="store_true")
    parser.add_argument("--forge-message-authenticator", action="store_true")
    parser.add_argument("--send-twice", action="store_true")
    parser.add_argument("--status-server", action="store_true")
    parser.add_argument("--accounting", action="store_true")
    parser.add_argument("--source", default="", help="the address to send from (127.0.0.2: another NAS)")
    parser.add_argument("--pad", type=int, default=0, help="Proxy-State attributes of 253 bytes to add")
    parser.add_argument("--timeout", type=float, default=40)
    arguments = parser.parse_args()
    host, port = arguments.server.rsplit(":", 1)
    secret = arguments.secret.encode()
    dictionary = Dictionary(io.StringIO(DICTIONARY))
    code = packet.StatusServer if arguments.status_server else packet.AccessRequest
    if arguments.accounting:
        request = packet.AcctPacket(secret=secret, dict=dictionary, id=os.urandom(1)[0])
        request["User-Name"] = arguments.user
        request["Acct-Status-Type"] = 1
        request["Acct-Session-Id"] = os.urandom(8).hex()
        arguments.no_message_authenticator = True
    else:
        request = packet.AuthPacket(code=code, secret=secret, dict=dictionary, id=os.urandom(1)[0])
    if not arguments.status_server and not arguments.accounting:
        request["User-Name"] = arguments.user
        request["NAS-IP-Address"] = "192.0.2.10"
        request["Calling-Station-Id"] = arguments.calling_station_id
        request["User-Password"] = request.PwCrypt(arguments.password)
        if arguments.state:
            request["State"] = bytes.fromhex(arguments.state)
        if arguments.pad:
            request["Proxy-State"] = [os.urandom(253) for _ in range(arguments.pad)]
    if not arguments.no_message_authenticator:
        request.add_message_authenticator()
    datagram = request.RequestPacket()
    if arguments.forge_message_authenticator:
        # The last 16 bytes are the Message-Authenticator's value.
        datagram = datagram[:-16] + bytes(16)
    sock = socket.socket(socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(arguments.timeout)
    if arguments.source:
        sock.bind((arguments.source, 0))
    target = (host.strip("[]"), int(port))
    sends = 2 if arguments.send_twice else 1
    answers = []
    for _ in range(sends):
        sock.sendto(datagram, target)
        try:
            data, _ = sock.recvfrom(4096)
        except socket.timeout:
            answers.append({"code": None})
            continue
        reply = packet.Packet(secret=secret, dict=dictionary, packet=data)
        if arguments.accounting:
            # An Accounting-Response has only its Response Authenticator (RFC 2866).
            verified = request.VerifyReply(reply, data)
        else:
            verified = request.VerifyReply(reply, data) and reply.verify_message_authenticator(
                original_authenticator=request.authenticator)
        answer = {"code": NAMES.get(reply.code, str(reply.code)), "verified": bool(verified),
                  "length": len(data), "request_length": len(datagram),
                  "message_authenticator_first": len(data) > 20 and data[20] == 80}
        if "Reply-Message" in reply:
            answer["reply_message"] = reply["Reply-Message"][0]
        if "State" in reply:
            answer["state"] = reply["State"][0].hex()
        if "Session-Timeout" in reply:
            answer["session_timeout"] = reply["Session-Timeout"][0]
        answers.append(answer)
    print(json.dumps(answers if arguments.send_twice else answers[0]))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
