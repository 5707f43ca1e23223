package vsync

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/testkit"
	"github.com/layercast/layercast/stack"
)

// FuzzTruncatedCounted cuts a valid data or resend header short, or a
// report or stability gossip short of its whole body, or flips the control
// flag of a data header, a report or a passed control cast, and checks
// node 1 drops it and counts it as malformed, exactly once. Packets come
// from node 2, a member.
func FuzzTruncatedCounted(f *testing.F) {
	for typ := range byte(5) {
		f.Add(typ, uint16(0), false)
		f.Add(typ, uint16(4), false)
		f.Add(typ, uint16(0), true)
	}
	wc := newCodec()
	var data [dataHeaderSize + 8]byte
	putData(data[:], 1, 1)
	var rs [resendHeaderSize + 8]byte
	putResend(rs[:], 3, 1, 2)
	packets := []struct {
		b       []byte
		control bool
		min     int // shorter than this is malformed (-1: any strict prefix)
	}{
		{data[:], false, dataHeaderSize},
		{rs[:], false, resendHeaderSize},
		{append([]byte{tReport}, wc.Encode(&report{Old: 1, Target: 2, Entries: []entry{{1, 5}, {3, 9}}})...), false, -1},
		{append([]byte{tStable}, wc.Encode(&stable{View: 1, Entries: []entry{{1, 5}}})...), true, -1},
		{[]byte{tPass, 1, 2}, true, 1},
	}
	f.Fuzz(func(t *testing.T, typ byte, cut uint16, flip bool) {
		p := packets[int(typ)%len(packets)]
		b, control := p.b, p.control
		if flip && p.b[0] != tStable {
			control = !control // a gossip is read either way
		} else {
			n := p.min
			if n < 0 {
				n = len(b)
			}
			b = b[:int(cut)%n]
		}
		l := New(Config{MaxBytes: 64 << 10, StableInterval: 200 * time.Millisecond, FlushTimeout: time.Second})
		st, err := stack.New(stack.Config{Self: 1, Layers: []stack.Entry{{Name: "vsync", Layer: l}},
			Transport: &testkit.Transport{}, Clock: stack.ClockFunc(func() event.Time { return 0 })})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		st.InstallView(&event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3}, Joined: []event.NodeID{1, 2, 3}})
		before := l.c.Malformed.Value()
		st.Inject(0, true, event.Event{Kind: event.Cast, Group: 1, Peer: 2, Control: control, Msg: event.DefaultPool.FromBytes(b)})
		if got := l.c.Malformed.Value() - before; got != 1 {
			t.Fatalf("packet %x (%d bytes of %d, control %v): malformed counted %d times, want 1", b, len(b), len(p.b), control, got)
		}
	})
}
