package lec

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
)

// testNode is node 1 with lec alone in one group {1..8}, fed by hand.
type testNode struct {
	st   *stack.Stack
	l    *Layer
	tr   *testkit.Transport
	now  event.Time
	at   int // lec's index in the stack
	got  []stack.Delivery
	data [][]byte
}

// advance moves the node's clock on by d and fires what is due.
func (tn *testNode) advance(d time.Duration) {
	tn.now = tn.now.Add(d)
	tn.st.Tick()
}

func newTestNode(t *testing.T, above ...stack.Entry) *testNode {
	tn := &testNode{at: len(above), tr: &testkit.Transport{}, now: 1e9}
	tn.l = New(Config{R: 8, C: 5, Stagger: 1, Window: 2e9, MaxHeld: 1024, MaxUnusable: 64})
	app := stack.AppFuncs{OnDeliver: func(d stack.Delivery) {
		d.Payload = bytes.Clone(d.Payload)
		tn.got = append(tn.got, d)
	}}
	st, err := stack.New(stack.Config{Self: 1, Transport: tn.tr, Clock: stack.ClockFunc(func() event.Time { return tn.now }),
		Layers: append(above, stack.Entry{Name: "lec", Layer: tn.l}), App: app, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	tn.st = st
	members := []event.NodeID{1, 2, 3, 4, 5, 6, 7, 8}
	st.InstallNeighbourhood(&event.Neighbourhood{Self: 1, Groups: []event.GroupID{9},
		Local: []event.LocalRegion{{Groups: []event.GroupID{9}, Members: members}}})
	// Payloads of different lengths, random bytes.
	rng := rand.New(rand.NewPCG(5, 5))
	for _, n := range []int{10, 1000, 1, 333, 64, 999} {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		tn.data = append(tn.data, p)
	}
	return tn
}

// arrive delivers packet i (seq i+1 from node 2 in group 9) from the network.
func (tn *testNode) arrive(i int) {
	pkt := append([]byte{typeData, 0, 0, 0, 0}, tn.data[i]...)
	binary.BigEndian.PutUint32(pkt[1:], uint32(i+1))
	tn.st.Inject(tn.at, true, event.Event{Kind: event.Cast, Group: 9, Peer: 2, Msg: event.DefaultPool.FromBytes(pkt)})
}

// repairOf encodes a repair of packets is, as a neighbour would send it.
func (tn *testNode) repairOf(is ...int) {
	var x []byte
	var lenx uint32
	pkt := []byte{typeRepair, byte(len(is)), 0, 0, 0, 0}
	for _, i := range is {
		pkt = binary.BigEndian.AppendUint32(pkt, 9)
		pkt = binary.BigEndian.AppendUint32(pkt, 2)
		pkt = binary.BigEndian.AppendUint32(pkt, uint32(i+1))
		xorInto(&x, tn.data[i])
		lenx ^= uint32(len(tn.data[i]))
	}
	binary.BigEndian.PutUint32(pkt[2:], lenx)
	pkt = append(pkt, x...)
	tn.st.Inject(tn.at, true, event.Event{Kind: event.Send, Peer: 3, Msg: event.DefaultPool.FromBytes(pkt)})
}

func (tn *testNode) check(t *testing.T, i int, by string) {
	t.Helper()
	for _, d := range tn.got {
		if bytes.Equal(d.Payload, tn.data[i]) && d.From == 2 && d.Group == 9 {
			if d.Recovery.By != by {
				t.Errorf("packet %d delivered with recovery %q, want %q", i, d.Recovery.By, by)
			}
			return
		}
	}
	t.Errorf("packet %d (%d bytes) not delivered intact", i, len(tn.data[i]))
}

// TestRecoverOneOfDifferentLengths: a repair of four packets of 10, 1000, 1
// and 333 bytes, three of which arrived, rebuilds the fourth exactly.
func TestRecoverOneOfDifferentLengths(t *testing.T) {
	for missing := range 4 {
		tn := newTestNode(t)
		for i := range 4 {
			if i != missing {
				tn.arrive(i)
			}
		}
		tn.repairOf(0, 1, 2, 3)
		tn.check(t, missing, "lec")
		if len(tn.got) != 4 || tn.l.c.Recovered.Value() != 1 || tn.l.c.LossDiscovered.Value() != 1 {
			t.Errorf("missing %d: %d deliveries, recovered %d, discovered %d; want 4, 1, 1",
				missing, len(tn.got), tn.l.c.Recovered.Value(), tn.l.c.LossDiscovered.Value())
		}
		// The original arriving late is a duplicate, not a second delivery.
		tn.arrive(missing)
		if len(tn.got) != 4 || tn.l.c.Duplicates.Value() != 1 {
			t.Errorf("late original: %d deliveries, %d duplicates; want 4 and 1", len(tn.got), tn.l.c.Duplicates.Value())
		}
	}
}

// TestUnusableRepairBecomesUsable: a repair missing two packets waits; when
// one of them arrives the other is rebuilt.
func TestUnusableRepairBecomesUsable(t *testing.T) {
	tn := newTestNode(t)
	tn.arrive(0)
	tn.repairOf(0, 1, 2)
	if len(tn.got) != 1 || tn.l.c.UnusableBuffered.Value() != 1 {
		t.Fatalf("%d deliveries, %d unusable buffered; want 1 and 1", len(tn.got), tn.l.c.UnusableBuffered.Value())
	}
	tn.arrive(2)
	tn.check(t, 1, "lec")
	if len(tn.got) != 3 {
		t.Errorf("%d deliveries, want 3", len(tn.got))
	}
}

// TestTwoRepairXOR is section 4.2.8: repairs {0,1,2,3} and {0,1,2} with only
// packet 0 present are missing {1,2,3} and {1,2}; XORing them yields 3.
// Then packet 1 arrives: the second repair yields 2 and everything is in.
func TestTwoRepairXOR(t *testing.T) {
	tn := newTestNode(t)
	tn.arrive(0)
	tn.repairOf(0, 1, 2, 3)
	tn.repairOf(0, 1, 2)
	tn.check(t, 3, "lec")
	if tn.l.c.RecoveredXor2.Value() != 1 {
		t.Errorf("recovered_xor2 = %d, want 1", tn.l.c.RecoveredXor2.Value())
	}
	tn.arrive(1)
	tn.check(t, 2, "lec")
	if len(tn.got) != 4 || tn.l.unCount != 0 {
		t.Errorf("%d deliveries, %d repairs still buffered; want 4 and 0", len(tn.got), tn.l.unCount)
	}
}

// TestMalformedRepair: a truncated repair is counted, not a panic.
func TestMalformedRepair(t *testing.T) {
	tn := newTestNode(t)
	for _, pkt := range [][]byte{{typeRepair}, {typeRepair, 3, 0, 0, 0, 0, 1, 2}, {typeData}, {7, 1, 2}} {
		kind := event.Send
		if pkt[0] == typeData {
			kind = event.Cast
		}
		tn.st.Inject(0, true, event.Event{Kind: kind, Group: 9, Peer: 3, Msg: event.DefaultPool.FromBytes(pkt)})
	}
	if got := tn.l.c.Malformed.Value(); got != 4 {
		t.Errorf("malformed = %d, want 4", got)
	}
}

// TestStaggerRoundRobin: with stagger 3, consecutive packets go to
// different instances of a bin, so each instance holds every third packet.
func TestStaggerRoundRobin(t *testing.T) {
	tn := newTestNode(t)
	tn.l.cfg.Stagger = 3
	tn.st.InstallNeighbourhood(&event.Neighbourhood{Self: 1, Groups: []event.GroupID{9},
		Local: []event.LocalRegion{{Groups: []event.GroupID{9}, Members: []event.NodeID{1, 2, 3, 4, 5, 6, 7, 8}}}})
	if len(tn.l.bins) != 1 || len(tn.l.bins[0].inst) != 3 {
		t.Fatalf("%d bins, want 1 with 3 instances", len(tn.l.bins))
	}
	for i := range 6 {
		tn.arrive(i)
	}
	for k, in := range tn.l.bins[0].inst {
		if in.n != 2 {
			t.Errorf("instance %d holds %d packets, want 2", k, in.n)
		}
		for _, x := range in.ids {
			if int(x.seq-1)%3 != k {
				t.Errorf("instance %d holds seq %d", k, x.seq)
			}
		}
	}
}

// TestRecoverWhenLengthXORExceedsLongest: the XOR of the payload lengths
// may exceed the longest payload (1 ^ 2 = 3, 60 ^ 70 = 122); such a repair
// is valid and rebuilds its missing packet. It used to be dropped as
// malformed before it was read.
func TestRecoverWhenLengthXORExceedsLongest(t *testing.T) {
	for _, lens := range [][2]int{{1, 2}, {60, 70}} {
		tn := newTestNode(t)
		tn.data[0], tn.data[1] = tn.data[0][:0], tn.data[1][:0]
		for j, n := range lens {
			for i := range n {
				tn.data[j] = append(tn.data[j], byte(i*7+j+1))
			}
		}
		tn.arrive(0)
		tn.repairOf(0, 1)
		tn.check(t, 1, "lec")
		if got := tn.l.c.Malformed.Value(); got != 0 {
			t.Errorf("lengths %v: %d malformed, want 0", lens, got)
		}
	}
}
