package fifo_test

import (
	"slices"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/transport/sim"
)

func TestEveryMemberDeliversInSendOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		loss float64
	}{{"5pct", 0.05}, {"20pct", 0.20}} {
		t.Run(tc.name, func(t *testing.T) {
			c := layertest.New(t, sim.Config{Seed: 12, Latency: time.Millisecond, Jitter: 3 * time.Millisecond, Loss: sim.Uniform{P: tc.loss}}, 9, fifoEntries(nil))
			c.RunThreeGroups(300, time.Millisecond, true)
			all := c.All()
			if r := c.Counter("fifo", "reordered", all...); r == 0 {
				t.Errorf("reordered = 0: the test did not exercise the reorder buffer")
			}
			for _, id := range all {
				if b := c.Counter("fifo", "buffer_bytes", id); b != 0 {
					t.Errorf("node %v: fifo still holds %d bytes", id, b)
				}
				if b := c.Counter("reliable", "buffer_bytes", id); b != 0 {
					t.Errorf("node %v: reliable still holds %d bytes", id, b)
				}
			}
			if p := c.Counter("fifo", "peak_buffer_bytes", all...); p == 0 {
				t.Errorf("peak_buffer_bytes = 0")
			}
			t.Logf("loss %v: loss_discovered %d, recovered_nak %d, naks %d, retransmissions %d, digests %d, reordered %d, last delivery %v",
				tc.loss, c.Counter("reliable", "loss_discovered", all...), c.Counter("reliable", "recovered_nak", all...),
				c.Counter("reliable", "naks_sent", all...), c.Counter("reliable", "retransmissions", all...),
				c.Counter("reliable", "stability_msgs", all...), c.Counter("fifo", "reordered", all...), c.LastDel)
		})
	}
}

// A joiner delivers, in order, exactly what each sender cast from its
// joining on, including when it first hears from a sender in a later view
// (reliable below then learns where the stream starts from the sender's
// digest, and fifo starts where reliable says).
func TestJoinerStartsWhereItJoined(t *testing.T) {
	c, sent := layertest.JoinerMissesAView(t, time.Millisecond, fifoEntries(nil), 1, 2)
	// 41..100, tagged view 3, slowly: some reach node 5 before 21..40 are
	// recovered, so its stream must start at 21, not at what arrives first
	c.CastLoop(1, 1, 100, 5*time.Millisecond, 64, sent)
	c.CastLoop(2, 1, 50, time.Millisecond, 64, sent) // 21..50: sender 2 cast nothing in view 2
	c.Net.Run(2 * time.Second)
	for s, first := range map[event.NodeID]uint32{1: 21, 2: 21} {
		got := c.Got[5][1][s]
		want := sent[1][s] - first + 1
		if uint32(len(got)) != want {
			t.Errorf("joiner delivered %d messages from %v, want %d", len(got), s, want)
			continue
		}
		for i, q := range got {
			if q != first+uint32(i) {
				t.Errorf("joiner, sender %v: delivery %d is message %d, want %d", s, i, q, first+uint32(i))
				break
			}
		}
	}
	c.CheckExactlyOnce([]*event.ViewInfo{{Group: 1, Members: []event.NodeID{2, 3}}}, sent, true)
}

// A sender that leaves while a receiver holds its later messages behind a
// gap: the receiver releases them.
func TestDepartedSenderIsReleased(t *testing.T) {
	var net *sim.Network
	loss := layertest.DropWhen{Rx: map[event.NodeID]bool{2: true}, On: func() bool {
		return net.Now() >= event.Time(10*time.Millisecond) && net.Now() < event.Time(11*time.Millisecond)
	}}
	c := layertest.New(t, sim.Config{Seed: 2, Latency: time.Millisecond, Loss: loss}, 3, fifoEntries(nil))
	net = c.Net
	v1 := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3}}
	c.Install(v1)
	sent := map[event.GroupID]map[event.NodeID]uint32{}
	c.CastLoop(3, 1, 20, time.Millisecond, 64, sent)
	c.Net.At(event.Time(12*time.Millisecond), func() { c.Net.Crash(3) })
	c.Net.Run(500 * time.Millisecond)
	if b := c.Counter("fifo", "buffer_bytes", 2); b == 0 {
		t.Fatalf("node 2 holds nothing behind the lost message; the test needs it to")
	}
	v2 := &event.ViewInfo{Group: 1, ID: 2, Members: []event.NodeID{1, 2}}
	c.Install(v2)
	if b := c.Counter("fifo", "buffer_bytes", 2); b != 0 {
		t.Errorf("node 2 still holds %d bytes of a departed sender", b)
	}
	if r := c.Counter("fifo", "released", 2); r == 0 {
		t.Errorf("released = 0")
	}
	naks := c.Counter("reliable", "naks_sent", 1, 2)
	c.Net.Run(time.Second)
	if n := c.Counter("reliable", "naks_sent", 1, 2); n != naks {
		t.Errorf("%d NAKs to the departed sender after the view", n-naks)
	}
}

// A sequenced cast whose stream start does not fit its number (a broken
// layer below) is dropped and counted, never ordered; a cast without a
// number passes up.
func TestInconsistentSequenceIsDropped(t *testing.T) {
	c := layertest.New(t, sim.Config{Seed: 1}, 2, fifoAlone(nil))
	c.Install(&event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}})
	bad := []event.Event{layertest.SeqCast(1, 2, 1, 0, 8), layertest.SeqCast(1, 2, 3, 4, 8)}
	for _, ev := range bad {
		c.Stacks[1].Inject(0, true, ev)
	}
	if n := c.Counter("fifo", "malformed", 1); n != int64(len(bad)) {
		t.Errorf("malformed = %d, want %d", n, len(bad))
	}
	if n := c.Counter("fifo", "delivered", 1); n != 0 {
		t.Errorf("delivered = %d, want 0", n)
	}
	pass := layertest.SeqCast(1, 2, 0, 0, 8)
	c.Stacks[1].Inject(0, true, pass)
	if n := c.Counter("fifo", "malformed", 1); n != int64(len(bad)) {
		t.Errorf("an unsequenced cast counted malformed")
	}
}

// The baseline scenario's shape: 16 nodes, each in 4 of 8 groups of 8,
// every member casting, 5% loss with jitter.
func TestBaselineShape(t *testing.T) {
	const nodes, groups, size = 16, 8, 8
	c := layertest.New(t, sim.Config{Seed: 31, Latency: 500 * time.Microsecond, Jitter: time.Millisecond, Loss: sim.Uniform{P: 0.05}}, nodes, fifoEntries(nil))
	var views []*event.ViewInfo
	for g := 0; g < groups; g++ {
		v := &event.ViewInfo{Group: event.GroupID(g + 1), ID: 1}
		for k := 0; k < size; k++ {
			v.Members = append(v.Members, event.NodeID((g*2+k)%nodes+1))
		}
		slices.Sort(v.Members)
		views = append(views, v)
		c.Install(v)
	}
	sent := map[event.GroupID]map[event.NodeID]uint32{}
	for _, v := range views {
		for _, s := range v.Members {
			c.CastLoop(s, v.Group, 200, 10*time.Millisecond, 100, sent) // 100 msgs/s per sender per group, 2s
		}
	}
	c.Net.Run(4 * time.Second)
	c.CheckExactlyOnce(views, sent, true)
	if bound := event.Time(2*time.Second + 500*time.Millisecond); c.LastDel > bound {
		t.Errorf("last delivery at %v, want by %v", c.LastDel, bound)
	}
	for _, id := range c.All() {
		if b := c.Counter("reliable", "buffer_bytes", id); b != 0 {
			t.Errorf("node %v: reliable still holds %d bytes", id, b)
		}
	}
}

// FuzzFifoUp feeds fifo arbitrary sequenced casts (sender, number, stream
// start) and views: no panic, each sender's deliveries in increasing order,
// and nothing held after Close.
func FuzzFifoUp(f *testing.F) {
	f.Add([]byte{2, 2, 1, 2, 1, 1, 3, 5, 5})
	f.Add([]byte{2, 9, 1, 2, 0, 0, 2, 1, 2, 255, 4, 1})
	f.Add([]byte{2, 3, 3, 0, 2, 2, 2, 2, 1, 200, 1, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		c := layertest.New(t, sim.Config{Seed: 1}, 3, fifoAlone(map[string]string{"max_reorder": "8"}))
		c.Lax = true
		c.Install(&event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3}})
		restart := 0 // node 2's deliveries before its latest re-admission
		for ; len(b) >= 3; b = b[3:] {
			if b[0] == 0 {
				restart = len(c.Got[1][1][2])
				// node 2 leaves or, with b[1] odd, is re-admitted
				v := &event.ViewInfo{Group: 1, ID: uint64(len(b)) + 1, Members: []event.NodeID{1, 3}}
				if b[1]&1 != 0 {
					v.Members, v.Joined = []event.NodeID{1, 2, 3}, []event.NodeID{2}
				}
				c.Stacks[1].InstallView(v)
				continue
			}
			// numbers from 1: an unnumbered cast passes up unordered
			c.Stacks[1].Inject(0, true, layertest.SeqCast(1, event.NodeID(b[0]), uint32(b[1])+1, uint32(b[2]), 8))
		}
		for s, got := range c.Got[1][1] {
			if s == 2 {
				got = got[restart:]
			}
			for i := 1; i < len(got); i++ {
				if got[i] <= got[i-1] {
					t.Fatalf("sender %v: delivered %d after %d", s, got[i], got[i-1])
				}
			}
		}
		c.Stacks[1].Close()
		if n := c.Counter("fifo", "buffer_bytes", 1); n != 0 {
			t.Errorf("%d bytes held after Close", n)
		}
	})
}

// Issue 8 item 2: a node removed and re-admitted (R1-R3 of the rejoin
// contract) gets everything cast after its re-admission and its casts reach
// the others, in send order, with no duplicate and nothing left held,
// whichever views it and the others saw.
func TestRejoinAfterRemoval(t *testing.T) {
	layertest.TestRejoin(t, fifoEntries(nil), true, "reliable", "fifo")
}
