package frag

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/layertest"
	"github.com/layercast/layercast/transport/sim"
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
		c := layertest.New(t, sim.Config{Seed: 1, Latency: time.Millisecond}, 2, layertest.Registered(nil, "frag"))
		c.Lax = true
		c.Install(&event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}})
		before := c.Counter("frag", "malformed", 1)
		c.Stacks[1].Inject(c.Stacks[1].NumLayers()-1, true, event.Event{Kind: kind, Group: 1, Peer: 2, Msg: event.DefaultPool.FromBytes(b)})
		c.Net.Run(10 * time.Millisecond)
		if got := c.Counter("frag", "malformed", 1) - before; got != 1 {
			t.Fatalf("%v fragment %x (%d bytes of %d): malformed counted %d times, want 1", kind, b, len(b), len(whole), got)
		}
		if n := len(c.Got[1][1][2]); n != 0 {
			t.Fatalf("%d messages delivered from a cut fragment", n)
		}
	})
}
