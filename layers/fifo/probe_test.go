package fifo

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/layertest"
	"github.com/layercast/layercast/stack"
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

func probeData(tag, baseView, base, seq uint32, size int) []byte {
	b := make([]byte, headerSize+size)
	b[0] = tData
	binary.BigEndian.PutUint32(b[1:], tag)
	binary.BigEndian.PutUint32(b[5:], baseView)
	binary.BigEndian.PutUint32(b[9:], base)
	binary.BigEndian.PutUint32(b[13:], seq)
	return b
}

func probeInject(c *layertest.Cluster, k event.Kind, from event.NodeID, b []byte) {
	c.Stacks[1].Inject(0, true, event.Event{Kind: k, Group: 1, Peer: from, Msg: event.DefaultPool.FromBytes(b)})
}

// Issue 8 item 5: a node in no view sending forged casts, floor requests
// and floor answers under many ids gets no state and nothing held.
func TestProbeNonMemberGetsNothing(t *testing.T) {
	c, l := probeCluster(t, 4096, 4<<20)
	for id := event.NodeID(100); id < 300; id++ {
		probeInject(c, event.Cast, id, probeData(1, 0, 1, 5, 60000))
		probeInject(c, event.Cast, id, probeData(1, 1, 1, 5, 60000)) // asks a floor if it were a member
		req := []byte{tFloorReq, 0, 0, 0, 1, 0, 0, 0, 9}             // for a view not installed yet
		probeInject(c, event.Send, id, req)
		ans := []byte{tFloor, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1}
		probeInject(c, event.Send, id, ans)
	}
	c.Net.Run(100 * time.Millisecond)
	g := l.groups[1]
	if n := len(g.senders); n != 0 {
		t.Errorf("%d senders have state", n)
	}
	if n := len(g.asked); n > len(g.view.Members)+8 {
		t.Errorf("%d floor requests kept", n)
	}
	if l.held != 0 || c.Counter("fifo", "peak_buffer_bytes", 1) != 0 {
		t.Errorf("%d bytes held (peak %d)", l.held, c.Counter("fifo", "peak_buffer_bytes", 1))
	}
	if n := c.Counter("fifo", "floor_requests", 1); n != 0 {
		t.Errorf("%d floor requests sent to non-members", n)
	}
}

// A member flooding messages far ahead of a gap, large ones, stays within
// max_reorder_bytes (and max_reorder), whether its stream is placed or
// waiting for its floor.
func TestProbeMemberFloodIsBounded(t *testing.T) {
	for _, placed := range []bool{true, false} {
		c, l := probeCluster(t, 1024, 1<<20)
		tag, baseView := uint32(1), uint32(0)
		if !placed {
			// it cast since a later view: we cannot tell where its stream
			// starts, and hold its messages until it answers our request
			tag, baseView = 2, 2
		}
		for seq := uint32(2); seq < 600; seq++ {
			probeInject(c, event.Cast, 2, probeData(tag, baseView, 1, seq, 60000))
			if l.held > 1<<20+60000 {
				t.Fatalf("placed %v: %d bytes held after seq %d", placed, l.held, seq)
			}
		}
		if p := c.Counter("fifo", "peak_buffer_bytes", 1); p > 1<<20 {
			t.Errorf("placed %v: peak %d bytes, bound %d", placed, p, 1<<20)
		}
		if n := c.Counter("fifo", "floor_requests", 1); placed == (n != 0) {
			t.Errorf("placed %v: %d floor requests", placed, n)
		}
		if d := c.Counter("fifo", "delivered", 1); d == 0 {
			t.Errorf("placed %v: nothing delivered: the stream waits for what it gave up", placed)
		}
	}
}

// FuzzScript feeds node 1 of three, through fifo over reliable, a script of
// packets from members and non-members (fifo's own headers behind
// reliable's pass-through and data headers), its own casts, and view
// changes (removals, re-admissions, a lost removal notice): no panic, and
// what fifo holds stays within its bounds and adds up.
func FuzzScript(f *testing.F) {
	rec := func(op byte, body []byte) []byte { return append([]byte{op, byte(len(body))}, body...) }
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
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	req := []byte{tFloorReq, 0, 0, 0, 1, 0, 0, 0, 1}
	ans := []byte{tFloor, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1}
	f.Add(cat([]byte{5, 5}, rec(1, relData(2, probeData(1, 0, 1, 2, 8))), rec(1, relData(1, probeData(1, 0, 1, 1, 8))), []byte{6, 20}))
	f.Add(cat(rec(1, relData(1, probeData(2, 2, 1, 3, 8))), rec(0, pass(ans)), rec(0, pass(req)), []byte{7, 1, 7, 2, 5}))
	f.Add(cat(rec(1|16, relData(1, probeData(1, 0, 1, 1, 8))), rec(16, pass(req)), []byte{7, 3, 7, 5, 6, 40}))
	f.Add(cat(rec(1, pass(probeData(1, 0, 1, 9, 8))), rec(1, pass(probeData(1, 0, 1, 1<<20, 8))), []byte{7, 4, 7, 0}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var layers []*Layer
		c := layertest.New(t, sim.Config{Seed: 1, Latency: time.Millisecond}, 3, func() []stack.Entry {
			l := New(16, 256)
			layers = append(layers, l)
			info, _ := compose.Lookup("reliable")
			r, err := info.New(compose.MustParams("reliable", nil))
			if err != nil {
				t.Fatal(err)
			}
			return []stack.Entry{{Name: "fifo", Layer: l}, {Name: "reliable", Layer: r}}
		})
		c.Lax = true
		c.Install(&event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3}})
		c.Script(b)
		l := layers[0]
		var sum int64
		for _, g := range l.groups {
			for id, s := range g.senders {
				if s.ring.Len() >= l.maxReorder || len(s.early) > l.maxReorder || (s.ring.Len()+len(s.early) > 1 && s.bytes > l.maxReorderBytes) {
					t.Errorf("sender %v: %d held, %d early, %d bytes", id, s.ring.Len(), len(s.early), s.bytes)
				}
				if _, ok := g.floors[id]; !ok {
					t.Errorf("sender %v has state but is no member", id)
				}
				sum += s.bytes
			}
			if g.view != nil && len(g.asked) > len(g.view.Members)+8 {
				t.Errorf("%d floor requests kept", len(g.asked))
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
