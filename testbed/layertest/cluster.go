// Package layertest is the simulated cluster that layer tests share: n
// nodes on transport/sim, each with a stack, recording every delivery so a
// test can assert exactly-once and order per (group, sender).
//
// It is test support for this module, and serves anyone writing a layer,
// inside the module or outside it, the way net/http/httptest serves anyone
// writing a handler: build a Cluster of stacks (New, or Registered for
// layers by name), cast, run virtual time, and check what was delivered.
// Import it from _test.go files only.
package layertest

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// Cluster is n nodes on a simulated network, each with a stack built by
// mk, recording every delivery.
type Cluster struct {
	T      *testing.T                    // the test the cluster reports to
	Net    *sim.Network                  // the simulated network all nodes share
	Stacks map[event.NodeID]*stack.Stack // each node's stack
	// Got[receiver][group][sender] lists delivered sequence numbers (the
	// first 4 payload bytes) in delivery order.
	Got     map[event.NodeID]map[event.GroupID]map[event.NodeID][]uint32
	ByNak   int                   // deliveries recovered by a NAK (Recovery.By "nak")
	ByTag   map[string]int        // deliveries by Recovery.By ("" when not recovered)
	Lax     bool                  // arbitrary payloads expected (fuzzing)
	LastDel event.Time            // virtual time of the last delivery at any node
	Flow    map[event.NodeID]int  // HoldOff count per node
	Held    map[event.NodeID]bool // whether the node's flow is held off now
	// Views lists the views each node's application saw, in order.
	Views map[event.NodeID][]*event.ViewInfo
}

// New builds the cluster: node ids 1..n, each stack from mk().
func New(t *testing.T, cfg sim.Config, n int, mk func() []stack.Entry) *Cluster {
	c := &Cluster{
		T: t, Net: sim.New(cfg), Stacks: map[event.NodeID]*stack.Stack{},
		Got:  map[event.NodeID]map[event.GroupID]map[event.NodeID][]uint32{},
		Flow: map[event.NodeID]int{}, Held: map[event.NodeID]bool{}, ByTag: map[string]int{},
		Views: map[event.NodeID][]*event.ViewInfo{},
	}
	for i := 1; i <= n; i++ {
		id := event.NodeID(i)
		nd := c.Net.AddNode(id)
		c.Got[id] = map[event.GroupID]map[event.NodeID][]uint32{}
		st, err := stack.New(stack.Config{
			Self: id, Transport: nd, Clock: c.Net, Layers: mk(), Seed: cfg.Seed, AppQueue: 64, Log: Log,
			App: stack.AppFuncs{
				OnDeliver: func(d stack.Delivery) {
					if len(d.Payload) < 4 {
						if c.Lax {
							return
						}
						t.Errorf("node %v: short payload %d", id, len(d.Payload))
						return
					}
					gm := c.Got[id][d.Group]
					if gm == nil {
						gm = map[event.NodeID][]uint32{}
						c.Got[id][d.Group] = gm
					}
					gm[d.From] = append(gm[d.From], binary.BigEndian.Uint32(d.Payload))
					c.ByTag[d.Recovery.By]++
					if d.Recovery.By == "nak" {
						c.ByNak++
					}
					c.LastDel = c.Net.Now()
				},
				OnView: func(v *event.ViewInfo) { c.Views[id] = append(c.Views[id], v) },
				OnFlow: func(g event.GroupID, ok bool) {
					if !ok {
						c.Flow[id]++
					}
					c.Held[id] = !ok
				},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		nd.Attach(st)
		c.Stacks[id] = st
	}
	return c
}

// Install installs a view at every member.
func (c *Cluster) Install(v *event.ViewInfo) {
	for _, id := range v.Members {
		c.Stacks[id].InstallView(v)
	}
}

// Payload is a sequence number followed by filler.
func Payload(seq uint32, size int) []byte {
	b := make([]byte, size)
	binary.BigEndian.PutUint32(b, seq)
	return b
}

// SeqCast is a data cast from a sender in grp as a sequenced layer
// (compose.Sequenced) delivers it up: number seq of a stream that starts at
// start for the receiver, with Payload(seq, size) as its bytes. Tests of a
// layer above one (fifo) inject it at the bottom of their stack.
func SeqCast(grp event.GroupID, from event.NodeID, seq, start uint32, size int) event.Event {
	return event.Event{Kind: event.Cast, Group: grp, Peer: from, Seq: seq, Start: start, Msg: event.DefaultPool.FromBytes(Payload(seq, size))}
}

// Counter sums a layer counter over the given nodes.
func (c *Cluster) Counter(layer, name string, ids ...event.NodeID) int64 {
	var sum int64
	for _, id := range ids {
		for _, lc := range c.Stacks[id].Counters() {
			if lc.Layer != layer {
				continue
			}
			for i, n := range lc.Names {
				if n == name {
					sum += lc.Values[i]
				}
			}
		}
	}
	return sum
}

// All lists every node id.
func (c *Cluster) All() []event.NodeID {
	var ids []event.NodeID
	for i := 1; i <= len(c.Stacks); i++ {
		ids = append(ids, event.NodeID(i))
	}
	return ids
}

// CheckExactlyOnce asserts that every member other than the sender
// delivered 1..sent[g][s] from every sender exactly once; ordered also
// asserts send order.
func (c *Cluster) CheckExactlyOnce(views []*event.ViewInfo, sent map[event.GroupID]map[event.NodeID]uint32, ordered bool) {
	c.T.Helper()
	for _, v := range views {
		for _, rx := range v.Members {
			for s, n := range sent[v.Group] {
				if s == rx {
					continue
				}
				seqs := c.Got[rx][v.Group][s]
				if err := CheckSeqs(seqs, n, ordered); err != nil {
					c.T.Errorf("node %v, group %v, sender %v: %v", rx, v.Group, s, err)
				}
			}
		}
	}
}

// CheckSeqs checks that seqs holds 1..n exactly once (and in order if
// ordered).
func CheckSeqs(seqs []uint32, n uint32, ordered bool) error {
	if uint32(len(seqs)) != n {
		return fmt.Errorf("delivered %d messages, want %d", len(seqs), n)
	}
	return checkSuffix(seqs, 0, n, ordered)
}

// ThreeGroups is 9 nodes in three overlapping groups, in their first views.
func ThreeGroups() []*event.ViewInfo {
	return []*event.ViewInfo{
		{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3, 4, 5, 6, 7, 8}},
		{Group: 2, ID: 1, Members: []event.NodeID{2, 3, 4, 5, 6, 7, 8, 9}},
		{Group: 3, ID: 1, Members: []event.NodeID{1, 3, 5, 7, 9}},
	}
}

// CastThreeGroups installs ThreeGroups (the cluster needs 9 nodes) and
// starts count casts by each of nodes 1, 2 and 3 to group 1 (100 bytes,
// one a millisecond), 4 and 9 to group 2 (200 bytes, one every gap2), and
// 5 and 7 to group 3 (50 bytes, one a millisecond). It returns the views
// and where the casts are recorded (see CastLoop).
func (c *Cluster) CastThreeGroups(count int, gap2 time.Duration) ([]*event.ViewInfo, map[event.GroupID]map[event.NodeID]uint32) {
	views := ThreeGroups()
	for _, v := range views {
		c.Install(v)
	}
	sent := map[event.GroupID]map[event.NodeID]uint32{}
	for _, s := range []event.NodeID{1, 2, 3} {
		c.CastLoop(s, 1, count, time.Millisecond, 100, sent)
	}
	for _, s := range []event.NodeID{4, 9} {
		c.CastLoop(s, 2, count, gap2, 200, sent)
	}
	for _, s := range []event.NodeID{5, 7} {
		c.CastLoop(s, 3, count, time.Millisecond, 50, sent)
	}
	return views, sent
}

// RunThreeGroups runs CastThreeGroups(count, gap2) for 5 s of simulated
// time and checks that every member delivered every message once (in send
// order if ordered), the last within a second of the last cast (a few
// recovery rounds).
func (c *Cluster) RunThreeGroups(count int, gap2 time.Duration, ordered bool) {
	c.T.Helper()
	views, sent := c.CastThreeGroups(count, gap2)
	lastSend := event.Time(time.Duration(count) * max(time.Millisecond, gap2))
	c.Net.Run(5 * time.Second)
	c.CheckExactlyOnce(views, sent, ordered)
	if bound := lastSend + event.Time(time.Second); c.LastDel > bound {
		c.T.Errorf("last delivery at %v, want by %v", c.LastDel, bound)
	}
}

// JoinerMissesAView is the joiner scenario fifo's and reliable's tests
// share: 5 nodes (seed 8, 1 ms latency, the given jitter) where node 5
// hears nothing from 100 ms to 160 ms. Nodes 1-4 are in view 1 of group
// 1 and each caster casts messages 1..20 (64 bytes, 1 ms apart); at
// 100 ms node 5 joins (view 2) and node 1 casts 21..40, all lost at node
// 5, which the scenario checks at 150 ms; then view 3 {1, 2, 3, 5} is
// installed at its members. It returns the cluster and what was sent; the
// test goes on from there.
func JoinerMissesAView(t *testing.T, jitter time.Duration, mk func() []stack.Entry, casters ...event.NodeID) (*Cluster, map[event.GroupID]map[event.NodeID]uint32) {
	t.Helper()
	var net *sim.Network
	from, to := event.Time(100*time.Millisecond), event.Time(160*time.Millisecond)
	loss := DropWhen{Rx: map[event.NodeID]bool{5: true}, On: func() bool { return net.Now() >= from && net.Now() < to }}
	c := New(t, sim.Config{Seed: 8, Latency: time.Millisecond, Jitter: jitter, Loss: loss}, 5, mk)
	net = c.Net
	c.Install(&event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3, 4}})
	sent := map[event.GroupID]map[event.NodeID]uint32{}
	for _, s := range casters {
		c.CastLoop(s, 1, 20, time.Millisecond, 64, sent)
	}
	c.Net.RunUntil(from)
	c.Install(&event.ViewInfo{Group: 1, ID: 2, Members: []event.NodeID{1, 2, 3, 4, 5}})
	c.CastLoop(1, 1, 40, time.Millisecond, 64, sent) // 21..40: all lost at node 5
	c.Net.RunUntil(to - event.Time(10*time.Millisecond))
	if n := len(c.Got[5][1][1]); n != 0 {
		t.Fatalf("joiner delivered %d of sender 1's view-2 messages, want 0 (all lost)", n)
	}
	v3 := &event.ViewInfo{Group: 1, ID: 3, Members: []event.NodeID{1, 2, 3, 5}}
	for _, id := range v3.Members {
		c.Stacks[id].InstallView(v3)
	}
	return c, sent
}

// DropWhen is a loss model dropping every packet to the receivers in Rx
// while On() says so.
type DropWhen struct {
	Rx map[event.NodeID]bool // the receivers whose packets are dropped
	On func() bool           // whether dropping is on now
}

// Drop implements sim.LossModel.
func (d DropWhen) Drop(rx event.NodeID, _ *rand.Rand) bool { return d.Rx[rx] && d.On() }

// Caster returns a function making node s cast n messages to g at once
// (payloads numbered on from 1, 32 bytes each), failing the test if the
// stack refuses one; it returns how many s has cast so far.
func (c *Cluster) Caster(s event.NodeID, g event.GroupID) func(n int) uint32 {
	var sent uint32
	return func(n int) uint32 {
		for i := 0; i < n; i++ {
			if err := c.Stacks[s].Cast(g, Payload(sent+1, 32)); err != nil {
				c.T.Fatalf("n%v cast %d: %v", s, sent+1, err)
			}
			sent++
		}
		return sent
	}
}

// CastLoop makes sender s cast count messages of size bytes to g, one every
// gap, retrying on back-pressure. It records what was sent in sent.
func (c *Cluster) CastLoop(s event.NodeID, g event.GroupID, count int, gap time.Duration, size int, sent map[event.GroupID]map[event.NodeID]uint32) {
	if sent[g] == nil {
		sent[g] = map[event.NodeID]uint32{}
	}
	var step func()
	step = func() {
		seq := sent[g][s] + 1
		if err := c.Stacks[s].Cast(g, Payload(seq, size)); err == nil {
			sent[g][s] = seq
		}
		if int(sent[g][s]) < count {
			c.Net.After(gap, step)
		}
	}
	c.Net.At(c.Net.Now(), step)
}

// Log, if set, receives the stacks' log lines (for debugging a test).
var Log stack.Logger

// Rejoin chooses which views a removal and re-admission show (issue 8's
// rejoin contract, R1-R3).
type Rejoin struct {
	// RemovalNotice: the removed node gets the view without itself (R1)
	// before it is re-admitted; otherwise it only sees the re-admitting view
	// with itself in Joined (a lost notice).
	RemovalNotice bool
	// OthersSeeRemoval: the others install a view without the node before
	// the re-admitting one; otherwise they only see the re-admitting view,
	// with the same members and the node in both Left and Joined (R2).
	OthersSeeRemoval bool
	// Loss, if set, drops packets (the rejoin must still hold).
	Loss sim.LossModel
}

// RejoinResult is what RunRejoin observed.
type RejoinResult struct {
	C *Cluster // the cluster the run used, as it ended
	// Sent[s] is how many casts s made in all; AtReadmit[s] how many it had
	// made when it installed the re-admitting view.
	Sent, AtReadmit map[event.NodeID]uint32
}

// RejoinNode is the node RunRejoin removes and re-admits.
const RejoinNode event.NodeID = 2

// RunRejoin runs 4 nodes in group 1, every node casting 100 messages a
// second for 3 s; node 2 freezes at 1 s for 800 ms and is removed (view 2)
// meanwhile, then re-admitted in view 3 at 2 s, as r says. The run drains
// until 8 s.
func RunRejoin(t *testing.T, seed uint64, mk func() []stack.Entry, r Rejoin) RejoinResult {
	c := New(t, sim.Config{Seed: seed, Latency: time.Millisecond, Jitter: 200 * time.Microsecond, Loss: r.Loss}, 4, mk)
	all := []event.NodeID{1, 2, 3, 4}
	others := []event.NodeID{1, 3, 4}
	const g = event.GroupID(1)
	c.Install(&event.ViewInfo{Group: g, ID: 1, Members: all})
	res := RejoinResult{C: c, Sent: map[event.NodeID]uint32{}, AtReadmit: map[event.NodeID]uint32{}}
	stopAt := event.Time(3 * time.Second)
	for _, s := range all {
		var step func()
		step = func() {
			if !c.Net.Node(s).Frozen() {
				if err := c.Stacks[s].Cast(g, Payload(res.Sent[s]+1, 64)); err == nil {
					res.Sent[s]++
				}
			}
			if c.Net.Now() < stopAt {
				c.Net.After(10*time.Millisecond, step)
			}
		}
		c.Net.At(event.Time(time.Duration(s)*time.Millisecond), step)
	}
	c.Net.At(event.Time(time.Second), func() { c.Net.Freeze(RejoinNode, 800*time.Millisecond) })
	removal := &event.ViewInfo{Group: g, ID: 2, Members: others, Left: []event.NodeID{RejoinNode}}
	if r.OthersSeeRemoval {
		c.Net.At(event.Time(1300*time.Millisecond), func() {
			for _, id := range others {
				c.Stacks[id].InstallView(removal)
			}
		})
	}
	if r.RemovalNotice {
		c.Net.At(event.Time(1900*time.Millisecond), func() { c.Stacks[RejoinNode].InstallView(removal) })
	}
	readmit := &event.ViewInfo{Group: g, ID: 3, Members: all, Joined: []event.NodeID{RejoinNode}}
	if !r.OthersSeeRemoval {
		readmit.Left = []event.NodeID{RejoinNode}
	}
	c.Net.At(event.Time(2*time.Second), func() {
		for _, id := range all {
			res.AtReadmit[id] = res.Sent[id]
			c.Stacks[id].InstallView(readmit)
		}
	})
	c.Net.RunUntil(event.Time(8 * time.Second))
	return res
}

// Check asserts the rejoin contract: no duplicate at any node, send order
// if ordered, every message between nodes that stayed delivered, every
// message cast after the re-admitting view delivered to and from the
// rejoined node.
func (r RejoinResult) Check(t *testing.T, ordered bool) {
	t.Helper()
	for rx := event.NodeID(1); rx <= 4; rx++ {
		for s := event.NodeID(1); s <= 4; s++ {
			if s == rx {
				continue
			}
			from := uint32(0) // everything after this is owed
			if s == RejoinNode || rx == RejoinNode {
				from = r.AtReadmit[s]
			}
			if err := checkSuffix(r.C.Got[rx][1][s], from, r.Sent[s], ordered); err != nil {
				t.Errorf("node %v from %v: %v", rx, s, err)
			}
		}
	}
}

func checkSuffix(seqs []uint32, from, n uint32, ordered bool) error {
	seen := make(map[uint32]bool, len(seqs))
	for i, s := range seqs {
		if s == 0 || s > n {
			return fmt.Errorf("delivered unknown message %d", s)
		}
		if seen[s] {
			return fmt.Errorf("delivered %d twice", s)
		}
		seen[s] = true
		if ordered && i > 0 && s < seqs[i-1] {
			return fmt.Errorf("delivered %d after %d: out of order", s, seqs[i-1])
		}
	}
	missing := 0
	first := uint32(0)
	for s := from + 1; s <= n; s++ {
		if !seen[s] {
			if missing == 0 {
				first = s
			}
			missing++
		}
	}
	if missing > 0 {
		return fmt.Errorf("%d of messages %d..%d never delivered (first %d)", missing, from+1, n, first)
	}
	return nil
}

// RejoinCases are the seven combinations of views and loss a layer's rejoin
// test runs: the removal notice delivered or lost, the others seeing the
// removal or only the re-admission, without loss and with 5% loss.
func RejoinCases() []struct {
	Name string
	R    Rejoin
} {
	return []struct {
		Name string
		R    Rejoin
	}{
		{"notice", Rejoin{RemovalNotice: true, OthersSeeRemoval: true}},
		{"lost-notice", Rejoin{OthersSeeRemoval: true}},
		{"same-members", Rejoin{RemovalNotice: true}},
		{"lost-notice-same-members", Rejoin{}},
		{"notice-5%-loss", Rejoin{RemovalNotice: true, OthersSeeRemoval: true, Loss: sim.Uniform{P: 0.05}}},
		{"lost-notice-5%-loss", Rejoin{OthersSeeRemoval: true, Loss: sim.Uniform{P: 0.05}}},
		{"same-members-5%-loss", Rejoin{RemovalNotice: true, Loss: sim.Uniform{P: 0.05}}},
	}
}

// TestRejoin runs every RejoinCases case on stacks made by mk (seed 1) and
// checks the rejoin contract (in send order if ordered) and that none of
// the named layers still holds buffered bytes (counter buffer_bytes) at
// the end.
func TestRejoin(t *testing.T, mk func() []stack.Entry, ordered bool, layers ...string) {
	for _, tc := range RejoinCases() {
		t.Run(tc.Name, func(t *testing.T) {
			res := RunRejoin(t, 1, mk, tc.R)
			res.Check(t, ordered)
			for _, id := range res.C.All() {
				for _, layer := range layers {
					if b := res.C.Counter(layer, "buffer_bytes", id); b != 0 {
						t.Errorf("node %v: %s still holds %d bytes", id, layer, b)
					}
				}
			}
		})
	}
}

// RandomViews is the index test fifo and reliable share: for seeds 1 to 20,
// a one-node cluster (stack from mk) goes through 60 random views
// (RandomView); after each, cast (if set) may feed the node packets, the
// network runs 1 ms, and check must hold for every (group, node) pair of
// groups 0 to 5 and nodes 0 to 13 (a layer's per-packet index against its
// maps, say). mk is called once per seed, before its run.
func RandomViews(t *testing.T, mk func() []stack.Entry, cast func(c *Cluster, v *event.ViewInfo), check func(g event.GroupID, n event.NodeID) error) {
	t.Helper()
	for seed := uint64(1); seed <= 20; seed++ {
		c := New(t, sim.Config{Seed: seed, Latency: time.Millisecond}, 1, mk)
		c.Lax = true
		rng := rand.New(rand.NewPCG(seed, 7))
		ids := map[event.GroupID]uint64{}
		for step := 0; step < 60; step++ {
			v := RandomView(rng, ids)
			c.Stacks[1].InstallView(v)
			if cast != nil {
				cast(c, v)
			}
			c.Net.Run(time.Millisecond)
			for g := event.GroupID(0); g <= 5; g++ {
				for n := event.NodeID(0); n <= 13; n++ {
					if err := check(g, n); err != nil {
						t.Fatalf("seed %d step %d: (%v, %v): %v", seed, step, g, n, err)
					}
				}
			}
		}
	}
}
