package tests

import (
	"testing"
	"time"
)

// TestUDPFourProcessesTokenring is issue 10's network-namespace check: in
// a namespace with loopback only, created here, `stacktool run
// fifo:tokenring --network udp` runs 4 node processes in one group of 4
// (one QSM region, its channel on a real multicast address through the udp
// transport's channel map), one sender casting 10,000 messages; every
// receiver must deliver all of them in order, and the region's token must
// have gone round and ACKed them.
func TestUDPFourProcessesTokenring(t *testing.T) {
	var r tokenringUDPReport
	runUDP(t, 60*time.Second, false, &r, "fifo:tokenring", "--network", "udp",
		"--nodes", "4", "--groups-per-node", "1", "--group-size", "4", "--senders", "1",
		"--rate", "5000", "--duration", "2s", "--drain", "10s", "--json")
	tr := r.Layers["tokenring"]
	t.Logf("udp run: %d sent, %d deliveries, %.0f msgs/s per receiver, latency p50 %.3f ms p99 %.3f ms, wall %.2fs; tokenring %v",
		r.MessagesSent, r.Deliveries, r.ThroughputMsgsPerS, r.LatencyMs.P50, r.LatencyMs.P99, r.WallSeconds, tr)
	r.checkAllDelivered(t, 10000, 30000)
	if tr["sent"] != 10000 || tr["delivered"] != 30000 {
		t.Errorf("tokenring sent %v regional packets and delivered %v, want 10000 and 30000", tr["sent"], tr["delivered"])
	}
	// The run ends once every message is delivered, which may be a round
	// before the last ACK.
	if tr["token_rounds"] == 0 || tr["acked"] < 9000 {
		t.Errorf("token_rounds %v, acked %v: want rounds and (nearly) every packet ACKed (10000)", tr["token_rounds"], tr["acked"])
	}
}

// tokenringUDPReport is udpReport with the layers' figures as numbers of
// any kind (tokenring's summary adds ratios beside its counters).
type tokenringUDPReport struct {
	udpReport
	Layers map[string]map[string]float64 `json:"layers"`
}
