package reliable_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/transport/sim"
)

// packetBurst loses the next n packets that arrive at node rx from time at
// on, whatever they are (data, digests, NAKs, retransmissions), as
// Ricochet's bursty model loses them; ended is when the first packet after
// them got through.
type packetBurst struct {
	net   *sim.Network
	rx    event.NodeID
	at    event.Time
	n     int
	ended event.Time
}

func (b *packetBurst) Drop(rx event.NodeID, _ *rand.Rand) bool {
	if rx != b.rx || b.net.Now() < b.at {
		return false
	}
	if b.n > 0 {
		b.n--
		return true
	}
	if b.ended == 0 {
		b.ended = b.net.Now()
	}
	return false
}

// bursts are several packetBursts at once.
type bursts []*packetBurst

func (bs bursts) Drop(rx event.NodeID, r *rand.Rand) bool {
	drop := false
	for _, b := range bs {
		drop = b.Drop(rx, r) || drop
	}
	return drop
}

// burstRun is one quiet group: node 1 casts 1 KB every gap (count casts in
// all) to nodes 2-4 while the bursts lose packets. It returns the cluster,
// what was sent and when the last message recovered by NAK was delivered
// (to the millisecond).
func burstRun(t *testing.T, seed uint64, bs bursts, count int, gap time.Duration) (*layertest.Cluster, *event.ViewInfo, map[event.GroupID]map[event.NodeID]uint32, event.Time) {
	c := layertest.New(t, sim.Config{Seed: seed, Latency: time.Millisecond, Jitter: 100 * time.Microsecond, Loss: bs}, 4, relEntries(nil))
	for _, b := range bs {
		b.net = c.Net
	}
	v := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3, 4}}
	c.Install(v)
	sent := map[event.GroupID]map[event.NodeID]uint32{}
	c.CastLoop(1, 1, count, gap, 1000, sent)
	var last event.Time
	for byNak := 0; c.Net.Now() < event.Time(10*time.Second); {
		c.Net.RunUntil(c.Net.Now() + event.Time(time.Millisecond))
		if c.ByNak != byNak {
			byNak, last = c.ByNak, c.Net.Now()
		}
	}
	return c, v, sent, last
}

// TestBurstOnQuietNodeRecoversInAFewRounds: a burst of 20 to 50 packets
// lost at a node that hears little (a group at 100 casts a second) is
// recovered within a digest interval and a NAK round of the burst's end,
// wherever it falls: in the middle of a stream, over its tail (only digests
// then reveal the loss, and they are lost too), or at the sender while a
// receiver lost data (every NAK and digest the sender would hear is lost:
// the receiver backs off, and must not still be backed off, nor hold a
// round trip inflated by the outage, when the sender hears again).
func TestBurstOnQuietNodeRecoversInAFewRounds(t *testing.T) {
	const gap = 10 * time.Millisecond
	// stable_interval 100ms, nak_retry 20ms, two 2ms round trips
	const bound = 100*time.Millisecond + 20*time.Millisecond + 2*2*time.Millisecond
	const ms = event.Time(time.Millisecond)
	type tc struct {
		name string
		bs   bursts // the first one's end counts
	}
	var cases []tc
	for _, n := range []int{20, 35, 50} {
		cases = append(cases,
			tc{fmt.Sprintf("mid-stream/%d", n), bursts{{rx: 3, at: 500 * ms, n: n}}},
			// the sender's last cast goes at 1.99 s
			tc{fmt.Sprintf("tail/%d", n), bursts{{rx: 3, at: 1990*ms - ms/2, n: n}}})
		for _, lost := range []int{5, 30} {
			for _, off := range []event.Time{0, 40 * ms, 80 * ms, 100 * ms, 160 * ms} {
				// the sender deaf from 500 ms; node 3 loses data soon after
				cases = append(cases, tc{fmt.Sprintf("sender/%d/lost%d/+%v", n, lost, time.Duration(off)),
					bursts{{rx: 1, at: 500 * ms, n: n}, {rx: 3, at: 510*ms + off, n: lost}}})
			}
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, v, sent, last := burstRun(t, 1, tc.bs, 200, gap)
			c.CheckExactlyOnce([]*event.ViewInfo{v}, sent, false)
			b := tc.bs[0]
			if b.ended == 0 {
				t.Fatalf("burst of %d at n%v never ended", b.n, b.rx)
			}
			if c.ByNak == 0 {
				t.Fatalf("nothing recovered by NAK: the burst lost no data")
			}
			if late := time.Duration(last - b.ended); late > bound {
				t.Errorf("last recovery %v after the burst ended (at %v), want within %v", late, time.Duration(b.ended), bound)
			}
		})
	}
}

// TestSenderStaysWithinTheReceiversWindow: a sender whose buffer holds many
// more messages than a receiver's window (max_buffer 64MB of 100-byte
// casts, window 64) does not run further ahead of the slowest member than
// the window: nothing it sends is dropped beyond a receiver's window and
// asked for again. Before, what lay beyond was dropped and resent, round
// after round (over UDP at 10% loss, a sender with a 32 MB buffer made
// more retransmissions than deliveries).
func TestSenderStaysWithinTheReceiversWindow(t *testing.T) {
	c := layertest.New(t, sim.Config{Seed: 4, Latency: time.Millisecond, Jitter: 100 * time.Microsecond, Loss: sim.Uniform{P: 0.05}}, 4,
		relEntries(map[string]string{"max_buffer": "64MB", "window": "64"}))
	v := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3, 4}}
	c.Install(v)
	sent := map[event.GroupID]map[event.NodeID]uint32{}
	c.CastLoop(1, 1, 3000, 20*time.Microsecond, 100, sent)
	c.Net.Run(20 * time.Second)
	if sent[1][1] != 3000 {
		t.Fatalf("sender cast %d of 3000", sent[1][1])
	}
	c.CheckExactlyOnce([]*event.ViewInfo{v}, sent, false)
	rx := []event.NodeID{2, 3, 4}
	if n := c.Counter("reliable", "out_of_window", rx...); n != 0 {
		t.Errorf("out_of_window = %d at the receivers, want 0", n)
	}
	if r, l := c.Counter("reliable", "retransmissions", 1), c.Counter("reliable", "loss_discovered", rx...); r > 2*l {
		t.Errorf("retransmissions = %d for %d losses discovered, want at most twice as many", r, l)
	}
	if c.Flow[1] == 0 {
		t.Errorf("sender never held off: the window bound never applied")
	}
}

// TestRetriesFollowAFastPath: on a path of 100us (a LAN, a loopback) at
// 20% loss, NAK rounds after the first come at the measured round trip's
// timeout (at least nak_retry_min), not every nak_retry: everything lost is
// back within 50ms of the last cast (490ms before). Before,
// every further round waited nak_retry (20 ms), and over UDP at 10% loss
// the sender's window was held that long per round.
func TestRetriesFollowAFastPath(t *testing.T) {
	c := layertest.New(t, sim.Config{Seed: 6, Latency: 100 * time.Microsecond, Jitter: 20 * time.Microsecond, Loss: sim.Uniform{P: 0.2}}, 4, relEntries(nil))
	v := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3, 4}}
	c.Install(v)
	sent := map[event.GroupID]map[event.NodeID]uint32{}
	const n, gap = 1000, 50 * time.Microsecond
	c.CastLoop(1, 1, n, gap, 1000, sent)
	c.Net.Run(5 * time.Second)
	c.CheckExactlyOnce([]*event.ViewInfo{v}, sent, false)
	if c.ByNak == 0 {
		t.Fatal("nothing recovered by NAK")
	}
	lastCast := event.Time(time.Duration(n-1) * gap)
	// nak_delay 20ms, one nak_retry (20ms) if a stream's first round was
	// lost before it measured the round trip, then rounds of about 1ms
	if bound := lastCast + event.Time(50*time.Millisecond); c.LastDel > bound {
		t.Errorf("last delivery %v after the last cast, want within 50ms", time.Duration(c.LastDel-lastCast))
	}
}
