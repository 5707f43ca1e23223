package tests

import "testing"

// TestHopSoakMemberHoldOff is soak seed 88 on specs/spread.stack (20 nodes
// of one site, every node sending 200 casts/s of 1000 bytes, uniform loss
// of 11.3%, no fault): every owed delivery is made. The site's
// representative casts every member's cast into the ring a second time,
// numbered, but ring holds off only the representative's own application:
// each member fed the representative's ring queue at its own rate while the
// representative drained it at one member's share of the token, the queue
// peaked at 5,367 casts (ring max_pending 256) and the run ended with 2,553
// owed deliveries of casts still queued there. A member now holds its
// application off while a quarter of max_queue of its casts wait to be
// numbered.
func TestHopSoakMemberHoldOff(t *testing.T) {
	rep := ringSoak(t, "../specs/spread.stack", 88, "uniform:11.3%")
	if !rep.DeliveredAll {
		t.Errorf("%d of %d owed deliveries missing", rep.Missing, rep.DeliveriesExpected)
	}
}
