package reliable

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
)

// TestFullGapRecordsMergeKeepEarlierFirstNak fills a stream's gap records
// (maxEpochs gaps, none NAKed yet) and reveals one more: the two oldest
// merge, and the record left must fall due for its first NAK when the
// earlier of the two did (the later-discovered gap may wait less, its
// random wait being shorter). The merge wrote that time into the record it
// then deleted, so the merged gap waited for the older record's own due.
func TestFullGapRecordsMergeKeepEarlierFirstNak(t *testing.T) {
	p := newProbe(t, 0, map[string]string{"nak_delay": "1s"})
	seq := uint32(0)
	gap := func() { // one message lost, the next one arrives
		seq += 2
		p.inject(event.Cast, 2, dataPacket(1, seq, 8))
	}
	for range maxEpochs {
		gap()
	}
	rs := p.l.groups[1].members[2].rs
	if rs == nil || len(rs.epochs) != maxEpochs {
		t.Fatalf("gap records: %v, want %d", rs, maxEpochs)
	}
	for _, e := range rs.epochs[:2] {
		if e.tries != 0 {
			t.Fatalf("an old gap was NAKed already (%+v): the test needs both untried", e)
		}
	}
	// the second gap falls due first
	now := p.l.Ctx.Now()
	rs.epochs[0].due = now.Add(900 * time.Millisecond)
	rs.epochs[1].due = now.Add(100 * time.Millisecond)
	from0 := rs.epochs[0].from
	gap()
	if len(rs.epochs) != maxEpochs {
		t.Fatalf("%d gap records after a merge, want %d", len(rs.epochs), maxEpochs)
	}
	e := rs.epochs[0]
	if e.from != from0 || e.due != now.Add(100*time.Millisecond) {
		t.Errorf("merged record from %d due %v, want from %d due %v (the earlier first NAK)", e.from, e.due, from0, now.Add(100*time.Millisecond))
	}
}
