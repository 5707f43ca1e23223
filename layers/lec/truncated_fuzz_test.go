package lec

import (
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/testbed/layertest"
)

// FuzzTruncatedCounted cuts a valid data packet short of its header, or a
// repair short of the ids it names, or sends either with the wrong kind (a
// repair multicast, data point to point), and checks node 1 drops it and
// counts it as malformed, exactly once. Packets come from node 2, a member
// of group 9.
func FuzzTruncatedCounted(f *testing.F) {
	ids := []id{{group: 9, sender: 2, seq: 1}, {group: 9, sender: 3, seq: 1}}
	packets := []layertest.Cut{
		{B: dataPkt(1, "abc"), Kind: event.Cast, Min: dataHeader},
		{B: repairPkt(ids, "abc", "de"), Kind: event.Send, Min: repairHeader + len(ids)*idSize},
	}
	layertest.SeedCuts(f, len(packets), 9, true)
	f.Fuzz(func(t *testing.T, typ byte, cut uint16, wrongKind bool) {
		p := layertest.PickCut(packets, typ)
		b, kind := p.Input(cut, wrongKind)
		hn := newHardNode(t, fuzzConfig())
		hn.fuzzInstall(0xff, 0x0f, 2)
		before := hn.l.c.Malformed.Value()
		hn.st.Inject(0, true, event.Event{Kind: kind, Group: 9, Peer: 2, Msg: event.DefaultPool.FromBytes(b)})
		layertest.CountedOnce(t, hn.l.c.Malformed.Value()-before, kind, b, len(p.B))
	})
}
