#!/usr/bin/env python3
"""Logs in over SSH with keyboard-interactive authentication, as a person at
an ssh client would, with paramiko: prints each prompt the server sends as
"prompt: TEXT" and answers it with the next line read from standard input
(an empty line is pressing Enter). Once in, runs `id -un` and prints
"ran: OUTPUT"; a refused login prints "denied: WHY" and exits 1.

    ssh-login.py HOST PORT USER [--disconnect-at-prompt | --disconnect-after-answer] [--retry]

With --disconnect-at-prompt the client drops the connection as soon as the
first prompt arrives, as a closed terminal or a Ctrl-C would. With
--disconnect-after-answer it answers the first prompt and drops the
connection once the answer is on its way, as a person who pressed Enter and
then closed the terminal would; either way it exits 3.

With --retry a refused login tries keyboard-interactive again in the same
connection, as OpenSSH's client does (NumberOfPasswordPrompts): a prompt
then prints "retry prompt: TEXT" and the client drops the connection
(exit 4); a refusal without one prints "retry denied: WHY" (exit 1).
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
after_answer = "--disconnect-after-answer" in sys.argv[4:]
retry = "--retry" in sys.argv[4:]

sock = socket.create_connection((host, port), timeout=30)
transport = paramiko.Transport(sock)
transport.start_client(timeout=60)

if after_answer:
    # The answer goes out in the transport's thread right after the handler
    # returns: the connection is dropped as soon as it has been written.
    send = transport._send_message

    def send_then_drop(message):
        send(message)
        if message.asbytes()[:1] == bytes([paramiko.common.MSG_USERAUTH_INFO_RESPONSE]):
            sock.close()
            os._exit(3)

    transport._send_message = send_then_drop


def handler(title, instructions, prompts):
    answers = []
    for text, _echo in prompts:
        print("prompt:", text.replace("\n", " "), flush=True)
        if disconnect:
            transport.close()
            os._exit(3)
        answers.append(sys.stdin.readline().rstrip("\n"))
    return answers


def retry_handler(title, instructions, prompts):
    for text, _echo in prompts:
        print("retry prompt:", text.replace("\n", " "), flush=True)
    transport.close()
    os._exit(4)


try:
    transport.auth_interactive(user, handler)
except paramiko.AuthenticationException as error:
    print("denied:", error, flush=True)
    if retry:
        try:
            transport.auth_interactive(user, retry_handler)
        except (paramiko.AuthenticationException, paramiko.SSHException, EOFError) as again:
            print("retry denied:", again, flush=True)
    sys.exit(1)
channel = transport.open_session(timeout=60)
channel.exec_command("id -un")
output = channel.makefile().read().decode().strip()
print("ran:", output, flush=True)
transport.close()
