#!/usr/bin/env bash
# Runs every check CI runs: formatting, the API contract, then the whole
# Swift suite (unit, store conformance, router, and real processes end to end).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/check-format.sh

# The end-to-end suite verifies event tokens with a Python JOSE library too,
# and the contract check validates proto/openapi.yaml as OpenAPI 3.1.
# authlib runs the OAuth flow as a third-party client would, and aiosmtpd is
# the real mail server the SMTP sender is tested against.
if ! python3 -c "import joserfc, openapi_spec_validator, yaml, authlib, requests, aiosmtpd, cryptography" 2>/dev/null; then
    python3 -m pip install --quiet joserfc openapi-spec-validator pyyaml authlib requests aiosmtpd cryptography
fi
python3 scripts/check-openapi.py

# The hosted page is tested in a real headless browser, driven over WebDriver.
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
    else
        echo "error: the browser tests need Debian's chromium and chromium-driver packages" >&2
        exit 1
    fi
fi

swift build --build-tests
swift test
