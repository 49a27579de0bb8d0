#!/usr/bin/env bash
# Docker for the docker sandbox backend's tests: Debian's docker.io (dockerd, containerd,
# runc, docker-init) and debootstrap; a dockerd with its default bridge network and NAT (as
# on a user's machine: tests of networked builds and sandboxes reach servers on 127.0.0.1
# through the host network or the bridge's gateway, never an outside address) started when
# none answers; then the base images, built locally once (no outside registry is
# reachable) and cached by tag. Idempotent; fast when all is in place.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

LOG=/var/log/hermes-dockerd.log
WAIT=60

missing=()
command -v dockerd >/dev/null 2>&1 || [ -x /usr/sbin/dockerd ] || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || missing+=(debootstrap)
if [ "${#missing[@]}" -gt 0 ]; then
    echo "docker.sh: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o DPkg::Lock::Timeout=300 update -qq
    apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
        "${missing[@]}" >/dev/null
fi
export PATH="$PATH:/usr/sbin:/sbin"

if docker info >/dev/null 2>&1; then
    echo "docker.sh: a docker daemon answers"
else
    echo "docker.sh: starting dockerd (log: $LOG)"
    mkdir -p "$(dirname "$LOG")"
    nohup dockerd >>"$LOG" 2>&1 </dev/null &
    pid=$!
    for ((i = 0; i < WAIT * 2; i++)); do
        docker info >/dev/null 2>&1 && break
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "docker.sh: dockerd exited; its log ends:" >&2
            tail -n 30 "$LOG" >&2
            exit 1
        fi
        sleep 0.5
    done
    if ! docker info >/dev/null 2>&1; then
        echo "docker.sh: dockerd did not answer within ${WAIT}s; its log ends:" >&2
        tail -n 30 "$LOG" >&2
        exit 1
    fi
fi

# The images (skipped when their tags exist). The builder lives in the package; ./dev
# installs uv and the workspace first if needed.
./dev uv run --locked python -m hermes_sandbox.backends.docker build --kind all
