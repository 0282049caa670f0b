#!/usr/bin/env python3
"""Validates proto/openapi.yaml as OpenAPI 3.1 and checks that it documents
every route the broker registers (read from its controllers' sources)."""
import sys

# Asked for help, say what it does, before doing it.
if any(argument in ("-h", "--help") for argument in sys.argv[1:]):
    print(__doc__.strip())
    sys.exit(0)
import pathlib
import re
import sys

import yaml
from openapi_spec_validator import validate

root = pathlib.Path(__file__).resolve().parent.parent
spec = yaml.safe_load((root / "proto" / "openapi.yaml").read_text())
validate(spec)


# A key with no value is what YAML makes of an unquoted flow-mapping value
# with a comma in it (`{ description: a, b. }` gives a key "b."): the text
# is cut short, and the validator allows the stray key.
def empty_keys(node, path):
    if isinstance(node, dict):
        for key, value in node.items():
            if value is None:
                yield ".".join(map(str, path + [key]))
            yield from empty_keys(value, path + [key])
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from empty_keys(value, path + [index])


stray = list(empty_keys(spec, []))
if stray:
    sys.exit("keys without a value (quote the text before them):\n  " + "\n  ".join(stray))

documented = {(method.upper(), re.sub(r"\{[^}]+\}", "{}", path))
              for path, operations in spec["paths"].items() for method in operations if method != "parameters"}
registered = set()
broker = root / "Sources" / "CountersignBroker"
for source in broker.rglob("*.swift"):
    text = source.read_text()
    # Where each controller is mounted (see buildRouter); the rest are under /api/v1.
    base = {"Application+build.swift": "", "OperationsController.swift": "", "VerificationPageController.swift": "",
            "OAuthController.swift": "", "IdentityController.swift": "/api/v0/",
            "ApproverController.swift": "", "CIBAController.swift": "", "ConsoleController.swift": "",
            "ConsoleReads.swift": "/console/api/", "ConsoleActions.swift": "/console/api/",
            "ConsoleWatchReads.swift": "/console/api/", "ConsoleAppActions.swift": "/console/api/",
            "ConsoleSearchReads.swift": "/console/api/", "ConsoleDashboard.swift": "/console/api/",
            "ConsoleInvitations.swift": "/console/api/", "ConsoleApproverGroups.swift": "/console/api/",
            "SignInPageController.swift": "", "OpenIDSessionController.swift": ""}.get(source.name, "/api/v1/")
    for method, path in re.findall(r'\.(get|post|delete|put|patch)\("([^"]+)"(?:,\s*use:|\)\s*\{)', text):
        full = re.sub(r"/+", "/", "/" + path if base == "" else base + path)
        registered.add((method.upper(), re.sub(r":[A-Za-z]+", "{}", full)))
missing = registered - documented
if missing:
    sys.exit(f"routes missing from proto/openapi.yaml: {sorted(missing)}")
print(f"openapi: valid, {len(documented)} operations, all {len(registered)} routes documented")
