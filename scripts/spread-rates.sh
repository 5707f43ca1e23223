#!/usr/bin/env bash
# Finds, for each Spread stack, the highest rate it sustains on a scenario,
# for issue 11's throughput comparison (hop vs ring across the WAN vs end
# to end). "Sustains rate R": every owed message delivered, no promise
# broken, and a throughput per receiver of at least 90% of R (the sender
# kept up: it was not held off for long and deliveries did not trail
# behind). A bisection over --rate from 5 to 2000 msgs/s, to 2%; then one
# line per stack: the rate, its throughput and latency, and what rate max
# gives. Simulator only; the same defaults for every stack.
#
#   scripts/spread-rates.sh [scenario...]   (default: spread-wan, spread-2site)
set -euo pipefail
cd "$(dirname "$0")/.."
st=$(mktemp -d)/stacktool
trap 'rm -rf "$(dirname "$st")"' EXIT
go build -o "$st" ./cmd/stacktool
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(specs/spread-wan.scenario specs/spread-2site.scenario)
stacks=(specs/spread.stack specs/spread-ring-wan.stack specs/spread-e2e.stack)

# run STACK SCENARIO RATE: prints "ok throughput p50 p99 delivered_all missing"
run() {
  "$st" run "$1" --scenario "$2" --rate "$3" --json 2>/dev/null |
    jq -r --argjson r "${3/max/0}" '[(.delivered_all and (.broken_promises|length)==0 and .throughput_msgs_per_s >= 0.9*$r),
      .throughput_msgs_per_s, .latency_ms.p50, .latency_ms.p99, .delivered_all, .missing] | @tsv' || true
}

for sc in "${scenarios[@]}"; do
  echo "== $sc"
  printf '%-28s %8s %10s %9s %9s   %s\n' stack rate msgs/s p50_ms p99_ms "at rate max"
  for sp in "${stacks[@]}"; do
    lo=0 hi=2000
    while [ $((hi - lo)) -gt $((lo / 50 + 1)) ]; do
      mid=$(((lo + hi) / 2))
      [ "$mid" -lt 5 ] && mid=5
      if [ "$(run "$sp" "$sc" "$mid" | cut -f1)" = true ]; then lo=$mid; else hi=$mid; fi
    done
    read -r _ tp p50 p99 _ _ < <(run "$sp" "$sc" "$lo")
    read -r _ mtp _ _ mall mmiss < <(run "$sp" "$sc" max)
    printf '%-28s %8d %10.1f %9.1f %9.1f   %.1f msgs/s, delivered_all %s, missing %s\n' \
      "$(basename "$sp")" "$lo" "$tp" "$p50" "$p99" "$mtp" "$mall" "$mmiss"
  done
done
