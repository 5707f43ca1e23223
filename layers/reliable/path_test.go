package reliable_test

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/transport/sim"
)

// TestRoundTripIsTheSenders: the round trip a receiver measured to a
// sender through one group's NAKs paces the retries of the sender's other
// streams too (SRM keeps a distance per host). A node in many groups hears
// each rarely (Ricochet's point), and a stream never NAKed before retried
// every nak_retry, with backoff (Figure 8's set-up at 20% loss: 541 ms for
// a message whose NAK was lost twice). Here group 1's losses measure the
// path; then in group 2 a loss's first NAK is lost at the sender, and the
// retry comes a round-trip timeout later, not nak_retry (200 ms) later.
func TestRoundTripIsTheSenders(t *testing.T) {
	const ms = event.Time(time.Millisecond)
	bs := bursts{
		// group 1 (node 1 casts every 10 ms from 0, arriving at x1 ms;
		// digests at whole 100 ms): losses to measure the path on
		{rx: 2, at: 142 * ms, n: 1}, {rx: 2, at: 172 * ms, n: 1}, {rx: 2, at: 232 * ms, n: 1},
		// group 2 (every 10 ms from 400 ms): the cast arriving at 521 ms
		// lost at node 2 (it shows at 531 ms, NAKed at 551 ms), then the
		// first packet at node 1 after 540 ms: that NAK
		{rx: 2, at: 512 * ms, n: 1}, {rx: 1, at: 540 * ms, n: 1},
	}
	c := layertest.New(t, sim.Config{Seed: 1, Latency: time.Millisecond, Loss: bs}, 2,
		relEntries(map[string]string{"nak_retry": "200ms", "nak_delay": "20ms"}))
	for _, b := range bs {
		b.net = c.Net
	}
	v1 := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}}
	v2 := &event.ViewInfo{Group: 2, ID: 1, Members: []event.NodeID{1, 2}}
	c.Install(v1)
	c.Install(v2)
	sent := map[event.GroupID]map[event.NodeID]uint32{}
	c.CastLoop(1, 1, 30, 10*time.Millisecond, 100, sent)
	c.Net.RunUntil(400 * ms)
	c.CastLoop(1, 2, 30, 10*time.Millisecond, 100, sent)
	var g2 event.Time // when node 2 got group 2's lost cast back
	for byNak := 0; c.Net.Now() < event.Time(2*time.Second); {
		c.Net.RunUntil(c.Net.Now() + ms)
		if c.ByNak != byNak {
			byNak = c.ByNak
			if g2 == 0 && c.Net.Now() > 500*ms {
				g2 = c.Net.Now()
			}
		}
	}
	c.CheckExactlyOnce([]*event.ViewInfo{v1, v2}, sent, false)
	for i, b := range bs {
		if b.ended == 0 {
			t.Fatalf("burst %d (at n%v, %v) lost nothing", i, b.rx, time.Duration(b.at))
		}
	}
	t.Logf("group 2 recovered at %v", time.Duration(g2))
	if c.ByNak != 4 {
		t.Fatalf("%d recovered by NAK, want 4 (three in group 1, one in group 2)", c.ByNak)
	}
	// the lost NAK at 551 ms, then a round-trip timeout of a few ms
	if bound := 580 * ms; g2 == 0 || g2 > bound {
		t.Errorf("group 2's lost cast recovered at %v, want by %v (its first NAK lost, the retry one round-trip timeout on)", time.Duration(g2), time.Duration(bound))
	}
}
