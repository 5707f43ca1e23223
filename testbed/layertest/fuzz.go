package layertest

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// RunScript runs the fuzzer's script b (see Script) on a new cluster of
// three nodes, each running the stack mk makes, arbitrary payloads
// expected (Lax), view 1 of group 1 ({1, 2, 3}) installed first; it
// returns the cluster for the caller to check what its layers hold.
func RunScript(t *testing.T, mk func() []stack.Entry, b []byte) *Cluster {
	c := New(t, sim.Config{Seed: 1, Latency: time.Millisecond}, 3, mk)
	c.Lax = true
	c.Install(&event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3}})
	c.Script(b)
	return c
}

// ScriptPacket is a packet operation of a script as Script reads it: op
// (op&7 below 5), the length of body (under 256 bytes), then body.
func ScriptPacket(op byte, body []byte) []byte {
	return append([]byte{op, byte(len(body))}, body...)
}

// Script feeds node 1 of a 3-node cluster (group 1, view 1 = {1, 2, 3}
// installed by the caller) what a fuzzer wrote: a sequence of operations,
// each one byte op followed by its operands.
//
//	op&7 == 7  install a view (the next byte picks its shape, see views)
//	op&7 == 6  let the network run (the next byte: milliseconds)
//	op&7 == 5  node 1 casts a message to group 1
//	otherwise  a packet from node (2, 3, 9 or 200 by op>>3&3; 9 and 200
//	           are in no view), a cast if op&1 else a send, to group 1 or 2
//	           by op&2; the next byte is its length, then its bytes
//
// Node 1 and its peers see the same views, so what they send each other
// interleaves with the script's packets.
func (c *Cluster) Script(b []byte) {
	ids := []event.NodeID{2, 3, 9, 200}
	viewID := uint64(1)
	next := func() (byte, bool) {
		if len(b) == 0 {
			return 0, false
		}
		x := b[0]
		b = b[1:]
		return x, true
	}
	for len(b) > 0 {
		op, _ := next()
		switch op & 7 {
		case 7:
			shape, _ := next()
			viewID++
			v := scriptView(viewID, shape)
			for _, id := range []event.NodeID{1, 2, 3} {
				c.Stacks[id].InstallView(v)
			}
		case 6:
			ms, _ := next()
			c.Net.Run(time.Duration(ms) * time.Millisecond)
		case 5:
			_ = c.Stacks[1].Cast(1, Payload(uint32(len(b)), 16))
		default:
			n, _ := next()
			body := b[:min(int(n), len(b))]
			b = b[len(body):]
			k := event.Send
			if op&1 != 0 {
				k = event.Cast
			}
			g := event.GroupID(1 + op>>1&1)
			c.Stacks[1].Inject(c.Stacks[1].NumLayers()-1, true, event.Event{
				Kind: k, Group: g, Peer: ids[op>>3&3], Msg: event.DefaultPool.FromBytes(append([]byte(nil), body...)),
			})
		}
	}
	c.Net.Run(2 * time.Second)
}

// scriptView is view id of group 1 in one of six shapes: everyone; node 2
// removed; node 2 re-admitted; node 1 listed as joined (a lost removal
// notice); node 1 removed; node 2 removed and re-admitted at once.
func scriptView(id uint64, shape byte) *event.ViewInfo {
	all := []event.NodeID{1, 2, 3}
	v := &event.ViewInfo{Group: 1, ID: id, Members: all}
	switch shape % 6 {
	case 1:
		v.Members, v.Left = []event.NodeID{1, 3}, []event.NodeID{2}
	case 2:
		v.Joined = []event.NodeID{2}
	case 3:
		v.Joined = []event.NodeID{1}
	case 4:
		v.Members, v.Left = []event.NodeID{2, 3}, []event.NodeID{1}
	case 5:
		v.Joined, v.Left = []event.NodeID{2}, []event.NodeID{2}
	}
	return v
}
