#!/usr/bin/env bash
# Create (or reuse) the project's virtual environment and install capgate into it.
# Usage: scripts/bootstrap.sh [--dev]
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if [[ ! -x .venv/bin/python ]]; then
    "$PYTHON" -m venv .venv
fi
extra=""
[[ "${1:-}" == "--dev" ]] && extra="[dev]"
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".${extra}"
