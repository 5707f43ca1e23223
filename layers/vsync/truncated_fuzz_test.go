package vsync

import (
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/testbed/layertest"
)

// FuzzTruncatedCounted cuts a valid data or resend header short, or a
// report or stability gossip short of its whole body, or flips the control
// flag of a data header, a report or a passed control cast, and checks
// node 1 drops it and counts it as malformed, exactly once. Packets come
// from node 2, a member.
func FuzzTruncatedCounted(f *testing.F) {
	data, resend, rep, stab, pass := seedPackets()
	packets := []struct {
		b       []byte
		control bool
		min     int // shorter than this is malformed (-1: any strict prefix)
	}{
		{data, false, dataHeaderSize},
		{resend, false, resendHeaderSize},
		{rep, false, -1},
		{stab, true, -1},
		{pass, true, 1},
	}
	layertest.SeedCuts(f, len(packets), 4, true)
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
		l, st := fuzzNode(t)
		before := l.c.Malformed.Value()
		st.Inject(0, true, event.Event{Kind: event.Cast, Group: 1, Peer: 2, Control: control, Msg: event.DefaultPool.FromBytes(b)})
		if got := l.c.Malformed.Value() - before; got != 1 {
			t.Fatalf("packet %x (%d bytes of %d, control %v): malformed counted %d times, want 1", b, len(b), len(p.b), control, got)
		}
	})
}
