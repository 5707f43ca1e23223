package udp

import (
	"net"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// frameFrom is a packet whose frame names src as its source.
func frameFrom(src event.NodeID, body string) []byte {
	b := make([]byte, stack.FrameSize+len(body))
	stack.PutFrame(b, stack.Frame{Kind: event.Send, Src: src})
	copy(b[stack.FrameSize:], body)
	return b
}

func recv(t *testing.T, c chanSink, what string) []byte {
	t.Helper()
	select {
	case p := <-c:
		return p
	case <-time.After(5 * time.Second):
		t.Fatalf("no packet: %s", what)
		return nil
	}
}

// TestLearnReplyToUnknownNode: a service that was told nobody's address
// replies to a node it heard from, as `stacktool gms` must; without
// learning it cannot.
func TestLearnReplyToUnknownNode(t *testing.T) {
	for _, learn := range []int{0, 8} {
		svcIn, nodeIn := make(chanSink, 10), make(chanSink, 10)
		svc := open(t, Config{Self: 100, Learn: learn}, svcIn)
		node := toward(t, Config{Self: 5}, nodeIn, 100, svc)
		node.Send(100, frameFrom(5, "join"))
		recv(t, svcIn, "the node's request at the service")
		svc.Send(5, frameFrom(100, "view"))
		if learn == 0 {
			if st := svc.Stats(); st.SendErrors != 1 || st.Learned != 0 {
				t.Errorf("without learning: stats %+v, want the reply refused (1 send error, nothing learned)", st)
			}
			continue
		}
		if got := string(recv(t, nodeIn, "the service's reply")[stack.FrameSize:]); got != "view" {
			t.Errorf("reply %q, want view", got)
		}
		if a := svc.Addr(5); a == nil || a.Port != node.LocalAddr().Port {
			t.Errorf("service learned %v for n5, want %v", a, node.LocalAddr())
		}
	}
}

// TestLearnBounded: the learned book never holds more than Config.Learn
// entries (oldest forgotten first), pinned entries are never changed by
// traffic, a node that moves is followed, and bad frames teach nothing.
func TestLearnBounded(t *testing.T) {
	tr := &Transport{cfg: Config{Self: 1, Learn: 3}, book: map[event.NodeID]*bookEntry{}}
	pinned := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9000}
	if err := tr.SetAddr(50, pinned); err != nil {
		t.Fatal(err)
	}
	host := [4]byte{127, 0, 0, 2}
	for id := event.NodeID(10); id < 20; id++ {
		tr.observe(frameFrom(id, "x"), host, int(id))
	}
	tr.observe(frameFrom(50, "forged"), host, 1)   // pinned: ignored
	tr.observe(frameFrom(1, "self"), host, 2)      // ourselves: ignored
	tr.observe([]byte{1, 2, 3}, host, 3)           // no frame: ignored
	tr.observe(frameFrom(19, "moved"), host, 4019) // a known node moved
	if n := len(tr.book); n != 4 {
		t.Errorf("book holds %d entries, want 3 learned + 1 pinned", n)
	}
	for id := event.NodeID(10); id < 17; id++ {
		if tr.Addr(id) != nil {
			t.Errorf("n%d still in the book; the oldest should be forgotten first", id)
		}
	}
	for id, port := range map[event.NodeID]int{17: 17, 18: 18, 19: 4019, 50: 9000} {
		if a := tr.Addr(id); a == nil || a.Port != port {
			t.Errorf("n%d at %v, want port %d", id, a, port)
		}
	}
	if st := tr.Stats(); st.Forgotten != 7 || st.Learned != 11 {
		t.Errorf("learned %d forgotten %d, want 11 and 7", st.Learned, st.Forgotten)
	}
}

// FuzzLearnFromPacket feeds arbitrary packets from arbitrary sources to
// the address learning: no panic, the learned book stays within its bound,
// pinned entries never move.
func FuzzLearnFromPacket(f *testing.F) {
	f.Add(frameFrom(7, "hello"), uint16(4000), byte(2))
	f.Add(frameFrom(50, "forged"), uint16(1), byte(3))
	f.Add([]byte{0x10, 0x10, 0, 0, 0, 0, 0, 0, 0, 5, 0xc1}, uint16(7), byte(1))
	f.Add([]byte{}, uint16(0), byte(0))
	f.Fuzz(func(t *testing.T, pkt []byte, port uint16, host byte) {
		tr := &Transport{cfg: Config{Self: 1, Learn: 2}, book: map[event.NodeID]*bookEntry{}}
		pin := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9000}
		if err := tr.SetAddr(50, pin); err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			// The same bytes from several sources, and shifted ids.
			p := append([]byte(nil), pkt...)
			if len(p) >= stack.FrameSize {
				p[stack.FrameSize-1] += byte(i)
			}
			tr.observe(p, [4]byte{127, 0, host, byte(i)}, int(port)+i)
		}
		if len(tr.book) > 3 {
			t.Fatalf("book holds %d entries, bound 2 learned + 1 pinned", len(tr.book))
		}
		if a := tr.Addr(50); a == nil || a.Port != 9000 || !a.IP.Equal(pin.IP) {
			t.Fatalf("pinned entry moved to %v", a)
		}
	})
}

// BenchmarkUDPLoopbackLearning is BenchmarkUDPLoopback with a receiver
// that learns addresses from every frame: a known sender at its known
// address costs a read lock and no allocation.
func BenchmarkUDPLoopbackLearning(b *testing.B) {
	got := make(countSink, 1024)
	rx := open(b, Config{Self: 2, Learn: 16}, got)
	tx := toward(b, Config{Self: 1}, nil, 2, rx)
	sendLoop(b, tx, got, frameFrom(1, string(make([]byte, 990))))
	if rx.Addr(1) == nil {
		b.Fatal("the sender was not learned")
	}
}
