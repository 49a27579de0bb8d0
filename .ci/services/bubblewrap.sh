#!/usr/bin/env bash
# The local backend's isolated mode runs commands through Debian's bubblewrap (bwrap):
# install it here to test that mode, and check it can make the namespaces. Idempotent.
set -euo pipefail
if ! command -v bwrap >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o DPkg::Lock::Timeout=300 update -qq
    apt-get -o DPkg::Lock::Timeout=300 install -y -qq bubblewrap >/dev/null
    echo "bubblewrap: installed $(bwrap --version)"
else
    echo "bubblewrap: $(bwrap --version) already installed"
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
if bwrap --unshare-pid --unshare-net --ro-bind / / --bind "$probe" "$probe" \
    --proc /proc --dev /dev true; then
    echo "bubblewrap: namespaces work here"
else
    echo "bubblewrap: cannot make namespaces here (user namespaces off?); isolated tests will fail" >&2
    exit 1
fi
