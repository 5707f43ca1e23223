package lec

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/membership"
)

// The fuzz targets feed lec's whole receive path, not only its decoders:
// a node in groups 9 and 10 (views installed, repair bins built) takes a
// sequence of records from the input, each one of
//
//	op&3 == 0: a packet of the target's kind (data cast or repair send)
//	op&3 == 1: a packet of the other kind
//	op&3 == 2: a view change (new members of groups 9 and 10)
//	op&3 == 3: time passes (expiry) and the node casts to a group
//
// then lec's state must be within its bounds and its indexes consistent.
// A packet record is op, peer, group, len (2 bytes), then len bytes of lec
// packet (type byte first) from that peer.

// fuzzConfig has small bounds so that the fuzzer reaches them.
func fuzzConfig() Config {
	return Config{R: 4, C: 3, Stagger: 2, Window: 50 * time.Millisecond, MaxHeld: 16, MaxUnusable: 8,
		MaxUnusableBytes: 2048, MaxHeldBytes: 4096, MaxStreams: 6}
}

// fuzzInstall gives node 1 views of groups 9 and 10: members are node 1
// and the nodes 2..9 whose bits are set in m9 and m10.
func (hn *hardNode) fuzzInstall(m9, m10 byte, id uint64) {
	views := map[event.GroupID]*event.ViewInfo{}
	for g, m := range map[event.GroupID]byte{9: m9, 10: m10} {
		ms := []event.NodeID{1}
		for i := range 8 {
			if m&(1<<i) != 0 {
				ms = append(ms, event.NodeID(2+i))
			}
		}
		views[g] = &event.ViewInfo{Group: g, ID: id, Members: ms}
	}
	hn.st.InstallNeighbourhood(membership.NeighbourhoodOf(1, views))
}

func fuzzLEC(t *testing.T, in []byte, kind event.Kind) {
	cfg := fuzzConfig()
	hn := newHardNode(t, cfg)
	hn.fuzzInstall(0xff, 0x0f, 2)
	other := event.Send
	if kind == event.Send {
		other = event.Cast
	}
	views := uint64(3)
	// At most 256 records: longer inputs add little and slow the fuzzer.
	for r := 0; len(in) > 0 && r < 256; r++ {
		op := in[0]
		switch op & 3 {
		case 0, 1:
			if len(in) < 5 {
				return
			}
			peer, g := event.NodeID(in[1]%12), event.GroupID(8+in[2]%4)
			n := min(int(binary.BigEndian.Uint16(in[3:])), len(in)-5)
			pkt := in[5 : 5+n]
			in = in[5+n:]
			k := kind
			if op&3 == 1 {
				k = other
			}
			hn.st.Inject(0, true, event.Event{Kind: k, Group: g, Peer: peer, Msg: event.DefaultPool.FromBytes(pkt)})
		case 2:
			if len(in) < 3 {
				return
			}
			hn.fuzzInstall(in[1], in[2], views)
			views++
			in = in[3:]
		case 3:
			if len(in) < 2 {
				return
			}
			hn.now += event.Time(in[1]) * event.Time(time.Millisecond)
			if err := hn.st.Cast(event.GroupID(9+op>>7), in[1:2]); err != nil {
				t.Fatalf("Cast: %v", err)
			}
			in = in[2:]
		}
		checkInvariants(t, hn.l, cfg)
	}
}

// checkInvariants: state within the bounds, and the unusable index names
// only live repairs whose missing lists name the key.
func checkInvariants(t *testing.T, l *Layer, cfg Config) {
	t.Helper()
	s := l.state()
	if s.remote > cfg.MaxStreams || s.held > cfg.MaxHeld || s.heldBytes > cfg.MaxHeldBytes ||
		s.unusable > cfg.MaxUnusable || s.unBytes > cfg.MaxUnusableBytes || s.lost > cfg.MaxHeld || s.lostQ > cfg.MaxHeld {
		t.Fatalf("state %+v over the bounds %+v", s, cfg)
	}
	if s.words > s.streams*maxWords {
		t.Fatalf("%d window words for %d streams", s.words, s.streams)
	}
	if s.unusableQ > maxUnusableQueue(cfg.MaxUnusable) {
		t.Fatalf("%d slots in the unusable queue, bound %d", s.unusableQ, maxUnusableQueue(cfg.MaxUnusable))
	}
	for k, st := range l.streams {
		if k.sender != l.self && !l.admits(k) {
			t.Fatalf("stream %v kept for a non-member", k)
		}
		if len(st.bits) > maxWords {
			t.Fatalf("stream %v: %d words", k, len(st.bits))
		}
	}
	live, bytes := 0, int64(0)
	for _, r := range l.unusable[l.unHead:] {
		if !r.dead {
			live++
			bytes += r.size
		}
	}
	if live != l.unCount || bytes != l.unBytes {
		t.Fatalf("unusable: %d live (%d bytes) in the queue, counted %d (%d bytes)", live, bytes, l.unCount, l.unBytes)
	}
	for k, rs := range l.byMissing {
		for _, r := range rs {
			if r.dead {
				t.Fatalf("index of %v names a dead repair", k)
			}
			found := false
			for _, m := range r.missing {
				found = found || m == k
			}
			if !found {
				t.Fatalf("index of %v names a repair not missing it", k)
			}
		}
	}
}

// record encodes one packet record for the seed corpus.
func record(op byte, peer event.NodeID, g event.GroupID, pkt []byte) []byte {
	b := []byte{op, byte(peer), byte(g - 8), 0, 0}
	binary.BigEndian.PutUint16(b[3:], uint16(len(pkt)))
	return append(b, pkt...)
}

func dataPkt(seq uint32, payload string) []byte {
	b := []byte{typeData, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], seq)
	return append(b, payload...)
}

func repairPkt(ids []id, payloads ...string) []byte {
	var x []byte
	var lenx uint32
	for _, p := range payloads {
		xorInto(&x, []byte(p))
		lenx ^= uint32(len(p))
	}
	b := []byte{typeRepair, byte(len(ids)), 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[2:], lenx)
	for _, k := range ids {
		b = binary.BigEndian.AppendUint32(b, uint32(k.group))
		b = binary.BigEndian.AppendUint32(b, uint32(k.sender))
		b = binary.BigEndian.AppendUint32(b, k.seq)
	}
	return append(b, x...)
}

// seeds are shared by both targets (op 0 is the target's own kind, op 1 the
// other one): data in order, with a gap, a jump past the window, a number
// near 2^32, repairs recovering one and two packets, a view change
// removing a sender mid-stream, time passing, malformed packets.
func seeds(dataOp, repairOp byte) [][]byte {
	cat := slices.Concat[[]byte]
	return [][]byte{
		cat(record(dataOp, 2, 9, dataPkt(1, "a")), record(dataOp, 2, 9, dataPkt(2, "bb")), record(dataOp, 3, 9, dataPkt(1, "c"))),
		cat(record(dataOp, 2, 9, dataPkt(1, "a")), record(repairOp, 3, 9, repairPkt([]id{{9, 2, 1}, {9, 2, 2}}, "a", "bb"))),
		cat(record(repairOp, 3, 9, repairPkt([]id{{9, 2, 1}, {9, 2, 2}, {9, 2, 3}}, "a", "bb", "ccc")),
			record(repairOp, 4, 9, repairPkt([]id{{9, 2, 1}, {9, 2, 2}}, "a", "bb")), record(dataOp, 2, 9, dataPkt(1, "a"))),
		cat(record(dataOp, 2, 9, dataPkt(1, "a")), record(dataOp, 2, 9, dataPkt(30*64-1, "b")), record(dataOp, 2, 9, dataPkt(33*64, "c"))),
		cat(record(dataOp, 2, 9, dataPkt(0xfffffff0, "a")), record(dataOp, 2, 9, dataPkt(3, "b")),
			record(repairOp, 5, 9, repairPkt([]id{{9, 2, 0xffffffff}, {9, 2, 2}}, "x", "y"))),
		cat(record(dataOp, 4, 10, dataPkt(1, "a")), []byte{2, 0x01, 0x00}, record(dataOp, 4, 10, dataPkt(2, "b")),
			record(repairOp, 2, 9, repairPkt([]id{{10, 4, 1}, {10, 4, 3}}, "a", "q"))),
		cat([]byte{3, 10, 0x83, 60}, record(dataOp, 2, 9, dataPkt(1, "a")), []byte{3, 200},
			record(repairOp, 3, 9, repairPkt([]id{{9, 1, 1}, {9, 2, 1}}, "x", "a"))),
		cat(record(dataOp, 2, 9, []byte{typeData, 1}), record(repairOp, 3, 9, []byte{typeRepair, 200, 0, 0, 0, 9}),
			record(repairOp, 3, 9, []byte{typePass, 1, 2}), record(dataOp, 77, 40, dataPkt(5, "z"))),
	}
}

// FuzzLECData fuzzes lec's data input (the 5-byte data header and onData)
// through the stack, interleaved with repairs and view changes.
func FuzzLECData(f *testing.F) {
	for _, s := range seeds(0, 1) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) { fuzzLEC(t, in, event.Cast) })
}

// FuzzLECRepair fuzzes lec's repair input (decoding, recovery from one and
// two repairs, the unusable buffer) through the stack, interleaved with
// data and view changes.
func FuzzLECRepair(f *testing.F) {
	for _, s := range seeds(1, 0) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) { fuzzLEC(t, in, event.Send) })
}
