#!/usr/bin/env bash
# Provide the headless Chromium and its chromedriver the browser tests drive.
#
# Idempotent. When chromium or chromedriver is missing, or the machine has no font at
# all (chromium depends on none: pages and screenshots would show boxes instead of
# letters), installs Debian's `chromium`, `chromium-driver` and `fonts-dejavu-core`
# (needs root; --no-install-recommends, so no chromium-sandbox: the tests run the
# browser with --no-sandbox). Checks that both report the same major version
# (chromedriver refuses another browser version); fast (~0.1 s) when installed.
#
# Prints the chromedriver's path on its last line (stdout), symlinks resolved
# (Debian: /usr/lib/chromium/chromedriver). The browser is the `chromium` executable
# beside it (/usr/lib/chromium/chromium: the real binary, not the /usr/bin/chromium
# wrapper script, whose /etc/chromium.d flags such as --enable-remote-extensions the
# tests do not want); where there is none beside it, `chromium` on PATH.
# tests/support/browser.py finds it the same way. Progress goes to stderr.
set -euo pipefail

APT_LOCK_TIMEOUT=300   # seconds to wait for another apt/dpkg run to finish

log() { printf 'chromium.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# The resolved chromedriver path, or nothing.
find_driver() {
    local driver
    driver="$(command -v chromedriver 2>/dev/null)" || return 1
    driver="$(readlink -f "${driver}")"
    [[ -x "${driver}" ]] || return 1
    echo "${driver}"
}

# The browser for a chromedriver path: beside it, else on PATH.
find_browser() {  # $1 chromedriver path
    local beside browser
    beside="$(dirname "$1")/chromium"
    if [[ -x "${beside}" ]]; then
        echo "${beside}"
        return 0
    fi
    browser="$(command -v chromium 2>/dev/null)" || return 1
    readlink -f "${browser}"
}

# Any TrueType/OpenType font fontconfig could find.
have_fonts() {
    local dir
    for dir in /usr/share/fonts /usr/local/share/fonts; do
        [[ -d "${dir}" ]] && [[ -n "$(find "${dir}" -type f \( -name '*.ttf' -o -name '*.otf' \) -print -quit)" ]] \
            && return 0
    done
    return 1
}

# "156" from "Chromium 156.0.8078.114 built on Debian ..." / "ChromeDriver 156.0...".
major_version() {  # $1 version line
    sed -E -n 's/^[^0-9]*([0-9]+)\..*/\1/p' <<<"$1"
}

if ! DRIVER="$(find_driver)" || ! BROWSER="$(find_browser "${DRIVER}")" || ! have_fonts; then
    [[ ${EUID} -eq 0 ]] || die "chromium/chromedriver/fonts absent and not root: cannot install Debian's chromium"
    log "chromium, chromedriver or fonts absent; installing Debian's chromium, chromium-driver and fonts-dejavu-core"
    apt_log="$(mktemp)"
    start=${SECONDS}
    export DEBIAN_FRONTEND=noninteractive
    if ! { apt-get update -q -o DPkg::Lock::Timeout="${APT_LOCK_TIMEOUT}" \
            && apt-get install -y -q --no-install-recommends \
                -o DPkg::Lock::Timeout="${APT_LOCK_TIMEOUT}" chromium chromium-driver fonts-dejavu-core; } \
        >"${apt_log}" 2>&1; then
        cat "${apt_log}" >&2
        rm -f "${apt_log}"
        die "apt-get install chromium chromium-driver fonts-dejavu-core failed"
    fi
    rm -f "${apt_log}"
    log "installed in $((SECONDS - start)) s"
    DRIVER="$(find_driver)" || die "chromium-driver installed but chromedriver not found on PATH"
    BROWSER="$(find_browser "${DRIVER}")" || die "chromium installed but not found beside ${DRIVER} nor on PATH"
    have_fonts || die "fonts-dejavu-core installed but no font under /usr/share/fonts"
fi

driver_version="$("${DRIVER}" --version 2>/dev/null | head -n 1)" || die "${DRIVER} --version failed"
browser_version="$("${BROWSER}" --version 2>/dev/null | head -n 1 | sed -E "s/[[:space:]]+$//")" || die "${BROWSER} --version failed"
driver_major="$(major_version "${driver_version}")"
browser_major="$(major_version "${browser_version}")"
[[ -n "${driver_major}" && "${driver_major}" == "${browser_major}" ]] \
    || die "version mismatch: ${driver_version} vs ${browser_version} (upgrade both: apt-get install chromium chromium-driver)"

log "using ${browser_version} at ${BROWSER}"
log "using ${driver_version%% (*} at ${DRIVER}"
echo "${DRIVER}"
