package fuzz

import (
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// Operations of a fuzz input, one byte each followed by its arguments.
const (
	opPacket = iota // sel, len (2 bytes), bytes: a raw packet from the outsider's interface
	opView          // mask: the intended members among nodes 1-4
	opTime          // ms: advance virtual time by ms+1 milliseconds
	opCast          // sel, len: a member (or not) casts len*16 bytes
	opCount
)

// Packet selector bits: target (sel%6: node 1-4, the group's channel, or
// the membership service), then how the frame's source is set (sel>>3 & 3):
// as given, a member (1+(sel>>5)%3), the outsider, or a forged id.
func packetSource(sel byte) (event.NodeID, bool) {
	switch sel >> 3 & 3 {
	case 1:
		return event.NodeID(1 + (sel>>5)%3), true
	case 2:
		return outsider, true
	case 3:
		return event.NodeID(1000 + int(sel)), true
	}
	return 0, false
}

// play runs one fuzz input against a fresh world of spec.
func play(w *world, in []byte) {
	for len(in) > 0 {
		op := in[0] % opCount
		in = in[1:]
		arg := func() byte {
			if len(in) == 0 {
				return 0
			}
			b := in[0]
			in = in[1:]
			return b
		}
		switch op {
		case opPacket:
			sel := arg()
			n := int(arg())<<8 | int(arg())
			n = min(n, len(in))
			pkt := append([]byte(nil), in[:n]...)
			in = in[n:]
			if src, ok := packetSource(sel); ok && len(pkt) >= stack.FrameSize {
				binary.BigEndian.PutUint32(pkt[6:], uint32(src))
			}
			to := event.NodeID(1 + sel%6)
			switch {
			case to == 5:
				to = event.NoNode
			case to == 6 && w.svc != nil:
				to = w.service // the membership service's own stack
			case to == 6:
				to = 1
			}
			w.forge(to, pkt)
			w.run(time.Millisecond)
		case opView:
			w.setMembers(arg())
		case opTime:
			w.run(time.Duration(arg())*time.Millisecond + time.Millisecond)
		case opCast:
			sel, n := arg(), arg()
			w.cast(nodes[int(sel)%len(nodes)], int(n)*16, sel)
		}
	}
	w.run(300 * time.Millisecond)
}

// capture runs spec for a short while with loss, casts and a view change,
// and returns one real packet of every kind of header that went by.
func capture(tb testing.TB, spec string) [][]byte {
	loss, err := sim.ParseLoss("uniform:0.1")
	if err != nil {
		tb.Fatal(err)
	}
	w := newWorld(tb, spec, 3, loss, true)
	for i := 0; i < 40; i++ {
		for _, id := range []event.NodeID{1, 2, 3} {
			w.cast(id, 200+i*37, byte(i))
		}
		w.run(5 * time.Millisecond)
	}
	w.setMembers(0b1011) // 3 leaves, 4 joins
	for i := 0; i < 20; i++ {
		w.cast(1, 500, byte(i))
		w.cast(4, 100, byte(i))
		w.run(20 * time.Millisecond)
	}
	w.run(time.Second)
	w.close()
	return w.caught
}

var (
	specOnce  sync.Once
	specNames []string
)

// FuzzStack feeds sequences of raw packets (from a member, from a
// non-member, from forged ids; to one node or the group's channel), view
// changes, casts and time to a whole stack, for every spec under test (the
// first byte chooses it). Nothing may panic; malformed input is counted
// and dropped by whichever layer finds it. The seeds are real packets of
// every header kind captured from a short lossy run of each spec, each
// delivered as is and from the outsider, with view changes around them.
func FuzzStack(f *testing.F) {
	names := specs(f)
	specOnce.Do(func() { specNames = names })
	for si, spec := range names {
		for _, pkt := range capture(f, spec) {
			n := len(pkt)
			hdr := func(sel byte) []byte { return []byte{opPacket, sel, byte(n >> 8), byte(n)} }
			seed := append([]byte{byte(si)}, hdr(1)...) // to node 2, source as captured
			seed = append(seed, pkt...)
			f.Add(seed)
			seed = append([]byte{byte(si), opView, 0b1011, opTime, 200}, hdr(2|2<<3)...) // from the outsider after a view change
			seed = append(seed, pkt...)
			seed = append(seed, opCast, 0, 10, opTime, 50)
			f.Add(seed)
			if pkt[1] == byte(event.Membership) {
				seed = append([]byte{byte(si)}, hdr(5|1<<3)...) // to the service, from a member
				f.Add(append(seed, pkt...))
			}
		}
		f.Add([]byte{byte(si), opCast, 0, 4, opView, 0b0111, opTime, 100, opView, 0b1110, opCast, 1, 8, opTime, 255})
	}
	// Regression seeds: crashes found by fuzzing, each on the spec its
	// first byte selects ('0' % 7: fifo:reliable:lec:gms). Both panicked in
	// lec's stream window (index out of range) before issue 8 item 1's fix.
	f.Add([]byte("00000\x10\x0100000000\x0100000000000000000"))
	f.Add([]byte("00000\x10\x0100000000\x010000"))
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		w := newWorld(t, specNames[int(in[0])%len(specNames)], 1, nil, false)
		defer w.close()
		play(w, in[1:])
	})
}
