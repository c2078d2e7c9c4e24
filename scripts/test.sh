#!/usr/bin/env bash
# The README's test command: installs everything (virtual environment, PostgreSQL,
# OPA, Prometheus, Chromium), runs the linters and type checks, then the whole test
# suite on SQLite and on a real PostgreSQL server.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

# The whole command's wall time is printed at the end, success or not: the suite's budget
# is 15 minutes on 2 cores (docs/development.md).
started=$SECONDS
report_time() {
    local took=$((SECONDS - started))
    printf '\n== test.sh: wall time %dm %02ds (exit %s)\n' $((took / 60)) $((took % 60)) "$1"
}
trap 'report_time $?' EXIT

step "python environment"
bash scripts/bootstrap.sh --dev

step "postgresql"
CAPGATE_TEST_POSTGRES_URL="$(bash scripts/ci/postgres.sh | tail -n 1)"
export CAPGATE_TEST_POSTGRES_URL

step "opa"
CAPGATE_OPA_BINARY="$(bash scripts/ci/opa.sh | tail -n 1)"
export CAPGATE_OPA_BINARY

# The embedded engine evaluates the bundle compiled by this OPA: compile it once (cached),
# so that no test's first gate check also prints the compile's progress line.
CAPGATE_OPA_BINARY="$CAPGATE_OPA_BINARY" .venv/bin/python -c \
    'from registry.policy.embedded import EmbeddedEngine; EmbeddedEngine()'

step "prometheus"
CAPGATE_PROMETHEUS_BINARY="$(bash scripts/ci/prometheus.sh | tail -n 1)"
export CAPGATE_PROMETHEUS_BINARY

step "chromium"
CAPGATE_CHROMEDRIVER="$(bash scripts/ci/chromium.sh | tail -n 1)"
export CAPGATE_CHROMEDRIVER
# Screenshots the page tests take, kept for review (CI can keep out/ as an artifact).
export CAPGATE_SCREENSHOTS="${CAPGATE_SCREENSHOTS:-out/screenshots}"

step "ruff"
.venv/bin/ruff check registry cli migrations tests benchmarks
.venv/bin/ruff format --check registry cli tests benchmarks

step "mypy"
.venv/bin/mypy registry cli

step "import layers and cycles (lint-imports; docs/architecture.md)"
.venv/bin/lint-imports

if compgen -G "policies/*/*.rego" >/dev/null; then
    step "rego: opa check --strict, opa fmt, opa test"
    "$CAPGATE_OPA_BINARY" check --strict policies
    unformatted="$("$CAPGATE_OPA_BINARY" fmt --list policies)"
    if [[ -n "$unformatted" ]]; then
        echo "opa fmt would change: $unformatted" >&2
        exit 1
    fi
    "$CAPGATE_OPA_BINARY" test policies --coverage --format=json > .cache-opa-coverage.json
    .venv/bin/python scripts/ci/rego_coverage.py .cache-opa-coverage.json
fi

step "pytest"
# Two workers, one test file each at a time (module fixtures stay per file): the suite
# is CPU-bound and CI has two cores. Each worker gets its own PostgreSQL database and
# OPA server (tests/conftest.py). Files start in the order tests/conftest.py gives them
# (the long ones first, so that no long file runs alone at the end): xdist's own reorder
# (most tests first) is turned off.
# The 20 slowest tests are listed after the run, so a test that grows is seen.
.venv/bin/pytest -n "${CAPGATE_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder \
    --durations=20 "$@"
