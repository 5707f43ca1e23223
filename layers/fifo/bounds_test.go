package fifo_test

import (
	"encoding/binary"
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/layertest"
	"github.com/layercast/layercast/transport/sim"
)

// fifoData is a fifo data packet from a sender in view tag whose stream
// starts at base (cast since view 1), with payload the sequence number and
// size bytes in all.
func fifoData(tag, base, seq uint32, size int) []byte {
	b := make([]byte, 17+size)
	b[0] = 1
	binary.BigEndian.PutUint32(b[1:], tag)
	binary.BigEndian.PutUint32(b[5:], 1)
	binary.BigEndian.PutUint32(b[9:], base)
	binary.BigEndian.PutUint32(b[13:], seq)
	binary.BigEndian.PutUint32(b[17:], seq)
	return b
}

func inject(c *layertest.Cluster, at event.NodeID, k event.Kind, from event.NodeID, b []byte) {
	c.Stacks[at].Inject(0, true, event.Event{Kind: k, Group: 1, Peer: from, Msg: event.DefaultPool.FromBytes(b)})
}

// Issue 8 item 5: a reorder buffer that overflows (by count or by bytes)
// gives up the gap at the head of the stream and goes on in order; it never
// drops a message the layer below will not deliver again and then waits for
// it forever.
func TestReorderOverflowSkipsTheGap(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params map[string]string
		size   int
	}{
		{"count", map[string]string{"max_reorder": "16"}, 100},
		{"bytes", map[string]string{"max_reorder_bytes": "2KB"}, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := layertest.New(t, sim.Config{Seed: 1}, 2, fifoAlone(tc.params))
			c.Install(&event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}})
			const n = 100
			// message 1 comes last, as if reliable recovered it late
			for seq := uint32(2); seq <= n; seq++ {
				inject(c, 1, event.Cast, 2, fifoData(1, 1, seq, tc.size))
			}
			inject(c, 1, event.Cast, 2, fifoData(1, 1, 1, tc.size))
			got := c.Got[1][1][2]
			for i := 1; i < len(got); i++ {
				if got[i] <= got[i-1] {
					t.Fatalf("delivered %d after %d", got[i], got[i-1])
				}
			}
			skipped := c.Counter("fifo", "skipped", 1)
			if skipped != 1 || len(got) != n-1 || got[0] != 2 {
				t.Errorf("delivered %d (first %v), skipped %d: want 2..%d delivered, 1 skipped", len(got), got[:min(1, len(got))], skipped, n)
			}
			if l := c.Counter("fifo", "late", 1); l != 1 {
				t.Errorf("late = %d, want 1", l)
			}
			if b := c.Counter("fifo", "buffer_bytes", 1); b != 0 {
				t.Errorf("fifo still holds %d bytes", b)
			}
			if p, max := c.Counter("fifo", "peak_buffer_bytes", 1), int64(16*tc.size); tc.name == "count" && p > max {
				t.Errorf("peak %d bytes held, want at most %d", p, max)
			}
			if p := c.Counter("fifo", "peak_buffer_bytes", 1); tc.name == "bytes" && p > 2048 {
				t.Errorf("peak %d bytes held, want at most 2048", p)
			}
		})
	}
}
