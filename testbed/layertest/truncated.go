package layertest

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/transport/sim"
)

// Cut is a valid packet a layer's FuzzTruncatedCounted cuts short: the kind
// it travels as, and the length below which it is malformed (Min; -1: any
// strict prefix of B is).
type Cut struct {
	B    []byte
	Kind event.Kind
	Min  int
}

// PickCut is the packet a fuzz input's typ names: cuts[typ % len(cuts)].
func PickCut(cuts []Cut, typ byte) Cut { return cuts[int(typ)%len(cuts)] }

// Input is what a truncation fuzz target injects for one input: the prefix
// of B that cut picks (cut % Min bytes, or cut % len(B) when Min < 0) as
// its own kind, or with wrongKind the whole packet as the other kind (a
// Cast as a Send, a Send as a Cast), which the layer must refuse as well.
func (c Cut) Input(cut uint16, wrongKind bool) ([]byte, event.Kind) {
	if wrongKind {
		return c.B, event.Send + event.Cast - c.Kind
	}
	n := c.Min
	if n < 0 {
		n = len(c.B)
	}
	return c.B[:int(cut)%n], c.Kind
}

// SeedCuts gives f, for every one of n packets, the empty prefix and the
// prefix of cut bytes, and with wrongKind also the whole packet sent as
// the wrong kind: inputs (typ, cut) or, with wrongKind, (typ, cut, wrong).
func SeedCuts(f *testing.F, n int, cut uint16, wrongKind bool) {
	for typ := range byte(n) {
		if !wrongKind {
			f.Add(typ, uint16(0))
			f.Add(typ, cut)
			continue
		}
		f.Add(typ, uint16(0), false)
		f.Add(typ, cut, false)
		f.Add(typ, uint16(0), true)
	}
}

// CountedOnce fails t unless a layer counted packet b (a cut of a packet of
// whole bytes, sent as kind) as malformed exactly once: counted is how far
// its malformed counter moved.
func CountedOnce(t testing.TB, counted int64, kind event.Kind, b []byte, whole int) {
	t.Helper()
	if counted != 1 {
		t.Fatalf("%v packet %x (%d bytes of %d): malformed counted %d times, want 1", kind, b, len(b), whole, counted)
	}
}

// Pair is what a truncation fuzz target of a layer that needs no peers
// feeds: nodes 1 and 2, each running the registered layer name alone (with
// its default parameters), arbitrary payloads expected (Lax), in view 1 of
// group 1.
func Pair(t *testing.T, name string) *Cluster {
	c := New(t, sim.Config{Seed: 1, Latency: time.Millisecond}, 2, Registered(nil, name))
	c.Lax = true
	c.Install(&event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}})
	return c
}

// Receive hands node at the packet b, as kind, from peer in group g, as if
// it came off the network (below the stack's bottom layer), and runs the
// network for 10 ms.
func (c *Cluster) Receive(at, peer event.NodeID, g event.GroupID, kind event.Kind, b []byte) {
	st := c.Stacks[at]
	st.Inject(st.NumLayers()-1, true, event.Event{Kind: kind, Group: g, Peer: peer, Msg: event.DefaultPool.FromBytes(b)})
	c.Net.Run(10 * time.Millisecond)
}
