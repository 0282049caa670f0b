#!/usr/bin/env bash
# Fails if any Swift file is not formatted as .swift-format says.
# Fix with: swift format format -i -r Sources Tests Package.swift
set -euo pipefail
cd "$(dirname "$0")/.."
swift format lint --strict -r Sources Tests Benchmarks Package.swift
echo "format: ok"
