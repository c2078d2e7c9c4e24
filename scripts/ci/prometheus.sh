#!/usr/bin/env bash
# Provide the Prometheus server and promtool the observe tests backfill and query.
#
# Idempotent. When `prometheus` or `promtool` is missing, installs Debian's
# `prometheus` package (needs root). The package's own service (port 9090) is not
# wanted: the tests start their own servers on free loopback ports with their own
# TSDB, so when the package started it, it is stopped and disabled again.
# Prints the prometheus binary's path on its last line (stdout); promtool is beside
# it. Progress goes to stderr.
set -euo pipefail

log() { printf 'prometheus.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Both binaries, from the same directory; prints the prometheus path.
find_binaries() {
    local prometheus
    prometheus="$(command -v prometheus 2>/dev/null)" || return 1
    prometheus="$(readlink -f "${prometheus}")"
    [[ -x "$(dirname "${prometheus}")/promtool" ]] || return 1
    echo "${prometheus}"
}

# The Debian service, started by the package's maintainer scripts where that is
# allowed (a booted systemd, or sysvinit without a policy-rc.d that forbids it).
stop_package_service() {
    if [[ -d /run/systemd/system ]] && command -v systemctl >/dev/null 2>&1; then
        if systemctl is-enabled --quiet prometheus.service 2>/dev/null \
            || systemctl is-active --quiet prometheus.service 2>/dev/null; then
            log "stopping and disabling the package's prometheus.service (port 9090)"
            systemctl disable --now prometheus.service >&2 || log "could not disable prometheus.service"
        fi
    elif [[ -x /etc/init.d/prometheus ]]; then
        /etc/init.d/prometheus stop >/dev/null 2>&1 || true
        update-rc.d prometheus disable >/dev/null 2>&1 || true
    fi
}

if ! PROMETHEUS_BIN="$(find_binaries)"; then
    [[ ${EUID} -eq 0 ]] || die "prometheus/promtool absent and not root: cannot install Debian's prometheus"
    log "prometheus/promtool absent; installing Debian's prometheus"
    apt_log="$(mktemp)"
    start=${SECONDS}
    export DEBIAN_FRONTEND=noninteractive
    if ! { apt-get update -q && apt-get install -y -q --no-install-recommends prometheus; } \
        >"${apt_log}" 2>&1; then
        cat "${apt_log}" >&2
        rm -f "${apt_log}"
        die "apt-get install prometheus failed"
    fi
    rm -f "${apt_log}"
    log "installed in $((SECONDS - start)) s"
    stop_package_service
    PROMETHEUS_BIN="$(find_binaries)" || die "prometheus installed but prometheus/promtool not found on PATH"
fi

version="$("${PROMETHEUS_BIN}" --version 2>&1 | head -n 1)" || die "${PROMETHEUS_BIN} --version failed"
log "using ${version} at ${PROMETHEUS_BIN}"
echo "${PROMETHEUS_BIN}"
