package stack_test

import (
	"errors"
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// countLayer counts the packets that reach it from below.
type countLayer struct {
	stack.Base
	up int
}

func (l *countLayer) Up(ev *event.Event) {
	if ev.Kind.IsData() || ev.Kind == event.Membership {
		l.up++
		ev.Msg.Release()
		return
	}
	l.Ctx.Up(ev)
}

// FuzzReceive gives a stack arbitrary packets, alone and as a batch of
// three (the packet, a good one, the packet again): a packet whose frame
// does not parse is refused with ErrFrame and counted malformed, once,
// and reaches no layer; one that parses is counted received and reaches
// the bottom layer (unless it is the node's own multicast looped back).
func FuzzReceive(f *testing.F) {
	good := make([]byte, stack.FrameSize+4)
	stack.PutFrame(good, stack.Frame{Kind: event.Cast, Group: 1, Src: 2})
	f.Add(good)
	f.Add(good[:stack.FrameSize-1])
	f.Add([]byte{})
	own := make([]byte, stack.FrameSize)
	stack.PutFrame(own, stack.Frame{Kind: event.Cast, Group: 1, Src: 1})
	f.Add(own)
	f.Fuzz(func(t *testing.T, pkt []byte) {
		l := &countLayer{}
		st := newStopped(t, stack.Config{Layers: []stack.Entry{{Name: "count", Layer: l}}})
		defer st.Close()
		fr, perr := stack.ParseFrame(pkt)
		want := 0 // packets that reach the layer
		if perr == nil && !(fr.Src == 1 && fr.Kind == event.Cast) {
			want = 1
		}
		err := st.Receive(pkt)
		n := st.Net()
		if perr != nil {
			if !errors.Is(err, stack.ErrFrame) || n.Malformed != 1 || n.PacketsReceived != 0 || l.up != 0 {
				t.Fatalf("Receive(%x) = %v: %d malformed, %d received, %d up; want ErrFrame, 1, 0, 0", pkt, err, n.Malformed, n.PacketsReceived, l.up)
			}
		} else if err != nil || n.Malformed != 0 || n.PacketsReceived != 1 || l.up != want {
			t.Fatalf("Receive(%x) = %v: %d malformed, %d received, %d up; want nil, 0, 1, %d", pkt, err, n.Malformed, n.PacketsReceived, l.up, want)
		}
		before, up := st.Net(), l.up
		err = st.ReceiveBatch([][]byte{pkt, good, pkt})
		n = st.Net()
		if perr != nil {
			if !errors.Is(err, stack.ErrFrame) || n.Malformed-before.Malformed != 2 || n.PacketsReceived-before.PacketsReceived != 1 || l.up-up != 1 {
				t.Fatalf("ReceiveBatch: %v: %d malformed, %d received, %d up; want ErrFrame, 2, 1, 1", err, n.Malformed-before.Malformed, n.PacketsReceived-before.PacketsReceived, l.up-up)
			}
		} else if err != nil || n.Malformed != before.Malformed || n.PacketsReceived-before.PacketsReceived != 3 || l.up-up != 1+2*want {
			t.Fatalf("ReceiveBatch: %v: %d malformed, %d received, %d up; want nil, 0, 3, %d", err, n.Malformed-before.Malformed, n.PacketsReceived-before.PacketsReceived, l.up-up, 1+2*want)
		}
	})
}
