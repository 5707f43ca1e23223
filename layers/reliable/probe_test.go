package reliable

import (
	"encoding/binary"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/wirecodec"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/testbed/testkit"
	"github.com/layercast/layercast/transport/sim"
)

// probe is a 2-node cluster of reliable alone in group 1 (view 1), with
// node 2 cut off so that node 1's casts stay unstable, and node 1's layer
// at hand to inspect.
type probe struct {
	c   *layertest.Cluster
	l   *Layer
	wc  *wirecodec.Codec
	buf int64 // node 1's buffer after its casts
}

// kept makes stacks of the reliable layer alone, as registered with the
// parameters given, and hands keep each layer it makes, in order (with
// layertest.New: node 1's first).
func kept(t testing.TB, given map[string]string, keep func(*Layer)) func() []stack.Entry {
	return func() []stack.Entry {
		info, _ := compose.Lookup("reliable")
		l, err := info.New(compose.MustParams("reliable", given))
		if err != nil {
			t.Fatal(err)
		}
		keep(l.(*Layer))
		return []stack.Entry{{Name: "reliable", Layer: l}}
	}
}

func newProbe(t *testing.T, casts int, given map[string]string) *probe {
	p := &probe{wc: newWireCodec()}
	var layers []*Layer
	p.c = layertest.New(t, sim.Config{Seed: 1, Latency: time.Millisecond}, 2, kept(t, given, func(l *Layer) { layers = append(layers, l) }))
	p.l = layers[0]
	p.c.Install(&event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}})
	p.c.Net.Partition([]event.NodeID{1}, []event.NodeID{2})
	for i := 1; i <= casts; i++ {
		if err := p.c.Stacks[1].Cast(1, layertest.Payload(uint32(i), 64)); err != nil {
			t.Fatal(err)
		}
	}
	p.c.Net.Run(50 * time.Millisecond)
	p.buf = p.l.bufUsed
	if casts > 0 && p.buf == 0 {
		t.Fatal("nothing buffered")
	}
	return p
}

func (p *probe) inject(k event.Kind, from event.NodeID, b []byte) {
	p.c.Stacks[1].Inject(0, true, event.Event{Kind: k, Group: 1, Peer: from, Msg: event.DefaultPool.FromBytes(b)})
}

func (p *probe) nak(from event.NodeID, lo, hi uint32) {
	p.inject(event.Send, from, append([]byte{tNak}, p.wc.Encode(&nakMsg{G: 1, R: []uint32{lo, hi}})...))
}

func (p *probe) digest(from event.NodeID, view uint32, e ...uint32) {
	p.inject(event.Cast, from, encDigest(&digestMsg{G: 1, V: view, U: true, E: e}))
}

func p2pPacket(seq, low uint32, size int) []byte {
	b := make([]byte, p2pFullHeader+size)
	b[0] = tP2P
	binary.BigEndian.PutUint32(b[2:], seq)
	binary.BigEndian.PutUint32(b[6:], low)
	return b
}

func dataPacket(view, seq uint32, size int) []byte {
	b := make([]byte, dataHeaderSize+size)
	putData(b, dataHeader{view: view, baseView: 0, base: 1, seq: seq})
	return b
}

func (p *probe) counter(name string) int64 { return p.c.Counter("reliable", name, 1) }

// heldP2P is every byte and message of early point-to-point arrivals held.
func (l *Layer) heldP2P() (n int, bytes int64) {
	for _, q := range l.pslots {
		qn, qb := q.Early()
		n += qn
		bytes += qb
	}
	return n, bytes
}

// streams lists every live receive stream.
func (l *Layer) streams() []*recvState {
	var out []*recvState
	for _, g := range l.groups {
		for _, m := range g.members {
			if m.rs != nil {
				out = append(out, m.rs)
			}
		}
	}
	return out
}

// Issue 8 item 5: a node in no view flooding forged data, NAKs, digests and
// point-to-point packets under many ids gets no state, no retransmission,
// and frees nothing of our buffer.
func TestProbeNonMemberGetsNothing(t *testing.T) {
	p := newProbe(t, 20, nil)
	recvs := func() int { return len(p.l.streams()) }
	r0 := recvs()
	for id := event.NodeID(100); id < 300; id++ {
		p.inject(event.Cast, id, dataPacket(1, uint32(id), 60000))
		p.inject(event.Send, id, p2pPacket(2, 1, 60000))
		p.inject(event.Send, id, p2pPacket(1, 1, 60000))
		p.nak(id, 1, 1<<20)
		p.digest(id, 1, uint32(id), 5, 0, 1, 20, 1)
	}
	p.c.Net.Run(200 * time.Millisecond)
	if n := len(p.l.peers); n != 0 {
		t.Errorf("%d peers have point-to-point state", n)
	}
	if n, b := p.l.heldP2P(); n != 0 || b != 0 {
		t.Errorf("%d point-to-point messages (%d bytes) held", n, b)
	}
	if n := recvs(); n != r0 {
		t.Errorf("%d receive streams, had %d", n, r0)
	}
	if p.l.bufUsed != p.buf {
		t.Errorf("buffer %d bytes, had %d: a non-member's digest freed some", p.l.bufUsed, p.buf)
	}
	if r := p.counter("retransmissions"); r != 0 {
		t.Errorf("%d retransmissions for non-members", r)
	}
	if n := p.counter("p2p_delivered"); n != 0 {
		t.Errorf("%d point-to-point messages from non-members delivered", n)
	}
}

// A member's digest frees our buffer only when it is for the current view
// and claims no more than we sent.
func TestProbeDigestFreesOnlyWhatIsConsistent(t *testing.T) {
	p := newProbe(t, 20, nil)
	p.digest(2, 7, 2, 0, 0, 1, 20, 1)   // a view we are not in
	p.digest(2, 0, 2, 0, 0, 1, 20, 1)   // an older view
	p.digest(2, 1, 2, 0, 0, 1, 5000, 1) // more than we sent
	p.c.Net.Run(10 * time.Millisecond)
	if p.l.bufUsed != p.buf {
		t.Fatalf("buffer %d bytes, had %d: an inconsistent digest freed some", p.l.bufUsed, p.buf)
	}
	p.digest(2, 1, 2, 0, 0, 1, 20, 1) // the real thing
	p.c.Net.Run(10 * time.Millisecond)
	if p.l.bufUsed != 0 {
		t.Errorf("buffer %d bytes after the member acknowledged everything", p.l.bufUsed)
	}
}

// Issue 8 item 5: one member's NAK for 2^20 sequence numbers causes at
// most max_nak_retrans retransmissions; the rest is refused and counted.
func TestProbeNakForAMillionIsBounded(t *testing.T) {
	p := newProbe(t, 2000, nil)
	p.nak(2, 1, 1<<20)
	p.c.Net.Run(time.Millisecond)
	r := p.counter("retransmissions")
	if r == 0 || r > int64(p.l.cfg.MaxNakRetrans) {
		t.Errorf("%d retransmissions for one NAK, want 1..%d", r, p.l.cfg.MaxNakRetrans)
	}
	if ref := p.counter("nak_refused"); ref != 2000-r {
		t.Errorf("nak_refused = %d, want %d", ref, 2000-r)
	}
}

// Issue 8 item 5: a member's early point-to-point packets are held within
// p2p_window messages and p2p_max_held bytes, and released when it leaves
// every group we share.
func TestProbeP2PHeldIsBounded(t *testing.T) {
	p := newProbe(t, 0, map[string]string{"p2p_max_held": "256KB", "p2p_window": "64"})
	for seq := uint32(2); seq < 2000; seq++ {
		p.inject(event.Send, 2, p2pPacket(seq, 1, 30000))
	}
	n, b := p.l.heldP2P()
	if n == 0 || n >= 64 || b > 256<<10 {
		t.Errorf("%d messages, %d bytes held: want 1..63 messages, at most %d bytes", n, b, 256<<10)
	}
	if d := p.counter("p2p_delivered"); d != 0 {
		t.Errorf("%d delivered before the first arrived", d)
	}
	p.c.Install(&event.ViewInfo{Group: 1, ID: 2, Members: []event.NodeID{1}, Left: []event.NodeID{2}})
	if n, b := p.l.heldP2P(); n != 0 || b != 0 {
		t.Errorf("%d messages, %d bytes still held after the peer left", n, b)
	}
}

// FuzzScript feeds node 1 of three, through a whole reliable stack, a
// script of packets from members and non-members, its own casts, and view
// changes (removals, re-admissions, a lost removal notice): no panic, and
// what it holds stays within its bounds and adds up.
func FuzzScript(f *testing.F) {
	wc := newWireCodec()
	rec, cat := layertest.ScriptPacket, slices.Concat[[]byte]
	data := dataPacket(1, 3, 8)
	nak := append([]byte{tNak}, wc.Encode(&nakMsg{G: 1, R: []uint32{1, 1 << 20}})...)
	dig := encDigest(&digestMsg{G: 1, V: 1, U: true, E: []uint32{2, 5, 0, 1, 3, 1}})
	p2p := p2pPacket(2, 1, 40)
	f.Add(cat([]byte{5, 5, 5}, rec(1, data), rec(0, nak), rec(1, dig), rec(0, p2p), []byte{6, 30}))
	f.Add(cat([]byte{5, 5}, rec(1|8, data), []byte{7, 1, 6, 10, 7, 2}, rec(1, dig), rec(0, p2p), []byte{7, 3, 5}))
	f.Add(cat(rec(1|16, data), rec(16, nak), rec(1|24, dig), rec(16, p2p), []byte{7, 5, 7, 4, 6, 50}))
	f.Add(cat([]byte{5}, rec(1, dataPacket(1, 1<<20, 8)), rec(0, p2pPacket(1<<30, 1, 8)), []byte{7, 1, 7, 2}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var layers []*Layer
		c := layertest.RunScript(t, kept(t, map[string]string{"p2p_max_held": "4KB", "p2p_window": "16"}, func(l *Layer) { layers = append(layers, l) }), b)
		l := layers[0]
		for _, q := range l.pslots {
			if n, b := q.Early(); n >= l.cfg.P2PWindow || b > l.cfg.P2PMaxHeldBytes {
				t.Errorf("peer %v: %d messages, %d bytes held", q.ID(), n, b)
			}
			if q.Receiving() && !l.shares(q.ID()) {
				t.Errorf("peer %v: receive state kept though it shares no group", q.ID())
			}
		}
		var sum int64
		for _, g := range l.groups {
			sum += g.bufBytes
		}
		if sum != l.bufUsed || sum < 0 {
			t.Errorf("buffer: groups hold %d bytes, layer counts %d", sum, l.bufUsed)
		}
		c.Stacks[1].Close()
	})
}

// Issue 8 item 5 (the flood probe): a forged sequence number far ahead, in
// data or a digest under a member's id, makes a receiver believe in no more
// than its window of messages: it counted 2^30 losses (and NAKed their
// window for ever after) from one packet.
func TestProbeForgedSeqBelievedWithinWindow(t *testing.T) {
	p := newProbe(t, 0, map[string]string{"window": "1024"})
	p.inject(event.Cast, 2, dataPacket(1, 1, 8))
	p.inject(event.Cast, 2, dataPacket(1, 1<<30, 8))
	p.digest(2, 1, 2, 1<<30+5, 0)
	if d := p.counter("loss_discovered"); d <= 0 || d > 1024 {
		t.Errorf("loss_discovered = %d, want 1..1024 (the window)", d)
	}
	for _, rs := range p.l.streams() {
		if rs.highest-rs.next >= 1024 {
			t.Errorf("stream of %v: next %d, highest %d: beyond the window", rs.from, rs.next, rs.highest)
		}
	}
}

// Issue 8 item 5 (the flood probe): p2p_max_held bounds the memory early
// point-to-point arrivals keep alive, not only their payload. A pooled
// buffer keeps the capacity of the largest packet it ever carried, so after
// a flood of large packets small early arrivals each pinned 16 KB while
// counting their 10 bytes: 255 of them held 4 MB under a 64 KB bound.
func TestProbeP2PHeldBoundsTheBuffers(t *testing.T) {
	p := newProbe(t, 0, map[string]string{"p2p_max_held": "64KB", "p2p_window": "256"})
	const pinned = 16 << 10
	before := testkit.LiveHeap()
	big := make([]byte, pinned)
	for seq := uint32(2); seq <= 256; seq++ { // 1 never comes
		m := event.DefaultPool.FromBytes(big)
		pkt := p2pPacket(seq, 1, 10)
		copy(m.Bytes(), pkt)
		m.Truncate(len(pkt))
		p.c.Stacks[1].Inject(0, true, event.Event{Kind: event.Send, Group: 1, Peer: 2, Msg: m})
	}
	held := testkit.LiveHeap() - before
	if n, b := p.l.heldP2P(); n == 0 || b > 64<<10 {
		t.Errorf("%d messages, %d bytes counted held: want some, at most 64 KB", n, b)
	}
	if max := int64(64<<10 + 64<<10); held > max {
		t.Errorf("early arrivals of 10 bytes in %d-byte buffers: %d bytes live, want at most %d", pinned, held, max)
	}
	runtime.KeepAlive(p)
}

// Issue 8 item 5 (the flood probe): our own casts kept for retransmission
// do not pin pooled buffers many times their size. After a flood of large
// packets the pool is full of 16 KB buffers, and 300 casts of 64 bytes kept
// 4.8 MB alive under the 4 MB max_buffer that counts 25 KB of them.
func TestProbeOwnCastsNotPinned(t *testing.T) {
	p := newProbe(t, 0, nil) // node 2 is cut off: nothing becomes stable
	before := testkit.LiveHeap()
	big := make([]*event.Message, 300)
	for i := range big {
		big[i] = event.DefaultPool.FromBytes(make([]byte, 16<<10))
	}
	for _, m := range big {
		m.Release()
	}
	for i := 1; i <= 300; i++ {
		if err := p.c.Stacks[1].Cast(1, layertest.Payload(uint32(i), 64)); err != nil {
			t.Fatal(err)
		}
	}
	p.c.Net.Run(10 * time.Millisecond)
	held := testkit.LiveHeap() - before
	if b := p.counter("buffer_bytes"); b < 300*64 {
		t.Fatalf("buffer holds %d bytes: the casts were not kept", b)
	}
	// a fresh pooled buffer (1.6 KB) each at most, and the ring
	if max := int64(300*2048 + 64<<10); held > max {
		t.Errorf("300 casts of 64 bytes kept: %d bytes live, want at most %d", held, max)
	}
	runtime.KeepAlive(p)
}
