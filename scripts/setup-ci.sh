#!/usr/bin/env bash
# Installs what the tests need on a fresh machine. The network-namespace tests
# need iproute2 (ip netns) and root; the replicated membership tests
# (tests/etcd_*_test.go, membership/etcdstore) need the etcd server binary
# (Debian's etcd-server). Each test skips itself where what it needs is missing.
set -euo pipefail
missing=()
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    # The package's service is not wanted: the tests start their own etcd.
    if command -v systemctl >/dev/null 2>&1; then systemctl disable --now etcd >/dev/null 2>&1 || true; fi
  fi
fi
