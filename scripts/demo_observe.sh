#!/usr/bin/env bash
# The production-signal part of the worked example: a local Prometheus filled with the
# example's traffic (tests/support/prometheus_demo.py), observed against the plan twice:
# as profiled (no drift, exit 0) and with interactive prompts 30 % longer (the drift named,
# exit 1). Nothing is submitted, so the demo's registry is left as it was.
# Needs Prometheus and promtool (scripts/ci/prometheus.sh installs Debian's, as root).
set -euo pipefail
cd "$(dirname "$0")/.."
capgate() { .venv/bin/capgate "$@"; }

CAPGATE_PROMETHEUS_BINARY="$(bash scripts/ci/prometheus.sh | tail -n 1)"
export CAPGATE_PROMETHEUS_BINARY
answers="$(mktemp)"
.venv/bin/python -m tests.support.prometheus_demo examples/chat-assistant/workload.yaml \
    >"$answers" &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true; rm -f "$answers"' EXIT
for _ in $(seq 1 120); do
    [[ $(wc -l <"$answers") -ge 2 ]] && break
    kill -0 "$server" 2>/dev/null || { echo "the demo Prometheus did not start" >&2; exit 1; }
    sleep 0.5
done
url="$(sed -n 1p "$answers")"
end="$(sed -n 2p "$answers")"

observe() {
    capgate observe --prometheus "$url" --plan chat-assistant-prod --window 2h --end "$end" \
        --selector "namespace=\"$1\"" --class-label traffic_class
}
echo "== production as profiled: no drift (exit 0)"
observe assistant
echo "== interactive prompts 30 % longer: the drift is named (exit 1)"
if observe assistant-grown; then
    echo "expected a drift" >&2
    exit 1
fi
