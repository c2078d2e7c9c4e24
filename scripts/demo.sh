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
mkdir -p out

echo "== registry schema"
capgate db upgrade

echo "== register the worked example"
capgate workload submit "$example/workload.yaml"
capgate provider submit "$example/provider.yaml"
capgate plan submit "$example/plan.yaml"
# The example's load test is illustrative: date it six days ago, within the 90-day
# freshness limit, as a load test run for this release would be.
measured_at="$(date -u -d '6 days ago' +%Y-%m-%dT00:00:00Z)"
sed "s/^measured_at: .*/measured_at: \"$measured_at\"/" "$example/evidence.yaml" > out/evidence.yaml
capgate evidence submit out/evidence.yaml

echo "== recompute the plan from its workload (chart: out/chat-assistant-prod.png)"
capgate plan size chat-assistant-prod --chart out/chat-assistant-prod.png

echo "== the release gate (exit 0 allow, 1 deny, 2 error)"
capgate gate check chat-assistant-prod --format junit --output out/gate.xml
capgate gate check chat-assistant-prod
