#!/usr/bin/env bash
# Provide a running PostgreSQL (15+) cluster with the test role and database.
#
# Idempotent; run as root. Installs Debian's `postgresql` package when no server
# binaries are present, creates the `main` cluster if missing, starts it as the
# `postgres` user (pg_ctlcluster), waits for pg_isready, then ensures:
#   role      capgate / password capgate, LOGIN CREATEDB
#   database  capgate_test, owned by capgate
# Prints the SQLAlchemy URL on its last line (stdout); progress goes to stderr.
set -euo pipefail

PG_MIN_MAJOR=15
PG_LIBDIR="${CAPGATE_PG_LIBDIR:-/usr/lib/postgresql}"   # where Debian puts <ver>/bin/postgres
PG_CLUSTER=main
DB_ROLE=capgate
DB_PASSWORD=capgate
DB_NAME=capgate_test
READY_TIMEOUT=30

log() { printf 'postgres.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

[[ ${EUID} -eq 0 ]] || die "must run as root (it installs packages and starts the cluster as postgres)"

# Highest installed server major version >= PG_MIN_MAJOR, or nothing.
server_version() {
    local bin ver best=""
    for bin in "${PG_LIBDIR}"/*/bin/postgres; do
        [[ -x "${bin}" ]] || continue
        ver="${bin#"${PG_LIBDIR}/"}"
        ver="${ver%%/*}"
        [[ "${ver}" =~ ^[0-9]+$ ]] || continue
        if (( ver >= PG_MIN_MAJOR )) && { [[ -z "${best}" ]] || (( ver > best )); }; then
            best="${ver}"
        fi
    done
    [[ -n "${best}" ]] && echo "${best}"
}

# Fields of `pg_lsclusters -h`: version cluster port status owner datadir logfile
cluster_field() {  # $1 version, $2 field number
    pg_lsclusters -h 2>/dev/null | awk -v v="$1" -v c="${PG_CLUSTER}" -v f="$2" \
        '$1 == v && $2 == c { print $f; exit }'
}

# --- 1. server binaries -----------------------------------------------------
if ! PG_VERSION="$(server_version)" || ! command -v pg_ctlcluster >/dev/null 2>&1; then
    log "no PostgreSQL >= ${PG_MIN_MAJOR} server found; installing Debian's postgresql"
    apt_log="$(mktemp)"
    export DEBIAN_FRONTEND=noninteractive
    if ! { apt-get update -q && apt-get install -y -q --no-install-recommends postgresql; } \
        >"${apt_log}" 2>&1; then
        cat "${apt_log}" >&2
        rm -f "${apt_log}"
        die "apt-get install postgresql failed"
    fi
    rm -f "${apt_log}"
    PG_VERSION="$(server_version)" || die "postgresql installed but no server >= ${PG_MIN_MAJOR} under ${PG_LIBDIR}"
    command -v pg_ctlcluster >/dev/null 2>&1 || die "pg_ctlcluster missing after install"
fi
log "using PostgreSQL ${PG_VERSION}"

# --- 2. cluster exists and is running ----------------------------------------
if [[ -z "$(cluster_field "${PG_VERSION}" 2)" ]]; then
    log "creating cluster ${PG_VERSION}/${PG_CLUSTER}"
    pg_createcluster "${PG_VERSION}" "${PG_CLUSTER}" >/dev/null
fi

# The socket directory lives on a tmpfs on some machines and may be gone.
install -d -m 2775 -o postgres -g postgres /var/run/postgresql

status="$(cluster_field "${PG_VERSION}" 4)"
if [[ "${status}" != online* ]]; then
    log "starting cluster ${PG_VERSION}/${PG_CLUSTER} (was: ${status:-unknown})"
    start=${SECONDS}
    # As root, pg_ctlcluster switches to the cluster owner (postgres) itself.
    pg_ctlcluster "${PG_VERSION}" "${PG_CLUSTER}" start >&2 \
        || die "pg_ctlcluster start failed; see $(cluster_field "${PG_VERSION}" 7)"
    log "started in $((SECONDS - start)) s"
fi

PG_PORT="$(cluster_field "${PG_VERSION}" 3)"
[[ "${PG_PORT}" =~ ^[0-9]+$ ]] || die "could not read the port of cluster ${PG_VERSION}/${PG_CLUSTER}"

deadline=$((SECONDS + READY_TIMEOUT))
until pg_isready -q -h 127.0.0.1 -p "${PG_PORT}"; do
    (( SECONDS < deadline )) || die "server not ready on 127.0.0.1:${PG_PORT} after ${READY_TIMEOUT} s"
    sleep 0.5
done

# --- 3. role and database -----------------------------------------------------
# Over the Unix socket as the postgres superuser (peer auth); cd / so psql
# does not warn about an unreadable working directory.
(
    cd /
    runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -p "${PG_PORT}" -d postgres \
        -v role="${DB_ROLE}" -v pw="${DB_PASSWORD}" -v db="${DB_NAME}" >/dev/null <<'SQL'
SELECT format('CREATE ROLE %I', :'role')
 WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'role') \gexec
ALTER ROLE :"role" WITH LOGIN CREATEDB PASSWORD :'pw';
SELECT format('CREATE DATABASE %I OWNER %I', :'db', :'role')
 WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = :'db') \gexec
ALTER DATABASE :"db" OWNER TO :"role";
SQL
) || die "could not create role ${DB_ROLE} / database ${DB_NAME}"

# Check the password login over TCP, the way the tests will connect.
PGPASSWORD="${DB_PASSWORD}" psql -X -q -At -h 127.0.0.1 -p "${PG_PORT}" -U "${DB_ROLE}" \
    -d "${DB_NAME}" -c 'SELECT 1' >/dev/null \
    || die "password login as ${DB_ROLE} on 127.0.0.1:${PG_PORT} failed (check pg_hba.conf)"

log "ready: ${DB_NAME} on 127.0.0.1:${PG_PORT}"
echo "postgresql+psycopg://${DB_ROLE}:${DB_PASSWORD}@127.0.0.1:${PG_PORT}/${DB_NAME}"
