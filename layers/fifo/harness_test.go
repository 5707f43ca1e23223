package fifo_test

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	_ "github.com/layercast/layercast/layers/fifo"
	_ "github.com/layercast/layercast/layers/reliable"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// cluster is n nodes on a simulated network, each with a stack built by
// mk, recording every delivery.
type cluster struct {
	t      *testing.T
	net    *sim.Network
	stacks map[event.NodeID]*stack.Stack
	// got[receiver][group][sender] lists delivered sequence numbers (the
	// first 4 payload bytes) in delivery order.
	got     map[event.NodeID]map[event.GroupID]map[event.NodeID][]uint32
	byNak   int
	byTag   map[string]int
	lax     bool // arbitrary payloads expected (fuzzing)
	lastDel event.Time
	flow    map[event.NodeID]int // HoldOff count per node
	held    map[event.NodeID]bool
}

func newCluster(t *testing.T, cfg sim.Config, n int, mk func() []stack.Entry) *cluster {
	c := &cluster{
		t: t, net: sim.New(cfg), stacks: map[event.NodeID]*stack.Stack{},
		got:  map[event.NodeID]map[event.GroupID]map[event.NodeID][]uint32{},
		flow: map[event.NodeID]int{}, held: map[event.NodeID]bool{}, byTag: map[string]int{},
	}
	for i := 1; i <= n; i++ {
		id := event.NodeID(i)
		nd := c.net.AddNode(id)
		c.got[id] = map[event.GroupID]map[event.NodeID][]uint32{}
		st, err := stack.New(stack.Config{
			Self: id, Transport: nd, Clock: c.net, Layers: mk(), Seed: cfg.Seed, AppQueue: 64, Log: testLog,
			App: stack.AppFuncs{
				OnDeliver: func(d stack.Delivery) {
					if len(d.Payload) < 4 {
						if c.lax {
							return
						}
						t.Errorf("node %v: short payload %d", id, len(d.Payload))
						return
					}
					gm := c.got[id][d.Group]
					if gm == nil {
						gm = map[event.NodeID][]uint32{}
						c.got[id][d.Group] = gm
					}
					gm[d.From] = append(gm[d.From], binary.BigEndian.Uint32(d.Payload))
					c.byTag[d.Recovery.By]++
					if d.Recovery.By == "nak" {
						c.byNak++
					}
					c.lastDel = c.net.Now()
				},
				OnFlow: func(g event.GroupID, ok bool) {
					if !ok {
						c.flow[id]++
					}
					c.held[id] = !ok
				},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		nd.Attach(st)
		c.stacks[id] = st
	}
	return c
}

func (c *cluster) install(v *event.ViewInfo) {
	for _, id := range v.Members {
		c.stacks[id].InstallView(v)
	}
}

// payload is a sequence number followed by filler.
func payload(seq uint32, size int) []byte {
	b := make([]byte, size)
	binary.BigEndian.PutUint32(b, seq)
	return b
}

// counter sums a layer counter over the given nodes.
func (c *cluster) counter(layer, name string, ids ...event.NodeID) int64 {
	var sum int64
	for _, id := range ids {
		for _, lc := range c.stacks[id].Counters() {
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

func (c *cluster) all() []event.NodeID {
	var ids []event.NodeID
	for i := 1; i <= len(c.stacks); i++ {
		ids = append(ids, event.NodeID(i))
	}
	return ids
}

// checkExactlyOnce asserts that every member other than the sender
// delivered 1..sent[g][s] from every sender exactly once; ordered also
// asserts send order.
func (c *cluster) checkExactlyOnce(views []*event.ViewInfo, sent map[event.GroupID]map[event.NodeID]uint32, ordered bool) {
	c.t.Helper()
	for _, v := range views {
		for _, rx := range v.Members {
			for s, n := range sent[v.Group] {
				if s == rx {
					continue
				}
				seqs := c.got[rx][v.Group][s]
				if err := checkSeqs(seqs, n, ordered); err != nil {
					c.t.Errorf("node %v, group %v, sender %v: %v", rx, v.Group, s, err)
				}
			}
		}
	}
}

func checkSeqs(seqs []uint32, n uint32, ordered bool) error {
	if uint32(len(seqs)) != n {
		return fmt.Errorf("delivered %d messages, want %d", len(seqs), n)
	}
	seen := make([]bool, n+1)
	for i, s := range seqs {
		if s == 0 || s > n {
			return fmt.Errorf("delivered unknown message %d", s)
		}
		if seen[s] {
			return fmt.Errorf("delivered %d twice", s)
		}
		seen[s] = true
		if ordered && s != uint32(i+1) {
			return fmt.Errorf("delivery %d is message %d: out of order", i, s)
		}
	}
	return nil
}

// fifoEntries builds fifo over reliable (reliable with the given parameters).
func fifoEntries(given map[string]string) func() []stack.Entry {
	return func() []stack.Entry {
		mk := func(name string, p map[string]string) stack.Layer {
			info, _ := compose.Lookup(name)
			l, err := info.New(compose.MustParams(name, p))
			if err != nil {
				panic(err)
			}
			return l
		}
		return []stack.Entry{{Name: "fifo", Layer: mk("fifo", nil)}, {Name: "reliable", Layer: mk("reliable", given)}}
	}
}

// castLoop makes sender s cast count messages of size bytes to g, one every
// gap, retrying on back-pressure. It records what was sent in sent.
func (c *cluster) castLoop(s event.NodeID, g event.GroupID, count int, gap time.Duration, size int, sent map[event.GroupID]map[event.NodeID]uint32) {
	if sent[g] == nil {
		sent[g] = map[event.NodeID]uint32{}
	}
	var step func()
	step = func() {
		seq := sent[g][s] + 1
		if err := c.stacks[s].Cast(g, payload(seq, size)); err == nil {
			sent[g][s] = seq
		}
		if int(sent[g][s]) < count {
			c.net.After(gap, step)
		}
	}
	c.net.At(c.net.Now(), step)
}

// testLog is set by a test that wants the stacks' log lines.
var testLog stack.Logger
