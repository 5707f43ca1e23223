package stack_test

import (
	"slices"
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
)

// warmLayer records the Warm calls it gets.
type warmLayer struct {
	stack.Base
	name  string
	calls *[]string
}

func (l *warmLayer) Warm(g event.GroupID, src event.NodeID, stage int) {
	*l.calls = append(*l.calls, l.name+" "+g.String()+" "+src.String()+" "+string(rune('0'+stage)))
}

// warmApp is an application that is a Warmer.
type warmApp struct{ warmLayer }

func (warmApp) Deliver(stack.Delivery)   {}
func (warmApp) View(*event.ViewInfo)     {}
func (warmApp) Flow(event.GroupID, bool) {}

// Warm hands every Warmer layer, bottom first, then a Warmer application,
// the group and source of the packet's frame, with the stage; a packet too
// short for a frame warms nothing, and warming changes nothing the stack
// counts.
func TestWarmTellsWarmersTheFrame(t *testing.T) {
	var calls []string
	st := newStopped(t, stack.Config{App: &warmApp{warmLayer{name: "app", calls: &calls}},
		Layers: []stack.Entry{
			{Name: "top", Layer: &warmLayer{name: "top", calls: &calls}},
			{Name: "plain", Layer: &tagLayer{tag: 1}},
			{Name: "bottom", Layer: &warmLayer{name: "bottom", calls: &calls}},
		}})
	pkt := make([]byte, stack.FrameSize+4)
	stack.PutFrame(pkt, stack.Frame{Kind: event.Cast, Group: 7, Src: 3})
	before := st.Net()
	st.Warm(pkt, 2)
	st.Warm(pkt[:stack.FrameSize-1], 0)
	want := []string{"bottom g7 n3 2", "top g7 n3 2", "app g7 n3 2"}
	if !slices.Equal(calls, want) {
		t.Errorf("Warm calls = %q, want %q", calls, want)
	}
	if st.Net() != before {
		t.Errorf("Warm changed the stack's counters: %+v, want %+v", st.Net(), before)
	}
}

// ctlWarmLayer is a ControlWarmer: it records which of its two it got.
type ctlWarmLayer struct{ warmLayer }

func (l *ctlWarmLayer) WarmControl(g event.GroupID, src event.NodeID, stage int) {
	*l.calls = append(*l.calls, l.name+" control "+g.String()+" "+src.String()+" "+string(rune('0'+stage)))
}

// A control packet (the frame's flag) warms a ControlWarmer through
// WarmControl and no other Warmer; a data packet warms every one through
// Warm.
func TestWarmControlForControlPackets(t *testing.T) {
	var calls []string
	st := newStopped(t, stack.Config{Layers: []stack.Entry{
		{Name: "top", Layer: &warmLayer{name: "top", calls: &calls}},
		{Name: "bottom", Layer: &ctlWarmLayer{warmLayer{name: "bottom", calls: &calls}}},
	}})
	ctl := make([]byte, stack.FrameSize+4)
	stack.PutFrame(ctl, stack.Frame{Kind: event.Cast, Group: 7, Src: 3, Control: true})
	data := make([]byte, stack.FrameSize+4)
	stack.PutFrame(data, stack.Frame{Kind: event.Cast, Group: 8, Src: 4})
	st.Warm(ctl, 1)
	st.Warm(data, 2)
	want := []string{"bottom control g7 n3 1", "bottom g8 n4 2", "top g8 n4 2"}
	if !slices.Equal(calls, want) {
		t.Errorf("Warm calls = %q, want %q", calls, want)
	}
}

// FuzzWarm: Warm reads a packet from the network before anything checks
// it; any bytes warm with the group and source ParseFrame would read, or
// warm nothing when too short for a frame or a control packet (the Warmer
// is not a ControlWarmer), and never panic.
func FuzzWarm(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0x10, 1, 0, 0, 0, 7, 0, 0, 0, 3})
	f.Add([]byte{0x10, 1, 0, 0, 0, 7, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	var calls []string
	st := newStopped(f, stack.Config{Layers: []stack.Entry{{Name: "w", Layer: &warmLayer{name: "w", calls: &calls}}}})
	f.Fuzz(func(t *testing.T, pkt []byte) {
		calls = calls[:0]
		st.Warm(pkt, 1)
		if len(pkt) < stack.FrameSize || pkt[0]&1 != 0 {
			if len(calls) != 0 {
				t.Fatalf("Warm(%x) warmed %q, want nothing for a packet shorter than a frame or a control packet", pkt, calls)
			}
			return
		}
		g := event.GroupID(uint32(pkt[2])<<24 | uint32(pkt[3])<<16 | uint32(pkt[4])<<8 | uint32(pkt[5]))
		src := event.NodeID(uint32(pkt[6])<<24 | uint32(pkt[7])<<16 | uint32(pkt[8])<<8 | uint32(pkt[9]))
		want := "w " + g.String() + " " + src.String() + " 1"
		if len(calls) != 1 || calls[0] != want {
			t.Fatalf("Warm(%x) warmed %q, want [%q]", pkt, calls, want)
		}
	})
}

// castWarmLayer is a CastWarmer: it records WarmCast calls.
type castWarmLayer struct{ warmLayer }

func (l *castWarmLayer) WarmCast(g event.GroupID, stage int) {
	*l.calls = append(*l.calls, l.name+" cast "+g.String()+" "+string(rune('0'+stage)))
}

// WarmCast hands the group and stage to every CastWarmer layer, bottom
// first, and to no other Warmer (a plain Warmer layer, a Warmer
// application); it changes nothing the stack counts.
func TestWarmCastOnlyCastWarmers(t *testing.T) {
	var calls []string
	st, err := stack.New(stack.Config{Self: 1, Transport: &testkit.Transport{}, Clock: stack.ClockFunc(func() event.Time { return 0 }),
		App: &warmApp{warmLayer{name: "app", calls: &calls}},
		Layers: []stack.Entry{
			{Name: "top", Layer: &castWarmLayer{warmLayer{name: "top", calls: &calls}}},
			{Name: "plain", Layer: &warmLayer{name: "plain", calls: &calls}},
			{Name: "bottom", Layer: &castWarmLayer{warmLayer{name: "bottom", calls: &calls}}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	before := st.Net()
	st.WarmCast(5, 1)
	want := []string{"bottom cast g5 1", "top cast g5 1"}
	if !slices.Equal(calls, want) {
		t.Errorf("WarmCast calls = %q, want %q", calls, want)
	}
	if st.Net() != before {
		t.Errorf("WarmCast changed the stack's counters: %+v, want %+v", st.Net(), before)
	}
}

// stagedWarmLayer is a StagedWarmer and a ControlWarmer: it asks for
// something at stages 0 and 1 of a data packet and at stage 0 of a
// control packet.
type stagedWarmLayer struct{ ctlWarmLayer }

func (l *stagedWarmLayer) WarmDepth() (data, control int) { return 2, 1 }

// A StagedWarmer is called only at the stages it asks for something, a
// plain Warmer beside it at every stage.
func TestWarmStagedWarmerOnlyAtItsStages(t *testing.T) {
	var calls []string
	st := newStopped(t, stack.Config{Layers: []stack.Entry{
		{Name: "top", Layer: &warmLayer{name: "top", calls: &calls}},
		{Name: "bottom", Layer: &stagedWarmLayer{ctlWarmLayer{warmLayer{name: "bottom", calls: &calls}}}},
	}})
	ctl := make([]byte, stack.FrameSize+4)
	stack.PutFrame(ctl, stack.Frame{Kind: event.Cast, Group: 7, Src: 3, Control: true})
	data := make([]byte, stack.FrameSize+4)
	stack.PutFrame(data, stack.Frame{Kind: event.Cast, Group: 8, Src: 4})
	for stage := range stack.WarmStages {
		st.Warm(data, stage)
		st.Warm(ctl, stage)
	}
	want := []string{
		"bottom g8 n4 0", "top g8 n4 0", "bottom control g7 n3 0",
		"bottom g8 n4 1", "top g8 n4 1",
		"top g8 n4 2",
		"top g8 n4 3",
	}
	if !slices.Equal(calls, want) {
		t.Errorf("Warm calls = %q, want %q", calls, want)
	}
}
