// Package simstack puts whole stacks on a simulated network for tests:
// a node running a stack (its sim node its transport and clock), the
// membership service a spec's layers name, a transport that keeps a copy
// of every packet its node sends, and a stack's counters by name. Written
// once for the tests that build such worlds by hand. It is test support for
// this module; import it from _test.go files only.
package simstack

import (
	"slices"
	"testing"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// Add puts node cfg.Self on net running the stack cfg describes, and
// returns the stack, attached to its node. The node is the stack's
// transport, or wrap(node) is when wrap is not nil (a transport that
// records or rewrites what the node sends); it is the stack's clock too
// unless cfg names one (the network itself, say). It fails tb if the stack
// cannot be made.
func Add(tb testing.TB, net *sim.Network, cfg stack.Config, wrap func(*sim.Node) stack.Transport) *stack.Stack {
	tb.Helper()
	nd := net.AddNode(cfg.Self)
	cfg.Transport = nd
	if cfg.Clock == nil {
		cfg.Clock = nd
	}
	if wrap != nil {
		cfg.Transport = wrap(nd)
	}
	st, err := stack.New(cfg)
	if err != nil {
		tb.Fatalf("node %v: %v", cfg.Self, err)
	}
	nd.Attach(st)
	return st
}

// Service puts on net the membership service sp's layers need for members
// (compose.ServiceOf: its node and its stack) through Add, and returns its
// node id and stack.
func Service(tb testing.TB, net *sim.Network, sp *compose.Spec, members []event.NodeID, seed uint64, wrap func(*sim.Node) stack.Transport) (event.NodeID, *stack.Stack) {
	tb.Helper()
	svc, err := compose.ServiceOf(sp, members)
	if err != nil {
		tb.Fatal(err)
	}
	return svc.Need.Node, Add(tb, net, stack.Config{Self: svc.Need.Node, Layers: svc.Entries, Seed: seed}, wrap)
}

// Packet is one packet a node sent: to a node (Send), or to the group
// (Multicast: To is event.NoNode).
type Packet struct {
	To  event.NodeID
	Pkt []byte
}

// Capture is a node's transport that appends a copy of every packet the
// node sends to *Into, then sends it.
type Capture struct {
	*sim.Node
	Into *[]Packet
}

// Capturing returns a wrap for Add whose transports append to *into.
func Capturing(into *[]Packet) func(*sim.Node) stack.Transport {
	return func(nd *sim.Node) stack.Transport { return Capture{nd, into} }
}

// Multicast implements stack.Transport.
func (c Capture) Multicast(g event.GroupID, pkt []byte) {
	*c.Into = append(*c.Into, Packet{event.NoNode, slices.Clone(pkt)})
	c.Node.Multicast(g, pkt)
}

// Send implements stack.Transport.
func (c Capture) Send(to event.NodeID, pkt []byte) {
	*c.Into = append(*c.Into, Packet{to, slices.Clone(pkt)})
	c.Node.Send(to, pkt)
}

// Counters returns st's counters of the named layers by name (a name two
// of them share: the later layer's value).
func Counters(st *stack.Stack, layers ...string) map[string]int64 {
	c := map[string]int64{}
	for _, lc := range st.Counters() {
		if slices.Contains(layers, lc.Layer) {
			for i, n := range lc.Names {
				c[n] = lc.Values[i]
			}
		}
	}
	return c
}
