package fifo

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/transport/sim"

	_ "github.com/layercast/layercast/layers/reliable"
)

func probeCluster(t *testing.T, maxReorder int, maxBytes int64) (*layertest.Cluster, *Layer) {
	var layers []*Layer
	c := layertest.New(t, sim.Config{Seed: 1}, 2, func() []stack.Entry {
		l := New(maxReorder, maxBytes)
		layers = append(layers, l)
		return []stack.Entry{{Name: "fifo", Layer: l}}
	})
	c.Install(&event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}})
	return c, layers[0]
}

func probeInject(c *layertest.Cluster, from event.NodeID, seq uint32, size int) {
	c.Stacks[1].Inject(0, true, layertest.SeqCast(1, from, seq, 1, size))
}

// Issue 8 item 5: a node in no view sending forged casts under many ids
// gets no state and nothing held.
func TestProbeNonMemberGetsNothing(t *testing.T) {
	c, l := probeCluster(t, 4096, 4<<20)
	for id := event.NodeID(100); id < 300; id++ {
		probeInject(c, id, 5, 60000)
	}
	c.Net.Run(100 * time.Millisecond)
	g := l.groups[1]
	if n := len(g.senders); n != 0 {
		t.Errorf("%d senders have state", n)
	}
	if l.held != 0 || c.Counter("fifo", "peak_buffer_bytes", 1) != 0 {
		t.Errorf("%d bytes held (peak %d)", l.held, c.Counter("fifo", "peak_buffer_bytes", 1))
	}
	if n := c.Counter("fifo", "non_member", 1); n != 200 {
		t.Errorf("non_member = %d, want 200", n)
	}
}

// A member flooding messages far ahead of a gap, large ones, stays within
// max_reorder_bytes (and max_reorder), and the stream goes on.
func TestProbeMemberFloodIsBounded(t *testing.T) {
	c, l := probeCluster(t, 1024, 1<<20)
	for seq := uint32(2); seq < 600; seq++ {
		probeInject(c, 2, seq, 60000)
		if l.held > 1<<20+60000 {
			t.Fatalf("%d bytes held after seq %d", l.held, seq)
		}
	}
	if p := c.Counter("fifo", "peak_buffer_bytes", 1); p > 1<<20 {
		t.Errorf("peak %d bytes, bound %d", p, 1<<20)
	}
	if d := c.Counter("fifo", "delivered", 1); d == 0 {
		t.Errorf("nothing delivered: the stream waits for what it gave up")
	}
}

// FuzzScript feeds node 1 of three, through fifo over reliable, a script of
// packets from members and non-members (reliable's pass-through and data
// headers: fifo adds none), its own casts, and view
// changes (removals, re-admissions, a lost removal notice): no panic, and
// what fifo holds stays within its bounds and adds up.
func FuzzScript(f *testing.F) {
	rec := layertest.ScriptPacket
	// reliable's headers: tData (18 bytes: type, flags, view, base view,
	// base, seq) and tPass (1 byte)
	relData := func(seq uint32, b []byte) []byte {
		h := make([]byte, 18)
		h[0] = 1
		binary.BigEndian.PutUint32(h[2:], 1)
		binary.BigEndian.PutUint32(h[10:], 1)
		binary.BigEndian.PutUint32(h[14:], seq)
		return append(h, b...)
	}
	pass := func(b []byte) []byte { return append([]byte{2}, b...) }
	cat := slices.Concat[[]byte]
	f.Add(cat([]byte{5, 5}, rec(1, relData(2, layertest.Payload(2, 8))), rec(1, relData(1, layertest.Payload(1, 8))), []byte{6, 20}))
	f.Add(cat(rec(1, relData(3, layertest.Payload(3, 8))), rec(0, pass([]byte{1})), []byte{7, 1, 7, 2, 5}))
	f.Add(cat(rec(1|16, relData(1, layertest.Payload(1, 8))), rec(16, pass([]byte{3})), []byte{7, 3, 7, 5, 6, 40}))
	f.Add(cat(rec(1, pass(layertest.Payload(9, 8))), rec(1, relData(1<<20, layertest.Payload(7, 8))), []byte{7, 4, 7, 0}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var layers []*Layer
		c := layertest.RunScript(t, func() []stack.Entry {
			l := New(16, 256)
			layers = append(layers, l)
			info, _ := compose.Lookup("reliable")
			r, err := info.New(compose.MustParams("reliable", nil))
			if err != nil {
				t.Fatal(err)
			}
			return []stack.Entry{{Name: "fifo", Layer: l}, {Name: "reliable", Layer: r}}
		}, b)
		l := layers[0]
		var sum int64
		for _, g := range l.groups {
			for id, s := range g.senders {
				if s.ring.Len() >= l.maxReorder || (s.ring.Len() > 1 && s.bytes > l.maxReorderBytes) {
					t.Errorf("sender %v: %d held, %d bytes", id, s.ring.Len(), s.bytes)
				}
				if g.view == nil || !g.view.Has(id) {
					t.Errorf("sender %v has state but is no member", id)
				}
				sum += s.bytes
			}
		}
		if sum != l.held {
			t.Errorf("senders hold %d bytes, layer counts %d", sum, l.held)
		}
		c.Stacks[1].Close()
		if l.held != 0 {
			t.Errorf("%d bytes held after Close", l.held)
		}
	})
}
