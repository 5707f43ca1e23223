package reliable

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
)

// TestLostRepairAskedAgainOnLaterAnswer: node 2, 10 ms from the sender
// (20 ms round trip), loses the cast sent at 100 ms and, 23 ms later,
// the repair its NAK bought (with the cast sent then). The answer to its
// NAK for that later cast echoes a stamp taken after the lost repair's
// NAK: the repair was lost, and the gap is asked for again at once (at
// 156 ms), not when the retry set at its NAK runs out (nak_retry, 100 ms
// here, no echo having measured the path then). Both casts must be
// recovered by 180 ms, with one NAK and one retransmission each (176 ms;
// without the rule 233 ms).
func TestLostRepairAskedAgainOnLaterAnswer(t *testing.T) {
	const lat = 10 * time.Millisecond
	r := newNakRun(t, 1, 3, lat, map[string]string{"nak_delay": "2ms", "nak_retry": "100ms", "nak_delay_min": "100us"})
	r.lose(100, 2)
	r.lose(123, 2) // the repair for the cast of 100 ms, sent when its NAK (113 ms) arrives
	var both event.Time
	r.run(func() {
		if both == 0 && r.c.Counter("reliable", "recovered_nak", 2) >= 2 {
			both = r.c.Net.Now()
		}
	})
	naks, retx := r.c.Counter("reliable", "naks_sent", 2), r.c.Counter("reliable", "retransmissions", 1)
	t.Logf("node 2 recovered both casts at %v (%d NAKs, sender %d retransmissions)", time.Duration(both), naks, retx)
	if both == 0 || both > event.Time(180*time.Millisecond) {
		t.Errorf("both casts recovered at %v, want by 180ms (the lost repair asked again when the later NAK's answer came)", time.Duration(both))
	}
	if naks > 3 || retx > 3 {
		t.Errorf("%d NAKs and %d retransmissions for 2 losses and a lost repair, want at most 3 of each", naks, retx)
	}
}
