#!/usr/bin/env bash
# Create (or reuse) the project's virtual environment and install capgate into it.
# Usage: scripts/bootstrap.sh [--dev]
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if [[ ! -x .venv/bin/python ]]; then
    "$PYTHON" -m venv .venv
fi
# The server extra is what runs the registry here (the bare package is the thin client).
extra="[server]"
[[ "${1:-}" == "--dev" ]] && extra="[server,dev]"
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".${extra}"
# Byte-compile capgate's own modules, as pip does a wheel's at install: an editable install
# run under PYTHONDONTWRITEBYTECODE (set on some CI images) would otherwise compile every
# module from source on every command (a local `gate check` took 1.0 s instead of 0.8 s).
.venv/bin/python -m compileall -q -j 0 cli registry policies migrations >/dev/null
