#!/usr/bin/env python3
"""Checks deploy/ without a container engine: the compose file against the
Compose specification's JSON schema (read from docker-compose's Python
package, named by COUNTERSIGN_COMPOSE_WHEEL), the properties the topology
depends on, the Dockerfile's shape, and the systemd unit through
`systemd-analyze verify` against the built broker."""
import sys

# Asked for help (or given too few arguments), say how to run it, before
# importing what only the test script installs.
if any(argument in ("-h", "--help") for argument in sys.argv[1:]):
    print(__doc__.strip())
    sys.exit(0)
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

import jsonschema
import yaml

root = pathlib.Path(__file__).resolve().parent.parent
deploy = root / "deploy"
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)


# compose.yaml against the Compose specification's schema. YAML anchors and
# merge keys are resolved by the YAML loader, as the compose tool does.
wheel = os.environ.get("COUNTERSIGN_COMPOSE_WHEEL")
if not wheel:
    sys.exit("error: set COUNTERSIGN_COMPOSE_WHEEL to docker-compose's wheel (scripts/test.sh downloads it)")
with zipfile.ZipFile(wheel) as package:
    schema = json.loads(package.read("compose/config/compose_spec.json"))
config = yaml.safe_load((deploy / "compose.yaml").read_text())
# The schema names draft 2019-09 (with a trailing "#" the library does not look up).
validator = jsonschema.Draft201909Validator(schema)
errors = sorted(validator.iter_errors(config), key=lambda error: list(error.path))
if errors:
    sys.exit("error: deploy/compose.yaml breaks the Compose specification:\n  "
             + "\n  ".join(f"{'.'.join(map(str, error.path))}: {error.message}" for error in errors))
services = config["services"]
brokers = [name for name, service in services.items()
           if "serve" in (service.get("command") or [])]
check(len(brokers) == 2, f"two broker instances, found {brokers}")
proxy_address = services["proxy"]["networks"]["backend"]["ipv4_address"]
for name in brokers:
    service = services[name]
    check(f"--trusted-proxy={proxy_address}" in service["command"], f"{name} trusts exactly the proxy's address")
    check(service["environment"]["COUNTERSIGN_DATABASE_URL"].startswith("postgres://"), f"{name} uses PostgreSQL")
    check(service.get("stop_signal") == "SIGTERM", f"{name} stops with SIGTERM")
    check("migrate" in service.get("depends_on", {}), f"{name} starts after the migrations")
check(services["migrate"]["command"] == ["migrate"], "a one-shot migrate service")
check("postgres" in services and "healthcheck" in services["postgres"], "PostgreSQL with a health check")

# nginx: the read timeout exceeds the longest long-poll hold (30 s).
nginx = (deploy / "nginx.conf").read_text()
timeout = re.search(r"proxy_read_timeout\s+(\d+)s;", nginx)
check(timeout and int(timeout.group(1)) > 30, "nginx proxy_read_timeout exceeds the 30 s long-poll hold")
check("X-Forwarded-For $proxy_add_x_forwarded_for" in nginx, "nginx forwards the client address")
for name in brokers:
    check(f"server {name}:8080" in nginx, f"nginx balances onto {name}")

# Dockerfile: multi-stage, static Swift runtime, small non-root runtime image.
dockerfile = (deploy / "Dockerfile").read_text()
stages = re.findall(r"^FROM\s+(\S+)", dockerfile, re.MULTILINE)
check(len(stages) >= 2, "a multi-stage build")
check(stages[-1].endswith("-slim"), f"a slim runtime image, not {stages[-1]}")
check("--static-swift-stdlib" in dockerfile, "the Swift runtime linked statically")
final = dockerfile.split("FROM " + stages[-1])[-1]
user = re.findall(r"^USER\s+(\S+)", final, re.MULTILINE)
check(user and not user[-1].startswith(("root", "0:", "0")), "the runtime stage runs as a non-root user")

# systemd: the unit parses cleanly, against the binary just built.
unit = (deploy / "countersign-broker.service").read_text()
for directive in ["User=countersign", "ProtectSystem=strict", "NoNewPrivileges=yes", "StateDirectory=countersign",
                  "KillSignal=SIGTERM"]:
    check(directive in unit, f"the systemd unit sets {directive}")
# Every connection is a descriptor: the limit bears the documented 10,000
# held long-polls with room to spare.
nofile = re.search(r"^LimitNOFILE=(\d+)$", unit, re.MULTILINE)
check(nofile and int(nofile.group(1)) >= 20000, "the systemd unit raises LimitNOFILE for held long-polls")
for name in brokers:
    limit = services[name].get("ulimits", {}).get("nofile", {})
    check(isinstance(limit, dict) and limit.get("soft", 0) >= 20000, f"{name} raises its nofile limit")
binary = root / ".build" / "debug" / "device-broker"
if shutil.which("systemd-analyze") and binary.exists():
    with tempfile.TemporaryDirectory() as directory:
        copy = pathlib.Path(directory) / "countersign-broker.service"
        copy.write_text(unit.replace("/usr/bin/device-broker", str(binary)))
        verify = subprocess.run(["systemd-analyze", "verify", "--man=no", str(copy)], capture_output=True, text=True)
        check(verify.returncode == 0 and not verify.stdout.strip() and not verify.stderr.strip(),
              f"systemd-analyze verify is silent about the unit:\n{verify.stdout}{verify.stderr}")
else:
    failures.append("systemd-analyze and a built device-broker are needed to check the unit")

if failures:
    sys.exit("deploy/ checks failed:\n  " + "\n  ".join(failures))
print("deploy: compose (against the Compose specification), nginx, Dockerfile and systemd unit check out")
