#!/usr/bin/env bash
# Installs what the tests need on a fresh machine. The network-namespace tests
# need iproute2 (ip netns) and root; they skip themselves where either is missing.
set -euo pipefail
if ! command -v ip >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq iproute2 >/dev/null
  fi
fi
