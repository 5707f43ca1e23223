package tests

import "testing"

// Soak seed 5071 of specs/qsm-gms.stack (--quick): n7, in g1 since its view
// 2, joined g2 at 203 ms and so moved to the QSM region of g1 and g2 in
// that region's view 2. n6 learned of it late and numbered its first 16
// casts to g1 (from 427 ms) in the region's view 1; n7 took them as cast
// before it joined the region and dropped them, though g1's view says they
// are owed to it (cast in g1's view 2, which both were in), and n7's
// stream of n6 in g1 began at #16 (16 owed deliveries missing). A packet
// is now owed by its group's views alone (owed): a region view says
// nothing of what a member of the group was sent elsewhere.
// stacktool run specs/qsm-gms.stack --nodes 10 --groups-per-node 2
// --group-size 5 --senders all --rate 400 --msg-size 1000 --duration 2s
// --drain 10s --loss markov:6.7%,2 --latency 1ms --jitter 100µs --seed 5071
// --fault partition:3,5@1202ms --fault heal@1702ms --fault
// freeze:9@1029ms+527ms --fault crash:8@1073ms --max-burst 64
func TestTokenringLateRegionViewStillOwed(t *testing.T) {
	rep := runQSMReplay(t, "../specs/qsm-gms.stack", "nodes", "10", "groups-per-node", "2", "group-size", "5",
		"senders", "all", "rate", "400", "msg-size", "1000", "duration", "2s", "drain", "10s",
		"loss", "markov:6.7%,2", "latency", "1ms", "jitter", "100µs", "seed", "5071",
		"fault", "partition:3,5@1202ms", "fault", "heal@1702ms", "fault", "freeze:9@1029ms+527ms",
		"fault", "crash:8@1073ms", "max-burst", "64")
	if rep.MissingUnexplained != 0 {
		t.Errorf("%d owed deliveries missing unexplained, want none", rep.MissingUnexplained)
	}
}
