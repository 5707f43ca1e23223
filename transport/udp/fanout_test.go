package udp

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
)

// TestFanout: with Config.Fanout a multicast goes by unicast to every
// node of the address book but the sender, with no multicast socket or
// route involved (127.0.0.1 only), and subscribing opens nothing.
func TestFanout(t *testing.T) {
	sinks := []chanSink{make(chanSink, 10), make(chanSink, 10), make(chanSink, 10)}
	var trs []*Transport
	for i := range 3 {
		trs = append(trs, open(t, Config{Self: event.NodeID(i + 1), Fanout: true, MulticastPort: 47400}, sinks[i]))
	}
	for _, tr := range trs {
		for j, o := range trs {
			if err := tr.SetAddr(event.NodeID(j+1), o.LocalAddr()); err != nil {
				t.Fatal(err)
			}
		}
		if err := tr.Subscribe(5); err != nil {
			t.Fatal(err)
		}
		if n := len(tr.groups); n != 0 {
			t.Fatalf("fan-out opened %d multicast sockets", n)
		}
	}
	trs[0].Multicast(5, []byte("hello"))
	for i := 1; i < 3; i++ {
		select {
		case p := <-sinks[i]:
			if string(p) != "hello" {
				t.Errorf("node %d got %q", i+1, p)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("node %d got nothing", i+1)
		}
	}
	select {
	case p := <-sinks[0]:
		t.Errorf("the sender got its own packet %q", p)
	case <-time.After(50 * time.Millisecond):
	}
	if st := trs[0].Stats(); st.PacketsSent != 2 {
		t.Errorf("sent %d packets, want one per other node (2)", st.PacketsSent)
	}
}
