package tests

import (
	"fmt"
	"testing"
	"time"

	"github.com/layercast/layercast/experiment"
	_ "github.com/layercast/layercast/layers/all"
	"github.com/layercast/layercast/layers/mflow"
)

// staggerRun runs mflow(ack_thresh=26000) : fifo : reliable on 12 nodes,
// one sender casting 1 KB at rate per second, 2 ms latency and 1 ms of
// jitter (issue 13 item 7's set-up), with stagger on or off.
func staggerRun(t *testing.T, stagger string, rate int) *experiment.Report {
	t.Helper()
	rep, _ := simRun(t, fmt.Sprintf("mflow(window=50000, ack_thresh=26000, stagger=%s) : fifo : reliable", stagger), "",
		"nodes", "12", "groups-per-node", "1", "group-size", "12", "senders", "1", "rate", fmt.Sprint(rate), "msg-size", "1000",
		"duration", "3s", "drain", "1s", "loss", "none", "latency", "2ms", "jitter", "1ms", "seed", "1")
	return rep
}

// TestMflowStaggerNoWorse is issue 13's must-hold for MFLOW: at n=12,
// ack_thresh 26,000 and 1 ms of jitter, with the sender's rate past the
// point where equation 6's bound falls below 26,000 (so the sender has to
// wait for credit at all), stagger on is no worse than off in credit waits,
// p50 latency and messages the application got to send. Before the fix
// (staggered receivers with window alone) each of the 11 receivers stopped
// the sender at its own point of every ack_thresh cycle, so staggering
// multiplied the waits (3,900/s: 282 against 207; 4,000/s: 736 against 456;
// with the headroom 21 and 62).
func TestMflowStaggerNoWorse(t *testing.T) {
	for _, rate := range []int{3900, 4000, 4200} {
		// Equation 6 with ε = latency + the most jitter, 1100-byte
		// messages.
		bound := mflow.MaxAckThresh(mflow.Workload{N: 12, Size: 1100, Rate: float64(rate), Delay: 3 * time.Millisecond, Window: 50000})
		off, on := staggerRun(t, "off", rate), staggerRun(t, "on", rate)
		waits := func(r *experiment.Report) int64 { return r.Layers["mflow"]["credit_waits"] }
		fig := fmt.Sprintf("rate %d/s (equation 6's bound %.0f < ack_thresh 26000): stagger off: %d credit waits, p50 %.3f ms, %d sent; stagger on: %d credit waits, p50 %.3f ms, %d sent",
			rate, bound, waits(off), off.LatencyMs.P50, off.MessagesSent, waits(on), on.LatencyMs.P50, on.MessagesSent)
		t.Log(fig)
		if bound >= 26000 || waits(off) == 0 {
			t.Errorf("%s: not past equation 6's bound, the comparison says nothing", fig)
		}
		if waits(on) > waits(off) || on.LatencyMs.P50 > off.LatencyMs.P50 || on.MessagesSent < off.MessagesSent {
			t.Errorf("staggering made the sender worse off: %s", fig)
		}
		if !on.DeliveredAll || !off.DeliveredAll {
			t.Errorf("%s: delivered all: off %v, on %v", fig, off.DeliveredAll, on.DeliveredAll)
		}
	}
}
