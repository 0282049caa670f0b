#!/usr/bin/env python3
"""Runs a program under a real pseudo-terminal, as a person at a terminal
would, answers its prompts, and prints the screen that person would see.

The bytes the program writes are interpreted by pyte, a VT100/xterm
terminal emulator: escape sequences move the cursor, erase lines, change
the title, exactly as they would on a real terminal. So the printed screen
is what the person reads, not the bytes that were sent.

    terminal-screen.py [--sql DATABASE STATEMENT]... [--answer PROMPT REPLY]...
                       [--watch REGEX] -- PROGRAM ARGS...

--sql runs a statement on an SQLite database first (to plant what a
hostile or older broker would send). --answer types REPLY and Enter once
PROMPT has been written since the previous answer, each once, in order; a
REPLY of ^C types Ctrl-C instead, which the terminal turns into SIGINT.
--watch prints, as "--- seen: TEXT" when it appears, each different match
of REGEX on the screen over time (e.g. a countdown). The screen is printed between lines
"--- screen ---" and "--- end ---", trailing blanks removed; the exit
status is the program's, or 128 + the signal that ended it.
"""
import argparse
import os
import pty
import re
import select
import sqlite3
import sys
import time

import pyte

COLUMNS, LINES = 120, 40


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sql", nargs=2, action="append", default=[], metavar=("DATABASE", "STATEMENT"))
    parser.add_argument("--answer", nargs=2, action="append", default=[], metavar=("PROMPT", "REPLY"))
    parser.add_argument("--watch", action="append", default=[], metavar="REGEX")
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    command = options.command[1:] if options.command[:1] == ["--"] else options.command

    for database, statement in options.sql:
        with sqlite3.connect(database, timeout=60) as connection:
            connection.execute(statement)

    screen = pyte.Screen(COLUMNS, LINES)
    stream = pyte.ByteStream(screen)
    answers = list(options.answer)
    watches = [re.compile(pattern) for pattern in options.watch]
    seen = []
    # Prompts are looked for in what was written since the last answer, so
    # a question asked again is answered again.
    written = ""
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "xterm"
        os.environ["COLUMNS"], os.environ["LINES"] = str(COLUMNS), str(LINES)
        os.execvp(command[0], command)

    deadline = time.monotonic() + options.timeout
    status = None
    while time.monotonic() < deadline:
        readable, _, _ = select.select([fd], [], [], 0.1)
        if readable:
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b""
            if not data:
                break
            stream.feed(data)
            written += data.decode("utf-8", "replace")
        shown = "\n".join(screen.display)
        for watch in watches:
            for match in watch.finditer(shown):
                if match.group(0) not in seen:
                    seen.append(match.group(0))
                    print(f"--- seen: {match.group(0)}", flush=True)
        if answers and answers[0][0] in written:
            reply = answers.pop(0)[1]
            os.write(fd, b"\x03" if reply == "^C" else (reply + "\r").encode())
            written = ""
    else:
        os.kill(pid, 9)
        print(f"error: {command[0]} did not finish within {options.timeout} s", file=sys.stderr)
    _, status = os.waitpid(pid, 0)

    print("--- screen ---")
    lines = [line.rstrip() for line in screen.display]
    while lines and not lines[-1]:
        lines.pop()
    print("\n".join(lines))
    print("--- end ---")
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()
