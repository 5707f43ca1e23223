package lec

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/layercast/layercast/event"
)

// A packet the layer below recovers after its number left the receive
// window (tokenring's recovery, seconds after the loss, while the sender
// went on) is passed up: taken for a duplicate, it was lost for good (soak
// seed 591 of specs/qsm-lec.stack, no fault: 4 owed deliveries never
// made). A packet lec rebuilt itself is still passed up once: the copy the
// layer below hands up later is dropped, however late.
func TestLateFromBelowPassedUpOnce(t *testing.T) {
	tn := newTestNode(t)
	tn.arrive(0)      // seq 1
	tn.repairOf(0, 1) // rebuilds seq 2
	tn.check(t, 1, "lec")
	far := binary.BigEndian.AppendUint32([]byte{typeData}, 3000)
	tn.st.Inject(tn.at, true, event.Event{Kind: event.Cast, Group: 9, Peer: 2, Msg: event.DefaultPool.FromBytes(append(far, "far"...))})
	if st := tn.l.streams[streamKey{9, 2}]; !st.before(2) || !st.before(4) {
		t.Fatalf("seq 3000 did not slide the window past 2 and 4 (base %d)", st.base)
	}
	tn.arrive(1) // the copy of seq 2 from below
	tn.arrive(3) // seq 4, lost and recovered late below
	count := func(i int) int {
		n := 0
		for _, d := range tn.got {
			if bytes.Equal(d.Payload, tn.data[i]) {
				n++
			}
		}
		return n
	}
	if n := count(1); n != 1 || tn.l.c.Duplicates.Value() != 1 {
		t.Errorf("rebuilt seq 2 delivered %d times (%d duplicates dropped), want once and its late copy dropped", n, tn.l.c.Duplicates.Value())
	}
	if n := count(3); n != 1 || tn.l.c.DataLate.Value() != 1 {
		t.Errorf("seq 4, recovered below after the window passed it, delivered %d times (data_late %d), want 1 and 1", n, tn.l.c.DataLate.Value())
	}
	if len(tn.l.rebuilt) != 0 {
		t.Errorf("%d rebuilt packets remembered after their copies came, want 0", len(tn.l.rebuilt))
	}
}
