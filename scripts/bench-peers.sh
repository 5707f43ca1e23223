#!/bin/bash
# bench-peers.sh: layercast beside JGroups and NORM, same work, one table.
#
# 1 sender and RECEIVERS receiver processes on this machine, MESSAGES
# messages of SIZE bytes, IP multicast on the loopback interface of a
# network namespace made for the run (and removed at the end, whatever
# happens). Needs root: it installs what the peers need with apt-get
# (libjgroups-java, libnorm-dev, g++, a JDK) and makes the namespace.
#
#   sudo scripts/bench-peers.sh                      # 3 receivers, 200,000 x 1,000 bytes, no loss
#   sudo LOSS=1 scripts/bench-peers.sh               # 1% loss at every receiver
#   sudo LOSS=10 TIMEOUT=60 scripts/bench-peers.sh   # 10%: compare with norm-ack (JGroups and NORM at a fixed rate do not finish)
#   sudo RECEIVERS=1 MESSAGES=20000 scripts/bench-peers.sh
#
# Columns: msgs/s per receiver (mean), CPU microseconds per message
# delivered (receivers' mean), the sender's CPU microseconds per message
# cast (the peers' up to the end of their casting), delivered (of
# RECEIVERS x MESSAGES), and
# the ratio of the first layercast stack's rate to the row's. Loss is
# applied where each system can: our workers' loss model, JGroups'
# DISCARD, NORM's NormSetRxLoss. NORM drops only at its receivers, so our
# sender is spared too (bench --sender-loss=false), as the issue's "loss
# at the receivers" reads.
set -euo pipefail

RECEIVERS=${RECEIVERS:-3}
MESSAGES=${MESSAGES:-200000}
SIZE=${SIZE:-1000}
LOSS=${LOSS:-0}          # percent
TIMEOUT=${TIMEOUT:-120}  # seconds a peer receiver waits at most
PEERS=${PEERS:-"ours jgroups norm"}  # which systems to run
NORM_MODES=${NORM_MODES:-"fixed ack"}  # NORM's flow control: a fixed rate, ACK-based, or both
# NORM as NRL's own high-rate examples configure it (examples/normStreamer.cpp,
# normCast.cpp): no NACK/ACK backoff on a LAN, a 1 ms first GRTT, ACK-based
# flow control in place of the timer-based kind, one watermark per 1/8 of
# the stream buffer. Its sender paces one segment per timer tick, so the
# segment size and the rate bound it: 60 KB segments (our pack and JGroups'
# bundles are 60-64 KB too) at 4 Gbit/s measured best here (8000-byte
# segments at 1 Gbit/s capped it near 40k msgs/s; 8 Gbit/s and up overran
# the receivers' sockets into repairs).
NORM_RATE=${NORM_RATE:-4e9}
# At a fixed rate nothing holds NORM's sender back for a slow receiver: at
# 2 Gbit/s and up receivers fell behind the stream buffer and lost data for
# good (or stalled); 1.5 Gbit/s delivered everything here, 1 Gbit/s too.
NORM_FIXED_RATE=${NORM_FIXED_RATE:-1.5e9}
rate=$NORM_RATE # the rate peer passes on (set per NORM mode below)
NORM_SEGMENT=${NORM_SEGMENT:-60000}
NORM_STREAM_BUF=${NORM_STREAM_BUF:-67108864}
NORM_MARK_DIV=${NORM_MARK_DIV:-8}
NORM_BACKOFF=${NORM_BACKOFF:-0}
# reliable(nak_delay_rtts=0): the first NAK after a fixed nak_delay (20 ms)
# rather than 2-4 measured round trips; beside the default it shows what
# the scaled wait buys (1% loss, 3 alternating rounds: 128-144k msgs/s
# fixed, 186-239k scaled; the build before either change, 87-108k).
SPECS=${SPECS:-"fifo : reliable : pack(size=60KB)|fifo : reliable(nak_delay_rtts=0) : pack(size=60KB)|mflow(window=2MB, ack_thresh=500KB) : fifo : reliable : pack(size=60KB)|fifo : reliable|mflow : fifo : reliable"}

if [ "$(id -u)" != 0 ]; then
	echo "bench-peers.sh: needs root (apt-get, network namespaces)" >&2
	exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/bench-peers.XXXXXX)
ns=lcpeers$$
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	ip netns del "$ns" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

need=()
dpkg -s libjgroups-java >/dev/null 2>&1 || need+=(libjgroups-java)
dpkg -s libnorm-dev >/dev/null 2>&1 || need+=(libnorm-dev)
command -v g++ >/dev/null || need+=(g++)
command -v javac >/dev/null || need+=(default-jdk-headless)
if [ ${#need[@]} -gt 0 ]; then
	echo "installing ${need[*]}" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y "${need[@]}" >&2
fi

echo "building stacktool and the peers in $work" >&2
(cd "$root" && go build -o "$work/stacktool" ./cmd/stacktool)
g++ -O2 -o "$work/norm_peer" "$root/bench/peers/norm_peer.cpp" -lnorm
jar=$(ls /usr/share/java/jgroups.jar /usr/share/java/jgroups-*.jar 2>/dev/null | head -1)
javac -cp "$jar" -d "$work" "$root/bench/peers/JgPeer.java"

ip netns add "$ns"
ip netns exec "$ns" ip link set lo up
ip netns exec "$ns" ip link set lo multicast on
ip netns exec "$ns" ip route add 224.0.0.0/4 dev lo
run() { ip netns exec "$ns" "$@"; }  # in the foreground only (a backgrounded function's PID is a subshell's)

rows=$work/rows
: >"$rows"
frac=$(awk "BEGIN{print $LOSS/100}")

# Ours: stacktool bench, one run per spec.
IFS='|' read -ra specs <<<"$SPECS"
[[ " $PEERS " == *" ours "* ]] || specs=()
for spec in "${specs[@]}"; do
	echo "layercast: $spec" >&2
	loss=none
	[ "$LOSS" != 0 ] && loss="uniform:${LOSS}%"
	if run "$work/stacktool" bench "$spec" --receivers "$RECEIVERS" --messages "$MESSAGES" --size "$SIZE" --loss "$loss" --sender-loss=false --json >"$work/ours.json" 2>"$work/ours.err" || [ -s "$work/ours.json" ]; then
		python3 - "$spec" "$work/ours.json" >>"$rows" <<'PY'
import json, sys
r = json.load(open(sys.argv[2]))
print("\t".join([sys.argv[1], str(r["throughput_msgs_per_s"]), str(r["cpu_us_per_msg"]["receiver_mean"]),
                 str(r["deliveries_of_expected"]), str(r["deliveries_expected"]), str(r["cpu_us_per_msg"]["sender"])]))
PY
	else
		echo "layercast $spec failed: $(tail -1 "$work/ours.err")" >&2
	fi
done

# peer NAME SENDER_CMD RECEIVER_CMD: receivers first (@ID@ in their
# command is each one's node id, 2 and up), then the sender, which is
# stopped once every receiver has reported. Commands are split on spaces
# and exec'd (ip netns exec, timeout, env): the PIDs kept are theirs.
peer() {
	local name=$1 send=$2 recv=$3 rx=()
	for i in $(seq 2 $((RECEIVERS + 1))); do
		# shellcheck disable=SC2086
		ip netns exec "$ns" timeout $((TIMEOUT + 30)) env PEER_TIMEOUT="$TIMEOUT" ${recv//@ID@/$i} >"$work/$name.r$i" 2>"$work/$name.r$i.err" &
		rx+=($!)
		pids+=($!)
	done
	sleep 1
	# shellcheck disable=SC2086
	ip netns exec "$ns" timeout $((TIMEOUT + 60)) env NORM_RATE="$rate" NORM_SEGMENT="$NORM_SEGMENT" \
		NORM_STREAM_BUF="$NORM_STREAM_BUF" NORM_MARK_DIV="$NORM_MARK_DIV" NORM_BACKOFF="$NORM_BACKOFF" \
		$send >"$work/$name.s" 2>"$work/$name.s.err" &
	local s=$!
	pids+=($s)
	wait "${rx[@]}" || true
	kill "$s" 2>/dev/null || true
	wait "$s" 2>/dev/null || true
	python3 - "$name" "$MESSAGES" "$RECEIVERS" "$work/$name.s" "$work"/"$name".r[0-9]* >>"$rows" <<'PY'
import sys
name, m, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rates, cpus, got = [], [], 0
# The sender's CPU up to the end of its casting (it prints then; what it
# spends on repairs after that is left out): -1 when it never finished.
send_cpu = -1.0
try:
    for line in open(sys.argv[4]):
        if line.startswith("peer=") and "role=send" in line:
            f = dict(kv.split("=", 1) for kv in line.split())
            send_cpu = float(f["cpu_s"]) * 1e6 / m
except OSError:
    pass
for path in sys.argv[5:]:
    if path.endswith(".err"):
        continue
    for line in open(path):
        if not line.startswith("peer="):
            continue
        f = dict(kv.split("=", 1) for kv in line.split())
        d = int(f["delivered"])
        got += min(d, m)
        rates.append(float(f["rate"]) if d else 0.0)
        cpus.append(float(f["cpu_s"]) * 1e6 / d if d else 0.0)
n = max(len(rates), 1)
print("\t".join([name, str(sum(rates) / n), str(sum(cpus) / n), str(got), str(m * k), str(send_cpu)]))
PY
}

J="java -Djava.net.preferIPv4Stack=true -Djgroups.bind_addr=127.0.0.1 -Dtimeout=${TIMEOUT}000 -cp $jar:$work JgPeer"
if [[ " $PEERS " == *" jgroups "* ]]; then
	echo "jgroups" >&2
	peer jgroups "$J send $RECEIVERS $MESSAGES $SIZE 0" "$J recv $RECEIVERS $MESSAGES $SIZE $frac"
fi
modes=()
# shellcheck disable=SC2206
[[ " $PEERS " == *" norm "* ]] && modes=($NORM_MODES)
for mode in "${modes[@]}"; do
	rate=$NORM_RATE
	[ "$mode" = fixed ] && rate=$NORM_FIXED_RATE
	echo "norm ($mode)" >&2
	peer "norm-$mode" "$work/norm_peer send $mode 1 $RECEIVERS $MESSAGES $SIZE 0" \
		"$work/norm_peer recv $mode @ID@ $RECEIVERS $MESSAGES $SIZE $LOSS"
done

echo
echo "$RECEIVERS receivers, $MESSAGES messages of $SIZE bytes, loss ${LOSS}%, loopback multicast in a namespace, $(nproc) cores"
python3 - "$rows" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
ours = float(rows[0][1]) if rows else 0
w = max([len(r[0]) for r in rows] + [5])
print("%-*s %12s %11s %11s %16s %10s" % (w, "stack", "msgs/s/recv", "cpu us/msg", "sender us", "delivered", "ours/this"))
for name, rate, cpu, got, want, scpu in rows:
    rate = float(rate)
    ratio = "%.2fx" % (ours / rate) if rate > 0 else "-"
    scpu = "%.2f" % float(scpu) if float(scpu) >= 0 else "-"
    note = "" if got == want else "  (not all delivered: rate and CPU over what arrived)"
    print("%-*s %12.0f %11.2f %11s %16s %10s%s" % (w, name, rate, float(cpu), scpu, "%s/%s" % (got, want), ratio, note))
PY
