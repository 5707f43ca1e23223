package frag

import (
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/testbed/layertest"
)

// FuzzTruncatedCounted gives node 1 a fragment whose header is cut short,
// or a whole message (first and last fragment at once) cut short of the
// length its header announces, and checks frag drops it and counts it as
// malformed, exactly once, and passes nothing up.
func FuzzTruncatedCounted(f *testing.F) {
	f.Add(uint16(0), false)
	f.Add(uint16(3), false)
	f.Add(uint16(9), true)
	whole := make([]byte, HeaderLen+12)
	putHeader(whole, Header{First: true, Last: true, Total: 12})
	f.Fuzz(func(t *testing.T, cut uint16, cast bool) {
		b := whole[:int(cut)%len(whole)]
		kind := event.Send
		if cast {
			kind = event.Cast
		}
		c := layertest.Pair(t, "frag")
		before := c.Counter("frag", "malformed", 1)
		c.Receive(1, 2, 1, kind, b)
		layertest.CountedOnce(t, c.Counter("frag", "malformed", 1)-before, kind, b, len(whole))
		if n := len(c.Got[1][1][2]); n != 0 {
			t.Fatalf("%d messages delivered from a cut fragment", n)
		}
	})
}
