package reliable_test

import (
	"strings"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/transport/sim"
)

// TestFreezeIsNoRoundTrip: a receiver frozen (a long GC pause, a
// descheduled VM) while the answer to its NAK is in flight takes that
// answer from its receive buffer when it thaws, 1.5 s after the NAK. The
// wait was its own stall, not the path's round trip, and must not become
// the stream's retry interval: a gap whose first NAK is lost later is asked
// for again within a round trip's timeout, not 1.5 s on. Before, the freeze
// was taken as a round-trip sample (srtt 190 ms, rttvar 375 ms), NAK rounds
// came 1.5 to 2.6 s apart, and on the spread branch soak seed 105 of
// specs/spread-e2e.stack (a node frozen for 1.5 s, 19% bursty loss) left
// 326 owed deliveries missing at the end of the run.
func TestFreezeIsNoRoundTrip(t *testing.T) {
	const ms = event.Time(time.Millisecond)
	const freeze = 1500 * time.Millisecond
	first := &packetBurst{rx: 3, at: 501 * ms, n: 3}
	// after the thaw: the sender deaf for a while (node 3's first NAK for
	// the next gap is lost), node 3 losing data soon after
	deaf := &packetBurst{rx: 1, at: event.Never, n: 5}
	lost := &packetBurst{rx: 3, at: event.Never, n: 5}
	bs := bursts{first, deaf, lost}

	var c *layertest.Cluster
	var froze event.Time
	old := layertest.Log
	defer func() { layertest.Log = old }()
	layertest.Log = func(line string) {
		// the sender got node 3's first NAK and is answering it
		if froze == 0 && c != nil && strings.Contains(line, " n1 reliable: nak from n3 ") {
			froze = c.Net.Now()
			c.Net.Freeze(3, freeze)
			deaf.at = froze + event.Time(freeze) + 300*ms
			lost.at = deaf.at + 10*ms
		}
	}
	c = layertest.New(t, sim.Config{Seed: 1, Latency: time.Millisecond, Jitter: 100 * time.Microsecond, Loss: bs}, 4, relEntries(nil))
	for _, b := range bs {
		b.net = c.Net
	}
	v := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3, 4}}
	c.Install(v)
	sent := map[event.GroupID]map[event.NodeID]uint32{}
	c.CastLoop(1, 1, 300, 10*time.Millisecond, 1000, sent)
	var last event.Time
	for byNak := 0; c.Net.Now() < event.Time(10*time.Second); {
		c.Net.RunUntil(c.Net.Now() + ms)
		if c.ByNak != byNak {
			byNak, last = c.ByNak, c.Net.Now()
		}
	}
	if froze == 0 {
		t.Fatal("node 3 never NAKed: the first burst lost nothing")
	}
	if lost.ended == 0 || deaf.ended == 0 {
		t.Fatalf("the bursts after the thaw never ended (sender %v, node 3 %v)", deaf.ended, lost.ended)
	}
	c.CheckExactlyOnce([]*event.ViewInfo{v}, sent, false)
	// stable_interval 100ms, nak_retry 20ms, two 2ms round trips, as
	// TestBurstOnQuietNodeRecoversInAFewRounds
	const bound = 100*time.Millisecond + 20*time.Millisecond + 2*2*time.Millisecond
	late := time.Duration(last - lost.ended)
	t.Logf("froze at %v for %v; last recovery %v after the burst that followed the thaw ended", time.Duration(froze), freeze, late)
	if late > bound {
		t.Errorf("last recovery %v after the burst that followed the thaw ended (at %v; froze at %v for %v), want within %v",
			late, time.Duration(lost.ended), time.Duration(froze), freeze, bound)
	}
}
