package ring

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// del is one delivery: the group, the node that cast it and its index in
// that node's casts to the group.
type del struct {
	g    event.GroupID
	from event.NodeID
	seq  uint32
}

func (d del) String() string { return fmt.Sprintf("%v/%v#%d", d.g, d.from, d.seq) }

// cluster is n nodes running one ring layer each on a simulated network,
// recording every node's deliveries in order (its own casts included).
type cluster struct {
	t      *testing.T
	net    *sim.Network
	stacks map[event.NodeID]*stack.Stack
	layers map[event.NodeID]*Layer
	got    map[event.NodeID][]del
	sent   map[event.GroupID]map[event.NodeID]uint32
	held   map[event.NodeID]int
	lax    bool // arbitrary payloads expected (fuzzing): short ones are not recorded
	// onDeliver, if set, sees each delivery before it is recorded.
	onDeliver func(id event.NodeID, d del)
	// views are the views each node's application saw, with how many
	// deliveries it had made before each.
	views map[event.NodeID][]viewAt
}

// viewAt is a view an application saw after its first n deliveries.
type viewAt struct {
	n int
	v *event.ViewInfo
}

// testConfig is the default configuration, as registered.
func testConfig() Config {
	return Config{MemberLimit: 20, RingLimit: 100, Window: 4096, MaxPending: 256, MaxRtr: 256,
		TokenTimeout: 200 * time.Millisecond, TokenRetransmit: 10 * time.Millisecond, TokenIdle: time.Millisecond}
}

func newCluster(t *testing.T, sc sim.Config, n int, cfg Config) *cluster {
	c := &cluster{t: t, net: sim.New(sc), stacks: map[event.NodeID]*stack.Stack{}, layers: map[event.NodeID]*Layer{},
		got: map[event.NodeID][]del{}, views: map[event.NodeID][]viewAt{}, sent: map[event.GroupID]map[event.NodeID]uint32{}, held: map[event.NodeID]int{}}
	for i := 1; i <= n; i++ {
		id := event.NodeID(i)
		nd := c.net.AddNode(id)
		l := New(cfg)
		st, err := stack.New(stack.Config{Self: id, Transport: nd, Clock: nd, Seed: sc.Seed, AppQueue: 64, Log: testLog,
			Layers: []stack.Entry{{Name: "ring", Layer: l}},
			App: stack.AppFuncs{
				OnDeliver: func(d stack.Delivery) {
					if len(d.Payload) < 4 {
						if c.lax {
							return
						}
						t.Errorf("node %v: short payload", id)
						return
					}
					x := del{d.Group, d.From, binary.BigEndian.Uint32(d.Payload)}
					if c.onDeliver != nil {
						c.onDeliver(id, x)
					}
					c.got[id] = append(c.got[id], x)
				},
				OnView: func(v *event.ViewInfo) { c.views[id] = append(c.views[id], viewAt{len(c.got[id]), v}) },
				OnFlow: func(g event.GroupID, ok bool) {
					if !ok {
						c.held[id]++
					}
				},
			}})
		if err != nil {
			t.Fatal(err)
		}
		nd.Attach(st)
		c.stacks[id], c.layers[id] = st, l
	}
	return c
}

func (c *cluster) install(v *event.ViewInfo, at ...event.NodeID) {
	if len(at) == 0 {
		at = v.Members
	}
	for _, id := range at {
		c.stacks[id].InstallView(v)
	}
}

// castLoop makes s cast count messages of size bytes to g, one every gap,
// retrying on back-pressure, while it is up.
func (c *cluster) castLoop(s event.NodeID, g event.GroupID, count int, gap time.Duration, size int) {
	if c.sent[g] == nil {
		c.sent[g] = map[event.NodeID]uint32{}
	}
	var step func()
	step = func() {
		if c.net.Node(s).Down() {
			return
		}
		seq := c.sent[g][s] + 1
		b := make([]byte, size)
		binary.BigEndian.PutUint32(b, seq)
		if err := c.stacks[s].Cast(g, b); err == nil {
			c.sent[g][s] = seq
		}
		if int(c.sent[g][s]) < count {
			c.net.After(gap, step)
		}
	}
	c.net.At(c.net.Now(), step)
}

// holds reports whether node n holds d in its current ring's window or
// has delivered it already (a freed packet was delivered first).
func (c *cluster) holds(n event.NodeID, d del) bool {
	if slices.Contains(c.got[n], d) {
		return true
	}
	r := c.layers[n].cur
	if r == nil {
		return false
	}
	for s := r.win.base; s <= r.win.highest; s++ {
		e := r.win.get(s)
		if e.m == nil || e.origin != d.from || e.g != d.g {
			continue
		}
		if b := e.m.Bytes(); len(b) >= dataHeaderSize+4 && binary.BigEndian.Uint32(b[dataHeaderSize:]) == d.seq {
			return true
		}
	}
	return false
}

// counter reads a ring counter at one node.
func (c *cluster) counter(id event.NodeID, name string) int64 {
	for _, lc := range c.stacks[id].Counters() {
		for i, n := range lc.Names {
			if n == name {
				return lc.Values[i]
			}
		}
	}
	c.t.Fatalf("no counter %q", name)
	return 0
}

// checkAll asserts that each of the nodes delivered every message cast to
// each of its groups (views) exactly once, each sender's in send order.
func (c *cluster) checkAll(views []*event.ViewInfo, nodes ...event.NodeID) {
	c.t.Helper()
	for _, rx := range nodes {
		for _, v := range views {
			if !v.Has(rx) {
				continue
			}
			for s, n := range c.sent[v.Group] {
				var seqs []uint32
				for _, d := range c.got[rx] {
					if d.g == v.Group && d.from == s {
						seqs = append(seqs, d.seq)
					}
				}
				if len(seqs) != int(n) {
					c.t.Errorf("node %v delivered %d of %v's %d casts to %v", rx, len(seqs), s, n, v.Group)
					continue
				}
				for i, q := range seqs {
					if q != uint32(i+1) {
						c.t.Errorf("node %v: %v's casts to %v delivered as %v..., want 1, 2, ...", rx, s, v.Group, seqs[:i+1])
						break
					}
				}
			}
		}
	}
}

// checkSameOrder asserts agreed order: any two nodes deliver the messages
// they both deliver in the same order.
func (c *cluster) checkSameOrder(nodes ...event.NodeID) {
	c.t.Helper()
	for i, a := range nodes {
		for _, b := range nodes[i+1:] {
			inA := map[del]bool{}
			for _, d := range c.got[a] {
				inA[d] = true
			}
			inB := map[del]bool{}
			for _, d := range c.got[b] {
				inB[d] = true
			}
			var sa, sb []del
			for _, d := range c.got[a] {
				if inB[d] {
					sa = append(sa, d)
				}
			}
			for _, d := range c.got[b] {
				if inA[d] {
					sb = append(sb, d)
				}
			}
			if !slices.Equal(sa, sb) {
				for k := range min(len(sa), len(sb)) {
					if sa[k] != sb[k] {
						c.t.Errorf("nodes %v and %v disagree at their common delivery %d: %v against %v", a, b, k, sa[k], sb[k])
						break
					}
				}
				return
			}
		}
	}
}

// testLog, if set, receives the stacks' log lines (debugging a test).
var testLog stack.Logger

// ids lists nodes 1..n.
func ids(n int) []event.NodeID {
	out := make([]event.NodeID, n)
	for i := range out {
		out[i] = event.NodeID(i + 1)
	}
	return out
}
