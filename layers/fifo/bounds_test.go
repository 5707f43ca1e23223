package fifo_test

import (
	"runtime"
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/testbed/testkit"
	"github.com/layercast/layercast/transport/sim"
)

// inject hands node at a cast from a sender of group 1 as reliable would
// deliver it: number seq of a stream starting at 1, size bytes of payload.
func inject(c *layertest.Cluster, at, from event.NodeID, seq uint32, size int) {
	c.Stacks[at].Inject(0, true, layertest.SeqCast(1, from, seq, 1, size))
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
				inject(c, 1, 2, seq, tc.size)
			}
			inject(c, 1, 2, 1, tc.size)
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
			// each held message counts its whole pooled buffer (1.5 KB
			// and headroom), not its payload
			if p, max := c.Counter("fifo", "peak_buffer_bytes", 1), int64(16*2048); tc.name == "count" && p > max {
				t.Errorf("peak %d bytes held, want at most %d", p, max)
			}
			if p := c.Counter("fifo", "peak_buffer_bytes", 1); tc.name == "bytes" && p > 2048 {
				t.Errorf("peak %d bytes held, want at most 2048", p)
			}
		})
	}
}

// Issue 8 item 5 (the flood probe): max_reorder_bytes bounds the memory the
// reorder buffer keeps alive, not only the payload it holds. A pooled buffer
// keeps the capacity of the largest packet it ever carried, so after a flood
// of large packets small early messages each pinned 16 KB while counting
// their 10 bytes: 1,000 of them held 16 MB under a 256 KB bound.
func TestReorderBytesBoundTheBuffers(t *testing.T) {
	c := layertest.New(t, sim.Config{Seed: 1}, 2, fifoAlone(map[string]string{"max_reorder_bytes": "256KB"}))
	c.Install(&event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}})
	const n, pinned = 1000, 16 << 10
	before := testkit.LiveHeap()
	big := make([]byte, pinned)
	for seq := uint32(2); seq <= n+1; seq++ { // message 1 never comes
		m := event.DefaultPool.FromBytes(big)
		m.Truncate(copy(m.Bytes(), layertest.Payload(seq, 10)))
		c.Stacks[1].Inject(0, true, event.Event{Kind: event.Cast, Group: 1, Peer: 2, Seq: seq, Start: 1, Msg: m})
	}
	held := testkit.LiveHeap() - before
	if b := c.Counter("fifo", "buffer_bytes", 1); b > 256<<10+pinned+1024 {
		t.Errorf("fifo counts %d bytes held, bound 256 KB and one message", b)
	}
	// the bound, one lone message over it, and the ring of pointers
	if max := int64(256<<10 + pinned + 4096*8 + 64<<10); held > max {
		t.Errorf("%d early messages of 10 bytes in %d-byte buffers: %d bytes live, want at most %d", n, pinned, held, max)
	}
	runtime.KeepAlive(c)
}
