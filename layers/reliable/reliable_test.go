package reliable_test

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/transport/sim"
)

func TestEveryMemberDeliversEveryMessageOnce(t *testing.T) {
	for _, loss := range []float64{0.05, 0.20} {
		t.Run(fmtLoss(loss), func(t *testing.T) {
			c := layertest.New(t, sim.Config{Seed: 11, Latency: time.Millisecond, Jitter: 2 * time.Millisecond, Loss: sim.Uniform{P: loss}}, 9, relEntries(nil))
			c.RunThreeGroups(300, 2*time.Millisecond, false)
			all := c.All()
			if d := c.Counter("reliable", "loss_discovered", all...); d == 0 {
				t.Errorf("loss_discovered = 0 at %v loss", loss)
			}
			if r := c.Counter("reliable", "recovered_nak", all...); r == 0 || int(r) != c.ByNak {
				t.Errorf("recovered_nak = %d, deliveries tagged nak = %d; want equal and > 0", r, c.ByNak)
			}
			for _, id := range all {
				if b := c.Counter("reliable", "buffer_bytes", id); b != 0 {
					t.Errorf("node %v: buffer_bytes = %d after stability, want 0", id, b)
				}
			}
			if dup := c.Counter("reliable", "malformed", all...); dup != 0 {
				t.Errorf("malformed = %d, want 0", dup)
			}
		})
	}
}

func fmtLoss(p float64) string {
	return time.Duration(p * 100).String()[:len(time.Duration(p*100).String())-2] + "pct"
}

func TestTailLossIsRecovered(t *testing.T) {
	var net *sim.Network
	last := event.Time(50 * time.Millisecond)
	loss := layertest.DropWhen{Rx: map[event.NodeID]bool{3: true, 4: true}, On: func() bool {
		return net.Now() >= last && net.Now() < last+event.Time(time.Millisecond)
	}}
	c := layertest.New(t, sim.Config{Seed: 3, Latency: time.Millisecond, Loss: loss}, 4, relEntries(nil))
	net = c.Net
	v := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3, 4}}
	c.Install(v)
	sent := map[event.GroupID]map[event.NodeID]uint32{}
	c.CastLoop(1, 1, 6, 10*time.Millisecond, 10, sent) // casts at 0..50ms; the last one is lost at 3 and 4
	c.Net.RunUntil(last + event.Time(5*time.Millisecond))
	if n := len(c.Got[3][1][1]); n != 5 {
		t.Fatalf("node 3 delivered %d before recovery, want 5 (the last must be lost)", n)
	}
	c.Net.Run(time.Second)
	c.CheckExactlyOnce([]*event.ViewInfo{v}, sent, false)
	if c.ByNak != 2 {
		t.Errorf("%d deliveries recovered by nak, want 2 (the lost tail at two nodes)", c.ByNak)
	}
	// stable_interval 100ms + nak_delay 20ms + a round trip
	if bound := last + event.Time(200*time.Millisecond); c.LastDel > bound {
		t.Errorf("tail recovered at %v, want by %v", c.LastDel, bound)
	}
	if b := c.Counter("reliable", "buffer_bytes", 1); b != 0 {
		t.Errorf("sender buffer_bytes = %d, want 0", b)
	}
	// idle afterwards: no more traffic once everything is stable
	before := c.Net.Stats().Sent
	c.Net.Run(2 * time.Second)
	if after := c.Net.Stats().Sent; after != before {
		t.Errorf("idle group sent %d packets in 2s, want 0", after-before)
	}
}

func TestBackPressureBoundsTheBuffer(t *testing.T) {
	const maxBuf = 20000
	c := layertest.New(t, sim.Config{Seed: 5, Latency: 5 * time.Millisecond, Loss: sim.Uniform{P: 0.05}}, 8, relEntries(map[string]string{"max_buffer": "20000"}))
	v := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3, 4, 5, 6, 7, 8}}
	c.Install(v)
	sent := map[event.GroupID]map[event.NodeID]uint32{}
	c.CastLoop(1, 1, 2000, 100*time.Microsecond, 1000, sent) // 10 MB/s, far above what stability frees (20 KB per digest round)
	c.Net.Run(20 * time.Second)
	if sent[1][1] != 2000 {
		t.Fatalf("sender cast %d of 2000", sent[1][1])
	}
	c.CheckExactlyOnce([]*event.ViewInfo{v}, sent, false)
	if c.Flow[1] == 0 || c.Counter("reliable", "held_off", 1) == 0 {
		t.Errorf("sender was never held off (flow %d)", c.Flow[1])
	}
	if p := c.Counter("reliable", "peak_buffer_bytes", 1); p > maxBuf || p == 0 {
		t.Errorf("peak_buffer_bytes = %d, want in (0, %d]", p, maxBuf)
	}
	if c.Held[1] {
		t.Errorf("sender still held off at the end")
	}
	// a held sender asks for digests every nak_retry instead of waiting
	// for stable_interval (6.6 s here; 11.3 s when members wait for their round)
	t.Logf("last delivery at %v", c.LastDel)
	if bound := event.Time(8 * time.Second); c.LastDel > bound {
		t.Errorf("last delivery at %v, want by %v", c.LastDel, bound)
	}
	if b := c.Counter("reliable", "buffer_bytes", 1); b != 0 {
		t.Errorf("buffer_bytes = %d, want 0", b)
	}
}

func TestDepartedMemberStopsBlockingStability(t *testing.T) {
	c := layertest.New(t, sim.Config{Seed: 9, Latency: time.Millisecond, Loss: sim.Uniform{P: 0.05}}, 5, relEntries(nil))
	v1 := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3, 4, 5}}
	c.Install(v1)
	sent := map[event.GroupID]map[event.NodeID]uint32{}
	c.Net.At(event.Time(20*time.Millisecond), func() { c.Net.Crash(5) })
	c.CastLoop(1, 1, 100, time.Millisecond, 100, sent)
	c.CastLoop(2, 1, 100, time.Millisecond, 100, sent)
	c.Net.Run(2 * time.Second)
	if b := c.Counter("reliable", "buffer_bytes", 1); b == 0 {
		t.Fatalf("buffer_bytes = 0 with a crashed member that never acknowledged; stability must wait for it")
	}
	v2 := &event.ViewInfo{Group: 1, ID: 2, Members: []event.NodeID{1, 2, 3, 4}, Left: []event.NodeID{5}}
	c.Install(v2)
	c.Net.Run(time.Second)
	for _, id := range []event.NodeID{1, 2} {
		if b := c.Counter("reliable", "buffer_bytes", id); b != 0 {
			t.Errorf("node %v: buffer_bytes = %d after the crashed member left, want 0", id, b)
		}
	}
	c.CheckExactlyOnce([]*event.ViewInfo{v2}, sent, false)
	// no NAKs to the departed member's stream any more
	naks := c.Counter("reliable", "naks_sent", 1, 2, 3, 4)
	c.Net.Run(time.Second)
	if n := c.Counter("reliable", "naks_sent", 1, 2, 3, 4); n != naks {
		t.Errorf("%d NAKs sent after the view settled, want 0", n-naks)
	}
}

func TestJoinerGetsMessagesFromItsJoinOn(t *testing.T) {
	c := layertest.New(t, sim.Config{Seed: 21, Latency: time.Millisecond, Jitter: time.Millisecond, Loss: sim.Uniform{P: 0.1}}, 5, relEntries(nil))
	v1 := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3, 4}}
	c.Install(v1)
	sent := map[event.GroupID]map[event.NodeID]uint32{}
	c.CastLoop(1, 1, 50, time.Millisecond, 64, sent)
	c.CastLoop(2, 1, 50, time.Millisecond, 64, sent)
	c.Net.Run(200 * time.Millisecond)
	v2 := &event.ViewInfo{Group: 1, ID: 2, Members: []event.NodeID{1, 2, 3, 4, 5}, Joined: []event.NodeID{5}}
	c.Install(v2)
	// node 3 starts sending only now; 1 and 2 go on
	c.CastLoop(1, 1, 100, time.Millisecond, 64, sent)
	c.CastLoop(2, 1, 100, time.Millisecond, 64, sent)
	c.CastLoop(3, 1, 40, time.Millisecond, 64, sent)
	c.Net.Run(2 * time.Second)
	c.CheckExactlyOnce([]*event.ViewInfo{v1}, sent, false)
	for _, s := range []event.NodeID{1, 2} {
		got := c.Got[5][1][s]
		if len(got) != 50 {
			t.Errorf("joiner delivered %d messages from %v, want the 50 sent after it joined", len(got), s)
		}
		for _, q := range got {
			if q <= 50 {
				t.Errorf("joiner delivered message %d from %v, sent before it joined", q, s)
				break
			}
		}
	}
	if err := layertest.CheckSeqs(c.Got[5][1][3], 40, false); err != nil {
		t.Errorf("joiner, sender 3: %v", err)
	}
	for _, id := range c.All() {
		if b := c.Counter("reliable", "buffer_bytes", id); b != 0 {
			t.Errorf("node %v: buffer_bytes = %d, want 0", id, b)
		}
	}
}

func TestMalformedPacketsAreDroppedAndCounted(t *testing.T) {
	c := layertest.New(t, sim.Config{Seed: 1}, 2, relEntries(nil))
	c.Install(&event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}})
	st := c.Stacks[1]
	bad := []struct {
		kind event.Kind
		b    []byte
	}{
		{event.Cast, nil},
		{event.Cast, []byte{1}}, // short data header
		{event.Cast, []byte{1, 0, 0, 0, 0, 1, 0, 0, 0, 0}},   // short data header
		{event.Cast, append([]byte{1}, make([]byte, 17)...)}, // seq 0
		{event.Cast, []byte{3, 0xc1}},                        // digest, bad msgpack
		{event.Cast, []byte{3, 0x93, 1, 2}},                  // digest, wrong shape
		{event.Send, []byte{4, 0xff, 0xff}},                  // nak, bad msgpack
		{event.Send, []byte{5, 0, 0}},                        // short p2p
		{event.Send, []byte{6, 0}},                           // short ack
		{event.Cast, []byte{99, 1, 2, 3}},                    // unknown type
		{event.Send, []byte{1, 0}},                           // data type on a send
	}
	for _, b := range bad {
		m := st.Counters() // keep the stack alive in the loop
		_ = m
		msg := event.DefaultPool.FromBytes(b.b)
		st.Inject(0, true, event.Event{Kind: b.kind, Group: 1, Peer: 2, Msg: msg})
	}
	if n := c.Counter("reliable", "malformed", 1); n != int64(len(bad)) {
		t.Errorf("malformed = %d, want %d", n, len(bad))
	}
	if n := c.Counter("reliable", "delivered", 1); n != 0 {
		t.Errorf("delivered = %d from garbage, want 0", n)
	}
}

// Point-to-point sends are delivered exactly once and in send order (the
// control protocols above rely on the order) at 20% loss with reordering.
func TestPointToPointSendsAreReliable(t *testing.T) {
	c := layertest.New(t, sim.Config{Seed: 4, Latency: time.Millisecond, Jitter: time.Millisecond, Loss: sim.Uniform{P: 0.2}}, 2, relEntries(nil))
	// point-to-point state is only for members of a group we share
	c.Install(&event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}})
	const n = 300
	var next uint32 = 1
	var step func()
	step = func() {
		if err := c.Stacks[1].Send(2, layertest.Payload(next, 32)); err == nil {
			next++
		}
		if next <= n {
			c.Net.After(200*time.Microsecond, step)
		}
	}
	c.Net.At(0, step)
	c.Net.Run(5 * time.Second)
	if err := layertest.CheckSeqs(c.Got[2][event.NoGroup][1], n, true); err != nil {
		t.Errorf("point-to-point: %v", err)
	}
	if r := c.Counter("reliable", "p2p_retransmissions", 1); r == 0 {
		t.Errorf("no retransmissions at 20%% loss")
	}
	if c.Counter("reliable", "buffer_bytes", 1) != 0 {
		t.Errorf("buffer_bytes counts point-to-point sends")
	}
}

func TestSameSeedSameRun(t *testing.T) {
	run := func() (int64, int64) {
		c := layertest.New(t, sim.Config{Seed: 77, Latency: time.Millisecond, Jitter: 2 * time.Millisecond, Loss: sim.Uniform{P: 0.1}}, 9, relEntries(nil))
		for _, v := range layertest.ThreeGroups() {
			c.Install(v)
		}
		sent := map[event.GroupID]map[event.NodeID]uint32{}
		c.CastLoop(1, 1, 100, time.Millisecond, 100, sent)
		c.CastLoop(9, 2, 100, time.Millisecond, 100, sent)
		c.Net.Run(2 * time.Second)
		return c.Counter("reliable", "naks_sent", c.All()...), c.Net.Stats().Sent
	}
	a1, b1 := run()
	a2, b2 := run()
	if a1 != a2 || b1 != b2 {
		t.Errorf("two runs with one seed differ: naks %d/%d, packets %d/%d", a1, a2, b1, b2)
	}
}

var _ stack.Layer // keep the import used if tests change

// A joiner that misses everything a sender cast in the view it joined, and
// first hears from it in a later view, learns where the sender's stream
// starts for it from the sender's digest and recovers the rest by NAK.
func TestJoinerLearnsFloorFromDigest(t *testing.T) {
	c, sent := layertest.JoinerMissesAView(t, 0, relEntries(nil), 1)
	c.CastLoop(1, 1, 60, time.Millisecond, 64, sent) // 41..60, tagged view 3
	c.Net.Run(2 * time.Second)
	if err := layertest.CheckSeqs(shift(c.Got[5][1][1], 20), 40, false); err != nil {
		t.Errorf("joiner: %v", err)
	}
	if c.Counter("reliable", "buffer_bytes", 1) != 0 {
		t.Errorf("sender buffer not freed")
	}
}

// shift subtracts k from every sequence number (values not above k become 0).
func shift(s []uint32, k uint32) []uint32 {
	out := make([]uint32, len(s))
	for i, v := range s {
		if v > k {
			out[i] = v - k
		}
	}
	return out
}

// lecTagger stands for a proactive recovery layer below reliable (LEC): it
// tags every multicast it passes up as recovered by it.
type lecTagger struct{ stack.Base }

func (l *lecTagger) Up(ev *event.Event) {
	if ev.Kind == event.Cast && ev.Msg != nil {
		ev.Msg.Recovery = event.Recovery{By: "lec", Discovered: 1}
	}
	l.Ctx.Up(ev)
}

// With Ricochet's settings (nak_delay 100ms, nak_retry 50ms) under a lower
// layer that tags messages, reliable keeps the lower layer's tag.
func TestLowerLayersRecoveryTagIsKept(t *testing.T) {
	mk := func() []stack.Entry {
		e := relEntries(map[string]string{"nak_delay": "100ms", "nak_retry": "50ms"})()
		return append(e, stack.Entry{Name: "lec", Layer: &lecTagger{}})
	}
	c := layertest.New(t, sim.Config{Seed: 6, Latency: time.Millisecond, Loss: sim.Uniform{P: 0.1}}, 4, mk)
	v := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3, 4}}
	c.Install(v)
	sent := map[event.GroupID]map[event.NodeID]uint32{}
	c.CastLoop(1, 1, 200, time.Millisecond, 32, sent)
	c.Net.Run(3 * time.Second)
	c.CheckExactlyOnce([]*event.ViewInfo{v}, sent, false)
	if c.ByTag["lec"] != 3*200 || c.ByNak != 0 {
		t.Errorf("deliveries tagged lec %d, nak %d; want 600 and 0 (the lower layer's tag is kept)", c.ByTag["lec"], c.ByNak)
	}
	if r := c.Counter("reliable", "retransmissions", 1); r == 0 {
		t.Errorf("no retransmissions at 10%% loss")
	}
}

// FuzzPacketUp feeds arbitrary bytes to reliable as multicasts and sends
// from a member: it must never panic, and it delivers nothing it cannot
// parse as a data or point-to-point header.
func FuzzPacketUp(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1}, true)
	f.Add([]byte{3, 1, 1, 3, 2, 2, 5, 0, 1, 3, 1}, true)
	f.Add([]byte{4, 0x82, 0xa1, 'g', 1, 0xa1, 'r', 0x92, 1, 0xce, 0xff, 0xff, 0xff, 0xff}, false)
	f.Add([]byte{5, 0, 0, 0, 0, 1, 0, 0, 0, 1}, false)
	f.Add([]byte{6, 0, 0, 0, 9}, false)
	f.Fuzz(func(t *testing.T, b []byte, cast bool) {
		c := layertest.New(t, sim.Config{Seed: 1}, 2, relEntries(nil))
		c.Lax = true
		c.Install(&event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}})
		_ = c.Stacks[1].Cast(1, layertest.Payload(1, 8))
		k := event.Send
		if cast {
			k = event.Cast
		}
		c.Stacks[1].Inject(0, true, event.Event{Kind: k, Group: 1, Peer: 2, Msg: event.DefaultPool.FromBytes(b)})
		c.Net.Run(time.Second)
	})
}

func TestNonMembersAreIgnored(t *testing.T) {
	c := layertest.New(t, sim.Config{Seed: 1, Latency: time.Millisecond}, 3, relEntries(nil))
	c.Install(&event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}})
	// node 3 has its own idea of the group and casts into it
	c.Stacks[3].InstallView(&event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3}})
	sent := map[event.GroupID]map[event.NodeID]uint32{}
	c.CastLoop(3, 1, 5, time.Millisecond, 8, sent)
	c.Net.Run(500 * time.Millisecond)
	for _, id := range []event.NodeID{1, 2} {
		if n := len(c.Got[id][1][3]); n != 0 {
			t.Errorf("node %v delivered %d messages from a non-member", id, n)
		}
		if n := c.Counter("reliable", "non_member", id); n < 5 {
			t.Errorf("node %v: non_member = %d, want at least 5", id, n)
		}
	}
}

// Sends to a node that crashed stop once no group of ours has it any more.
func TestSendsToADepartedNodeStop(t *testing.T) {
	c := layertest.New(t, sim.Config{Seed: 2, Latency: time.Millisecond}, 3, relEntries(nil))
	c.Install(&event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3}})
	c.Net.Crash(3)
	c.Net.At(0, func() {
		for i := uint32(1); i <= 5; i++ {
			if err := c.Stacks[1].Send(3, layertest.Payload(i, 8)); err != nil {
				t.Error(err)
			}
		}
	})
	c.Net.Run(500 * time.Millisecond)
	if r := c.Counter("reliable", "p2p_retransmissions", 1); r == 0 {
		t.Fatalf("no retransmissions to the crashed node")
	}
	v2 := &event.ViewInfo{Group: 1, ID: 2, Members: []event.NodeID{1, 2}}
	c.Net.At(c.Net.Now(), func() { c.Install(v2) })
	c.Net.Run(time.Millisecond)
	if g := c.Counter("reliable", "p2p_given_up", 1); g != 5 {
		t.Errorf("p2p_given_up = %d, want 5", g)
	}
	r := c.Counter("reliable", "p2p_retransmissions", 1)
	c.Net.Run(time.Second)
	if n := c.Counter("reliable", "p2p_retransmissions", 1); n != r {
		t.Errorf("%d retransmissions to the departed node after the view", n-r)
	}
}

// Issue 8 item 2: a node removed and re-admitted (R1-R3 of the rejoin
// contract) gets everything cast after its re-admission and its casts reach
// the others, with no duplicate and no stall, whichever views it and the
// others saw.
func TestRejoinAfterRemoval(t *testing.T) {
	layertest.TestRejoin(t, relEntries(nil), false, "reliable")
}
