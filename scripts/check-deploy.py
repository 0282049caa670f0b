#!/usr/bin/env python3
"""Checks deploy/ without a container engine: the compose file against the
Compose specification's JSON schema (read from docker-compose's Python
package, named by COUNTERSIGN_COMPOSE_WHEEL), the properties the topology
depends on, the nginx configurations (through `nginx -t` where nginx is
installed; nginx-tls.conf as docs/operations.md shows it), the Dockerfile
(its build is scripts/package.sh's; its runtime packages are those of the
libraries a package.sh build in .build needs; non-root; a health check),
the systemd unit through `systemd-analyze verify` against the built broker,
and the Grafana dashboard: each metric and label its PromQL names against
the /metrics of that broker, started here, its data source a variable, and
the monitoring profile's mounts.

    check-deploy.py [--with-package-build]

With --with-package-build, a missing package.sh build is a failure rather
than a check left out."""
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
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
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

# nginx, in front of the compose file's brokers (nginx.conf) and with a
# certificate in front of one broker on the same machine (nginx-tls.conf):
# the read timeout exceeds the longest long-poll hold (30 s); the client's
# address alone in X-Forwarded-For, as operations.md shows it; API_KEY_ID
# and API_SECRET_KEY passed on, not dropped for their underscores.
nginx = (deploy / "nginx.conf").read_text()
nginx_tls = (deploy / "nginx-tls.conf").read_text()
for file, text in [("nginx.conf", nginx), ("nginx-tls.conf", nginx_tls)]:
    timeout = re.search(r"proxy_read_timeout\s+(\d+)s;", text)
    check(timeout and int(timeout.group(1)) > 30, f"{file}: proxy_read_timeout exceeds the 30 s long-poll hold")
    check("proxy_set_header X-Forwarded-For $remote_addr;" in text, f"{file} forwards the client address alone")
    check(re.search(r"^underscores_in_headers on;$", text, re.MULTILINE), f"{file} passes API_KEY_ID on")
    check(re.search(r"^\s*client_max_body_size 64k;$", text, re.MULTILINE), f"{file} takes the broker's 64 KB bodies")
for name in brokers:
    check(f"server {name}:8080" in nginx, f"nginx balances onto {name}")
# nginx-tls.conf: https with HTTP/2, plain http redirected, the broker on the
# loopback address and port broker.conf gives it, the flags its header names
# those of `serve`, and docs/operations.md shows the same configuration.
settings = dict(re.findall(r"^([a-z-]+) = (\S+)$", (deploy / "broker.conf").read_text(), re.MULTILINE))
check(f"server {settings.get('host')}:{settings.get('port')};" in nginx_tls,
      "nginx-tls.conf proxies to the broker where broker.conf has it listen")
check("proxy_buffering off;" in nginx_tls, "nginx-tls.conf passes long-poll answers on unbuffered")
check(re.search(r"^\s*listen 443 ssl http2;$", nginx_tls, re.MULTILINE), "nginx-tls.conf serves https with HTTP/2")
check(re.search(r"^\s*listen 80;$", nginx_tls, re.MULTILINE)
      and re.search(r"^\s*return 301 https://\S+\$request_uri;$", nginx_tls, re.MULTILINE),
      "nginx-tls.conf redirects plain http to https")
command = re.search(r"^#\s+(device-broker serve .*)$", nginx_tls, re.MULTILINE)
check(command and "--trusted-proxy 127.0.0.1" in command.group(1) and "--public-url https://" in command.group(1),
      "nginx-tls.conf names the broker's --public-url and --trusted-proxy")
built_broker = root / ".build" / "debug" / "device-broker"
if command and built_broker.exists():
    serve_help = subprocess.run([str(built_broker), "serve", "--help"], capture_output=True, text=True).stdout
    for flag in re.findall(r"--[a-z-]+", command.group(1)):
        check(re.search(rf"{flag}(?![\w-])", serve_help), f"nginx-tls.conf: `device-broker serve` has no {flag}")
nginx_tls_body = re.sub(r"\A(?:#.*\n|\n)*", "", nginx_tls)
check("```nginx\n" + nginx_tls_body + "```\n" in (root / "docs" / "operations.md").read_text(),
      "docs/operations.md shows deploy/nginx-tls.conf (after its header) as it is")


def nginx_syntax(nginx_binary, text, directory):
    """nginx -t's complaint about `text` as a conf.d file, or None: the
    certificates a throwaway pair, the host names of the compose file's
    services the loopback address, every path the test writes in `directory`."""
    directory = pathlib.Path(directory)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-subj", "/CN=login.example.com", "-days", "1", "-keyout", str(directory / "key.pem"),
                    "-out", str(directory / "cert.pem")], capture_output=True, check=True)
    text = re.sub(r"ssl_certificate (\S+);", f"ssl_certificate {directory / 'cert.pem'};", text)
    text = re.sub(r"ssl_certificate_key (\S+);", f"ssl_certificate_key {directory / 'key.pem'};", text)
    for name in services:
        text = text.replace(f"server {name}:", "server 127.0.0.1:")
    (directory / "site.conf").write_text(text)
    temporary = "".join(f"    {kind}_temp_path {directory / kind};\n"
                        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    (directory / "nginx.conf").write_text(
        f"pid {directory / 'nginx.pid'};\nerror_log {directory / 'error.log'};\nevents {{}}\n"
        f"http {{\n{temporary}    access_log off;\n    include {directory / 'site.conf'};\n}}\n")
    test = subprocess.run([nginx_binary, "-t", "-q", "-p", str(directory), "-c", str(directory / "nginx.conf")],
                          capture_output=True, text=True)
    return None if test.returncode == 0 else (test.stdout + test.stderr).strip()


nginx_binary = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin")
if nginx_binary and shutil.which("openssl"):
    for file, text in [("nginx.conf", nginx), ("nginx-tls.conf", nginx_tls)]:
        with tempfile.TemporaryDirectory() as directory:
            complaint = nginx_syntax(nginx_binary, text, directory)
            check(complaint is None, f"nginx -t refuses {file}:\n{complaint}")
    checked_nginx = "nginx (with nginx -t)"
else:
    checked_nginx = "nginx (not with nginx -t: no nginx or openssl here)"


# Dockerfile: the image's binary is the one scripts/package.sh builds for the
# tarball and the .deb; the runtime stage installs the packages of exactly
# the libraries that binary needs, runs as a non-root user, has a health check.
def instructions(text):
    """(keyword, arguments) of each instruction: continuation lines joined,
    comment lines dropped (also between continued lines, as Docker does)."""
    result, pending = [], ""
    for line in text.splitlines():
        if line.lstrip().startswith("#") or (not line.strip() and not pending):
            continue
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        keyword, _, arguments = pending.strip().partition(" ")
        result.append((keyword.upper(), " ".join(arguments.split())))
        pending = ""
    return result


def apt_installs(arguments):
    """The packages of each `apt-get install` in a RUN's shell command."""
    packages = []
    for command in re.split(r"&&|;|\|\|", arguments):
        words = command.split()
        if words[:1] == ["apt-get"] and "install" in words:
            packages += [word for word in words[words.index("install") + 1:] if not word.startswith("-")]
    return packages


def needed_packages(binary):
    """The Debian packages that hold the shared libraries `binary` names
    (NEEDED), as dpkg knows them on this machine, by soname."""
    dynamic = subprocess.run(["readelf", "-d", str(binary)], capture_output=True, text=True, check=True).stdout
    cache = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=True).stdout
    paths = dict(re.findall(r"^\s*(\S+) \(libc6,x86-64[^)]*\) => (\S+)$", cache, re.MULTILINE))
    packages = {}
    for soname in re.findall(r"\(NEEDED\)\s+Shared library: \[(.+)\]", dynamic):
        path = paths.get(soname, "")
        # Merged /usr: dpkg knows a library under one of the two names.
        for name in (path, "/usr" + path, path.removeprefix("/usr")):
            owner = subprocess.run(["dpkg", "-S", name], capture_output=True, text=True)
            if owner.returncode == 0:
                packages[soname] = owner.stdout.split(":")[0]
                break
        else:
            packages[soname] = None
    return packages


stages = []
for keyword, arguments in instructions((deploy / "Dockerfile").read_text()):
    if keyword == "FROM":
        words = arguments.split()
        base = next(word for word in words if not word.startswith("--"))
        alias = words[words.index("AS") + 1] if "AS" in words else None
        stages.append({"base": base, "alias": alias, "instructions": []})
    elif stages:
        stages[-1]["instructions"].append((keyword, arguments))
check(len(stages) >= 2, "a multi-stage build")
runtime = stages[-1]
check(runtime["base"] == "debian:bookworm-slim", f"a slim Debian runtime image, not {runtime['base']}")


def runs(stage):
    return [arguments for keyword, arguments in stage["instructions"] if keyword == "RUN"]


# The build: scripts/package.sh in release mode, whose flags are the
# packages' own; no `swift build` line of the Dockerfile's.
package_script = (root / "scripts" / "package.sh").read_text()
for flag in ["--static-swift-stdlib", "--disable-local-rpath"]:
    check(flag in package_script, f"scripts/package.sh builds with {flag}")
builders = [(index, run) for index, stage in enumerate(stages[:-1]) for run in runs(stage)
            if "scripts/package.sh" in run]
check(len(builders) == 1, "one build stage RUN runs scripts/package.sh")
check(not any("swift build" in run for stage in stages for run in runs(stage)),
      "no `swift build` in the Dockerfile: the binary is package.sh's")
copies = [arguments.split() for keyword, arguments in runtime["instructions"] if keyword == "COPY"]
copied = [words for words in copies if any(word.startswith("--from=") for word in words)]
check(len(copied) == 1, "the runtime stage copies one file from the build")
binary_path = copied[0][-1] if copied else None
if builders and copied:
    index, run = builders[0]
    configuration = re.search(r"scripts/package\.sh\b[^&;]*--configuration[ =](\S+)", run)
    check(configuration is None or configuration.group(1) == "release",
          "package.sh builds the image's binary in release mode, as the released packages")
    out = re.search(r"scripts/package\.sh\b[^&;]*--out[ =](\S+)", run)
    extract = re.search(r"tar\s[^&;]*?(\S*/countersign-\S*-linux-\S*\.tar\.gz)[^&;]*?-C\s+(\S+)", run)
    check(out is not None and extract is not None and extract.group(1).startswith(out.group(1).rstrip("/") + "/"),
          "the build takes device-broker out of the tarball package.sh wrote (--out)")
    source = next(word for word in copied[0] if word.startswith("--from=")).split("=", 1)[1]
    check(source in (stages[index]["alias"], str(index)), "the runtime copies from the stage that ran package.sh")
    check(extract is not None and copied[0][-2] == extract.group(2).rstrip("/") + "/device-broker",
          "the runtime copies the device-broker extracted from package.sh's tarball")

# The runtime's packages: the libraries of the built binary's NEEDED
# entries, nothing else but the trust roots (for TLS to push services,
# webhooks, SMTP and PostgreSQL). Checked against the build package.sh made
# here, if there is one; the image is Debian bookworm, as this machine.
data_packages = {"ca-certificates"}
installed = set(package for run in runs(runtime) for package in apt_installs(run))
check(data_packages <= installed, "the runtime installs ca-certificates")
static_builds = [root / ".build" / f"package-{mode}" / mode / "device-broker" for mode in ("release", "debug")]
static_build = next((path for path in static_builds if path.exists()), None)
if static_build and shutil.which("dpkg") and shutil.which("readelf"):
    needed = needed_packages(static_build)
    check(all(needed.values()), f"dpkg knows the package of each library device-broker needs: {needed}")
    libraries = set(filter(None, needed.values()))
    check(installed - data_packages == libraries,
          f"the runtime's apt packages are exactly the libraries' {sorted(libraries)} and ca-certificates: "
          f"missing {sorted(libraries - installed)}, not needed {sorted(installed - data_packages - libraries)}")
    checked_libraries = f", its libraries against {static_build.relative_to(root)}"
elif "--with-package-build" in sys.argv[1:]:
    failures.append("no package.sh build in .build (nor dpkg and readelf) to check the runtime's libraries against")
else:
    checked_libraries = " (no package.sh build in .build to check its libraries against)"

user = [arguments for keyword, arguments in runtime["instructions"] if keyword == "USER"]
check(user and user[-1].split(":")[0] not in ("root", "0"), "the runtime stage runs as a non-root user")
healthchecks = [arguments for keyword, arguments in runtime["instructions"] if keyword == "HEALTHCHECK"]
command = re.search(r"\bCMD\s+(.*)$", healthchecks[-1]) if healthchecks else None
if command and command.group(1).startswith("["):
    argv = json.loads(command.group(1))
else:
    argv = command.group(1).split() if command else []
check(argv[:2] == [binary_path, "healthcheck"],
      f"the runtime stage's HEALTHCHECK runs `{binary_path} healthcheck`, not {argv}")
for name in brokers:
    test = services[name].get("healthcheck", {}).get("test", [])
    check(test[:3] == ["CMD", binary_path, "healthcheck"], f"{name} checks its health with `device-broker healthcheck`")

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
        # It reads the machine's other units too, and warns about theirs
        # (Debian's freeradius.service, installed for the RADIUS tests, uses
        # a deprecated setting): only what it says of this one counts.
        said = [line for line in (verify.stdout + verify.stderr).splitlines()
                if line.strip() and not re.match(r"(/usr)?/lib/systemd/system/|/etc/systemd/system/", line)]
        check(verify.returncode == 0 and not said,
              "systemd-analyze verify is silent about the unit:\n" + "\n".join(said))
else:
    failures.append("systemd-analyze and a built device-broker are needed to check the unit")


# Grafana: the dashboard loads as is, and every metric and label its PromQL
# names is one the broker exports: a broker of this build is started and its
# /metrics read. Prometheus adds `instance` and `job` to every series.
def exported_metrics(binary):
    """{series name: label names} of a fresh broker's /metrics, read twice
    so that the request counters the first read made are there."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with tempfile.TemporaryDirectory() as directory:
        with open(pathlib.Path(directory) / "broker.log", "w") as log:
            broker = subprocess.Popen([str(binary), "serve", "--port", str(port), "--log-level", "warning",
                                       "--data-dir", str(pathlib.Path(directory) / "data")], stdout=log, stderr=log)
        texts, deadline = [], time.monotonic() + 60
        try:
            while len(texts) < 2 and time.monotonic() < deadline and broker.poll() is None:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
                        texts.append(response.read().decode())
                except OSError:
                    time.sleep(0.1)
        finally:
            broker.send_signal(signal.SIGTERM)
            try:
                broker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                broker.kill()
    series = {}
    for line in (texts[-1] if texts else "").splitlines():
        found = re.match(r"([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s", line)
        if found and not line.startswith("#"):
            series.setdefault(found.group(1), {"instance", "job"}).update(re.findall(r'(\w+)="', found.group(2) or ""))
    return series


def promql_selectors(expression):
    """([(metric, label names matched)], label names grouped by) of a PromQL
    expression: strings and ranges left out, grouping clauses read apart."""
    text = re.sub(r"\[[^\]]*\]", "", re.sub(r'"(?:[^"\\]|\\.)*"', '""', expression))
    grouping = set()
    for labels in re.findall(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)", text):
        grouping.update(filter(None, (label.strip() for label in labels.split(","))))
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    selectors = []
    for name, matchers, call in re.findall(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*(\{[^}]*\})?(\s*\()?", text):
        if not call and name not in ("and", "or", "unless", "bool", "offset", "inf", "nan"):
            selectors.append((name, set(re.findall(r"(\w+)\s*(?:=~|!~|!=|=)", matchers))))
    return selectors, grouping


dashboard_path = deploy / "grafana" / "countersign.json"
dashboard = json.loads(dashboard_path.read_text())
check(isinstance(dashboard.get("uid"), str) and 0 < len(dashboard["uid"]) <= 40, "the dashboard has a fixed uid")
check(dashboard.get("schemaVersion", 0) >= 36, "the dashboard's schemaVersion is Grafana 10's or later")
# Provisioning does not fill in an import's ${DS_...} inputs: the data
# source is a variable the dashboard defines itself.
check("__inputs" not in dashboard and "${DS_" not in dashboard_path.read_text(),
      "the dashboard asks for no import-time inputs")
variables = {variable["name"]: variable for variable in dashboard.get("templating", {}).get("list", [])}
sources = [name for name, variable in variables.items()
           if variable.get("type") == "datasource" and variable.get("query") == "prometheus"]
check(len(sources) == 1, "the dashboard has one Prometheus data source variable")
source = {"type": "prometheus", "uid": "${" + (sources[0] if sources else "datasource") + "}"}
check("instance" in variables, "the dashboard has an instance variable")
panels = [panel for panel in dashboard.get("panels", []) if panel.get("type") != "row"]
check(len({panel.get("id") for panel in dashboard.get("panels", [])}) == len(dashboard.get("panels", [])),
      "the dashboard's panel ids are unique")
queries = []  # (where, PromQL, whether it must filter on $instance)
for panel in panels:
    check(panel.get("datasource") == source, f"panel {panel.get('title')!r} queries the data source variable")
    check(panel.get("targets"), f"panel {panel.get('title')!r} has a query")
    for target in panel.get("targets", []):
        check(target.get("datasource") == source, f"panel {panel.get('title')!r} queries the data source variable")
        queries.append((f"panel {panel.get('title')!r}", target.get("expr", ""), True))
for name, variable in variables.items():
    if variable.get("type") == "query":
        check(variable.get("datasource") == source, f"variable {name} queries the data source variable")
        query = variable.get("query")
        query = query.get("query", "") if isinstance(query, dict) else query or ""
        values = re.fullmatch(r"label_values\((?:(.+),)?\s*(\w+)\s*\)", query.strip())
        check(values and values.group(1), f"variable {name} is label_values(metric, label), not {query!r}")
        if values and values.group(1):
            queries.append((f"variable {name}", f"group by ({values.group(2)}) ({values.group(1)})", False))
if binary.exists():
    exported = exported_metrics(binary)
    check(exported, "a broker of the debug build started and showed its /metrics")
    for where, expression, filtered in queries if exported else []:
        selectors, grouping = promql_selectors(expression)
        check(selectors, f"{where}: {expression!r} reads a metric")
        for metric, matched in selectors:
            check(metric in exported, f"{where}: {metric} is not on the broker's /metrics")
            unknown = sorted(matched - exported.get(metric, matched))
            check(not unknown, f"{where}: {metric} has no label {unknown}")
        known = set().union(*(exported.get(metric, set()) for metric, _ in selectors))
        check(grouping <= known, f"{where}: groups by {sorted(grouping - known)}, labels of none of its metrics")
        check(not filtered or expression.count('instance=~"$instance"') == len(selectors),
              f"{where}: each selector of {expression!r} filters on instance=~\"$instance\"")
else:
    failures.append("a built device-broker (.build/debug) is needed to check the dashboard's metrics")

# The monitoring profile: off by default; Prometheus scrapes each broker;
# Grafana's mounts exist and provision that data source and this dashboard.
monitoring = {name: services.get(name, {}) for name in ("prometheus", "grafana")}
for name, service in monitoring.items():
    check(service.get("profiles") == ["monitoring"], f"{name} runs only with --profile monitoring")
check(all(not service.get("profiles") for name, service in services.items() if name not in monitoring),
      "every other service runs without a profile")


def mounts(service):
    """{container path: host path} of a service's bind mounts."""
    binds = [volume.split(":")[:2] for volume in service.get("volumes", []) if volume.startswith(".")]
    return {target: (deploy / host).resolve() for host, target in binds}


def provided(service, directory):
    """The host files a service sees in (or as) a container directory."""
    files = []
    for target, host in mounts(service).items():
        if target == directory or target.startswith(directory.rstrip("/") + "/"):
            files += sorted(host.iterdir()) if host.is_dir() else [host]
        elif directory.startswith(target + "/") and (host / directory[len(target) + 1:]).is_dir():
            files += sorted((host / directory[len(target) + 1:]).iterdir())
    return files


for name, service in monitoring.items():
    for target, host in mounts(service).items():
        check(host.exists(), f"{name} mounts {host.relative_to(root)}, which exists")
scrape = [yaml.safe_load(path.read_text()) for path in provided(monitoring["prometheus"], "/etc/prometheus")
          if path.name == "prometheus.yml"]
targets = {target for config in scrape for job in config.get("scrape_configs", [])
           for static in job.get("static_configs", []) for target in static.get("targets", [])}
check(targets == {f"{name}:8080" for name in brokers}, f"Prometheus scrapes each broker, not {sorted(targets)}")
provisioned = [yaml.safe_load(path.read_text()) for kind in ("datasources", "dashboards")
               for path in provided(monitoring["grafana"], f"/etc/grafana/provisioning/{kind}")
               if path.suffix in (".yaml", ".yml")]
data_sources = [item for config in provisioned for item in config.get("datasources", [])]
check([item.get("url") for item in data_sources if item.get("type") == "prometheus"] == ["http://prometheus:9090"],
      "Grafana provisions the prometheus service as its Prometheus data source")
dashboards = [path.resolve() for config in provisioned for provider in config.get("providers", [])
              for path in provided(monitoring["grafana"], provider.get("options", {}).get("path", "/nonexistent"))]
check(dashboard_path.resolve() in dashboards, "Grafana provisions deploy/grafana/countersign.json")

if failures:
    sys.exit("deploy/ checks failed:\n  " + "\n  ".join(failures))
print("deploy: compose (against the Compose specification), " + checked_nginx + ", the Dockerfile" + checked_libraries
      + ", the systemd unit and the Grafana dashboard (against a started broker's /metrics) check out")
