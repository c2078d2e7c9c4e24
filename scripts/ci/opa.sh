#!/usr/bin/env bash
# Build (once) and cache the OPA binary used by the test suite.
#
# Builds github.com/open-policy-agent/opa at a pinned version with the local Go
# toolchain, from the Go module proxy only, into
#   ${CAPGATE_CACHE:-$HOME/.cache/capgate}/opa-v<version>/bin/opa
# and prints that path on its last line (stdout). Progress goes to stderr.
# Skips the build when the cached binary already reports the pinned version.
set -euo pipefail

OPA_VERSION="1.22.3"
CACHE_ROOT="${CAPGATE_CACHE:-${HOME}/.cache/capgate}"
OPA_DIR="${CACHE_ROOT}/opa-v${OPA_VERSION}"
OPA_BIN="${OPA_DIR}/bin/opa"

log() { printf 'opa.sh: %s\n' "$*" >&2; }

find_go() {
    if command -v go >/dev/null 2>&1; then
        command -v go
    elif [[ -x /usr/local/go/bin/go ]]; then
        echo /usr/local/go/bin/go
    else
        return 1
    fi
}

have_pinned_opa() {
    [[ -x "${OPA_BIN}" ]] || return 1
    local out
    out="$("${OPA_BIN}" version 2>/dev/null)" || return 1
    grep -Eq "^Version: ${OPA_VERSION//./\\.}\$" <<<"${out}"
}

if have_pinned_opa; then
    log "cached OPA ${OPA_VERSION} at ${OPA_BIN}"
    echo "${OPA_BIN}"
    exit 0
fi

GO_BIN="$(find_go)" || { log "no Go toolchain found (need go on PATH or /usr/local/go/bin/go)"; exit 1; }
mkdir -p "${OPA_DIR}/bin"
rm -f "${OPA_BIN}"   # a stale or broken binary; go install refuses to overwrite a non-object file

log "building OPA v${OPA_VERSION} with $("${GO_BIN}" version) (takes a few minutes)"
build_log="$(mktemp)"
start=${SECONDS}
# GOTOOLCHAIN=local: never fetch another Go; CGO_ENABLED=0: static binary, no C compiler needed.
# GOFLAGS is cleared so a caller's -mod=vendor etc. cannot break a module-mode install.
if ! GOBIN="${OPA_DIR}/bin" GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS='' \
    "${GO_BIN}" install "github.com/open-policy-agent/opa@v${OPA_VERSION}" >"${build_log}" 2>&1; then
    cat "${build_log}" >&2
    rm -f "${build_log}"
    log "go install failed"
    exit 1
fi
rm -f "${build_log}"
log "built in $((SECONDS - start)) s"

if ! have_pinned_opa; then
    log "built binary at ${OPA_BIN} does not report version ${OPA_VERSION}:"
    "${OPA_BIN}" version >&2 || true
    exit 1
fi
echo "${OPA_BIN}"
