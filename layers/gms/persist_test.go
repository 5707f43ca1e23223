package gms

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/membership"
	"github.com/layercast/layercast/stack"
)

// memStore keeps the last state saved (a deep copy through State's own
// clones is not needed: committed views are never modified).
type memStore struct {
	last  *membership.ServiceState
	saves int
	fail  error
}

func (m *memStore) Save(st *membership.ServiceState) error {
	if m.fail != nil {
		return m.fail
	}
	m.last, m.saves = st, m.saves+1
	return nil
}

// swapLayer runs the service node's ServiceLayer and can replace it by a
// new one started from the saved state: a failover to another instance,
// with the service silent for a gap in between (packets to it are lost).
type swapLayer struct {
	stack.Base
	cur  *ServiceLayer
	down bool
}

func (s *swapLayer) Init(ctx *stack.Context) error {
	s.Ctx = ctx
	return s.cur.Init(ctx)
}

func (s *swapLayer) Up(ev *event.Event) {
	if s.down {
		if ev.Msg != nil {
			ev.Msg.Release()
		}
		return
	}
	s.cur.Up(ev)
}

// failover stops the current service, keeps the service silent for gap,
// then starts next (its store and restored state set by the caller).
func (c *cluster) failover(sw *swapLayer, gap time.Duration, next *ServiceLayer) {
	sw.cur.timer.Stop()
	sw.down = true
	c.net.Run(gap)
	sw.down = false
	sw.cur = next
	if err := next.Init(sw.Ctx); err != nil {
		c.t.Fatal(err)
	}
	c.svc = next
}

// newFailoverCluster is newCluster whose service saves to a memStore and
// sits in a swapLayer.
func newFailoverCluster(t *testing.T, seed uint64, n int) (*cluster, *swapLayer, *memStore) {
	c := newCluster(t, seed, n, 50*time.Millisecond, time.Second)
	// Replace the service stack built by newCluster with one that can swap.
	store := &memStore{}
	first := NewServiceLayer(ServiceConfig{ViewInterval: 50 * time.Millisecond, FDTimeout: time.Second, Store: store})
	sw := &swapLayer{cur: first}
	st, err := stack.New(stack.Config{Self: ServiceNode, Transport: c.net.Node(ServiceNode), Clock: c.net, Layers: []stack.Entry{{Name: "swap", Layer: sw}}, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	c.net.Node(ServiceNode).Attach(st)
	c.svc = first
	return c, sw, store
}

// A service that takes over from the saved state keeps every node in its
// groups (none removed, none told to join again), numbers its views after
// the last one sent, and admits a node that joins after the failover
// (issue 15 item 2), although the service was silent for three times the
// nodes' fd timeout.
func TestFailoverFromSavedStateKeepsViews(t *testing.T) {
	c, sw, store := newFailoverCluster(t, 3, 6)
	for n := event.NodeID(1); n <= 5; n++ {
		c.join(n, 1, event.GroupID(2+n%2))
	}
	c.net.Run(2 * time.Second)
	before := map[event.GroupID]uint64{}
	for _, g := range []event.GroupID{1, 2, 3} {
		before[g] = c.svc.Service().Index().View(g).ID
	}
	if store.saves == 0 {
		t.Fatal("the service saved nothing")
	}
	// A join pending at the failover: acknowledged, so saved, not yet
	// installed (the view interval since the one before had not passed).
	c.join(2, 5)
	c.net.Run(5 * time.Millisecond)
	c.join(1, 4)
	c.net.Run(5 * time.Millisecond)
	if c.svc.Service().Index().View(4) != nil || c.nodes[1].gms.flight != nil {
		t.Fatal("the test wants g4's join acknowledged and not yet installed at the failover")
	}

	next := NewServiceLayer(ServiceConfig{ViewInterval: 50 * time.Millisecond, FDTimeout: time.Second, Store: store})
	next.UseStore(store, store.last)
	c.failover(sw, 3*time.Second, next)
	c.join(6, 1)
	c.net.Run(2 * time.Second)

	live := []event.NodeID{1, 2, 3, 4, 5, 6}
	c.checkConsistent(live)
	for _, n := range live {
		tn := c.nodes[n]
		if r := tn.gms.c.RemovedRejoined.Value(); r != 0 {
			t.Errorf("%v was told to join again %d times", n, r)
		}
		last := map[event.GroupID]uint64{}
		for _, v := range tn.rec.history {
			if v.ID <= last[v.Group] {
				t.Errorf("%v: view %v#%d after #%d", n, v.Group, v.ID, last[v.Group])
			}
			last[v.Group] = v.ID
			if len(v.Left) > 0 && slices.ContainsFunc(v.Left, func(l event.NodeID) bool { return l <= 5 }) {
				t.Errorf("%v: view %v#%d removes %v", n, v.Group, v.ID, v.Left)
			}
		}
	}
	v1 := c.svc.Service().Index().View(1)
	if !v1.Has(6) || v1.ID != before[1]+1 {
		t.Errorf("after the failover g1's view is %+v, want #%d with n6", v1, before[1]+1)
	}
	if v4 := c.svc.Service().Index().View(4); v4 == nil || !v4.Has(1) {
		t.Errorf("the join pending at the failover was not installed: g4 view %+v", v4)
	}
}

// A failed save stops the service: the request is not acknowledged and no
// view goes out that the next leader would not hold.
func TestFailedSaveHaltsService(t *testing.T) {
	c, _, store := newFailoverCluster(t, 4, 2)
	store.fail = errors.New("etcd unreachable")
	c.join(1, 1)
	c.net.Run(time.Second)
	svc := c.svc.Service()
	if svc.Halted() == nil || !errors.Is(svc.Halted(), store.fail) {
		t.Fatalf("service not halted: %v", svc.Halted())
	}
	if len(c.nodes[1].gms.Views()) != 0 || svc.Stats().Views != 0 {
		t.Fatalf("views sent although nothing was saved: node holds %v, service installed %d", c.nodes[1].gms.Views(), svc.Stats().Views)
	}
	if svc.Next() != event.Never {
		t.Fatalf("a halted service asks to be woken at %v", svc.Next())
	}
}

// A saved state that contradicts itself is refused with an error.
func TestRestoreRefusesBadState(t *testing.T) {
	svc, err := NewService(ServiceConfig{FDTimeout: time.Second, Send: func(event.NodeID, []byte) {}})
	if err != nil {
		t.Fatal(err)
	}
	bad := &membership.ServiceState{Nodes: []membership.NodeState{{ID: 1}, {ID: 1}}}
	if err := svc.Restore(0, bad); err == nil {
		t.Fatal("a state with node 1 twice restored")
	}
}

// The new leader does not know the update numbers the old one used: its
// first update to a node is a full one. Before, a node that had applied
// exactly one update took the new leader's first (numbered 1 again) for
// an old one and never installed the view admitting a node that joined
// right after the failover (TestEtcdFailover: n2 and n3 missed news#4).
func TestFailoverFirstUpdateIsFull(t *testing.T) {
	c, sw, store := newFailoverCluster(t, 5, 4)
	c.join(4, 9) // installed at once: the joins below wait one view interval, together
	c.net.Run(5 * time.Millisecond)
	for n := event.NodeID(1); n <= 3; n++ {
		c.join(n, 1)
	}
	c.net.Run(2 * time.Second)
	for n := event.NodeID(1); n <= 3; n++ {
		if a := c.nodes[n].gms.applied; a != 1 {
			t.Fatalf("the test wants every node to have applied one update; n%d applied %d", n, a)
		}
	}
	next := NewServiceLayer(ServiceConfig{ViewInterval: 50 * time.Millisecond, FDTimeout: time.Second, Store: store})
	next.UseStore(store, store.last)
	// The join reaches the new leader before any heartbeat does.
	c.failover(sw, 3*time.Second-time.Millisecond, next)
	c.join(4, 1)
	c.net.Run(2 * time.Second)
	c.checkConsistent([]event.NodeID{1, 2, 3, 4})
}

// Over UDP a new leader reaches a node only once a packet from it has
// arrived (it learns addresses from what it hears), so its first updates
// to nodes that have not sent a heartbeat since the failover are lost. A
// node that had applied as many updates from the old leader as the new
// one sent it must not look up to date: its heartbeat's number belongs to
// the old leader's numbering. Before the new leader numbered its updates
// past every old one, nodes 1 to 3 here never got the view admitting node
// 4 (tests/TestEtcdFailover failed this way in 2 runs of 3).
func TestFailoverLostUpdatesNotTakenForApplied(t *testing.T) {
	c, sw, store := newFailoverCluster(t, 5, 4)
	c.join(4, 9)
	c.net.Run(5 * time.Millisecond)
	for n := event.NodeID(1); n <= 3; n++ {
		c.join(n, 1)
	}
	c.net.Run(time.Second)
	for n := event.NodeID(1); n <= 3; n++ {
		c.join(n, 2)
	}
	c.net.Run(time.Second)
	applied := c.nodes[1].gms.applied
	for n := event.NodeID(2); n <= 3; n++ {
		if a := c.nodes[n].gms.applied; a != applied {
			t.Fatalf("the test wants nodes 1 to 3 to have applied as many updates; n1 applied %d, n%d %d", applied, n, a)
		}
	}
	next := NewServiceLayer(ServiceConfig{ViewInterval: 50 * time.Millisecond, FDTimeout: time.Second, Store: store})
	next.UseStore(store, store.last)
	c.failover(sw, 100*time.Millisecond, next)
	// Nodes 1 to 3 hear none of the new leader's first updates: its full
	// update, then one view change of group 1 for each further update
	// they had applied (node 4 joins and leaves it in turn). Node 4 is
	// heard at once: its requests reach the new leader.
	for n := event.NodeID(1); n <= 3; n++ {
		c.nodes[n].f.deaf = true
	}
	c.net.Run(60 * time.Millisecond)
	for i := uint64(1); i < applied; i++ {
		if i%2 == 1 {
			c.join(4, 1)
		} else if err := c.nodes[4].st.Leave(1); err != nil {
			t.Fatal(err)
		}
		c.net.Run(60 * time.Millisecond)
	}
	for n := event.NodeID(1); n <= 3; n++ {
		c.nodes[n].f.deaf = false
	}
	c.net.Run(2 * time.Second)
	c.checkConsistent([]event.NodeID{1, 2, 3, 4})
}
