package pack

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/layertest"
	"github.com/layercast/layercast/transport/sim"
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
		c := layertest.New(t, sim.Config{Seed: 1, Latency: time.Millisecond}, 2, layertest.Registered(nil, "pack"))
		c.Lax = true
		c.Install(&event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}})
		before := c.Counter("pack", "malformed", 1)
		unpacked := c.Counter("pack", "unpacked_msgs", 1)
		c.Stacks[1].Inject(c.Stacks[1].NumLayers()-1, true, event.Event{Kind: kind, Group: 1, Peer: 2, Msg: event.DefaultPool.FromBytes(b)})
		c.Net.Run(10 * time.Millisecond)
		if got := c.Counter("pack", "malformed", 1) - before; got != 1 {
			t.Fatalf("pack %x (%d bytes of %d): malformed counted %d times, want 1", b, len(b), len(body), got)
		}
		if got := c.Counter("pack", "unpacked_msgs", 1) - unpacked; got != int64(whole) {
			t.Fatalf("pack %x: %d entries went up, want the %d whole ones", b, got, whole)
		}
	})
}
