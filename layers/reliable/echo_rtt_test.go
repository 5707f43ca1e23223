package reliable

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
)

// TestRoundTripFromEchoes: the round trip a receiver measures to a sender
// converges to the path's, and NAK rounds for a gap come no faster than it
// allows. On a 60.1 ms path, node 2 loses the cast sent at 50 ms; its
// NAKs for it leave 20 ms apart, then 40 (nak_retry, doubling, before any
// sample), so the third leaves just before the answer to the first comes
// back. The estimate used to be seeded with the time since the latest NAK
// (100 µs here), which Karn's rule then kept (every later gap NAKed more
// than once, as retries every nak_retry_min, 1 ms, came long before their
// answers): it stayed far below the path, and every gap was NAKed dozens
// of times. Each answer now echoes the time stamp of the NAK it answers,
// and the estimate is of those exact round trips. Then five single losses
// and one lost answer: the estimate after them lies within [60.1 ms, 2x],
// and the lost answer's gap is NAKed again one timeout on, not sooner
// than the round trip.
func TestRoundTripFromEchoes(t *testing.T) {
	const ms = event.Time(time.Millisecond)
	const lat = 30*time.Millisecond + 50*time.Microsecond
	const rtt = 2 * lat
	r := newNakRun(t, 1, 3, lat, nil)
	r.lose(50, 2)
	for k := range 5 {
		r.lose(200+40*k, 2)
	}
	// the answer to the first NAK for the cast lost at 200 ms (discovered
	// at 231, NAKed 20 ms or 2-4 round trips later, at most nak_delay):
	// the sender resends it at 281 ms, with the cast of 281 ms
	r.lose(281, 2)
	watch, naks := r.nakWatch()
	type gapNaks struct{ at []event.Time }
	gaps := map[uint32]*gapNaks{}
	var measuredAt event.Time // when node 2 first had a round trip to node 1
	r.run(func() {
		watch()
		l := r.layers[2]
		if measuredAt == 0 && l.paths[1] != nil && l.paths[1].SRTT() > 0 {
			measuredAt = r.c.Net.Now()
		}
		_, mb := l.lookup(1, 1)
		if mb == nil || mb.rs == nil {
			return
		}
		for _, e := range mb.rs.epochs {
			g := gaps[e.from]
			if g == nil {
				g = &gapNaks{}
				gaps[e.from] = g
			}
			if e.tries > 0 && (len(g.at) == 0 || g.at[len(g.at)-1] != e.naked) {
				g.at = append(g.at, e.naked)
			}
		}
	})
	srtt := r.layers[2].paths[1].SRTT()
	t.Logf("node 2: srtt %v (measured from %v), %d NAKs", srtt, time.Duration(measuredAt), len(naks[2]))
	if srtt < rtt || srtt > 2*rtt {
		t.Errorf("round trip estimate %v after recovery, want within [%v, %v] (the path's)", srtt, rtt, 2*rtt)
	}
	for from, g := range gaps {
		t.Logf("gap from %d: NAKed at %v", from, g.at)
	}
	retried := false
	for from, g := range gaps {
		for i := 1; i < len(g.at); i++ {
			if g.at[i-1] < measuredAt {
				continue // retries every nak_retry before any sample
			}
			retried = true
			if d := time.Duration(g.at[i] - g.at[i-1]); d < rtt {
				t.Errorf("gap from %d NAKed again %v after its last NAK (at %v), want at least the round trip %v", from, d, time.Duration(g.at[i-1]), rtt)
			}
		}
	}
	if !retried {
		t.Error("no gap was NAKed again after the round trip was measured: the lost answer was not lost")
	}
	if n := len(naks[2]); n > 12 {
		t.Errorf("node 2 sent %d NAKs for 7 lost messages, want at most 12", n)
	}
}
