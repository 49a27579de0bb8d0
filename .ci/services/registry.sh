#!/usr/bin/env bash
# Image registries on loopback for the pull and push tests of the docker backend: Debian's
# docker-registry (the reference registry, v2 API), two instances, each with a config of
# its own written here (the package's default listens on every interface with a broken
# htpasswd path):
#   127.0.0.1:5055  open (no credentials)
#   127.0.0.1:5056  htpasswd (basic auth) with the throwaway user below
# dockerd trusts registries on 127.0.0.0/8 without TLS, so images pushed to
# 127.0.0.1:<port>/... pull with no insecure-registry configuration.
# Idempotent: installs what is missing, starts an instance that does not answer; fast
# when both answer. Run as root.
set -euo pipefail

BASE=/var/lib/hermes-registry
LOG=/var/log/hermes-registry.log
OPEN_PORT=5055
AUTH_PORT=5056
USER_NAME=hermes
USER_PASSWORD=hermes-registry-test
WAIT=30

missing=()
command -v docker-registry >/dev/null 2>&1 || missing+=(docker-registry)
command -v htpasswd >/dev/null 2>&1 || missing+=(apache2-utils)
if [ "${#missing[@]}" -gt 0 ]; then
    echo "registry.sh: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o DPkg::Lock::Timeout=300 update -qq
    apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
fi

answers() { # port [user:password] -> 0 when /v2/ answers 200 (or 401 without credentials)
    local code
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 \
        ${2:+-u "$2"} "http://127.0.0.1:$1/v2/" || true)
    [ "$code" = 200 ] || { [ -z "${2:-}" ] && [ "$code" = 401 ]; }
}

write_config() { # name port [htpasswd file]
    local dir="$BASE/$1"
    mkdir -p "$dir/data"
    {
        echo "version: 0.1"
        echo "log:"
        echo "  level: warn"
        echo "storage:"
        echo "  filesystem:"
        echo "    rootdirectory: $dir/data"
        echo "  delete:"
        echo "    enabled: true"
        echo "http:"
        echo "  addr: 127.0.0.1:$2"
        if [ -n "${3:-}" ]; then
            echo "auth:"
            echo "  htpasswd:"
            echo "    realm: hermes-registry-test"
            echo "    path: $3"
        fi
    } >"$dir/config.yml"
}

start() { # name port [user:password]
    local name=$1 port=$2 credentials=${3:-}
    if answers "$port" "$credentials"; then
        echo "registry.sh: the $name registry answers on 127.0.0.1:$port"
        return
    fi
    echo "registry.sh: starting the $name registry on 127.0.0.1:$port (log: $LOG)"
    nohup docker-registry serve "$BASE/$name/config.yml" >>"$LOG" 2>&1 </dev/null &
    local pid=$!
    for ((i = 0; i < WAIT * 4; i++)); do
        answers "$port" "$credentials" && return
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "registry.sh: the $name registry exited; its log ends:" >&2
            tail -n 20 "$LOG" >&2
            exit 1
        fi
        sleep 0.25
    done
    echo "registry.sh: the $name registry did not answer within ${WAIT}s" >&2
    exit 1
}

mkdir -p "$BASE" "$(dirname "$LOG")"
if [ ! -s "$BASE/htpasswd" ]; then
    htpasswd -bBc "$BASE/htpasswd" "$USER_NAME" "$USER_PASSWORD" 2>/dev/null
fi
write_config open "$OPEN_PORT"
write_config auth "$AUTH_PORT" "$BASE/htpasswd"
start open "$OPEN_PORT"
start auth "$AUTH_PORT" "$USER_NAME:$USER_PASSWORD"
