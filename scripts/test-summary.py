#!/usr/bin/env python3
"""Summarises a `swift test` log: the totals, every recorded issue with the
lines that explain it, and the tests that started but never finished.

usage: test-summary.py LOG --status EXIT_STATUS_OF_SWIFT_TEST
Exits non-zero when the suite failed, crashed or did not finish.
"""

import argparse
import re
import sys

STARTED = re.compile(r"^◇ (?:Test|Suite) (.+?) started\.$")
FINISHED = re.compile(r"^[✔✘] (?:Test|Suite) (.+?)(?: with \d+ test cases?)? (?:passed|failed) after ")
RUN_END = re.compile(r"^[✔✘] Test run with ")
ISSUE = re.compile(r"^✘ ")
MARKER = re.compile(r"^[◇✔✘] ")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("log")
    parser.add_argument("--status", type=int, required=True)
    arguments = parser.parse_args()

    with open(arguments.log, encoding="utf-8", errors="replace") as file:
        lines = file.read().splitlines()

    started: dict[str, int] = {}
    finished: set[str] = set()
    issues: list[str] = []
    run_end = None
    for index, line in enumerate(lines):
        if line.startswith(("◇ Test case ", "✔ Test case ")) or line == "◇ Test run started.":
            continue
        if match := STARTED.match(line):
            started.setdefault(match.group(1), index)
        elif RUN_END.match(line):
            run_end = line
        elif match := FINISHED.match(line):
            finished.add(match.group(1))
        if ISSUE.match(line) and not RUN_END.match(line):
            # The issue and what explains it: the lines up to the next marker.
            issues.append(line)
            for follow in lines[index + 1 : index + 13]:
                if MARKER.match(follow) or re.match(r"^\d{4}-\d\d-\d\dT", follow):
                    break
                issues.append("    " + follow)

    failed = arguments.status != 0 or bool(issues) or run_end is None or run_end.startswith("✘")
    if issues:
        print(f"{sum(1 for line in issues if line.startswith('✘'))} failure lines:", file=sys.stderr)
        for line in issues:
            print(line[:600], file=sys.stderr)
    unfinished = [name for name in started if name not in finished]
    if unfinished:
        print(f"started and never finished ({len(unfinished)}):", file=sys.stderr)
        for name in sorted(unfinished, key=lambda name: started[name]):
            print(f"    {name}", file=sys.stderr)
    if run_end is None:
        print(f"the suite ended without its summary (exit status {arguments.status}); the end of its log:",
              file=sys.stderr)
        for line in lines[-80:]:
            print("    " + line[:300], file=sys.stderr)
    else:
        print(run_end)
    if failed:
        print(f"tests: failed; the whole output is in {arguments.log}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
