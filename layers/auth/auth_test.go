package auth

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/testbed/testkit"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

// pair is a sender and a receiver stack, each only auth, on a manual clock;
// the sender's packets are recorded, the receiver's deliveries kept.
type pair struct {
	now       event.Time
	tx        testkit.Transport
	snd, rcv  *stack.Stack
	rl        *Layer
	delivered []string
}

func newPair(t testing.TB, cfg Config) *pair {
	t.Helper()
	p := &pair{tx: testkit.Transport{Record: true}}
	clock := stack.ClockFunc(func() event.Time { return p.now })
	sl, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.rl, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.snd, err = stack.New(stack.Config{Self: 1, Transport: &p.tx, Clock: clock, Layers: []stack.Entry{{Name: "auth", Layer: sl}}})
	if err != nil {
		t.Fatal(err)
	}
	p.rcv, err = stack.New(stack.Config{Self: 2, Transport: &testkit.Transport{}, Clock: clock, Layers: []stack.Entry{{Name: "auth", Layer: p.rl}},
		App: stack.AppFuncs{OnDeliver: func(d stack.Delivery) {
			p.delivered = append(p.delivered, fmt.Sprintf("%v/%v:%s", d.Group, d.From, d.Payload))
		}}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sent returns copies of the packets sent so far and forgets them.
func (p *pair) sent() [][]byte {
	var out [][]byte
	for _, pk := range p.tx.Packets() {
		out = append(out, slices.Clone(pk.Data))
	}
	p.tx.Reset()
	return out
}

func (p *pair) view(id uint64) {
	v := &event.ViewInfo{Group: 5, ID: id, Members: []event.NodeID{1, 2}}
	p.snd.InstallView(v)
	p.rcv.InstallView(v)
}

// modes are the layer's three ways of protecting a packet.
var modes = []protection{{"gmac", false, false}, {"hmac", false, true}, {"crypt", true, false}}

// protection is one way of protecting a packet: its name and settings.
type protection struct {
	name        string
	crypt, hmac bool
}

func TestWindow(t *testing.T) {
	w := window{bits: make([]uint64, 2)} // 128 numbers
	for _, s := range []uint64{1, 3, 2, 200, 150} {
		if w.seen(s) {
			t.Fatalf("seq %d seen before it was marked", s)
		}
		w.mark(s)
		if !w.seen(s) {
			t.Fatalf("seq %d not seen after it was marked", s)
		}
	}
	// 200's word is 3, the window keeps words 2 and 3: 128..255.
	for s, want := range map[uint64]bool{1: true, 73: true, 127: true, 128: false, 151: false, 150: true, 199: false, 201: false} {
		if got := w.seen(s); got != want {
			t.Errorf("seen(%d) = %v, want %v", s, got, want)
		}
	}
	w.mark(1000) // a jump past the whole window clears it
	if w.seen(999) || !w.seen(1000) || !w.seen(150) {
		t.Errorf("after a jump: seen(999) %v, seen(1000) %v, seen(150) %v; want false true true", w.seen(999), w.seen(1000), w.seen(150))
	}
}

// TestReplayTamperAndRotation: a packet is delivered once; its replay,
// a tampered copy, a copy under another group and a copy of another kind
// are refused and counted; after a view change the old key is accepted for
// the grace period only.
func TestReplayTamperAndRotation(t *testing.T) {
	for _, mode := range modes {
		crypt := mode.crypt
		t.Run(mode.name, func(t *testing.T) {
			p := newPair(t, Config{Key: testKey, Crypt: crypt, HMAC: mode.hmac, Window: 64, Grace: time.Second, MaxSenders: 4})
			p.view(1)
			_ = p.snd.Cast(5, []byte("hello"))
			_ = p.snd.Cast(5, []byte("hello2"))
			pks := p.sent()
			pk, pk2 := pks[0], pks[1]
			if crypt && bytes.Contains(pk, []byte("hello")) {
				t.Errorf("crypt=on sent the payload in clear: %x", pk)
			}
			for range 2 {
				_ = p.rcv.Receive(pk)
			}
			tampered := slices.Clone(pk2)
			tampered[len(tampered)-1] ^= 1
			_ = p.rcv.Receive(tampered)
			regrouped := slices.Clone(pk2)
			regrouped[5] ^= 1 // the frame's group
			_ = p.rcv.Receive(regrouped)
			rekinded := slices.Clone(pk2)
			rekinded[1] = byte(event.Send) // the frame's kind
			_ = p.rcv.Receive(rekinded)
			_ = p.rcv.Receive(pk2)
			if want := []string{"g5/n1:hello", "g5/n1:hello2"}; !slices.Equal(p.delivered, want) {
				t.Fatalf("delivered %q, want %q", p.delivered, want)
			}
			// GMAC checks the kind in the clear (malformed); the others find
			// the tag wrong.
			if r, b := p.rl.c.Replayed.Value(), p.rl.c.BadTag.Value()+p.rl.c.Malformed.Value(); r != 1 || b != 3 {
				t.Errorf("replayed %d, bad_tag + malformed %d; want 1 and 3", r, b)
			}
			// A packet sealed under view 1, arriving after view 2: accepted
			// within the grace period, refused after it.
			_ = p.snd.Cast(5, []byte("late"))
			_ = p.snd.Cast(5, []byte("later"))
			old := p.sent()
			p.view(2)
			_ = p.rcv.Receive(old[0])
			p.now += event.Time(2 * time.Second)
			_ = p.rcv.Receive(old[1])
			_ = p.snd.Cast(5, []byte("new"))
			_ = p.rcv.Receive(p.sent()[0])
			if want := []string{"g5/n1:hello", "g5/n1:hello2", "g5/n1:late", "g5/n1:new"}; !slices.Equal(p.delivered, want) {
				t.Errorf("delivered %q, want %q", p.delivered, want)
			}
			if p.rl.c.NoKey.Value() != 1 || p.rl.c.Rotations.Value() != 2 {
				t.Errorf("no_key %d, rotations %d; want 1 and 2", p.rl.c.NoKey.Value(), p.rl.c.Rotations.Value())
			}
		})
	}
}

// TestSendersBounded: only senders whose tag verified get a window, and no
// more than MaxSenders.
func TestSendersBounded(t *testing.T) {
	p := newPair(t, Config{Key: testKey, Window: 64, MaxSenders: 1})
	defer func() {
		if p.rl.c.BadTag.Value() != 1 {
			t.Errorf("bad_tag %d, want 1 (the forged source)", p.rl.c.BadTag.Value())
		}
	}()
	_ = p.snd.Cast(5, []byte("a"))
	pk := p.sent()[0]
	forged := slices.Clone(pk)
	forged[9] = 9 // source n9: the tag does not verify, no window is made
	_ = p.rcv.Receive(forged)
	if len(p.rl.wins) != 0 {
		t.Fatalf("a forged sender got a window")
	}
	_ = p.rcv.Receive(pk)
	if len(p.rl.wins) != 1 || len(p.delivered) != 1 {
		t.Fatalf("windows %d, delivered %d; want 1 and 1", len(p.rl.wins), len(p.delivered))
	}
}

// genuinePair is a pair in mode whose sender has sent one of each kind of
// genuine packet (a cast, a point-to-point send and a membership packet) in
// a view of 3; p.sent() returns them.
func genuinePair(tb testing.TB, mode protection) *pair {
	tb.Helper()
	p := newPair(tb, Config{Key: testKey, Crypt: mode.crypt, HMAC: mode.hmac, Window: 64, Grace: time.Second, MaxSenders: 4})
	p.view(3)
	_ = p.snd.Cast(5, []byte("seed payload"))
	_ = p.snd.Send(2, []byte("p2p"))
	p.snd.Inject(0, false, event.Event{Kind: event.Membership, Peer: 2, Msg: event.DefaultPool.FromBytes([]byte("hb"))})
	return p
}

// FuzzOpen feeds the receive path (frame, auth header decode, key lookup,
// tag check, replay window) arbitrary packets after the genuine ones were
// delivered: nothing more may be delivered (a genuine packet is a replay,
// anything else a forgery), nothing may panic.
func FuzzOpen(f *testing.F) {
	for i, mode := range modes {
		p := genuinePair(f, mode)
		for _, pk := range p.sent() {
			f.Add(uint8(i), pk)
			f.Add(uint8(i), pk[:len(pk)-1])
		}
	}
	f.Add(uint8(0), []byte{0x10, 1, 0, 0, 0, 5, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, mi uint8, pkt []byte) {
		mode := modes[int(mi)%len(modes)]
		p := genuinePair(t, mode)
		for _, pk := range p.sent() {
			_ = p.rcv.Receive(pk)
		}
		n := len(p.delivered)
		if n != 2 || p.rl.c.Membership.Value() != 1 {
			t.Fatalf("genuine packets: delivered %d of 2, membership packets verified %d of 1", n, p.rl.c.Membership.Value())
		}
		_ = p.rcv.Receive(pkt)
		if len(p.delivered) != n || p.rl.c.Membership.Value() != 1 {
			t.Fatalf("a replayed or forged packet was delivered: %q (membership packets verified %d)", p.delivered[n:], p.rl.c.Membership.Value())
		}
	})
}

// BenchmarkCastDeliver is the cost of a cast through reliable-less stacks
// with and without auth, as layertest measures it for every layer.
func BenchmarkCastDeliver(b *testing.B) {
	for _, mode := range modes {
		b.Run(mode.name, func(b *testing.B) {
			layertest.BenchCastDeliverSizes(b, func() []stack.Entry {
				l, err := New(Config{Key: testKey, Crypt: mode.crypt, HMAC: mode.hmac, Window: 4096, Grace: time.Second, MaxSenders: 16})
				if err != nil {
					b.Fatal(err)
				}
				return []stack.Entry{{Name: "auth", Layer: l}}
			})
		})
	}
}
