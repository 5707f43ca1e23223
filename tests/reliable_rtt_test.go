package tests

import "testing"

// TestReliableRTTRetransmissions: two sites joined by a 60 ms link (120 ms
// round trip) at 1% loss, both nodes casting under fifo : reliable : gms.
// Every message must be delivered, and each lost packet must cost at most
// a few retransmissions: a receiver retries its NAK only after the round
// trip it measured to the sender, and the sender holds a repeat that
// crossed its answer. Before, the NAK was retried every nak_retry (20 ms)
// whatever the round trip, and the sender held repeats for only 10 ms: each
// loss was NAKed and resent about six times before the first answer came.
func TestReliableRTTRetransmissions(t *testing.T) {
	rep, _ := simRun(t, "fifo : reliable : gms", "",
		"nodes", "2", "groups-per-node", "1", "group-size", "2", "senders", "all",
		"rate", "500", "duration", "4s", "drain", "3s", "loss", "none", "seed", "3",
		"site", "1=1", "site", "2=2",
		"wan", "1-2 latency=60ms jitter=2ms loss=uniform:1%")
	r := rep.Layers["reliable"]
	lost := r["loss_discovered"]
	t.Logf("lost %d (dropped %d), retransmissions %d, naks %d, recovered %d, nak recovery %+v ms",
		lost, rep.Loss.Dropped, r["retransmissions"], r["naks_sent"], r["recovered_nak"], rep.Loss.RecoveryLatencyByMs["nak"])
	if !rep.DeliveredAll || rep.Missing != 0 || rep.Duplicates != 0 {
		t.Errorf("delivered_all = %v, missing %d, duplicates %d; want everything once", rep.DeliveredAll, rep.Missing, rep.Duplicates)
	}
	if lost < 30 {
		t.Fatalf("only %d losses discovered: too few to measure the cost of one", lost)
	}
	if per := float64(r["retransmissions"]) / float64(lost); per > 3 {
		t.Errorf("%.1f retransmissions per lost packet (%d for %d); want at most 3", per, r["retransmissions"], lost)
	}
}
