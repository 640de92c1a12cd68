#!/usr/bin/env bash
# Installs the real servers the suite runs against: redis-server, memcached, redis-tools
# (redis-benchmark, the benchmark tool shipped with Redis: the same-run baseline of Redis cells),
# libmemcached-tools (memcaslap, Debian's memaslap: the baseline of memcached TCP cells) and
# valgrind (which counts each client's instructions per operation: `make cost`). Used by
# `make test`, `make bench` and `.ci/run`.
# Installs only what is missing; without root it prints the exact command instead.
# Opt-in extras: each argument is a command installed (from the Debian package of the same name)
# when missing, for example `bash bench-suite/setup.sh chromium` for `make test-report`.
set -euo pipefail

need=()
# A binary given through REDIS_SERVER_BIN / MEMCACHED_BIN, or an external server given through
# REDIS_URL / MEMCACHED_URL, is the user's choice: do not install over it.
if [ -z "${REDIS_SERVER_BIN:-}" ] && [ -z "${REDIS_URL:-}" ]; then
    command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
fi
if [ -z "${MEMCACHED_BIN:-}" ] && [ -z "${MEMCACHED_URL:-}" ]; then
    command -v memcached >/dev/null 2>&1 || need+=(memcached)
fi
command -v redis-benchmark >/dev/null 2>&1 || need+=(redis-tools)
command -v memcaslap >/dev/null 2>&1 || need+=(libmemcached-tools)
command -v valgrind >/dev/null 2>&1 || need+=(valgrind)
for extra in "$@"; do
    command -v "$extra" >/dev/null 2>&1 || need+=("$extra")
done

# The bench counts system calls through kernel tracepoints, which live in tracefs.
if [ "$(id -u)" -eq 0 ] && [ ! -d /sys/kernel/tracing/events ]; then
    mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null \
        || echo "setup: could not mount tracefs: syscall counts will be missing from bench results" >&2
fi

if [ ${#need[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing ${need[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
else
    echo "setup: kvbench needs ${need[*]}. Install with:" >&2
    echo "    sudo apt-get install -y ${need[*]}" >&2
    echo "or run the servers from docker/ and set REDIS_URL / MEMCACHED_URL." >&2
    exit 1
fi
