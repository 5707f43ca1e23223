package lec

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
)

// Hostile-input tests (issue 8): a packet naming any sequence number, from
// any host, neither crashes a node nor grows its state past the configured
// bounds; only members of the node's views get state.

// hardNode is node 1 with lec alone, in group 9 with {1..8} (one region),
// fed by hand through the whole receive path of the stack.
type hardNode struct {
	st        *stack.Stack
	l         *Layer
	delivered int
	now       event.Time
}

func newHardNode(t testing.TB, cfg Config) *hardNode {
	hn := &hardNode{l: New(cfg), now: 1e9}
	app := stack.AppFuncs{OnDeliver: func(stack.Delivery) { hn.delivered++ }}
	st, err := stack.New(stack.Config{Self: 1, Transport: &testkit.Transport{}, Clock: stack.ClockFunc(func() event.Time { return hn.now }),
		Layers: []stack.Entry{{Name: "lec", Layer: hn.l}}, App: app, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	hn.st = st
	hn.install(1, 2, 3, 4, 5, 6, 7, 8)
	return hn
}

// install hands the node a neighbourhood: group 9 with members ms (one
// region), with its view.
func (hn *hardNode) install(ms ...event.NodeID) {
	v := &event.ViewInfo{Group: 9, ID: 1, Members: ms}
	hn.st.InstallNeighbourhood(&event.Neighbourhood{Self: 1, Groups: []event.GroupID{9},
		Views: map[event.GroupID]*event.ViewInfo{9: v},
		Local: []event.LocalRegion{{Groups: []event.GroupID{9}, Members: ms}}})
}

func hardConfig() Config {
	return Config{R: 8, C: 5, Stagger: 1, Window: 2e9, MaxHeld: 1024, MaxUnusable: 64,
		MaxUnusableBytes: 64 << 10, MaxHeldBytes: 256 << 10, MaxStreams: 16}
}

// data injects a data cast of seq in group g from node from.
func (hn *hardNode) data(g event.GroupID, from event.NodeID, seq uint32, payload []byte) {
	pkt := make([]byte, dataHeader, dataHeader+len(payload))
	pkt[0] = typeData
	binary.BigEndian.PutUint32(pkt[1:], seq)
	pkt = append(pkt, payload...)
	hn.st.Inject(0, true, event.Event{Kind: event.Cast, Group: g, Peer: from, Msg: event.DefaultPool.FromBytes(pkt)})
}

// repair injects a repair from node from naming ids, with an xor of xorLen
// bytes (lenx says xorLen).
func (hn *hardNode) repair(from event.NodeID, ids []id, xorLen int) {
	pkt := []byte{typeRepair, byte(len(ids)), 0, 0, 0, 0}
	binary.BigEndian.PutUint32(pkt[2:], uint32(xorLen))
	for _, k := range ids {
		pkt = binary.BigEndian.AppendUint32(pkt, uint32(k.group))
		pkt = binary.BigEndian.AppendUint32(pkt, uint32(k.sender))
		pkt = binary.BigEndian.AppendUint32(pkt, k.seq)
	}
	pkt = append(pkt, make([]byte, xorLen)...)
	for i := len(pkt) - xorLen; i < len(pkt); i++ {
		pkt[i] = byte(i)
	}
	hn.st.Inject(0, true, event.Event{Kind: event.Send, Peer: from, Msg: event.DefaultPool.FromBytes(pkt)})
}

// state is what lec keeps, in counts and bytes.
type state struct {
	streams, remote, words, held, heldQ, unusable, unusableQ, byMissing, lost, lostQ int
	rebuilt, rebuiltQ                                                                int
	heldBytes, unBytes                                                               int64
}

func (l *Layer) state() state {
	s := state{streams: len(l.streams), remote: l.remote, held: len(l.held), heldQ: l.heldCount(),
		unusable: l.unCount, unusableQ: len(l.unusable) - l.unHead, byMissing: len(l.byMissing),
		lost: len(l.lostAt), lostQ: len(l.lostQ) - l.lostHd, heldBytes: l.heldBytes, unBytes: l.unBytes,
		rebuilt: len(l.rebuilt), rebuiltQ: len(l.rebuiltQ) - l.rebuiltHd}
	for _, st := range l.streams {
		s.words += len(st.bits)
	}
	return s
}

// within fails the test if s exceeds cfg's bounds.
func within(t *testing.T, what string, s state, cfg Config, ownStreams int) {
	t.Helper()
	if s.remote > cfg.MaxStreams || s.streams > cfg.MaxStreams+ownStreams {
		t.Errorf("%s: %d streams (%d of other senders), bound %d", what, s.streams, s.remote, cfg.MaxStreams)
	}
	if s.words > s.streams*maxWords {
		t.Errorf("%s: %d window words for %d streams, bound %d each", what, s.words, s.streams, maxWords)
	}
	if s.held > cfg.MaxHeld || s.heldQ > cfg.MaxHeld || s.heldBytes > cfg.MaxHeldBytes {
		t.Errorf("%s: %d data packets held (%d bytes), bounds %d and %d", what, s.held, s.heldBytes, cfg.MaxHeld, cfg.MaxHeldBytes)
	}
	if s.unusable > cfg.MaxUnusable || s.unBytes > cfg.MaxUnusableBytes {
		t.Errorf("%s: %d unusable repairs (%d bytes), bounds %d and %d", what, s.unusable, s.unBytes, cfg.MaxUnusable, cfg.MaxUnusableBytes)
	}
	if s.unusableQ > maxUnusableQueue(cfg.MaxUnusable) {
		t.Errorf("%s: %d slots in the unusable queue for %d live repairs, bound %d", what, s.unusableQ, s.unusable, maxUnusableQueue(cfg.MaxUnusable))
	}
	if s.lost > cfg.MaxHeld || s.lostQ > cfg.MaxHeld {
		t.Errorf("%s: %d discovered losses remembered (queue %d), bound %d", what, s.lost, s.lostQ, cfg.MaxHeld)
	}
	if s.rebuilt > cfg.MaxHeld || s.rebuiltQ > cfg.MaxHeld {
		t.Errorf("%s: %d rebuilt packets remembered (queue %d), bound %d", what, s.rebuilt, s.rebuiltQ, cfg.MaxHeld)
	}
	// The index of unusable repairs holds at most 255 ids per repair.
	if s.byMissing > 255*cfg.MaxUnusable {
		t.Errorf("%s: %d ids indexed for %d unusable repairs", what, s.byMissing, s.unusable)
	}
}

// TestStreamWindowNeverIndexesPastEnd is issue 8 item 1 at the unit level:
// a window grown to 30 words, then a number a little over a window ahead,
// slid without growing and indexed word 31 of 30 (a panic). Every jump,
// small or huge or across 2^32, now keeps the window at most maxWords long
// and its answers right.
func TestStreamWindowNeverIndexesPastEnd(t *testing.T) {
	s := &stream{}
	s.mark(1)
	s.mark(30*64 - 1) // 30 words
	if len(s.bits) != 30 {
		t.Fatalf("window of %d words, want 30", len(s.bits))
	}
	s.mark(33 * 64) // word 33: slides by 2, then needs word 31
	if !s.has(33*64) || !s.has(30*64-1) || s.has(33*64-1) {
		t.Errorf("after a slide: has(%d)=%v has(%d)=%v has(%d)=%v; want true, true, false",
			33*64, s.has(33*64), 30*64-1, s.has(30*64-1), 33*64-1, s.has(33*64-1))
	}
	for _, seq := range []uint32{5000, 1 << 20, 1<<31 - 1, 1 << 31, math.MaxUint32 - 1, math.MaxUint32, 0, 3, 1 << 30} {
		s.mark(seq)
		if len(s.bits) > maxWords {
			t.Fatalf("mark(%d): window of %d words, bound %d", seq, len(s.bits), maxWords)
		}
	}

	// Across the wrap: numbers go on from 2^32-1 to 0 and are told apart.
	w := &stream{}
	for seq := uint32(math.MaxUint32 - 3000); seq != 3000; seq++ {
		if w.has(seq) {
			t.Fatalf("has(%d) before it was marked", seq)
		}
		w.mark(seq)
		if !w.has(seq) || len(w.bits) > maxWords {
			t.Fatalf("mark(%d): has %v, %d words", seq, w.has(seq), len(w.bits))
		}
	}
	if w.has(3000) || w.has(5000) || !w.has(2999) || !w.has(math.MaxUint32) {
		t.Errorf("after the wrap: has(3000)=%v has(5000)=%v has(2999)=%v has(2^32-1)=%v; want false, false, true, true",
			w.has(3000), w.has(5000), w.has(2999), w.has(math.MaxUint32))
	}

	// A jump of more than a window forgets what was marked and keeps the
	// numbers just below the new one open (they may still arrive).
	j := &stream{}
	j.mark(1)
	j.mark(100_000)
	if !j.has(1) || j.has(100_000-5) || !j.has(100_000) {
		t.Errorf("after a jump: has(1)=%v has(99995)=%v has(100000)=%v; want true, false, true", j.has(1), j.has(100_000-5), j.has(100_000))
	}
}

// TestOnePacketNamingAnyNumber: one data packet or one repair naming a
// sequence number at or beyond a window (and near 2^32) on a new stream,
// from a member or any host, neither panics nor takes state beyond a
// window's words.
func TestOnePacketNamingAnyNumber(t *testing.T) {
	seqs := []uint32{window, window + 1, 3 * window, 1 << 20, 1<<31 - 1, 1 << 31, math.MaxUint32 - 64, math.MaxUint32}
	for _, seq := range seqs {
		for _, from := range []event.NodeID{2, 77} { // a member, a non-member
			cfg := hardConfig()
			hn := newHardNode(t, cfg)
			hn.data(9, from, seq, []byte("x"))
			hn.data(9, from, seq-1, []byte("y"))
			hn.data(9, from, seq+1, []byte("z"))
			hn.repair(from, []id{{9, 3, seq}, {9, 4, seq}}, 16)
			hn.repair(from, []id{{9, 3, seq}, {9, 5, 1}}, 16)
			s := hn.l.state()
			within(t, "one packet", s, cfg, 1)
			if s.words > maxWords*s.streams {
				t.Errorf("seq %d from n%d: %d words", seq, from, s.words)
			}
			if from == 77 && (s.streams != 0 || s.held != 0 || s.unusable != 0 || s.lost != 0) {
				t.Errorf("seq %d from non-member n77: state %+v, want none", seq, s)
			}
			if from == 2 && s.streams != 1 {
				t.Errorf("seq %d from member n2: %d streams, want 1", seq, s.streams)
			}
			// All three data packets go up (none is a duplicate).
			if hn.delivered != 3 {
				t.Errorf("seq %d from n%d: %d delivered, want 3", seq, from, hn.delivered)
			}
		}
	}
}

// TestNonMemberFloodLeavesNoState is issue 8 item 5's probe: a non-member
// sends 100,000 forged data casts and repairs with distinct stream ids and
// large payloads. Before, every one made a stream (100k entries) and the
// repairs piled up by count only; now a non-member gets no state at all.
func TestNonMemberFloodLeavesNoState(t *testing.T) {
	cfg := hardConfig()
	hn := newHardNode(t, cfg)
	payload := make([]byte, 4000)
	const n = 100_000
	for i := range n {
		g := event.GroupID(9)
		if i%2 == 1 {
			g = event.GroupID(1000 + i)
		}
		hn.data(g, 99, uint32(i*7919), payload)
		hn.repair(99, []id{{9, event.NodeID(100 + i), uint32(i)}, {9, 2, uint32(i + 1)}, {event.GroupID(i), 3, 4}}, 4000)
	}
	s := hn.l.state()
	within(t, "non-member flood", s, cfg, 0)
	if s.streams != 0 || s.held != 0 || s.unusable != 0 || s.lost != 0 || s.byMissing != 0 {
		t.Errorf("after %d forged packets from a non-member: %+v, want no state", 2*n, s)
	}
	if got := hn.l.c.RepairsForeign.Value(); got != n {
		t.Errorf("repairs_foreign = %d, want %d", got, n)
	}
	if got := hn.l.c.DataUntracked.Value(); got != n {
		t.Errorf("data_untracked = %d, want %d", got, n)
	}
}

// TestMemberFloodStaysBounded: a member (whom this node must serve) sends
// 20,000 repairs naming distinct missing packets with large XORs, and data
// with large payloads: lec's state stays within every configured bound, in
// count and in bytes. Before, unusable repairs were bounded by count only
// (64 repairs of 8 KB here, over the 64 KB bound).
func TestMemberFloodStaysBounded(t *testing.T) {
	cfg := hardConfig()
	hn := newHardNode(t, cfg)
	const n = 20_000
	big := make([]byte, 8000)
	peak := state{}
	for i := range n {
		sender := event.NodeID(2 + i%7)
		seq := uint32(i*13 + 1)
		hn.repair(3, []id{{9, sender, seq}, {9, sender, seq + 1}, {9, sender, seq + 2}}, 8000)
		if i%4 == 0 {
			hn.data(9, 2+event.NodeID(i%7), uint32(i), big)
		}
		if i%1000 == 0 {
			s := hn.l.state()
			within(t, "member flood", s, cfg, 0)
			if t.Failed() {
				return
			}
			peak.unBytes = max(peak.unBytes, s.unBytes)
			peak.heldBytes = max(peak.heldBytes, s.heldBytes)
		}
	}
	within(t, "member flood", hn.l.state(), cfg, 0)
	// The bounds were reached, so the test measures them.
	if peak.unBytes < cfg.MaxUnusableBytes/2 || peak.heldBytes < cfg.MaxHeldBytes/2 {
		t.Errorf("peaks %d unusable bytes, %d held bytes: the flood did not reach the bounds %d, %d",
			peak.unBytes, peak.heldBytes, cfg.MaxUnusableBytes, cfg.MaxHeldBytes)
	}
	if hn.l.c.UnusableEvicted.Value() == 0 || hn.l.c.LostEvicted.Value() == 0 {
		t.Errorf("unusable_evicted %d, lost_evicted %d: want both > 0", hn.l.c.UnusableEvicted.Value(), hn.l.c.LostEvicted.Value())
	}
}

// TestStreamsOfLeaversArePruned: when senders leave the views, their
// windows go; a sender that comes back starts a new window; and windows of
// other senders never exceed MaxStreams.
func TestStreamsOfLeaversArePruned(t *testing.T) {
	cfg := hardConfig()
	cfg.MaxStreams = 4
	hn := newHardNode(t, cfg)
	if err := hn.st.Cast(9, []byte("own")); err != nil {
		t.Fatal(err)
	}
	for s := event.NodeID(2); s <= 8; s++ {
		hn.data(9, s, 1, []byte("d"))
	}
	s := hn.l.state()
	if s.remote != 4 || s.streams != 5 || hn.l.c.StreamsFull.Value() != 3 {
		t.Fatalf("%d streams (%d of others), %d refused; want 5 (4) and 3", s.streams, s.remote, hn.l.c.StreamsFull.Value())
	}
	if hn.delivered != 7 {
		t.Errorf("%d delivered, want 7 (untracked data still goes up)", hn.delivered)
	}
	hn.install(1, 2, 3) // 4..8 leave
	s = hn.l.state()
	if s.remote != 2 || s.streams != 3 || hn.l.c.StreamsPruned.Value() != 2 {
		t.Errorf("after 4..8 left: %d streams (%d of others), %d pruned; want 3 (2) and 2", s.streams, s.remote, hn.l.c.StreamsPruned.Value())
	}
	if hn.l.streams[streamKey{9, 1}] == nil {
		t.Errorf("the node's own window was pruned")
	}
	// A leaver's data no longer takes state.
	hn.data(9, 5, 2, []byte("d"))
	if got := hn.l.state().remote; got != 2 {
		t.Errorf("data from a leaver: %d streams of others, want 2", got)
	}
}

// TestRegistrationBounds: the registration's defaults are the documented
// defaults, and a spec's values reach the layer.
func TestRegistrationBounds(t *testing.T) {
	info, ok := compose.Lookup("lec")
	if !ok {
		t.Fatal("lec not registered")
	}
	build := func(given map[string]string) Config {
		p, err := compose.NewParams(info, given)
		if err != nil {
			t.Fatal(err)
		}
		l, err := info.New(p)
		if err != nil {
			t.Fatal(err)
		}
		return l.(*Layer).cfg
	}
	d := build(nil)
	if d.MaxStreams != DefaultMaxStreams || d.MaxUnusableBytes != DefaultMaxUnusableBytes || d.MaxHeldBytes != DefaultMaxHeldBytes {
		t.Errorf("defaults: max_streams %d, max_unusable_bytes %d, max_held_bytes %d; want %d, %d, %d",
			d.MaxStreams, d.MaxUnusableBytes, d.MaxHeldBytes, DefaultMaxStreams, DefaultMaxUnusableBytes, DefaultMaxHeldBytes)
	}
	c := build(map[string]string{"max_streams": "100", "max_unusable_bytes": "1MB", "max_held_bytes": "2KiB"})
	if c.MaxStreams != 100 || c.MaxUnusableBytes != 1e6 || c.MaxHeldBytes != 2048 {
		t.Errorf("given values: %d, %d, %d; want 100, 1000000, 2048", c.MaxStreams, c.MaxUnusableBytes, c.MaxHeldBytes)
	}
	for _, bad := range []map[string]string{{"max_streams": "0"}, {"max_unusable_bytes": "0"}, {"max_held_bytes": "-1"}} {
		if _, err := compose.NewParams(info, bad); err == nil {
			t.Errorf("NewParams(%v) accepted", bad)
		}
	}
}

// TestUsedRepairsLeaveNoSlots: repairs that wait and are then made usable
// (a member names two of its next packets, then sends one) used to leave
// their slots, XOR bytes included, in the unusable queue until the window
// expired: 20,000 of them within a window kept 20,000 slots. The queue
// stays within twice the bound, and used repairs keep no bytes.
func TestUsedRepairsLeaveNoSlots(t *testing.T) {
	cfg := hardConfig()
	hn := newHardNode(t, cfg)
	const n = 20_000
	p := []byte("0123456789abcdef")
	// One repair that stays unusable holds the head of the queue.
	hn.repair(3, []id{{9, 4, 1}, {9, 4, 2}}, 0)
	for i := range n {
		seq := uint32(2*i + 1)
		hn.repair(3, []id{{9, 2, seq}, {9, 2, seq + 1}}, 0)
		hn.data(9, 2, seq, p)
	}
	s := hn.l.state()
	within(t, "used repairs", s, cfg, 0)
	if got := hn.l.c.UnusableBuffered.Value(); got != n+1 {
		t.Errorf("unusable_buffered = %d, want %d", got, n+1)
	}
	for _, r := range hn.l.unusable[hn.l.unHead:] {
		if r.dead && (r.xor != nil || r.ids != nil) {
			t.Fatalf("a used repair keeps %d XOR bytes and %d ids", len(r.xor), len(r.ids))
		}
	}
}
