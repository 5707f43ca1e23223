package tokenring

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/membership"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
)

// sendLog records the point-to-point packets a node sends: their
// tokenring type byte (the first after the frame).
type sendLog struct {
	testkit.ChannelTransport
	types []byte
}

func (s *sendLog) Send(_ event.NodeID, pkt []byte) {
	if len(pkt) > stack.FrameSize {
		s.types = append(s.types, pkt[stack.FrameSize])
	}
}

// marker is a layer above tokenring that marks every Send best effort
// when best is set (what lec does with its repairs).
type marker struct {
	stack.Base
	best bool
}

func (m *marker) HeaderSize() int { return 0 }
func (m *marker) Close()          {}
func (m *marker) Down(ev *event.Event) {
	if ev.Kind == event.Send {
		ev.BestEffort = m.best
	}
	m.Ctx.Down(ev)
}

// bestEffortNode is node 1 of group 7 (nodes 1..3) running marker over
// tokenring, with its sends recorded and its deliveries counted.
func bestEffortNode(t *testing.T, best bool) (*stack.Stack, *Layer, *sendLog, *event.Time, *int) {
	t.Helper()
	now := new(event.Time)
	got := new(int)
	net := &sendLog{}
	l := New(DefaultConfig())
	app := stack.AppFuncs{OnDeliver: func(d stack.Delivery) {
		if d.Group == event.NoGroup && string(d.Payload) == "x" {
			*got++
		}
	}}
	st, err := stack.New(stack.Config{Self: 1, Transport: net, Seed: 1, App: app,
		Clock:  stack.ClockFunc(func() event.Time { return *now }),
		Layers: []stack.Entry{{Name: "marker", Layer: &marker{best: best}}, {Name: "tokenring", Layer: l}}})
	if err != nil {
		t.Fatal(err)
	}
	v := &event.ViewInfo{Group: 7, ID: 1, Members: []event.NodeID{1, 2, 3}}
	st.InstallView(v)
	st.InstallNeighbourhood(membership.Static(map[event.GroupID]*event.ViewInfo{7: v})[1])
	return st, l, net, now, got
}

// A Send marked best effort (lec's repairs) leaves once, unnumbered, and
// is never sent again: numbered and retransmitted every p2p_timeout in
// order with tokenring's own control, a flood of repairs held the tokens
// back (soak seeds 129, 170 and 191 of specs/qsm-lec.stack lost thousands
// of owed deliveries: token rounds of 858 ms instead of 11 ms, 688,795
// point-to-point retransmissions). One that is not marked is still made
// reliable. A best-effort Send arriving is handed up as a Send.
func TestBestEffortSendOnceUnnumbered(t *testing.T) {
	for _, best := range []bool{true, false} {
		st, l, net, now, _ := bestEffortNode(t, best)
		net.types = nil
		if err := st.Send(2, []byte("x")); err != nil {
			t.Fatal(err)
		}
		// No acknowledgement comes: five p2p timeouts pass.
		for range 5 {
			*now += event.Time(l.cfg.P2PTimeout + time.Millisecond)
			st.Tick()
		}
		var pass, p2p int
		for _, typ := range net.types {
			switch typ {
			case tPass:
				pass++
			case tP2P:
				p2p++
			}
		}
		switch {
		case best && (pass != 1 || p2p != 0 || l.c.P2pSent.Value() != 0 || l.c.P2pRetrans.Value() != 0):
			t.Errorf("best effort: %d pass-through and %d numbered copies sent (p2p_sent %d, p2p_retransmissions %d), want 1 and 0",
				pass, p2p, l.c.P2pSent.Value(), l.c.P2pRetrans.Value())
		case !best && (pass != 0 || p2p < 2 || l.c.P2pRetrans.Value() == 0):
			t.Errorf("reliable: %d pass-through and %d numbered copies sent, want 0 and several (retransmitted until acknowledged)", pass, p2p)
		}
	}

	st, _, _, _, got := bestEffortNode(t, true)
	pkt := make([]byte, stack.FrameSize+2)
	stack.PutFrame(pkt, stack.Frame{Kind: event.Send, Src: 2})
	pkt[stack.FrameSize], pkt[stack.FrameSize+1] = tPass, 'x'
	if err := st.Receive(pkt); err != nil {
		t.Fatal(err)
	}
	if *got != 1 {
		t.Errorf("a best-effort Send from node 2 delivered %d times, want 1", *got)
	}
}
