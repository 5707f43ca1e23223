package tests

import "testing"

// TestHardeningLECPartitionJump is issue 8 item 1's replay: an 800 ms
// partition of ten of nineteen nodes at 3000 msgs/s per sender makes each
// stream jump by more than lec's window after the heal. lec slid its window
// without growing it and indexed past the end (index out of range [31] with
// length 30): the node crashed. Now the run completes and, after the heal
// and the drain, every member delivers every message once.
//
//	stacktool run specs/ricochet.stack --nodes 19 --groups-per-node 3 --group-size 3 --rate 3000
//	  --msg-size 64 --duration 3s --drain 2s --fault 'partition:1,3,4,5,6,7,8,10,16,17@1909ms'
//	  --fault heal@2709ms --seed 632
func TestHardeningLECPartitionJump(t *testing.T) {
	rep, _ := simRun(t, "../specs/ricochet.stack", "",
		"nodes", "19", "groups-per-node", "3", "group-size", "3", "rate", "3000",
		"msg-size", "64", "duration", "3s", "drain", "2s",
		"fault", "partition:1,3,4,5,6,7,8,10,16,17@1909ms", "fault", "heal@2709ms", "seed", "632")
	if rep.MessagesSent == 0 || rep.DeliveriesExpected == 0 {
		t.Fatalf("nothing sent: %d sent, %d deliveries expected", rep.MessagesSent, rep.DeliveriesExpected)
	}
	if !rep.DeliveredAll || rep.Missing != 0 || rep.Deliveries != rep.DeliveriesExpected {
		t.Errorf("delivered %d of %d (missing %d, delivered_all %v)", rep.Deliveries, rep.DeliveriesExpected, rep.Missing, rep.DeliveredAll)
	}
	if rep.Duplicates != 0 || rep.FIFOViolations != 0 {
		t.Errorf("%d duplicates, %d FIFO violations; want none", rep.Duplicates, rep.FIFOViolations)
	}
	// The partition must have bitten: data was lost to it and fetched again.
	if rep.Loss.Recovered == 0 {
		t.Errorf("nothing recovered: the partition did not cut any stream")
	}
}
