#!/usr/bin/env bash
# Runs every Go fuzz target in the module, one after another, each for a
# given time, and prints one line per target: result, package, target,
# executions, and on a crash the file the fuzzer wrote the failing input to
# (testdata/fuzz/FuzzX/<hash> in the target's package; check it in as a
# regression seed once the decoder is fixed). Exits 1 if any target crashed
# or failed, 2 on bad arguments.
#
#   scripts/fuzz.sh [SECONDS] [PATTERN]
#
# SECONDS defaults to 60. PATTERN (an extended regexp, default: all) selects
# targets by "package target", e.g. 'layers/gms' or 'FuzzDecode$'.
# FUZZ_PARALLEL sets -parallel (default 1: one fuzzing worker, so that the
# executions of different targets compare). FUZZ_MINIMIZE sets
# -fuzzminimizetime (default 10s: Go minimizes every new interesting input
# for up to 60 s by default, during which a slow target counts no
# executions). FUZZ_LOGDIR keeps the full output of each run (default: a
# temporary directory, named on the first line).
#
# A run that ends in "context deadline exceeded" without a failing input is
# Go's fuzzing coordinator racing its own -fuzztime deadline (go.dev/issue/75804,
# fixed in Go 1.27), not a crash: the target is run once more, and if that
# ends the same way it is reported as "race", which does not fail the script.
# Unless the fuzzer made no progress in its last 30 s: then an input hangs
# (the fuzzer keeps no file for it) and the target FAILs as "hang".
set -uo pipefail
cd "$(dirname "$0")/.."

secs=${1:-60}
pattern=${2:-}
par=${FUZZ_PARALLEL:-1}
minimize=${FUZZ_MINIMIZE:-10s}
case $secs in '' | *[!0-9]*) echo "fuzz.sh: SECONDS must be a whole number, got '$secs'" >&2; exit 2 ;; esac
case $par in '' | *[!0-9]* | 0) echo "fuzz.sh: FUZZ_PARALLEL must be a positive number, got '$par'" >&2; exit 2 ;; esac
logdir=${FUZZ_LOGDIR:-$(mktemp -d /tmp/fuzzlogs.XXXXXX)}
mkdir -p "$logdir"

# Every "func FuzzX(" in a _test.go file, as "./dir FuzzX", sorted.
mapfile -t targets < <(
  grep -rEo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(' . |
    sed -E 's#^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\($#\1 \2#' |
    sort -u |
    { if [ -n "$pattern" ]; then grep -E -- "$pattern" || true; else cat; fi; }
)
if [ ${#targets[@]} -eq 0 ]; then
  echo "fuzz.sh: no fuzz target matches '${pattern}'" >&2
  exit 2
fi
echo "fuzz.sh: ${#targets[@]} targets, ${secs}s each, -parallel $par, logs in $logdir"

failed=0
for t in "${targets[@]}"; do
  dir=${t% *}
  name=${t#* }
  log="$logdir/$(echo "${dir#./}" | tr / _)_$name.log"
  for try in 1 2; do
    # -timeout bounds a hung input: the fuzzer itself has no per-input limit.
    go test -run '^$' -fuzz "^${name}\$" -fuzztime "${secs}s" -parallel "$par" \
      -fuzzminimizetime "$minimize" -timeout "$((secs + 600))s" "$dir" >"$log" 2>&1
    rc=$?
    race=0
    # progress lines come every 3 s: ten at 0/sec in a row at the end is a hang
    stalled=$(grep -E '^fuzz: elapsed' "$log" | tail -n 10 | grep -c '(0/sec)')
    if [ $rc -ne 0 ] && [ "$stalled" -lt 10 ] && grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
      race=1
      [ $try -eq 1 ] && cp "$log" "$log.race1" && continue
    fi
    break
  done
  # The last progress line carries the total: "fuzz: elapsed: 1m0s, execs: 123 (...)".
  execs=$(grep -Eo 'execs: [0-9]+' "$log" | tail -n 1 | awk '{print $2}')
  execs=${execs:-0}
  if [ $rc -eq 0 ]; then
    printf '%-5s %-28s %-26s execs=%s\n' ok "$dir" "$name" "$execs"
  elif [ $race -eq 1 ]; then
    printf '%-5s %-28s %-26s execs=%s (twice ended by go.dev/issue/75804, no failing input) log=%s\n' race "$dir" "$name" "$execs" "$log"
  else
    failed=1
    crasher=$(grep -Eo 'testdata/fuzz/[^ ]+' "$log" | tail -n 1)
    [ -n "$crasher" ] && crasher="${dir#./}/$crasher"
    [ "$stalled" -ge 10 ] && crasher="none (hang: no executions in the last 30 s; the fuzzer keeps no file for a hung input)"
    printf '%-5s %-28s %-26s execs=%s crasher=%s log=%s\n' FAIL "$dir" "$name" "$execs" "${crasher:-none}" "$log"
    # The reason, so the line above is enough to start from.
    grep -E -m 5 -- '--- FAIL|panic:|Error|error|deadline' "$log" | sed 's/^/      /'
  fi
done
exit $failed
