package lec

import (
	"testing"

	"github.com/layercast/layercast/event"
)

// FuzzTruncatedCounted cuts a valid data packet short of its header, or a
// repair short of the ids it names, or sends either with the wrong kind (a
// repair multicast, data point to point), and checks node 1 drops it and
// counts it as malformed, exactly once. Packets come from node 2, a member
// of group 9.
func FuzzTruncatedCounted(f *testing.F) {
	for typ := range byte(2) {
		f.Add(typ, uint16(0), false)
		f.Add(typ, uint16(9), false)
		f.Add(typ, uint16(0), true)
	}
	ids := []id{{group: 9, sender: 2, seq: 1}, {group: 9, sender: 3, seq: 1}}
	packets := []struct {
		b    []byte
		kind event.Kind
		min  int // shorter than this is malformed
	}{
		{dataPkt(1, "abc"), event.Cast, dataHeader},
		{repairPkt(ids, "abc", "de"), event.Send, repairHeader + len(ids)*idSize},
	}
	f.Fuzz(func(t *testing.T, typ byte, cut uint16, wrongKind bool) {
		p := packets[int(typ)%len(packets)]
		b, kind := p.b, p.kind
		if wrongKind {
			kind = event.Send + event.Cast - kind
		} else {
			b = b[:int(cut)%p.min]
		}
		hn := newHardNode(t, fuzzConfig())
		hn.fuzzInstall(0xff, 0x0f, 2)
		before := hn.l.c.Malformed.Value()
		hn.st.Inject(0, true, event.Event{Kind: kind, Group: 9, Peer: 2, Msg: event.DefaultPool.FromBytes(b)})
		if got := hn.l.c.Malformed.Value() - before; got != 1 {
			t.Fatalf("%v packet %x (%d bytes of %d): malformed counted %d times, want 1", kind, b, len(b), len(p.b), got)
		}
	})
}
