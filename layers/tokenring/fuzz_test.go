package tokenring

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/membership"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
)

// The fuzz targets feed tokenring's whole receive path, not only its
// decoders: node 1, in group 7 with nodes 2..6 (node 9 is a stranger),
// takes a sequence of records from the input, each one of
//
//	op&3 == 0: a multicast packet from peer
//	op&3 == 1: a point-to-point packet from peer
//	op&3 == 2: time passes (op>>2 ms, timers fire) and the node casts
//	op&3 == 3: a new view of group 7 (members: node 1 and the bits of peer)
//
// A packet record is op, peer, len (2 bytes), then len bytes of tokenring
// packet (type byte first). Each target forces the type byte of its
// decoder; then the layer's state must be within its bounds.

func fuzzConfig() Config {
	c := DefaultConfig()
	c.MaxRanges, c.MaxSenders, c.MaxPush, c.HiWmark, c.LoWmark, c.Window, c.Queue = 4, 3, 8, 16, 8, 64, 4
	c.Replicas = 2
	c.P2PWindow = 4
	return c
}

type fuzzNode struct {
	t   *testing.T
	st  *stack.Stack
	l   *Layer
	now event.Time
	vid uint64
}

func newFuzzNode(t *testing.T) *fuzzNode {
	fn := &fuzzNode{t: t}
	fn.l = New(fuzzConfig())
	st, err := stack.New(stack.Config{Self: 1, Transport: &testkit.ChannelTransport{}, Seed: 1, AppQueue: 8,
		Clock: stack.ClockFunc(func() event.Time { return fn.now }), Layers: []stack.Entry{{Name: "tokenring", Layer: fn.l}}})
	if err != nil {
		t.Fatal(err)
	}
	fn.st = st
	fn.install(0x1f)
	return fn
}

// install gives node 1 a view of group 7: node 1 and the nodes 2..9 whose
// bits are set in m.
func (fn *fuzzNode) install(m byte) {
	fn.vid++
	ms := []event.NodeID{1}
	for i := range 8 {
		if m&(1<<i) != 0 {
			ms = append(ms, event.NodeID(2+i))
		}
	}
	v := &event.ViewInfo{Group: 7, ID: fn.vid, Members: ms}
	fn.st.InstallView(v)
	fn.st.InstallNeighbourhood(membership.Static(map[event.GroupID]*event.ViewInfo{7: v})[1])
}

func (fn *fuzzNode) packet(kind event.Kind, from event.NodeID, body []byte) {
	pkt := make([]byte, stack.FrameSize+len(body))
	stack.PutFrame(pkt, stack.Frame{Kind: kind, Group: 7, Src: from})
	copy(pkt[stack.FrameSize:], body)
	_ = fn.st.Receive(pkt)
}

func (fn *fuzzNode) check() {
	l := fn.l
	if l.pending < 0 || l.unacked < 0 || l.unacked > l.pending || l.c.CacheBytes.Value() < 0 {
		fn.t.Fatalf("pending %d, unacked %d, cached bytes %d", l.pending, l.unacked, l.c.CacheBytes.Value())
	}
	if l.sendQ.Len() > l.cfg.Queue+8 {
		fn.t.Fatalf("send queue %d beyond its bound", l.sendQ.Len())
	}
	if r := l.own; r != nil {
		for _, s := range r.order {
			if s.next > s.high+1 || len(s.lost) > maxLost || s.cache.Len() > s.cache.Max {
				fn.t.Fatalf("stream of %v: next %d high %d lost %d cached %d", s.sender, s.next, s.high, len(s.lost), s.cache.Len())
			}
		}
	}
	for _, p := range l.peers {
		if early, _ := p.Early(); p.Inflight() > l.cfg.P2PWindow || early > l.cfg.P2PWindow {
			fn.t.Fatalf("peer %v holds %d unacked, %d early", p.ID(), p.Inflight(), early)
		}
	}
}

// run plays in; force, if not 0, is the type byte of every packet.
func (fn *fuzzNode) run(in []byte, force byte) {
	for r := 0; len(in) >= 2 && r < 256; r++ {
		op, peer := in[0], in[1]
		in = in[2:]
		switch op & 3 {
		case 0, 1:
			if len(in) < 2 {
				return
			}
			n := min(int(binary.BigEndian.Uint16(in)), len(in)-2, 2048)
			body := append([]byte(nil), in[2:2+n]...)
			in = in[2+n:]
			if force != 0 && len(body) > 0 {
				body[0] = force
			}
			kind := event.Cast
			if op&3 == 1 {
				kind = event.Send
			}
			fn.packet(kind, event.NodeID(2+peer%8), body)
		case 2:
			fn.now += event.Time(time.Duration(op>>2) * time.Millisecond)
			fn.st.Tick()
			_ = fn.st.Cast(7, []byte("fuzz"))
		case 3:
			fn.install(peer)
		}
		fn.check()
	}
}

// record frames one packet record.
func record(op, peer byte, body []byte) []byte {
	b := []byte{op, peer, byte(len(body) >> 8), byte(len(body))}
	return append(b, body...)
}

func seedData() []byte {
	b := make([]byte, dataHeaderSize+4)
	putData(b, dataHeader{region: 1, sender: 2, seq: 3, view: 1, vbase: 1, group: 7, gseq: 2, gvbase: 1})
	return b
}

func seedToken(l *Layer) []byte {
	t := tokenMsg{R: 1, V: 1, N: 1, H: 2, Mu: 100, S: []recMsg{{S: 2, C: 5, P: 1, M: 6, F: 2, K: []uint32{3, inf}, U: [][]uint32{{4, 4}, nil}, UL: []uint32{5, inf}, N: []uint32{2, 3}, NL: 5}}}
	return append([]byte{tToken}, l.wc.Encode(&t)...)
}

// seedAck is a region leader's ACK.
func seedAck() []byte {
	b := make([]byte, ackSize)
	putAck(b, ackMsg{Region: 1, View: 1, Stable: 1, Rate: 1000})
	return b
}

// seedP2P is a point-to-point header of type typ (tP2P with 3 bytes of
// body, or tP2PAck alone).
func seedP2P(typ byte) []byte {
	if typ == tP2PAck {
		b := make([]byte, p2pHeaderSize)
		putP2P(b, p2pHeader{typ: tP2PAck, seq: 1, session: 1})
		return b
	}
	b := make([]byte, p2pHeaderSize+3)
	putP2P(b, p2pHeader{typ: typ, seq: 1, floor: 1, session: 1})
	return b
}

func seedRanges(l *Layer, typ byte) []byte {
	return append([]byte{typ}, l.wc.Encode(&rangeMsg{R: 1, S: 1, Mod: 2, Part: 1, G: []uint32{1, 9}})...)
}

// seedFloor is a floor query (answer false) or answer.
func seedFloor(l *Layer, answer bool) []byte {
	m := floorMsg{R: 1, S: 1, G: 7, J: 1}
	if answer {
		m.S, m.F, m.GF = 2, 3, 2
	}
	return append([]byte{tFloor}, l.wc.Encode(&m)...)
}

func seedCorpus(f *testing.F) {
	l := New(fuzzConfig())
	f.Add(append(record(1, 0, seedFloor(l, true)), record(1, 0, seedFloor(l, false))...))
	f.Add(append(append(record(2, 0, nil)[:2], record(0, 0, seedData())...), record(2, 0, nil)[:2]...))
	f.Add(append(record(1, 0, seedToken(l)), record(1, 1, seedRanges(l, tPull))...))
	f.Add(append(append([]byte{2 | 40<<2, 0}, record(1, 0, seedAck())...), record(1, 0, seedRanges(l, tNak))...))
	f.Add(append(record(1, 3, seedP2P(tP2P)), []byte{3, 0x3}...))
	f.Add(record(1, 2, []byte{tPass, 'x'})) // a best-effort Send from a layer above
}

// FuzzData feeds regional data packets (parseData and the receive path).
func FuzzData(f *testing.F) {
	seedCorpus(f)
	f.Fuzz(func(t *testing.T, in []byte) { newFuzzNode(t).run(in, tData) })
}

// FuzzToken feeds tokens (the msgpack token decoder, its checks, and a
// visit when it names this node).
func FuzzToken(f *testing.F) {
	seedCorpus(f)
	f.Fuzz(func(t *testing.T, in []byte) { newFuzzNode(t).run(in, tToken) })
}

// FuzzControl feeds every other packet: ACKs, collective NAKs, pulls,
// point-to-point messages and their acknowledgements, floor queries
// and answers.
func FuzzControl(f *testing.F) {
	seedCorpus(f)
	f.Fuzz(func(t *testing.T, in []byte) { newFuzzNode(t).run(in, 0) })
}
