package gms

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/membership"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/simstack"
	"github.com/layercast/layercast/transport/sim"
)

// filter sits under gms in tests and drops membership packets going down
// (mute) or coming up (deaf) while told to: a node cut off from the service.
type filter struct {
	stack.Base
	mute, deaf bool
	// onDown, if set, sees every membership packet gms sends (muted or not).
	onDown func(payload []byte)
}

func (f *filter) Down(ev *event.Event) {
	if f.onDown != nil && ev.Kind == event.Membership {
		f.onDown(ev.Msg.Bytes())
	}
	if f.mute && ev.Kind == event.Membership {
		ev.Msg.Release()
		return
	}
	f.Ctx.Down(ev)
}

func (f *filter) Up(ev *event.Event) {
	if f.deaf && ev.Kind == event.Membership {
		ev.Msg.Release()
		return
	}
	f.Ctx.Up(ev)
}

// recorder keeps what reaches the top of a node's stack.
type recorder struct {
	stack.Base
	views   map[event.GroupID]*event.ViewInfo
	history []*event.ViewInfo
	nb      *event.Neighbourhood
}

func (r *recorder) Up(ev *event.Event) {
	switch ev.Kind {
	case event.View:
		r.views[ev.Group] = ev.View
		r.history = append(r.history, ev.View)
	case event.Regions:
		r.nb = ev.Regions
	}
	r.Ctx.Up(ev)
}

type cluster struct {
	t     *testing.T
	net   *sim.Network
	svc   *ServiceLayer
	nodes map[event.NodeID]*testNode
}

type testNode struct {
	st  *stack.Stack
	gms *Layer
	f   *filter
	rec *recorder
}

func newCluster(t *testing.T, seed uint64, n int, viewInterval, fdTimeout time.Duration) *cluster {
	t.Helper()
	return newLossyCluster(t, seed, n, viewInterval, fdTimeout, nil)
}

// newLossyCluster is newCluster on a network that drops packets by loss
// (nil: none).
func newLossyCluster(t *testing.T, seed uint64, n int, viewInterval, fdTimeout time.Duration, loss sim.LossModel) *cluster {
	t.Helper()
	return newSiteCluster(t, seed, n, viewInterval, fdTimeout, loss, nil)
}

// newSiteCluster is newLossyCluster with node i placed in Spread site
// sites[i] (absent: site 0).
func newSiteCluster(t *testing.T, seed uint64, n int, viewInterval, fdTimeout time.Duration, loss sim.LossModel, sites map[event.NodeID]event.SiteID) *cluster {
	t.Helper()
	c := &cluster{t: t, net: sim.New(sim.Config{Seed: seed, Latency: time.Millisecond, Jitter: 500 * time.Microsecond, Loss: loss}), nodes: map[event.NodeID]*testNode{}}
	c.svc = addService(t, c.net, ServiceConfig{ViewInterval: viewInterval, FDTimeout: fdTimeout}, seed)
	for i := 1; i <= n; i++ {
		id := event.NodeID(i)
		tn := &testNode{gms: New(Config{Heartbeat: fdTimeout / 5, FDTimeout: fdTimeout}), f: &filter{}, rec: &recorder{views: map[event.GroupID]*event.ViewInfo{}}}
		tn.st = simstack.Add(t, c.net, stack.Config{Self: id, Clock: c.net, Seed: seed, Site: sites[id], Layers: []stack.Entry{
			{Name: "rec", Layer: tn.rec}, {Name: "gms", Layer: tn.gms}, {Name: "filter", Layer: tn.f},
		}}, nil)
		c.nodes[id] = tn
	}
	return c
}

// addService puts the membership service (gms_service alone, as cfg says)
// on net at ServiceNode, the network its clock, and returns its layer.
func addService(t *testing.T, net *sim.Network, cfg ServiceConfig, seed uint64) *ServiceLayer {
	svc := NewServiceLayer(cfg)
	simstack.Add(t, net, stack.Config{Self: ServiceNode, Clock: net, Layers: []stack.Entry{{Name: "gms_service", Layer: svc}}, Seed: seed}, nil)
	return svc
}

func (c *cluster) join(n event.NodeID, gs ...event.GroupID) {
	for _, g := range gs {
		if err := c.nodes[n].st.Join(g); err != nil {
			c.t.Fatal(err)
		}
	}
}

// missUpdates has node n hear nothing while node 3 leaves group 5 and the
// nodes given join group 9, and for the 200 ms after; n hears again when it
// returns.
func (c *cluster) missUpdates(n event.NodeID, joiners ...event.NodeID) {
	c.nodes[n].f.deaf = true
	c.nodes[3].st.Leave(5)
	for _, j := range joiners {
		c.join(j, 9)
	}
	c.net.Run(200 * time.Millisecond)
	c.nodes[n].f.deaf = false
}

// removable is three nodes whose failure timeout is timeout, n1 in groups
// 7 and 8, n2 in 7 and n3 in 8, 500 ms after they joined.
func removable(t *testing.T, seed uint64, timeout time.Duration) *cluster {
	t.Helper()
	c := newCluster(t, seed, 3, 50*time.Millisecond, timeout)
	c.join(1, 7, 8)
	c.join(2, 7)
	c.join(3, 8)
	c.net.Run(500 * time.Millisecond)
	return c
}

// muteUntilRemoved has n1 heard by nobody for three failure timeouts
// (failure timeout, suspect timeout and a batch), which must remove it
// from every group, and leaves it muted.
func (c *cluster) muteUntilRemoved(timeout time.Duration) {
	c.t.Helper()
	c.nodes[1].f.mute = true
	c.net.Run(3 * timeout)
	if got := c.svc.Service().Index().Groups(1); len(got) != 0 {
		c.t.Fatalf("n1 muted for %v is still in %v", 3*timeout, got)
	}
}

// newLife has the service hear a new life of node n (incarnation inc,
// failure timeout 1 s) ask to join gs, as if from n: a heartbeat, then a
// request.
func (c *cluster) newLife(n event.NodeID, inc uint64, gs ...event.GroupID) {
	codec := newCodec()
	svcStack := c.net.Node(ServiceNode).Stack()
	for _, m := range []*wireMsg{
		{T: msgHeartbeat, Inc: inc, Timeout: int64(time.Second)},
		{T: msgRequest, Inc: inc, Seq: 1, Join: gs},
	} {
		msg := event.NewMessage()
		msg.SetPayload(codec.encode(m))
		svcStack.Inject(0, true, event.Event{Kind: event.Membership, Peer: n, Msg: msg})
	}
}

// pairJoined is two nodes (views at most every 50 ms, failure timeout 1 s)
// that join g, 300 ms after.
func pairJoined(t *testing.T, seed uint64, g event.GroupID) *cluster {
	t.Helper()
	c := newCluster(t, seed, 2, 50*time.Millisecond, time.Second)
	c.join(1, g)
	c.join(2, g)
	c.net.Run(300 * time.Millisecond)
	return c
}

// resyncAfterMiss builds four nodes on a service that keeps no update log
// (lost updates mean a full one), with maxEntries (0: the default), each
// joining gs; after 500 ms node 2 misses the updates of missUpdates(2,
// joiners...), and it has 1 s more to catch up. mark is how many views n2
// had installed before it missed them.
func resyncAfterMiss(t *testing.T, seed uint64, maxEntries int, gs []event.GroupID, joiners ...event.NodeID) (c *cluster, mark int) {
	t.Helper()
	c = newCluster(t, seed, 4, 50*time.Millisecond, time.Second)
	if maxEntries != 0 {
		c.svc.Service().cfg.MaxEntries = maxEntries
	}
	c.svc.Service().cfg.UpdateLog = -1
	for n := 1; n <= 4; n++ {
		c.join(event.NodeID(n), gs...)
	}
	c.net.Run(500 * time.Millisecond)
	mark = len(c.nodes[2].rec.history)
	c.missUpdates(2, joiners...)
	c.net.Run(time.Second)
	return c, mark
}

// checkConsistent checks that every live node holds exactly the service's
// current views of its groups and a neighbourhood equal to the one computed
// from scratch.
func (c *cluster) checkConsistent(live []event.NodeID) {
	c.t.Helper()
	idx := c.svc.Service().Index()
	all := map[event.GroupID]*event.ViewInfo{}
	for _, n := range live {
		for _, g := range idx.Groups(n) {
			all[g] = idx.View(g)
		}
	}
	static := membership.Static(all)
	for _, n := range live {
		tn := c.nodes[n]
		gs := idx.Groups(n)
		held := tn.gms.Views()
		if len(held) != len(gs) {
			c.t.Errorf("%v holds views of %d groups, service has it in %v", n, len(held), gs)
			continue
		}
		for _, g := range gs {
			if v := held[g]; v == nil || v.ID != idx.View(g).ID || !slices.Equal(v.Members, idx.View(g).Members) {
				c.t.Errorf("%v holds view %+v of %v, service has %+v", n, v, g, idx.View(g))
			}
			if v := tn.rec.views[g]; v == nil || v.ID != idx.View(g).ID {
				c.t.Errorf("%v: application saw view %+v of %v, want #%d", n, v, g, idx.View(g).ID)
			}
		}
		nb, want := tn.rec.nb, static[n]
		if len(gs) == 0 {
			if nb != nil && len(nb.Groups) != 0 {
				c.t.Errorf("%v is in no group but its neighbourhood lists %v", n, nb.Groups)
			}
			continue
		}
		if nb == nil || want == nil {
			c.t.Errorf("%v: neighbourhood %v, want %v", n, nb, want)
			continue
		}
		if len(nb.Local) != len(want.Local) || len(nb.Regions) != len(want.Regions) || (nb.Own < 0) != (want.Own < 0) {
			c.t.Errorf("%v: neighbourhood has %d local regions and %d region views, want %d and %d", n, len(nb.Local), len(nb.Regions), len(want.Local), len(want.Regions))
			continue
		}
		for i := range nb.Local {
			if !slices.Equal(nb.Local[i].Groups, want.Local[i].Groups) || !slices.Equal(nb.Local[i].Members, want.Local[i].Members) {
				c.t.Errorf("%v: local region %d = %v, want %v", n, i, nb.Local[i], want.Local[i])
			}
		}
		// Region ids depend on history; compare the regions' contents.
		if got, w := regionSet(nb), regionSet(want); !slices.Equal(got, w) {
			c.t.Errorf("%v: region views %v, want %v", n, got, w)
		}
		if nb.Own >= 0 && !nb.Regions[nb.Own].Has(n) {
			c.t.Errorf("%v: own region %v does not list it", n, nb.Regions[nb.Own])
		}
	}
}

func regionSet(nb *event.Neighbourhood) []string {
	var out []string
	for _, r := range nb.Regions {
		out = append(out, fmt.Sprint(r.Groups, r.Members))
	}
	slices.Sort(out)
	return out
}

func ids(ns ...int) []event.NodeID {
	out := make([]event.NodeID, len(ns))
	for i, n := range ns {
		out[i] = event.NodeID(n)
	}
	return out
}

func TestJoinLeaveViews(t *testing.T) {
	c := newCluster(t, 1, 5, 50*time.Millisecond, time.Second)
	c.join(1, 10, 20, 30)
	c.join(2, 10, 20)
	c.join(3, 10, 30)
	c.join(4, 20, 30)
	c.join(5, 10)
	c.net.Run(500 * time.Millisecond)
	c.checkConsistent(ids(1, 2, 3, 4, 5))
	if v := c.nodes[1].rec.views[10]; v == nil || !slices.Equal(v.Members, ids(1, 2, 3, 5)) {
		t.Fatalf("view of g10 at n1 = %+v, want members [1 2 3 5]", v)
	}
	// Node 1's Ricochet regions: abc={1}, ab={2}, ac={3}, bc={4}, a={5}.
	if nb := c.nodes[1].rec.nb; len(nb.Local) != 5 {
		t.Fatalf("n1 local regions = %v, want 5", nb.Local)
	}
	c.nodes[5].st.Leave(10)
	c.join(2, 30)
	c.net.Run(500 * time.Millisecond)
	c.checkConsistent(ids(1, 2, 3, 4, 5))
	v := c.nodes[5].rec.views[10]
	if v == nil || v.Has(5) || !slices.Equal(v.Left, ids(5)) {
		t.Fatalf("n5's last view of g10 = %+v, want one that lists it in Left", v)
	}
	// Views are numbered consecutively as every member sees them.
	for _, n := range ids(1, 2, 3) {
		var got []uint64
		for _, v := range c.nodes[n].rec.history {
			if v.Group == 10 {
				got = append(got, v.ID)
			}
		}
		for i := 1; i < len(got); i++ {
			if got[i] != got[i-1]+1 {
				t.Errorf("%v saw views of g10 numbered %v", n, got)
			}
		}
	}
}

func TestCrashRemovedWithinBound(t *testing.T) {
	const interval, timeout = 100 * time.Millisecond, 500 * time.Millisecond
	c := newCluster(t, 2, 6, interval, timeout)
	for n := 1; n <= 6; n++ {
		c.join(event.NodeID(n), 1, event.GroupID(2+n%2))
	}
	c.net.Run(time.Second)
	c.checkConsistent(ids(1, 2, 3, 4, 5, 6))
	crashAt := c.net.Now()
	c.net.Crash(4)
	// Watch for the view without n4 at every survivor.
	seen := map[event.NodeID]event.Time{}
	for end := crashAt.Add(4 * timeout); c.net.Now() < end; {
		c.net.Run(time.Millisecond)
		for _, n := range ids(1, 2, 3, 5, 6) {
			if v := c.nodes[n].rec.views[1]; v != nil && !v.Has(4) && seen[n] == 0 {
				seen[n] = c.net.Now()
			}
		}
	}
	// The bound: failure timeout, then the suspicion period (equal to it
	// by default), plus one batching interval, plus the network's one-way
	// latency (with jitter) for the view to arrive and the 1ms polling of
	// this loop.
	bound := timeout + timeout + interval + 3*time.Millisecond
	for _, n := range ids(1, 2, 3, 5, 6) {
		if seen[n] == 0 {
			t.Errorf("%v never installed a view of g1 without n4", n)
		} else if d := seen[n].Sub(crashAt); d > bound {
			t.Errorf("%v installed the view without n4 %v after the crash, want <= %v", n, d, bound)
		} else {
			t.Logf("%v installed the view without n4 %v after the crash (bound %v)", n, d, bound)
		}
	}
	if got := c.svc.Service().Index().Groups(4); len(got) != 0 {
		t.Errorf("service still has n4 in %v", got)
	}
	if st := c.svc.Service().Stats(); st.Failed != 1 {
		t.Errorf("service declared %d nodes failed, want 1", st.Failed)
	}
	c.checkConsistent(ids(1, 2, 3, 5, 6))
}

// A node that the service wrongly declares failed (its heartbeats were lost)
// hears it and joins all its groups again.
func TestMistakenRemovalRejoins(t *testing.T) {
	const timeout = 300 * time.Millisecond
	c := removable(t, 3, timeout)
	c.muteUntilRemoved(timeout)
	if v := c.nodes[2].rec.views[7]; v.Has(1) {
		t.Fatalf("n2's view of g7 still lists n1: %+v", v)
	}
	c.nodes[1].f.mute = false
	c.net.Run(time.Second)
	if got := c.svc.Service().Index().Groups(1); !slices.Equal(got, []event.GroupID{7, 8}) {
		t.Fatalf("after unmuting, n1 is in %v, want [7 8]", got)
	}
	if c.nodes[1].gms.c.RemovedRejoined.Value() == 0 {
		t.Errorf("n1 did not count a removal")
	}
	c.checkConsistent(ids(1, 2, 3))
}

// A node that misses updates catches up through a full update.
func TestLostUpdatesResync(t *testing.T) {
	c, _ := resyncAfterMiss(t, 4, 0, []event.GroupID{5, 6}, 4, 1)
	if c.nodes[2].gms.c.FullUpdates.Value() == 0 {
		t.Errorf("n2 got no full update")
	}
	c.checkConsistent(ids(1, 2, 3, 4))
}

func TestMalformedPackets(t *testing.T) {
	c := pairJoined(t, 5, 5)
	bad := [][]byte{
		nil, {0xff}, {0x93, 0x01}, []byte("not msgpack at all"),
		mustEncode(&wireMsg{T: 99}),
		mustEncode(&wireMsg{T: msgLimit}),
		mustEncode(&wireMsg{T: msgRequest, Join: []event.GroupID{0}}),
		mustEncode(&wireMsg{T: msgUpdate, Seq: 1, Views: []*event.ViewInfo{{Group: 5, Members: ids(3, 1)}}}),
		mustEncode(&wireMsg{T: msgUpdate, Seq: 1, Views: []*event.ViewInfo{nil}}),
		// A list claiming four billion entries.
		{0x8f, 0xa1, 'T', 0x04, 0xa5, 'V', 'i', 'e', 'w', 's', 0xdd, 0xff, 0xff, 0xff, 0xff},
	}
	svcStack := c.net.Node(ServiceNode).Stack()
	for _, b := range bad {
		m := event.NewMessage()
		m.SetPayload(b)
		svcStack.Inject(0, true, event.Event{Kind: event.Membership, Peer: 1, Msg: m})
		m2 := event.NewMessage()
		m2.SetPayload(b)
		c.nodes[1].st.Inject(1, true, event.Event{Kind: event.Membership, Peer: ServiceNode, Msg: m2})
	}
	// A well-formed update from someone who is not the service.
	m := event.NewMessage()
	m.SetPayload(mustEncode(&wireMsg{T: msgRemoved}))
	c.nodes[1].st.Inject(1, true, event.Event{Kind: event.Membership, Peer: 2, Msg: m})
	st := c.svc.Service().Stats()
	if got := st.Malformed + st.Unexpected; got < int64(len(bad))-1 { // the 1-view update is well formed
		t.Errorf("service counted %d bad packets of %d", got, len(bad))
	}
	if got := c.nodes[1].gms.c.Malformed.Value(); got < int64(len(bad)) {
		t.Errorf("node counted %d bad packets of %d", got, len(bad)+1)
	}
	c.net.Run(300 * time.Millisecond)
	c.checkConsistent(ids(1, 2))
}

func mustEncode(m *wireMsg) []byte {
	return slices.Clone(newCodec().encode(m))
}

func FuzzDecode(f *testing.F) {
	f.Add(mustEncode(&wireMsg{T: msgUpdate, Seq: 3, Views: []*event.ViewInfo{{Group: 1, ID: 2, Members: ids(1, 2)}}}))
	f.Add(mustEncode(&wireMsg{T: msgRequest, Join: []event.GroupID{4}}))
	c := newCodec()
	var m wireMsg
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := c.decode(b, &m); err == nil {
			if m.T == 0 || m.T >= msgLimit {
				t.Fatalf("decoded type %v accepted", m.T)
			}
		}
	})
}

func TestServiceRejectsBadConfig(t *testing.T) {
	if _, err := NewService(ServiceConfig{FDTimeout: time.Second}); err == nil {
		t.Error("NewService without Send: no error")
	}
	if _, err := NewService(ServiceConfig{Send: func(event.NodeID, []byte) {}}); err == nil {
		t.Error("NewService without FDTimeout: no error")
	}
}

// NewService gives every bound and timeout left at 0 its default, takes a
// negative MaxEntries, MaxRemovals, CutReportTTL or timeout bound as unset
// too, and keeps a negative UpdateLog or Indirect (none), as ServiceConfig
// documents.
func TestServiceDefaults(t *testing.T) {
	send := func(event.NodeID, []byte) {}
	svc, err := NewService(ServiceConfig{FDTimeout: time.Second, Send: send})
	if err != nil {
		t.Fatal(err)
	}
	c := svc.cfg
	for _, f := range []struct {
		name      string
		got, want any
	}{
		{"MinTimeout", c.MinTimeout, DefaultMinTimeout},
		{"MaxTimeout", c.MaxTimeout, DefaultMaxTimeout},
		{"SuspectTimeout", c.SuspectTimeout, time.Second},
		{"MaxNodes", c.MaxNodes, DefaultMaxNodes},
		{"MaxGroupsPerNode", c.MaxGroupsPerNode, DefaultMaxGroupsPerNode},
		{"MaxGroups", c.MaxGroups, DefaultMaxGroups},
		{"MaxRequest", c.MaxRequest, DefaultMaxRequest},
		{"MaxEntries", c.MaxEntries, 8000},
		{"UpdateLog", c.UpdateLog, DefaultUpdateLog},
		{"Indirect", c.Indirect, DefaultIndirect},
		{"MaxRemovals", c.MaxRemovals, DefaultMaxRemovals},
		{"CutReportTTL", c.CutReportTTL, DefaultCutReportTTL},
	} {
		if f.got != f.want {
			t.Errorf("zero config: %s = %v, want %v", f.name, f.got, f.want)
		}
	}
	svc, err = NewService(ServiceConfig{FDTimeout: time.Second, Send: send, MinTimeout: -1, MaxTimeout: -1,
		MaxEntries: -1, MaxRemovals: -1, CutReportTTL: -1, UpdateLog: -1, Indirect: -1})
	if err != nil {
		t.Fatal(err)
	}
	c = svc.cfg
	if c.MinTimeout != DefaultMinTimeout || c.MaxTimeout != DefaultMaxTimeout || c.MaxEntries != 8000 ||
		c.MaxRemovals != DefaultMaxRemovals || c.CutReportTTL != DefaultCutReportTTL {
		t.Errorf("negative bounds not defaulted: %+v", c)
	}
	if c.UpdateLog != -1 || c.Indirect != -1 {
		t.Errorf("negative UpdateLog %d and Indirect %d (none) not kept", c.UpdateLog, c.Indirect)
	}
	if _, err := NewService(ServiceConfig{FDTimeout: time.Second, Send: send, MaxNodes: -1}); err == nil {
		t.Error("negative MaxNodes: no error")
	}
}

// A node that leaves the system (its stack closes) says goodbye and is
// removed at once, without waiting for the failure detector.
func TestByeRemovesAtOnce(t *testing.T) {
	c := newCluster(t, 6, 3, 50*time.Millisecond, 2*time.Second)
	for n := 1; n <= 3; n++ {
		c.join(event.NodeID(n), 4)
	}
	c.net.Run(300 * time.Millisecond)
	c.nodes[3].st.Close()
	c.net.Run(100 * time.Millisecond)
	if v := c.nodes[1].rec.views[4]; v == nil || v.Has(3) || !slices.Equal(v.Left, ids(3)) {
		t.Fatalf("100ms after n3 closed, n1's view of g4 is %+v, want n3 gone", v)
	}
	if st := c.svc.Service().Stats(); st.Failed != 0 || st.Unexpected+st.Malformed != 0 {
		t.Errorf("service stats after a bye: %+v", st)
	}
}

// Changes that arrive faster than view_interval are batched: views are
// installed at most once per interval.
func TestViewsAtBoundedRate(t *testing.T) {
	const interval = 100 * time.Millisecond
	c := newCluster(t, 7, 20, interval, time.Second)
	var commits []event.Time
	last := int64(0)
	for i := 0; i < 100; i++ {
		n := event.NodeID(1 + i%20)
		g := event.GroupID(1 + i%7)
		c.net.At(event.Time(time.Duration(i)*10*time.Millisecond), func() { c.join(n, g) })
	}
	for c.net.Now() < event.Time(1500*time.Millisecond) {
		c.net.Run(time.Millisecond)
		if n := c.svc.Service().Stats().Commits; n != last {
			last = n
			commits = append(commits, c.net.Now())
		}
	}
	for i := 1; i < len(commits); i++ {
		if d := commits[i].Sub(commits[i-1]); d < interval {
			t.Errorf("installations at %v and %v: %v apart, want >= %v", commits[i-1], commits[i], d, interval)
		}
	}
	if len(commits) < 5 || len(commits) > 12 {
		t.Errorf("%d installations for 100 joins over 1s with interval %v, want 5 to 12", len(commits), interval)
	}
	live := make([]event.NodeID, 20)
	for i := range live {
		live[i] = event.NodeID(i + 1)
	}
	c.checkConsistent(live)
}

// A node that restarts (a new incarnation with the same id) replaces its
// previous life: the old memberships are dropped, the new ones installed.
func TestRestartedNodeReplacesOldLife(t *testing.T) {
	c := newCluster(t, 8, 2, 50*time.Millisecond, time.Second)
	c.join(1, 3, 4)
	c.join(2, 3)
	c.net.Run(300 * time.Millisecond)
	// A new life of n2 (new incarnation) that joins only g4.
	c.net.Node(2).Stack().Close()
	c.newLife(2, 12345, 4)
	c.net.Run(300 * time.Millisecond)
	idx := c.svc.Service().Index()
	if got := idx.Groups(2); !slices.Equal(got, []event.GroupID{4}) {
		t.Errorf("after restart n2 is in %v, want [4]; stats %+v", got, c.svc.Service().Stats())
	}
	if v := idx.View(3); v == nil || v.Has(2) {
		t.Errorf("g3 still lists n2's old life: %+v", v)
	}
}

// Updates larger than MaxEntries go out in parts; a node applies them all
// and ends up with the same state.
func TestUpdatesInParts(t *testing.T) {
	c := newCluster(t, 9, 8, 50*time.Millisecond, time.Second)
	c.svc.Service().cfg.MaxEntries = 6
	for n := 1; n <= 8; n++ {
		for g := 1; g <= 6; g++ {
			if (n+g)%3 != 0 {
				c.join(event.NodeID(n), event.GroupID(g))
			}
		}
	}
	c.net.Run(500 * time.Millisecond)
	c.nodes[5].st.Leave(2)
	c.nodes[8].st.Leave(1)
	c.net.Run(300 * time.Millisecond)
	if got := c.svc.Service().Stats().SplitParts; got == 0 {
		t.Errorf("no update was split into parts")
	}
	c.checkConsistent(ids(1, 2, 3, 4, 5, 6, 7, 8))
}
