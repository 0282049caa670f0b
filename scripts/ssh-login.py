#!/usr/bin/env python3
"""Logs in over SSH with keyboard-interactive authentication, as a person at
an ssh client would, with paramiko: prints each prompt the server sends as
"prompt: TEXT" and answers it with the next line read from standard input
(an empty line is pressing Enter). Once in, runs `id -un` and prints
"ran: OUTPUT"; a refused login prints "denied: WHY" and exits 1.

    ssh-login.py HOST PORT USER [--disconnect-at-prompt]

With --disconnect-at-prompt the client drops the connection as soon as the
first prompt arrives, as a closed terminal or a Ctrl-C would.
"""
import sys

if any(argument in ("-h", "--help") for argument in sys.argv[1:]):
    print(__doc__.strip())
    sys.exit(0)
if len(sys.argv) < 4:
    print(__doc__.strip(), file=sys.stderr)
    sys.exit(2)
import os
import socket

import paramiko

host, port, user = sys.argv[1], int(sys.argv[2]), sys.argv[3]
disconnect = "--disconnect-at-prompt" in sys.argv[4:]

sock = socket.create_connection((host, port), timeout=30)
transport = paramiko.Transport(sock)
transport.start_client(timeout=60)


def handler(title, instructions, prompts):
    answers = []
    for text, _echo in prompts:
        print("prompt:", text.replace("\n", " "), flush=True)
        if disconnect:
            transport.close()
            os._exit(3)
        answers.append(sys.stdin.readline().rstrip("\n"))
    return answers


try:
    transport.auth_interactive(user, handler)
except paramiko.AuthenticationException as error:
    print("denied:", error, flush=True)
    sys.exit(1)
channel = transport.open_session(timeout=60)
channel.exec_command("id -un")
output = channel.makefile().read().decode().strip()
print("ran:", output, flush=True)
transport.close()
