#!/usr/bin/env bash
# The README's first command: install capgate and run the worked example end to end
# on the embedded defaults (a SQLite registry in your data directory, the in-process
# Rego engine): register a workload, a provider and a plan, import the load test's result
# files as evidence, recompute the plan, check the gate and write the decision's report.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/bootstrap.sh
# The embedded engine runs the bundle compiled by OPA's own compiler: build OPA once
# (Go, cached) so the first gate check can compile the bundle.
CAPGATE_OPA_BINARY="$(bash scripts/ci/opa.sh | tail -n 1)"
export CAPGATE_OPA_BINARY
capgate() { .venv/bin/capgate "$@"; }
example=examples/chat-assistant
mkdir -p out

echo "== registry schema"
capgate db upgrade

echo "== register the worked example"
capgate workload submit "$example/workload.yaml"
capgate provider submit "$example/provider.yaml"
capgate plan submit "$example/plan.yaml"

echo "== import the load test: two AIPerf generators run together, one per class"
# The example's result files are synthetic (examples/chat-assistant/make_load_test.py):
# their run time is replaced by six days ago, within the 90-day freshness limit, as a load
# test run for this release would be.
measured_at="$(date -u -d '6 days ago' +%Y-%m-%dT00:00:00Z)"
capgate evidence import --workload chat-assistant --provider llama31-8b-h100-vllm \
    --plan chat-assistant-prod --replicas 1 --measured-at "$measured_at" \
    --class interactive="$example/load-test/interactive.profile_export_aiperf.json" \
    --class batch="$example/load-test/batch.profile_export_aiperf.json" \
    --name chat-assistant-h100-mixed-2026-11

echo "== recompute the plan from its workload (chart: out/chat-assistant-prod.png)"
capgate plan size chat-assistant-prod --chart out/chat-assistant-prod.png

echo "== the policy in force: the installed bundle released by one policy-admin, approved by another"
# Once per registry (a release is immutable): a later run finds it in force already.
if ! capgate policy release show capgate-policies@v1 >/dev/null 2>&1; then
    CAPGATE_PRINCIPAL=alice capgate policy release submit capgate-policies \
        --notes "the policies shipped with capgate"
    CAPGATE_PRINCIPAL=bob capgate policy release approve capgate-policies@v1 \
        --comment "reviewed for the worked example"
fi

echo "== the release gate (exit 0 allow, 1 deny, 2 error), against the manifests that ship"
capgate gate check chat-assistant-prod --manifests "$example/k8s" --format junit --output out/gate.xml
capgate gate check chat-assistant-prod --manifests "$example/k8s"

echo "== the report: one self-contained HTML file (verdict, plan against recomputation, charts, evidence, audit)"
capgate report chat-assistant-prod --output out/chat-assistant-prod.html

echo "== production signal: observe a local Prometheus holding the example's traffic"
if { command -v prometheus && command -v promtool; } >/dev/null 2>&1 || [[ ${EUID} -eq 0 ]]; then
    bash scripts/demo_observe.sh
else
    echo "skipped: needs Prometheus and promtool (as root, scripts/ci/prometheus.sh installs" \
        "Debian's); then run scripts/demo_observe.sh"
fi
