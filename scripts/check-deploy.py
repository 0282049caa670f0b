#!/usr/bin/env python3
"""Checks deploy/ without a container engine: the compose file through
`docker compose config` (or Debian's docker-compose), the properties the
topology depends on, the Dockerfile's shape, and the systemd unit through
`systemd-analyze verify` against the built broker."""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

root = pathlib.Path(__file__).resolve().parent.parent
deploy = root / "deploy"
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)


# compose.yaml, as the compose tool resolves it (anchors, merges, variables).
if subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
    compose = ["docker", "compose"]
elif shutil.which("docker-compose"):
    compose = ["docker-compose"]
else:
    sys.exit("error: neither `docker compose` nor docker-compose is installed")
environment = dict(os.environ, POSTGRES_PASSWORD="check-only")
result = subprocess.run(compose + ["-f", str(deploy / "compose.yaml"), "config"], capture_output=True, text=True,
                        env=environment, cwd=deploy)
if result.returncode != 0:
    sys.exit(f"error: {' '.join(compose)} config refused deploy/compose.yaml:\n{result.stderr}")
config = yaml.safe_load(result.stdout)
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
for directive in ["DynamicUser=yes", "ProtectSystem=strict", "NoNewPrivileges=yes", "StateDirectory=countersign",
                  "KillSignal=SIGTERM"]:
    check(directive in unit, f"the systemd unit sets {directive}")
binary = root / ".build" / "debug" / "device-broker"
if shutil.which("systemd-analyze") and binary.exists():
    with tempfile.TemporaryDirectory() as directory:
        copy = pathlib.Path(directory) / "countersign-broker.service"
        copy.write_text(unit.replace("/usr/local/bin/device-broker", str(binary)))
        verify = subprocess.run(["systemd-analyze", "verify", "--man=no", str(copy)], capture_output=True, text=True)
        check(verify.returncode == 0 and not verify.stdout.strip() and not verify.stderr.strip(),
              f"systemd-analyze verify is silent about the unit:\n{verify.stdout}{verify.stderr}")
else:
    failures.append("systemd-analyze and a built device-broker are needed to check the unit")

if failures:
    sys.exit("deploy/ checks failed:\n  " + "\n  ".join(failures))
print(f"deploy: compose ({' '.join(compose)} config), nginx, Dockerfile and systemd unit check out")
