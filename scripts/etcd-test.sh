#!/usr/bin/env bash
# Runs the replicated membership service's tests against a real etcd
# (Debian's etcd-server, installed by setup-ci.sh when missing and root):
# the state codec and restore, the fenced saves and the election
# (membership/etcdstore), and the failover of three stacktool gms --etcd
# instances under four casting nodes in a network namespace (root only).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-ci.sh
go test -count=1 -v ./membership/... ./layers/gms/ -run 'Restore|Failover|FailedSave|Save|Run|Encode|Decode'
go test -count=1 -v ./tests/ -run 'Etcd'
