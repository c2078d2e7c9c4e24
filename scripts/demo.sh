#!/usr/bin/env bash
# The README's first command: install capgate and run the worked example end to end
# on the embedded defaults (a SQLite registry in your data directory, the in-process
# Rego engine): register a workload, a provider, a plan and load-test evidence,
# recompute the plan, and check the gate.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/bootstrap.sh
capgate() { .venv/bin/capgate "$@"; }
example=examples/chat-assistant

echo "== registry schema"
capgate db upgrade

echo "== register the worked example"
capgate workload submit "$example/workload.yaml"
capgate provider submit "$example/provider.yaml"
capgate plan submit "$example/plan.yaml"
capgate evidence submit "$example/evidence.yaml"

echo "== what the registry holds"
capgate plan list
capgate plan versions chat-assistant-prod
