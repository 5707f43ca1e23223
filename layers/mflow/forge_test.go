package mflow

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// inject hands raw mflow bytes (tag first) to a stack from below, as if
// they came from peer.
func inject(st *stack.Stack, k event.Kind, g event.GroupID, peer event.NodeID, b []byte) {
	pool := st.Layer(0).(*Layer).Ctx.Pool()
	st.Inject(st.NumLayers()-1, true, event.Event{Kind: k, Group: g, Peer: peer, Control: k == event.Send, Msg: pool.FromBytes(b)})
}

func ackBytes(a ack) []byte {
	b := make([]byte, ackSize)
	putAck(b, a)
	return b
}

// credited returns the sender's returned credit per receiver slot.
func credited(s *sender) []int64 {
	out := make([]int64, s.cr.size())
	for i := range out {
		out[i] = s.cr.credited(i)
	}
	return out
}

// TestForgedAcksCreateNoCredit: acknowledgements from a non-member, for a
// group the sender does not cast to, and from a member with impossible
// values (negative or huge amounts, an offset past ack_thresh, more credit
// than the receiver can have returned) leave every limit as it was; the
// impossible ones are counted, and the group still works afterwards.
func TestForgedAcksCreateNoCredit(t *testing.T) {
	cfg := EnsembleConfig()
	c := newCluster(t, 3, cfg, time.Millisecond)
	c.castEvery(1, 1000, 100, time.Millisecond, 0)
	c.net.Run(200 * time.Millisecond)
	s := c.layers[1].send[c.g]
	before := credited(s)
	ep := s.epoch
	off2 := s.off[s.slot[2]]
	forged := []struct {
		name string
		peer event.NodeID
		a    ack
		bad  bool
	}{
		{"non-member", 99, ack{group: c.g, epoch: ep, amount: 1 << 40}, false},
		{"unknown group", 2, ack{group: c.g + 7, epoch: ep, amount: 1 << 40}, false},
		{"huge amount", 2, ack{group: c.g, epoch: ep, off: off2, amount: 1 << 62}, true},
		{"negative amount", 2, ack{group: c.g, epoch: ep, off: off2, amount: -1 << 40}, true},
		{"offset past ack_thresh", 2, ack{group: c.g, epoch: ep, off: 0xffffffff, amount: 1}, true},
		{"offset at ack_thresh", 3, ack{group: c.g, epoch: ep, off: cfg.AckThresh, amount: 0}, true},
		{"more than a window", 2, ack{group: c.g, epoch: ep, off: off2, amount: cfg.Window + cfg.AckThresh + 1}, true},
		{"switch from a new receiver, huge", 3, ack{group: c.g, epoch: ep, off: s.off[s.slot[3]], amount: 1 << 50, sw: true}, false},
	}
	bad := c.counter(1, "bad_acks")
	for _, f := range forged {
		inject(c.stacks[1], event.Send, c.g, f.peer, ackBytes(f.a))
		after := credited(s)
		for i := range before {
			if after[i] != before[i] {
				t.Errorf("%s: receiver %v's credit went from %d to %d", f.name, s.nodes[i], before[i], after[i])
			}
		}
		before = after
		if f.bad {
			bad++
		}
		if got := c.counter(1, "bad_acks"); got != bad {
			t.Errorf("%s: bad_acks = %d, want %d", f.name, got, bad)
			bad = got
		}
	}
	if f := c.counter(1, "foreign"); f < 2 {
		t.Errorf("foreign = %d, want the non-member's and the unknown group's acks counted", f)
	}
	sent := c.castEvery(1, 1000, 300, time.Millisecond, c.net.Now())
	c.net.Run(time.Second)
	if *sent != 300 || c.delivered[2][1] != 400 || c.delivered[3][1] != 400 {
		t.Fatalf("after the forged acks: sent %d of 300, delivered %d and %d of 400", *sent, c.delivered[2][1], c.delivered[3][1])
	}
	for i, n := range s.nodes {
		r := c.layers[n].recv[rkey{c.g, 1}]
		if want := exactLimit(c.layers[1], s.cr.sent, r); s.cr.limit[i] != want {
			t.Errorf("receiver %v: limit %d, want window+sent-count-offset+headroom = %d", n, s.cr.limit[i], want)
		}
	}
}

// TestForgedDataKeepsNoState: flow-controlled multicasts from thousands of
// forged senders, in the node's group and in groups it is not in, with
// current, old and future epochs, leave at most the members' counts plus
// maxEarly; the entries go once a view arrives.
func TestForgedDataKeepsNoState(t *testing.T) {
	c := newCluster(t, 3, EnsembleConfig(), time.Millisecond)
	l := c.layers[2]
	st := c.stacks[2]
	c.castEvery(1, 100, 5, time.Millisecond, 0)
	c.net.Run(20 * time.Millisecond)
	base := len(l.recv)
	cur := uint32(l.views[c.g].cur.ID)
	for i := 0; i < 3000; i++ {
		b := make([]byte, dataHeaderSize+10)
		b[0] = tagData
		binary.BigEndian.PutUint32(b[1:], []uint32{cur, cur - 1, cur + 1, cur + 1000}[i%4])
		g := c.g
		if i%3 == 0 {
			g = event.GroupID(100 + i)
		}
		inject(st, event.Cast, g, event.NodeID(1000+i), b)
	}
	if n := len(l.recv); n > base+maxEarly {
		t.Fatalf("%d receiver counts after 3000 forged senders, want at most %d + %d", n, base, maxEarly)
	}
	if l.early > maxEarly || l.early != len(l.recv)-base {
		t.Fatalf("early = %d with %d counts (base %d)", l.early, len(l.recv), base)
	}
	c.install([]event.NodeID{1, 2, 3})
	for k, r := range l.recv {
		if k.g == c.g && (r.early || k.s > 3) {
			t.Fatalf("after a view of %v: a count for %v (early %v) is left", c.g, k.s, r.early)
		}
	}
	if n := len(l.recv); n > base+maxEarly || l.early != len(l.recv)-base {
		t.Fatalf("after a view: %d counts, early %d; want at most %d + %d", n, l.early, base, maxEarly)
	}
	c.castEvery(1, 100, 5, time.Millisecond, c.net.Now())
	c.net.Run(100 * time.Millisecond)
	if c.delivered[2][1] != 10 {
		t.Fatalf("node 2 delivered %d of 10 after the flood", c.delivered[2][1])
	}
}

// TestForgedEpochDoesNotStall: one multicast forged in a member's name
// with an epoch far ahead of the group's moves a receiver's count to that
// epoch; the sender still takes that receiver's acknowledgements, so its
// flow goes on (it stopped for good after one window before), and the
// credit it gains is at most the forged bytes.
func TestForgedEpochDoesNotStall(t *testing.T) {
	cfg := EnsembleConfig()
	c := newCluster(t, 3, cfg, time.Millisecond)
	c.lax = true
	c.castEvery(1, 1000, 20, time.Millisecond, 0)
	c.net.Run(50 * time.Millisecond)
	s := c.layers[1].send[c.g]
	b := make([]byte, dataHeaderSize+8)
	b[0] = tagData
	binary.BigEndian.PutUint32(b[1:], s.epoch+1000)
	inject(c.stacks[2], event.Cast, c.g, 1, b)
	sent := c.castEvery(1, 1000, 500, time.Millisecond, c.net.Now())
	c.net.Run(2 * time.Second)
	if *sent != 500 || c.delivered[2][1] != 520 || c.delivered[3][1] != 520 {
		t.Fatalf("after one forged epoch: sent %d of 500, delivered %d and %d of 520", *sent, c.delivered[2][1], c.delivered[3][1])
	}
	forged := int64(8) + cfg.Overhead
	for i, n := range s.nodes {
		r := c.layers[n].recv[rkey{c.g, 1}]
		exact := exactLimit(c.layers[1], s.cr.sent, r)
		if extra := s.cr.limit[i] - exact; extra < 0 || extra > forged {
			t.Errorf("receiver %v: limit %d, exact %d: %d more, want 0..%d", n, s.cr.limit[i], exact, extra, forged)
		}
	}
}

// TestEarlyCountsOnlyInWantedGroups: a sender that installs a view before
// the receivers do is counted early by them, so its credit stays exact;
// forged multicasts for thousands of groups the receivers are not in (and
// not joining) take none of the maxEarly early counts first.
func TestEarlyCountsOnlyInWantedGroups(t *testing.T) {
	cfg := EnsembleConfig()
	c := newCluster(t, 3, cfg, time.Millisecond)
	c.addNode(4, cfg)
	for i := 0; i < 3000; i++ {
		b := make([]byte, dataHeaderSize+10)
		b[0] = tagData
		binary.BigEndian.PutUint32(b[1:], 1<<20)
		for _, id := range []event.NodeID{1, 2, 3} {
			inject(c.stacks[id], event.Cast, event.GroupID(100+i), event.NodeID(1000+i), b)
		}
	}
	for _, id := range []event.NodeID{1, 2, 3} {
		if e := c.layers[id].early; e != 0 {
			t.Errorf("node %v: %d early counts for groups it is not in", id, e)
		}
	}
	// Node 4 moves to the new view first and casts; the others follow.
	viewID++
	v := &event.ViewInfo{Group: c.g, ID: viewID, Members: []event.NodeID{1, 2, 3, 4}}
	c.stacks[4].InstallView(v)
	sent := c.castEvery(4, 1000, 10, time.Millisecond, c.net.Now())
	c.net.Run(20 * time.Millisecond)
	for _, id := range []event.NodeID{1, 2, 3} {
		if e := c.layers[id].early; e != 1 {
			t.Errorf("node %v: %d early counts, want node 4's", id, e)
		}
		c.stacks[id].InstallView(v)
	}
	more := c.castEvery(4, 1000, 200, time.Millisecond, c.net.Now())
	c.net.Run(time.Second)
	if *sent != 10 || *more != 200 {
		t.Fatalf("node 4 cast %d+%d of 10+200", *sent, *more)
	}
	s := c.layers[4].send[c.g]
	for i, n := range s.nodes {
		r := c.layers[n].recv[rkey{c.g, 4}]
		if want := exactLimit(c.layers[1], s.cr.sent, r); s.cr.limit[i] != want {
			t.Errorf("receiver %v: node 4's limit %d, want window+sent-count-offset+headroom = %d", n, s.cr.limit[i], want)
		}
	}
}
