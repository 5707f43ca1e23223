package lec

import (
	"encoding/binary"
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
)

// sendProbe sits below lec and records the Sends going down.
type sendProbe struct {
	stack.Base
	sends []event.Event // copies, without their messages
}

func (p *sendProbe) HeaderSize() int { return 0 }
func (p *sendProbe) Close()          {}
func (p *sendProbe) Down(ev *event.Event) {
	if ev.Kind == event.Send {
		c := *ev
		c.Msg = nil
		p.sends = append(p.sends, c)
	}
	p.Ctx.Down(ev)
}

// Repairs go down marked best effort, so a layer below that makes Sends
// reliable (tokenring) sends each once: numbered and retransmitted until
// acknowledged, their flood held tokenring's tokens back and owed
// deliveries went missing (soak seeds 129, 170 and 191 of
// specs/qsm-lec.stack). A Send from the layer above is left as it came.
func TestRepairsGoDownBestEffort(t *testing.T) {
	var now event.Time = 1e9
	l := New(Config{R: 8, C: 5, Stagger: 1, Window: 2e9, MaxHeld: 1024, MaxUnusable: 64})
	probe := &sendProbe{}
	st, err := stack.New(stack.Config{Self: 1, Transport: &testkit.Transport{}, Clock: stack.ClockFunc(func() event.Time { return now }),
		Layers: []stack.Entry{{Name: "lec", Layer: l}, {Name: "probe", Layer: probe}}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	members := []event.NodeID{1, 2, 3, 4, 5, 6, 7, 8}
	st.InstallNeighbourhood(&event.Neighbourhood{Self: 1, Groups: []event.GroupID{9},
		Local: []event.LocalRegion{{Groups: []event.GroupID{9}, Members: members}}})
	for seq := uint32(1); seq <= 8; seq++ { // r=8 packets from node 2 fill a bin
		pkt := binary.BigEndian.AppendUint32([]byte{typeData}, seq)
		st.Inject(0, true, event.Event{Kind: event.Cast, Group: 9, Peer: 2, Msg: event.DefaultPool.FromBytes(append(pkt, "data"...))})
	}
	if err := st.Send(3, []byte("above")); err != nil {
		t.Fatal(err)
	}
	if len(probe.sends) != 6 || l.c.RepairsSent.Value() != 5 {
		t.Fatalf("%d sends went down, %d repairs counted; want the 5 repairs of a full bin (c=5) and the Send from above",
			len(probe.sends), l.c.RepairsSent.Value())
	}
	for i, ev := range probe.sends {
		if repair := i < 5; ev.BestEffort != repair || ev.Control != repair {
			t.Errorf("send %d to %v: best effort %v, control %v; want %v and %v (a repair is both, a Send from above neither)",
				i, ev.Peer, ev.BestEffort, ev.Control, repair, repair)
		}
	}
}
