package tests

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/membership"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// hopNet is a simulated wide area for hop tests that need the network's
// own view of the packets (which site received which group's data): nodes
// placed in sites, WAN links, static views and site views, every delivery
// recorded in order.
type hopNet struct {
	t      *testing.T
	net    *sim.Network
	stacks map[event.NodeID]*stack.Stack
	// got[receiver] lists deliveries in order: group, sender, sequence.
	got map[event.NodeID][]hopDelivery
	// dataIn counts data packets (payload-sized) the network delivered,
	// by receiver and group.
	dataIn map[event.NodeID]map[event.GroupID]int
	seq    map[event.NodeID]uint32
	// sent[sender][group] lists the sequences the stack accepted.
	sent map[event.NodeID]map[event.GroupID][]uint32
	// pkts[{to, from}] lists when the network delivered a data packet
	// (payload-sized, unicast or multicast) from one node to another.
	pkts map[[2]event.NodeID][]event.Time
	// views[node][group] is the last view the node's application saw
	// (with a membership service in the stack).
	views map[event.NodeID]map[event.GroupID]*event.ViewInfo
	// service is the membership service's node, if the spec has one.
	service event.NodeID
}

type hopDelivery struct {
	g    event.GroupID
	from event.NodeID
	seq  uint32
	at   event.Time
}

// hopPayload is the size of the test messages.
const hopPayload = 1000

func newHopNet(t *testing.T, spec string, seed uint64, sites map[event.NodeID]event.SiteID, wan map[[2]int]sim.Link, groups map[event.GroupID][]event.NodeID) *hopNet {
	t.Helper()
	h := &hopNet{t: t, stacks: map[event.NodeID]*stack.Stack{}, got: map[event.NodeID][]hopDelivery{},
		dataIn: map[event.NodeID]map[event.GroupID]int{}, seq: map[event.NodeID]uint32{},
		sent: map[event.NodeID]map[event.GroupID][]uint32{}, pkts: map[[2]event.NodeID][]event.Time{},
		views: map[event.NodeID]map[event.GroupID]*event.ViewInfo{}}
	h.net = sim.New(sim.Config{Seed: seed, Latency: time.Millisecond, Trace: func(e sim.TraceEvent) {
		if e.Kind == sim.TraceDeliver && e.Size >= hopPayload {
			if h.dataIn[e.To] == nil {
				h.dataIn[e.To] = map[event.GroupID]int{}
			}
			h.dataIn[e.To][e.Group]++
			k := [2]event.NodeID{e.To, e.From}
			h.pkts[k] = append(h.pkts[k], e.At)
		}
	}})
	sp, err := compose.Load(spec)
	if err != nil {
		t.Fatalf("compose.Load(%s) = %v", spec, err)
	}
	var nodes []event.NodeID
	usesService := false
	for id := event.NodeID(1); int(id) <= len(sites); id++ {
		nodes = append(nodes, id)
		entries, err := compose.Build(sp)
		if err != nil {
			t.Fatalf("compose.Build(%s) = %v", spec, err)
		}
		for _, e := range entries {
			if info, ok := compose.Lookup(e.Name); ok && info.Service != nil {
				usesService = true
			}
		}
		nd := h.net.AddNode(id)
		h.net.SetSite(id, int(sites[id]))
		self := id
		st, err := stack.New(stack.Config{Self: id, Layers: entries, Transport: nd, Clock: nd, Seed: seed, Site: sites[id],
			App: stack.AppFuncs{OnDeliver: func(d stack.Delivery) {
				h.got[self] = append(h.got[self], hopDelivery{g: d.Group, from: d.From, seq: binary.BigEndian.Uint32(d.Payload), at: h.net.Now()})
			}, OnView: func(v *event.ViewInfo) {
				if h.views[self] == nil {
					h.views[self] = map[event.GroupID]*event.ViewInfo{}
				}
				h.views[self][v.Group] = v
			}}})
		if err != nil {
			t.Fatal(err)
		}
		nd.Attach(st)
		h.stacks[id] = st
	}
	for k, l := range wan {
		h.net.WANLink(k[0], k[1], l)
	}
	if usesService {
		svc, err := compose.ServiceOf(sp, nodes)
		if err != nil {
			t.Fatalf("compose.ServiceOf(%s) = %v", spec, err)
		}
		h.startService(svc, groups)
		return h
	}
	views := map[event.GroupID]*event.ViewInfo{}
	for g, ms := range groups {
		views[g] = &event.ViewInfo{Group: g, ID: 1, Members: ms, Joined: ms}
	}
	nbs := membership.Static(views)
	sv := membership.SiteViews(nodes, func(n event.NodeID) event.SiteID { return sites[n] }, 1)
	for _, id := range nodes {
		for _, v := range views {
			if v.Has(id) {
				h.stacks[id].InstallView(v)
			}
		}
		if nb := nbs[id]; nb != nil {
			membership.SetSites(nb, sv)
			h.stacks[id].InstallNeighbourhood(nb)
		}
	}
	return h
}

// startService runs the spec's membership service (in site 1, so that it
// hears a site only over that site's WAN link to site 1), has every node
// join its groups and runs until every member holds its groups' views.
func (h *hopNet) startService(svc *compose.Service, groups map[event.GroupID][]event.NodeID) {
	h.t.Helper()
	nd := h.net.AddNode(svc.Need.Node)
	h.net.SetSite(svc.Need.Node, 1)
	st, err := stack.New(stack.Config{Self: svc.Need.Node, Layers: svc.Entries, Transport: nd, Clock: nd, Seed: 1, Site: 1})
	if err != nil {
		h.t.Fatal(err)
	}
	nd.Attach(st)
	h.service = svc.Need.Node
	for g, ms := range groups {
		for _, n := range ms {
			if err := h.stacks[n].Join(g); err != nil {
				h.t.Fatal(err)
			}
		}
	}
	for h.net.Now() < sec(10) {
		h.net.Run(10 * time.Millisecond)
		done := true
		for g, ms := range groups {
			for _, n := range ms {
				if v := h.views[n][g]; v == nil || len(v.Members) != len(ms) {
					done = false
				}
			}
		}
		if done {
			return
		}
	}
	h.t.Fatalf("views not installed after 10 s: %v", h.views)
}

// castEvery has node n cast to g every period from start to end.
func (h *hopNet) castEvery(n event.NodeID, g event.GroupID, start, end event.Time, period time.Duration) {
	h.castTimed(n, g, start, end, period, nil)
}

// from lists what rx delivered from tx, in order.
func (h *hopNet) from(rx, tx event.NodeID) []hopDelivery {
	var out []hopDelivery
	for _, d := range h.got[rx] {
		if d.from == tx {
			out = append(out, d)
		}
	}
	return out
}

// checkAll reports every (receiver, sender) pair of rxs x txs in group g
// whose deliveries are not exactly the sender's casts in order.
func (h *hopNet) checkAll(g event.GroupID, txs, rxs []event.NodeID) {
	h.t.Helper()
	for _, tx := range txs {
		want := h.sent[tx][g]
		if len(want) == 0 {
			h.t.Errorf("n%d cast nothing in %v", tx, g)
		}
		for _, rx := range rxs {
			if rx == tx {
				continue
			}
			var got []uint32
			for _, d := range h.from(rx, tx) {
				if d.g == g {
					got = append(got, d.seq)
				}
			}
			if !slices.Equal(got, want) {
				h.t.Errorf("n%d delivered %d of n%d's %d casts in %v (or out of order)", rx, len(got), tx, len(want), g)
			}
		}
	}
}

// counter sums a hop counter over nodes.
func (h *hopNet) counter(name string, nodes ...event.NodeID) int64 {
	var n int64
	for _, id := range nodes {
		for _, l := range h.stacks[id].Counters() {
			if l.Layer != "hop" {
				continue
			}
			for i, c := range l.Names {
				if c == name {
					n += l.Values[i]
				}
			}
		}
	}
	return n
}

func sec(s float64) event.Time { return event.Time(s * float64(time.Second)) }
