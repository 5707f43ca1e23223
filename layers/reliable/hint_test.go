package reliable

import (
	"bytes"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/transport/sim"
)

// lowerProbe sits below reliable as lec would: it keeps the data casts it
// passes up (as passed up) and the loss hints reliable sends down.
type lowerProbe struct {
	stack.Base
	up    [][]byte
	found []event.LostRange
	bytes [][]byte
}

func (p *lowerProbe) Up(ev *event.Event) {
	if ev.Kind == event.Cast {
		p.up = append(p.up, bytes.Clone(ev.Msg.Bytes()))
	}
	p.Ctx.Up(ev)
}

func (p *lowerProbe) Down(ev *event.Event) {
	if ev.Kind != event.LossHint {
		p.Ctx.Down(ev)
		return
	}
	p.found = append(p.found, *ev.Lost)
	p.bytes = append(p.bytes, bytes.Clone(ev.Msg.Bytes()))
	ev.Msg.Release()
}

// hintPair is the two-node cluster the hint tests share (seed 3, 1 ms
// latency, group 1 of nodes 1 and 2, view installed): a packet to a node
// in rx is lost while lost holds at the network's time, and reliable runs
// with params.
func hintPair(t *testing.T, rx []event.NodeID, lost func(now event.Time) bool, params map[string]string) (*layertest.Cluster, *event.ViewInfo) {
	t.Helper()
	var net *sim.Network
	drop := map[event.NodeID]bool{}
	for _, id := range rx {
		drop[id] = true
	}
	loss := layertest.DropWhen{Rx: drop, On: func() bool { return lost(net.Now()) }}
	c := layertest.New(t, sim.Config{Seed: 3, Latency: time.Millisecond, Loss: loss}, 2,
		layertest.Registered(map[string]map[string]string{"reliable": params}, "reliable"))
	net = c.Net
	v := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}}
	c.Install(v)
	return c, v
}

// giveHint runs the network until at and hands node 2's reliable a loss
// hint from below: r of sender 1's casts to group 1, anchored by msg (nil:
// no anchor).
func giveHint(c *layertest.Cluster, at event.Time, msg *event.Message, r event.LostRange) {
	c.Net.RunUntil(at)
	c.Net.Node(2).Now() // the network reschedules the timers this sets
	c.Stacks[2].Inject(0, true, event.Event{Kind: event.LossHint, Group: 1, Peer: 1, Msg: msg, Lost: &r})
}

// A loss hint from below (lec read a repair naming the lost tail) makes
// reliable NAK the tail nak_delay later, without waiting for a digest
// (here 10 s apart) or the sender's next cast; the lower layer's numbers
// (ours plus 100) are mapped through the anchor. The retransmission goes
// back down in the lower layer's numbering, with the header the original
// carried.
func TestLossHintNAKsAtOnce(t *testing.T) {
	var net *sim.Network
	last := event.Time(50 * time.Millisecond)
	loss := layertest.DropWhen{Rx: map[event.NodeID]bool{2: true}, On: func() bool {
		return net.Now() >= last && net.Now() < last+event.Time(time.Millisecond)
	}}
	probes := map[int]*lowerProbe{}
	n := 0
	mk := func() []stack.Entry {
		n++
		probes[n] = &lowerProbe{}
		es := layertest.Registered(map[string]map[string]string{"reliable": {"stable_interval": "10s", "nak_delay": "20ms"}}, "reliable")()
		return append(es, stack.Entry{Name: "probe", Layer: probes[n]})
	}
	c := layertest.New(t, sim.Config{Seed: 3, Latency: time.Millisecond, Loss: loss}, 2, mk)
	net = c.Net
	v := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}}
	c.Install(v)
	sent := map[event.GroupID]map[event.NodeID]uint32{}
	c.CastLoop(1, 1, 6, 10*time.Millisecond, 10, sent) // the sixth, at 50 ms, is lost at node 2
	hintAt := last + event.Time(5*time.Millisecond)
	c.Net.RunUntil(hintAt)
	p := probes[2]
	if len(p.up) != 5 {
		t.Fatalf("node 2 got %d casts before the hint, want 5", len(p.up))
	}
	anchor := event.DefaultPool.FromBytes(p.up[4]) // our seq 5, its 105
	giveHint(c, hintAt, anchor, event.LostRange{First: 106, End: 107, Bounded: true})
	c.Net.Run(time.Second)
	c.CheckExactlyOnce([]*event.ViewInfo{v}, sent, false)
	if bound := hintAt + event.Time(25*time.Millisecond); c.ByNak != 1 || c.LastDel > bound {
		t.Errorf("tail recovered by nak %d times, at %v; want once by %v (hint + nak_delay + a round trip)", c.ByNak, c.LastDel, bound)
	}
	if got := c.Counter("reliable", "loss_hinted", 2); got != 1 {
		t.Errorf("loss_hinted = %d, want 1", got)
	}
	if len(p.found) != 1 || p.found[0] != (event.LostRange{First: 106, End: 107, Bounded: true}) {
		t.Fatalf("handed down %+v, want the retransmission as the lower layer's 106", p.found)
	}
	h, err := parseData(p.bytes[0])
	if err != nil || h.seq != 6 || h.flags&flagRetrans != 0 {
		t.Errorf("handed down header %+v (%v), want seq 6 without the retransmission flag", h, err)
	}
}

// A hint about a sender nothing has come from yet (its first cast lost)
// cannot be mapped: nak_delay after the hint the receiver asks that sender
// for everything it holds, which places the stream, rather than wait for a
// digest (here 10 s apart). Each case casts from node 1 and hints at 5 ms
// that its first cast is lost at node 2:
//   - first contact: one cast; the ask recovers it a round trip on.
//   - asked again: the first ask is lost at the sender; the ask is repeated
//     nak_retry later, as any NAK (before, it went once, and the first cast
//     waited for the digest or the sender's next cast).
//   - placed first: the sender's second cast places the stream 45 ms after
//     the hint, and the gap it shows is NAKed nak_delay after the hint, not
//     after its placement (before, 100 ms after that); no ask is made.
func TestLossHintUnplacedAsks(t *testing.T) {
	hintAt := event.Time(5 * time.Millisecond)
	firstAsk := hintAt + event.Time(20*time.Millisecond) // nak_delay on
	for _, tc := range []struct {
		name   string
		rx     []event.NodeID
		lost   func(now event.Time) bool
		params map[string]string
		casts  int
		gap    time.Duration
		by     event.Time // the first cast recovered by then
		byWhy  string
		asks   int64 // unplaced_asks at node 2
		asksOf string
	}{{
		name: "first contact", rx: []event.NodeID{2}, lost: func(now event.Time) bool { return now < event.Time(time.Millisecond) },
		params: map[string]string{"stable_interval": "10s", "nak_delay": "20ms"}, casts: 1, gap: time.Millisecond,
		by: hintAt + event.Time(25*time.Millisecond), byWhy: "hint + nak_delay + a round trip", asks: 1, asksOf: "the one ask",
	}, {
		name: "asked again", rx: []event.NodeID{1, 2}, lost: func(now event.Time) bool {
			return now < event.Time(time.Millisecond) || // the cast, at node 2
				now >= firstAsk && now < firstAsk+event.Time(2*time.Millisecond) // the ask, at node 1
		},
		params: map[string]string{"stable_interval": "10s", "nak_delay": "20ms", "nak_retry": "20ms"}, casts: 1, gap: time.Millisecond,
		by: firstAsk + event.Time(25*time.Millisecond), byWhy: "the lost ask + nak_retry + a round trip", asks: 2, asksOf: "the lost one and its retry",
	}, {
		name: "placed first", rx: []event.NodeID{2}, lost: func(now event.Time) bool { return now < event.Time(time.Millisecond) },
		params: map[string]string{"stable_interval": "10s", "nak_delay": "100ms"}, casts: 2, gap: 50 * time.Millisecond,
		by: hintAt + event.Time(105*time.Millisecond), byWhy: "hint + nak_delay + a round trip", asks: 0, asksOf: "the stream was placed before the ask was due",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c, v := hintPair(t, tc.rx, tc.lost, tc.params)
			sent := map[event.GroupID]map[event.NodeID]uint32{}
			c.CastLoop(1, 1, tc.casts, tc.gap, 10, sent) // the first lost at node 2
			giveHint(c, hintAt, nil, event.LostRange{First: 1, End: 2, Bounded: true})
			c.Net.Run(time.Second)
			c.CheckExactlyOnce([]*event.ViewInfo{v}, sent, false)
			if c.LastDel == 0 || c.LastDel > tc.by {
				t.Errorf("first cast recovered at %v, want by %v (%s)", c.LastDel, tc.by, tc.byWhy)
			}
			if got := c.Counter("reliable", "unplaced_asks", 2); got != tc.asks {
				t.Errorf("unplaced_asks = %d, want %d (%s)", got, tc.asks, tc.asksOf)
			}
		})
	}
}

// FuzzLossHint hands reliable a loss hint with arbitrary anchor bytes (a
// lower layer's copy of a packet from the network) and numbers: it must
// never panic, and every message is still delivered exactly once.
func FuzzLossHint(f *testing.F) {
	hdr := make([]byte, dataHeaderSize+4)
	putData(hdr, dataHeader{view: 1, baseView: 1, base: 1, seq: 2})
	f.Add(hdr, uint32(103), uint32(104), true)
	f.Add(hdr, uint32(0), uint32(1<<31), true)
	f.Add([]byte{1, 0, 0}, uint32(5), uint32(4), false)
	f.Add([]byte{}, uint32(1), uint32(2), true)
	f.Fuzz(func(t *testing.T, anchor []byte, first, end uint32, bounded bool) {
		c := layertest.New(t, sim.Config{Seed: 1, Latency: time.Millisecond}, 2, layertest.Registered(map[string]map[string]string{"reliable": {"nak_delay": "5ms"}}, "reliable"))
		v := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}}
		c.Install(v)
		sent := map[event.GroupID]map[event.NodeID]uint32{}
		c.CastLoop(1, 1, 3, time.Millisecond, 8, sent)
		var m *event.Message
		if len(anchor) > 0 {
			m = event.DefaultPool.FromBytes(anchor)
		}
		giveHint(c, event.Time(10*time.Millisecond), m, event.LostRange{First: first, End: end, Bounded: bounded})
		c.Net.Run(time.Second)
		c.CheckExactlyOnce([]*event.ViewInfo{v}, sent, false)
	})
}

// A stream that a hint named before it was placed is NAKed nak_delay after
// The asks for an unplaced stream are bounded: each can cost the sender
// max_nak_retrans retransmissions, so after nak_max_tries unanswered ones
// (here the sender hears nothing) the stream waits for the sender's digest.
func TestLossHintAsksBounded(t *testing.T) {
	c, _ := hintPair(t, []event.NodeID{1, 2}, func(now event.Time) bool {
		return now < event.Time(time.Millisecond) || now > event.Time(2*time.Millisecond)
	}, map[string]string{"stable_interval": "10s", "nak_delay": "20ms", "nak_max_tries": "4"})
	c.Caster(1, 1)(1)
	giveHint(c, event.Time(5*time.Millisecond), nil, event.LostRange{First: 1, End: 2, Bounded: true})
	c.Net.RunUntil(event.Time(5 * time.Second))
	if got := c.Counter("reliable", "unplaced_asks", 2); got != 4 {
		t.Errorf("unplaced_asks = %d, want nak_max_tries (4)", got)
	}
}
