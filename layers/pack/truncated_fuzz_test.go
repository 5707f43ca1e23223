package pack

import (
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/testbed/layertest"
)

// FuzzTruncatedCounted gives node 1 a pack of three entries cut inside its
// last entry (or before its first), and checks pack counts it as
// malformed, exactly once, while the whole entries before the cut still go
// up, each once.
func FuzzTruncatedCounted(f *testing.F) {
	f.Add(uint16(0), false)
	f.Add(uint16(1), true)
	f.Add(uint16(9), false)
	msgs := [][]byte{[]byte("first"), []byte("second!"), []byte("third entry")}
	body := []byte{kindPacked}
	var ends []int // where each entry ends
	for _, m := range msgs {
		e := make([]byte, entryHead+len(m))
		putEntry(e, m)
		body = append(body, e...)
		ends = append(ends, len(body))
	}
	f.Fuzz(func(t *testing.T, cut uint16, cast bool) {
		// a strict prefix that does not end on an entry's end: the
		// type byte alone (no entries), or inside an entry
		n := int(cut) % len(body)
		for _, e := range ends {
			if n == e {
				n--
			}
		}
		b := body[:n]
		whole := 0
		for _, e := range ends {
			if e <= n {
				whole++
			}
		}
		kind := event.Send
		if cast {
			kind = event.Cast
		}
		c := layertest.Pair(t, "pack")
		before := c.Counter("pack", "malformed", 1)
		unpacked := c.Counter("pack", "unpacked_msgs", 1)
		c.Receive(1, 2, 1, kind, b)
		layertest.CountedOnce(t, c.Counter("pack", "malformed", 1)-before, kind, b, len(body))
		if got := c.Counter("pack", "unpacked_msgs", 1) - unpacked; got != int64(whole) {
			t.Fatalf("pack %x: %d entries went up, want the %d whole ones", b, got, whole)
		}
	})
}
