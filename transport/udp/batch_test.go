package udp

import (
	"fmt"
	"testing"
	"time"
)

// TestBatchedWrites: once a runner has called Flush, sends wait in the
// batch (their buffers copied: the caller's bytes may change at once) and
// one Flush sends them all in one sendmmsg, in order, each intact.
func TestBatchedWrites(t *testing.T) {
	got := make(chanSink, 1000)
	a, _ := pair(t, got)
	a.Flush() // what stack.Node does after every step
	buf := make([]byte, 32)
	const n = 50
	for i := range n {
		copy(buf, fmt.Sprintf("packet %03d", i))
		a.Send(2, buf[:10])
	}
	if st := a.Stats(); st.PacketsSent != 0 || st.BatchWrites != 0 {
		t.Fatalf("before Flush: sent %d in %d sendmmsg, want nothing yet", st.PacketsSent, st.BatchWrites)
	}
	a.Flush()
	if st := a.Stats(); st.PacketsSent != n || st.BatchWrites != 1 || st.BytesSent != 10*n {
		t.Fatalf("after Flush: %d packets (%d bytes) in %d sendmmsg, want %d (%d) in 1", st.PacketsSent, st.BytesSent, st.BatchWrites, n, 10*n)
	}
	timeout := time.After(5 * time.Second)
	for i := range n {
		select {
		case p := <-got:
			if want := fmt.Sprintf("packet %03d", i); string(p) != want {
				t.Fatalf("packet %d = %q, want %q", i, p, want)
			}
		case <-timeout:
			t.Fatalf("received %d of %d", i, n)
		}
	}
}

// TestBatchBounds: a batch never holds more than WriteBatch packets or
// WriteBytes bytes; a write that would pass either sends the batch first.
func TestBatchBounds(t *testing.T) {
	got := make(chanSink, 1000)
	b := open(t, Config{Self: 2}, got)
	a := toward(t, Config{Self: 1, WriteBatch: 8, WriteBytes: 1, MaxPacket: 1000}, nil, 2, b)
	a.Flush()
	for range 10 {
		a.Send(2, make([]byte, 100))
	}
	// 8 sent by the count bound, 2 waiting.
	if st := a.Stats(); st.PacketsSent != 8 || st.BatchWrites != 1 {
		t.Fatalf("sent %d in %d sendmmsg, want 8 in 1 (WriteBatch 8)", st.PacketsSent, st.BatchWrites)
	}
	for range 3 {
		// 200 + 400 + 400 fill WriteBytes (raised to MaxPacket, 1000);
		// the third does not fit and sends the four waiting.
		a.Send(2, make([]byte, 400))
	}
	if st := a.Stats(); st.PacketsSent != 12 || st.BatchWrites != 2 {
		t.Fatalf("sent %d in %d sendmmsg, want 12 in 2 (WriteBytes 1000)", st.PacketsSent, st.BatchWrites)
	}
}
