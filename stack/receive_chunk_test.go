package stack_test

import (
	"encoding/binary"
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// aheadLayer records, for every packet that reaches it, its number and
// how many packets the stack had taken from the batch by then.
type aheadLayer struct {
	stack.Base
	st    *stack.Stack
	seen  []uint32
	ahead []int64
}

func (l *aheadLayer) Up(ev *event.Event) {
	if ev.Kind.IsData() {
		l.seen = append(l.seen, binary.BigEndian.Uint32(ev.Msg.Bytes()))
		l.ahead = append(l.ahead, l.st.Net().PacketsReceived)
		ev.Msg.Release()
		return
	}
	l.Ctx.Up(ev)
}

// TestReceiveBatchSteps: a large batch (a read of UDP GRO buffers holds
// thousands of packets) reaches the layers every packet once, its control
// packet first (as in any batch), then its data packets in order, and the
// stack steps through what it queued every 64 data packets rather than
// queueing the whole batch first, so the work stays in the caches.
func TestReceiveBatchSteps(t *testing.T) {
	l := &aheadLayer{}
	st := newStopped(t, stack.Config{Layers: []stack.Entry{{Name: "ahead", Layer: l}}})
	defer st.Close()
	l.st = st
	const n = 1000
	var batch [][]byte
	for i := range n {
		p := make([]byte, stack.FrameSize+4)
		// The last is a control packet (a reliable ack, say).
		stack.PutFrame(p, stack.Frame{Kind: event.Cast, Group: 1, Src: 2, Control: i == n-1})
		binary.BigEndian.PutUint32(p[stack.FrameSize:], uint32(i))
		batch = append(batch, p)
	}
	if err := st.ReceiveBatch(batch); err != nil {
		t.Fatal(err)
	}
	if len(l.seen) != n {
		t.Fatalf("%d packets reached the layer, want %d", len(l.seen), n)
	}
	if l.seen[0] != n-1 {
		t.Fatalf("the layer got packet %d first, want the control packet %d", l.seen[0], n-1)
	}
	for i, v := range l.seen[1:] {
		if v != uint32(i) {
			t.Fatalf("data packet %d reached the layer as number %d, want in order", i, v)
		}
		// Data packet i is stepped through once its chunk of 64 is
		// queued (after the control packet).
		if limit := int64(i/64+1)*64 + 1; l.ahead[i+1] > limit {
			t.Fatalf("data packet %d reached the layer with %d packets taken, want at most %d", i, l.ahead[i+1], limit)
		}
	}
}
