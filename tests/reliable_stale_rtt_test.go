package tests

import "testing"

// TestReliableRestartsRoundTripAfterOutage replays soak seed 7040 (stacktool
// soak --seeds 40 --from 7001): 8 nodes at 800 msgs/s each through a
// 10,000 pps capacity limit, markov loss, two crashes, then n1, n6 and n7
// cut off from 3.232 s to 4.565 s. Just before the partition, n8's round
// trip to n6 was measured at about 150 ms (answers queued behind the
// capacity limit); every gap open after the heal had been NAKed more than
// once, so Karn's rule took no new sample, and NAK rounds over the 3 ms
// path came 0.5 to 1 s apart: 486 owed deliveries (1,562 under
// specs/baseline.stack) were still missing when the 10 s drain ended. The
// answers now echo their NAK's time stamp, and the first that shows the
// estimate four times too long restarts it. Both stacks, and
// specs/ricochet.stack (where reliable sits on lec), must deliver
// everything owed.
func TestReliableRestartsRoundTripAfterOutage(t *testing.T) {
	for _, spec := range []string{"fifo : reliable : gms", "../specs/baseline.stack", "../specs/ricochet.stack"} {
		rep, _ := simRun(t, spec, "",
			"nodes", "8", "groups-per-node", "1", "group-size", "8", "senders", "all", "rate", "800",
			"msg-size", "64", "duration", "4s", "drain", "10s", "loss", "markov:15.5%,4",
			"latency", "1ms", "jitter", "100µs", "capacity", "10000pps,buf=256", "seed", "7040",
			"fault", "crash:1@1271ms", "fault", "crash:2@2876ms", "fault", "partition:1,6,7@3232ms",
			"fault", "heal@4565ms", "max-burst", "64")
		if rep.MissingUnexplained != 0 || rep.Duplicates != 0 || rep.FIFOViolations != 0 {
			t.Errorf("%s: %d owed deliveries missing unexplained, %d duplicates, %d FIFO violations; want 0, 0, 0 (examples %v)",
				spec, rep.MissingUnexplained, rep.Duplicates, rep.FIFOViolations, rep.MissingExamples)
		}
	}
}
