package ring

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/wirecodec"
	"github.com/layercast/layercast/transport/sim"
)

// A token in a member's name whose flow-control sums no member put in
// holds the ring back for a rotation or two, not for good: the leader sets
// FlowControl and Backlog from what the members counted during each
// rotation. Before, FlowControl at ring_limit (or above) stopped every
// member sending for good, since each member takes only its own share out
// of the sum (FuzzReceive's crasher, testdata/fuzz/FuzzReceive), and an
// excess Backlog held every member to one packet per visit. Each case
// forges the token a member last passed on, gives it to its successor,
// then node 2 casts 60 messages at once: every node must deliver them
// within 150 ms (a loss-free rotation of this ring takes about 5 ms; one
// packet per visit would take 60 rotations).
func TestForgedFlowControlHeals(t *testing.T) {
	cfg := testConfig()
	for _, tc := range []struct {
		name     string
		from, at event.NodeID
		forge    func(tk *token)
	}{
		{"flow_control=ring_limit at the leader", 4, 1, func(tk *token) { tk.FlowControl = uint32(cfg.RingLimit) }},
		{"flow_control=ring_limit at a member", 2, 3, func(tk *token) { tk.FlowControl = uint32(cfg.RingLimit) }},
		{"flow_control and its rotation count at the top", 2, 3, func(tk *token) {
			tk.FlowControl, tk.RotSent = wirecodec.MaxSeq, wirecodec.MaxSeq
		}},
		{"backlog at the top", 2, 3, func(tk *token) { tk.Backlog, tk.RotBacklog = wirecodec.MaxSeq, wirecodec.MaxSeq }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, sim.Config{Seed: 1, Latency: time.Millisecond}, 4, cfg)
			v := &event.ViewInfo{Group: 1, ID: 1, Members: ids(4)}
			c.install(v)
			c.castLoop(1, 1, 5, time.Millisecond, 16)
			c.castLoop(3, 1, 5, time.Millisecond, 16)
			c.net.Run(50 * time.Millisecond)

			var tk token
			c.layers[tc.from].last.copyTo(&tk)
			if tk.Ring != c.layers[tc.at].cur.id || tk.Type != tokRegular {
				t.Fatalf("node %v's last token: ring %08x type %d, want the running ring %08x", tc.from, tk.Ring, tk.Type, c.layers[tc.at].cur.id)
			}
			tk.Seq += 1000 // newer than any copy in flight
			tc.forge(&tk)
			m := event.DefaultPool.GetRoom(c.stacks[tc.at].Headroom())
			m.SetPayload(append([]byte{tToken, 0}, newWireCodec().Encode(&tk)...))
			c.stacks[tc.at].Inject(0, true, event.Event{Kind: event.Send, Peer: tc.from, Msg: m})
			if got := c.layers[tc.at].cur.lastSeq; got != tk.Seq {
				t.Fatalf("node %v's last token handled: seq %d, want the forged %d", tc.at, got, tk.Seq)
			}

			c.castLoop(2, 1, 60, 10*time.Microsecond, 16)
			c.net.Run(150 * time.Millisecond)
			c.checkAll([]*event.ViewInfo{v}, ids(4)...)
			c.checkSameOrder(ids(4)...)
		})
	}
}
