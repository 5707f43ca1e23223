package reliable

import (
	"bytes"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/layertest"
	"github.com/layercast/layercast/stack"
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
	c.Net.Node(2).Now()                            // the network reschedules the timers this sets
	c.Stacks[2].Inject(0, true, event.Event{Kind: event.LossHint, Group: 1, Peer: 1, Msg: anchor,
		Lost: &event.LostRange{First: 106, End: 107, Bounded: true}})
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
// cannot be mapped; nak_delay later the receiver asks that sender for
// everything it holds, which places the stream, rather than wait for a
// digest (here 10 s apart).
func TestLossHintBeforeFirstContactAsks(t *testing.T) {
	var net *sim.Network
	loss := layertest.DropWhen{Rx: map[event.NodeID]bool{2: true}, On: func() bool { return net.Now() < event.Time(time.Millisecond) }}
	c := layertest.New(t, sim.Config{Seed: 3, Latency: time.Millisecond, Loss: loss}, 2,
		layertest.Registered(map[string]map[string]string{"reliable": {"stable_interval": "10s", "nak_delay": "20ms"}}, "reliable"))
	net = c.Net
	v := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}}
	c.Install(v)
	sent := map[event.GroupID]map[event.NodeID]uint32{}
	c.CastLoop(1, 1, 1, time.Millisecond, 10, sent) // one cast, lost at node 2
	hintAt := event.Time(5 * time.Millisecond)
	c.Net.RunUntil(hintAt)
	c.Net.Node(2).Now()
	c.Stacks[2].Inject(0, true, event.Event{Kind: event.LossHint, Group: 1, Peer: 1,
		Lost: &event.LostRange{First: 1, End: 2, Bounded: true}})
	c.Net.Run(time.Second)
	c.CheckExactlyOnce([]*event.ViewInfo{v}, sent, false)
	if bound := hintAt + event.Time(25*time.Millisecond); c.LastDel > bound {
		t.Errorf("first cast recovered at %v, want by %v (hint + nak_delay + a round trip)", c.LastDel, bound)
	}
	if got := c.Counter("reliable", "unplaced_asks", 2); got != 1 {
		t.Errorf("unplaced_asks = %d, want 1", got)
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
		c.Net.RunUntil(event.Time(10 * time.Millisecond))
		var m *event.Message
		if len(anchor) > 0 {
			m = event.DefaultPool.FromBytes(anchor)
		}
		c.Net.Node(2).Now()
		c.Stacks[2].Inject(0, true, event.Event{Kind: event.LossHint, Group: 1, Peer: 1, Msg: m,
			Lost: &event.LostRange{First: first, End: end, Bounded: bounded}})
		c.Net.Run(time.Second)
		c.CheckExactlyOnce([]*event.ViewInfo{v}, sent, false)
	})
}

// An ask for a sender's first casts is repeated until it is answered, as
// any NAK: here the first ask is lost at the sender, and the sender's next
// digest is 10 s away. Before, the ask went once, and the first cast
// waited for that digest (or the sender's next cast).
func TestLossHintBeforeFirstContactAsksAgain(t *testing.T) {
	var net *sim.Network
	hintAt := event.Time(5 * time.Millisecond)
	firstAsk := hintAt + event.Time(20*time.Millisecond) // nak_delay on
	loss := layertest.DropWhen{Rx: map[event.NodeID]bool{1: true, 2: true}, On: func() bool {
		now := net.Now()
		return now < event.Time(time.Millisecond) || // the cast, at node 2
			now >= firstAsk && now < firstAsk+event.Time(2*time.Millisecond) // the ask, at node 1
	}}
	c := layertest.New(t, sim.Config{Seed: 3, Latency: time.Millisecond, Loss: loss}, 2,
		layertest.Registered(map[string]map[string]string{"reliable": {"stable_interval": "10s", "nak_delay": "20ms", "nak_retry": "20ms"}}, "reliable"))
	net = c.Net
	v := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}}
	c.Install(v)
	sent := map[event.GroupID]map[event.NodeID]uint32{}
	c.CastLoop(1, 1, 1, time.Millisecond, 10, sent) // one cast, lost at node 2
	c.Net.RunUntil(hintAt)
	c.Net.Node(2).Now()
	c.Stacks[2].Inject(0, true, event.Event{Kind: event.LossHint, Group: 1, Peer: 1,
		Lost: &event.LostRange{First: 1, End: 2, Bounded: true}})
	c.Net.Run(time.Second)
	c.CheckExactlyOnce([]*event.ViewInfo{v}, sent, false)
	if bound := firstAsk + event.Time(25*time.Millisecond); c.LastDel == 0 || c.LastDel > bound {
		t.Errorf("first cast recovered at %v, want by %v (the lost ask + nak_retry + a round trip)", c.LastDel, bound)
	}
	if got := c.Counter("reliable", "unplaced_asks", 2); got != 2 {
		t.Errorf("unplaced_asks = %d, want 2 (the lost one and its retry)", got)
	}
}

// A stream that a hint named before it was placed is NAKed nak_delay after
// the hint, not after its placement: the gap that places it is the one
// the hint found. Here the sender's second cast places the stream 45 ms
// after the hint; before, the first cast was NAKed 100 ms after that.
func TestLossHintBeforePlacementKeepsItsTime(t *testing.T) {
	var net *sim.Network
	loss := layertest.DropWhen{Rx: map[event.NodeID]bool{2: true}, On: func() bool { return net.Now() < event.Time(time.Millisecond) }}
	c := layertest.New(t, sim.Config{Seed: 3, Latency: time.Millisecond, Loss: loss}, 2,
		layertest.Registered(map[string]map[string]string{"reliable": {"stable_interval": "10s", "nak_delay": "100ms"}}, "reliable"))
	net = c.Net
	v := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}}
	c.Install(v)
	sent := map[event.GroupID]map[event.NodeID]uint32{}
	c.CastLoop(1, 1, 2, 50*time.Millisecond, 10, sent) // the first lost at node 2
	hintAt := event.Time(5 * time.Millisecond)
	c.Net.RunUntil(hintAt)
	c.Net.Node(2).Now()
	c.Stacks[2].Inject(0, true, event.Event{Kind: event.LossHint, Group: 1, Peer: 1,
		Lost: &event.LostRange{First: 1, End: 2, Bounded: true}})
	c.Net.Run(time.Second)
	c.CheckExactlyOnce([]*event.ViewInfo{v}, sent, false)
	if bound := hintAt + event.Time(105*time.Millisecond); c.LastDel == 0 || c.LastDel > bound {
		t.Errorf("first cast recovered at %v, want by %v (hint + nak_delay + a round trip)", c.LastDel, bound)
	}
	if got := c.Counter("reliable", "unplaced_asks", 2); got != 0 {
		t.Errorf("unplaced_asks = %d, want 0 (the stream was placed before the ask was due)", got)
	}
}

// The asks for an unplaced stream are bounded: each can cost the sender
// max_nak_retrans retransmissions, so after nak_max_tries unanswered ones
// (here the sender hears nothing) the stream waits for the sender's digest.
func TestLossHintAsksBounded(t *testing.T) {
	var net *sim.Network
	loss := layertest.DropWhen{Rx: map[event.NodeID]bool{1: true, 2: true}, On: func() bool {
		return net.Now() < event.Time(time.Millisecond) || net.Now() > event.Time(2*time.Millisecond)
	}}
	c := layertest.New(t, sim.Config{Seed: 3, Latency: time.Millisecond, Loss: loss}, 2,
		layertest.Registered(map[string]map[string]string{"reliable": {"stable_interval": "10s", "nak_delay": "20ms", "nak_max_tries": "4"}}, "reliable"))
	net = c.Net
	v := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}}
	c.Install(v)
	c.Caster(1, 1)(1)
	c.Net.RunUntil(event.Time(5 * time.Millisecond))
	c.Net.Node(2).Now()
	c.Stacks[2].Inject(0, true, event.Event{Kind: event.LossHint, Group: 1, Peer: 1,
		Lost: &event.LostRange{First: 1, End: 2, Bounded: true}})
	c.Net.RunUntil(event.Time(5 * time.Second))
	if got := c.Counter("reliable", "unplaced_asks", 2); got != 4 {
		t.Errorf("unplaced_asks = %d, want nak_max_tries (4)", got)
	}
}
