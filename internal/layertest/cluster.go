// Package layertest is the simulated cluster that layer tests share: n
// nodes on transport/sim, each with a stack, recording every delivery so a
// test can assert exactly-once and order per (group, sender).
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
	T      *testing.T
	Net    *sim.Network
	Stacks map[event.NodeID]*stack.Stack
	// Got[receiver][group][sender] lists delivered sequence numbers (the
	// first 4 payload bytes) in delivery order.
	Got     map[event.NodeID]map[event.GroupID]map[event.NodeID][]uint32
	ByNak   int
	ByTag   map[string]int
	Lax     bool // arbitrary payloads expected (fuzzing)
	LastDel event.Time
	Flow    map[event.NodeID]int // HoldOff count per node
	Held    map[event.NodeID]bool
}

// New builds the cluster: node ids 1..n, each stack from mk().
func New(t *testing.T, cfg sim.Config, n int, mk func() []stack.Entry) *Cluster {
	c := &Cluster{
		T: t, Net: sim.New(cfg), Stacks: map[event.NodeID]*stack.Stack{},
		Got:  map[event.NodeID]map[event.GroupID]map[event.NodeID][]uint32{},
		Flow: map[event.NodeID]int{}, Held: map[event.NodeID]bool{}, ByTag: map[string]int{},
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

// DropWhen is a loss model dropping every packet to the receivers in Rx
// while On() says so.
type DropWhen struct {
	Rx map[event.NodeID]bool
	On func() bool
}

// Drop implements sim.LossModel.
func (d DropWhen) Drop(rx event.NodeID, _ *rand.Rand) bool { return d.Rx[rx] && d.On() }

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
