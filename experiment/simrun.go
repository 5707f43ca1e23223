package experiment

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
	"unsafe"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/gcpace"
	"github.com/layercast/layercast/internal/hugepage"
	"github.com/layercast/layercast/internal/prefetch"
	"github.com/layercast/layercast/membership"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// SimEnv is a simulated run being set up. The membership hook (GMSSetup)
// gets it after every node's stack is built and before anything runs.
type SimEnv struct {
	// Net is the simulated network.
	Net *sim.Network
	// Scenario is the run's scenario.
	Scenario Scenario
	// Spec is the stack every node runs.
	Spec *compose.Spec
	// Nodes are the experiment's nodes, n1..nN.
	Nodes []event.NodeID
	// Groups is the intended membership (who should join what).
	Groups map[event.GroupID][]event.NodeID
	// Of is each node's groups.
	Of map[event.NodeID][]event.GroupID
	// Stacks are the experiment nodes' stacks.
	Stacks map[event.NodeID]*stack.Stack
	// Seed is the run's seed.
	Seed uint64
	// SendStart is when senders start (default 0). The hook may move it
	// later, to let the first views settle; Duration counts from it.
	SendStart event.Time
	// Notes are added to the report.
	Notes []string

	extra []*stack.Stack
	log   stack.Logger // every stack's (WithStackLog); nil: off
	// col sees every view the applications see (SimEnv.view); service
	// names the service's layer and figures holds what the harness
	// measured for it (gms.go).
	col     *Collector
	service string
	figures map[string]map[string]int64
}

// AddNode adds a node that is not part of the workload (a membership
// service) with the given layers, attaches it to the network and returns
// its stack. Its counters are reported with the others.
func (e *SimEnv) AddNode(id event.NodeID, layers []stack.Entry) (*stack.Stack, error) {
	if e.Net.Node(id) != nil {
		return nil, fmt.Errorf("node %v already exists", id)
	}
	nd := e.Net.AddNode(id)
	st, err := stack.New(stack.Config{Self: id, Layers: layers, Transport: nd, Clock: nd, Seed: e.Seed, Log: e.log})
	if err != nil {
		return nil, err
	}
	nd.Attach(st)
	e.extra = append(e.extra, st)
	return st, nil
}

// GMSSetup starts the membership service for specs with a layer that gives
// views (gms), set from experiment/gms.go. It adds the service node
// (SimEnv.AddNode), makes every node Join its groups, and may run the
// network until the views are in, moving SendStart accordingly.
var GMSSetup func(env *SimEnv) error

// givesViews reports whether any layer of the built stack gives views.
func givesViews(entries []stack.Entry) bool {
	for _, e := range entries {
		if info, ok := compose.Lookup(e.Name); ok && slices.Contains(info.Gives, compose.Views) {
			return true
		}
	}
	return false
}

// sender is one sending node's workload. What every cast reads comes
// first, in the struct's first cache line (with thousands of nodes each
// sender's memory is cold when its turn comes; simApp.WarmCast asks for
// it beforehand).
type sender struct {
	end    event.Time
	nd     *sim.Node // the sender's node: is it up?
	period float64   // ns between messages; 0 = max
	k      int64     // messages cast so far
	total  int64     // messages to cast (rate mode)
	start  event.Time
	st     *stack.Stack
	groups []event.GroupID
	// nheld counts the groups in held: with none held (nearly always),
	// a cast does not read the map.
	nheld   int
	id      event.NodeID
	waiting bool // waiting for a Flow callback
	armed   bool // a fire event is queued
	done    bool
	buf     []byte // the message being cast (shared by every sender)
	held    map[event.GroupID]bool
	thaw    event.Time // end of a freeze (0: none)
	fireFn  func()     // made once, so arming allocates nothing
}

// isHeld says whether flow control holds the sender off group g.
func (s *sender) isHeld(g event.GroupID) bool { return s.nheld > 0 && s.held[g] }

// simApp is an experiment node's application: the collector's callbacks,
// and a stack.Warmer that gets the collector's memory for a coming
// delivery ready (Collector.warm).
type simApp struct {
	stack.AppFuncs
	col  *Collector
	net  *sim.Network
	snd  *sender // nil: the node does not send
	self event.NodeID
}

// Deliver implements stack.Application: a method rather than an OnDeliver
// closure, whose captured variables would be one more object to load per
// delivery (cold, at thousands of nodes).
func (a *simApp) Deliver(d stack.Delivery) { a.col.Delivered(a.self, &d, a.net.Now()) }

// Warm implements stack.Warmer.
func (a *simApp) Warm(g event.GroupID, src event.NodeID, stage int) {
	a.col.warm(a.self, g, src, stage)
}

// WarmCast implements stack.CastWarmer: the sender's workload state and
// the collector's slots of the sender's stream in g, which the cast reads
// (sender.fire, Collector.NextIndex, Sent and LeftStack).
func (a *simApp) WarmCast(g event.GroupID, stage int) {
	if a.snd == nil {
		return
	}
	if stage == 0 {
		prefetch.Lines(unsafe.Pointer(a.snd), 1)
	}
	a.col.warmCast(a.self, g, stage)
}

// WarmDepth implements stack.StagedWarmer: Collector.warm asks for
// something at stages 0 to 2 only.
func (a *simApp) WarmDepth() (data, control int) { return 3, 0 }

// hugeNodes is the network size from which runSim puts the run's memory
// on huge pages (internal/hugepage), hugeBytesPerNode what it prepares per
// node (about what a node of the baseline stack in 4 groups of 8 takes).
const hugeNodes, hugeBytesPerNode = 512, 192 << 10

// hugeGCPercent is the collector's pacing (GOGC) for a run of at least
// hugeNodes (internal/gcpace): at 2,048 nodes of the baseline stack, 4
// collections in 2 virtual seconds instead of 9, a tenth of their CPU.
const hugeGCPercent = 400

// runSim is the "sim" network.
func runSim(ctx context.Context, spec *compose.Spec, sc Scenario, progress Progress) (*Report, error) {
	wall := time.Now()
	asg, err := Assign(sc)
	if err != nil {
		return nil, err
	}
	if len(asg.Nodes) >= hugeNodes {
		// thousands of nodes' state, read a few lines a node per step:
		// on huge pages, far fewer of those reads miss the CPU's address
		// translation cache
		hugepage.Prepare(len(asg.Nodes) * hugeBytesPerNode)
		// and mostly long-lived, which every collection marks again
		defer gcpace.Raise(hugeGCPercent)()
	}
	cfg := sim.Config{Seed: sc.Seed, Latency: sc.Latency, Jitter: sc.Jitter}
	if sc.Loss != "" && sc.Loss != "none" {
		if cfg.Loss, err = ParseLoss(sc.Loss); err != nil {
			return nil, fmt.Errorf("loss: %w", err)
		}
	}
	if sc.Capacity != "" && sc.Capacity != "none" && sc.Capacity != "unlimited" {
		if cfg.Capacity, err = ParseCapacity(sc.Capacity); err != nil {
			return nil, err
		}
	}
	net := sim.New(cfg)
	siteOf := sc.siteOf()
	env := &SimEnv{
		Net: net, Scenario: sc, Spec: spec, Nodes: asg.Nodes, Groups: asg.Groups, Of: asg.Of,
		Stacks: map[event.NodeID]*stack.Stack{}, Seed: sc.Seed, log: stackLog(ctx),
	}
	col := NewCollector(sc, asg)
	env.col = col
	col.TrackSends()
	if slices.Contains(specPromises(spec.String()), string(agreedOrder)) {
		col.TrackOrder()
	}
	net.SetDropHook(col.simDrop)
	senders := map[event.NodeID]*sender{}
	for _, id := range asg.Senders {
		senders[id] = &sender{id: id, groups: asg.Of[id], held: map[event.GroupID]bool{}}
	}
	usesGMS := false
	// one goroutine steps every stack, one at a time: their queues'
	// buffers are lent from one store for a step, not kept per stack
	scratch := &stack.Scratch{}
	for _, id := range asg.Nodes {
		entries, err := compose.Build(spec)
		if err != nil {
			return nil, err
		}
		if id == asg.Nodes[0] {
			usesGMS = givesViews(entries)
		}
		nd := net.AddNode(id)
		self := id
		snd := senders[id]
		app := &simApp{AppFuncs: stack.AppFuncs{
			OnView: func(v *event.ViewInfo) { col.View(self, v, net.Now()) },
			OnLost: func(l stack.Loss) { col.GaveUp(self, l.Range.Count()) },
		}, col: col, net: net, snd: snd, self: self}
		if snd != nil {
			app.OnFlow = func(g event.GroupID, ok bool) {
				if !ok {
					if !snd.held[g] {
						snd.held[g] = true
						snd.nheld++
					}
					return
				}
				if snd.held[g] {
					delete(snd.held, g)
					snd.nheld--
				}
				if snd.waiting {
					snd.waiting = false
					snd.arm(net, net.Now(), col, &sc)
				}
			}
		}
		tr := &watchTransport{Node: nd, self: id, col: col, size: sc.MsgSize}
		st, err := stack.New(stack.Config{Self: id, Layers: entries, Transport: tr, Clock: nd, App: app, Seed: sc.Seed, Site: siteOf[id], Log: env.log, Scratch: scratch})
		if err != nil {
			return nil, err
		}
		nd.Attach(st)
		env.Stacks[id] = st
		if snd != nil {
			snd.st = st
		}
	}

	if err := sc.placeSites(net); err != nil {
		return nil, err
	}

	alive := func(id event.NodeID) bool {
		nd := net.Node(id)
		return nd != nil && !nd.Down() && !nd.Frozen()
	}

	if usesGMS {
		if GMSSetup == nil {
			return nil, errors.New("spec uses gms but no membership service is linked")
		}
		// The hook adds the service, has every node join its groups and
		// may run the network until the first views are in.
		if err := GMSSetup(env); err != nil {
			return nil, fmt.Errorf("membership service: %w (%w)", err, ErrRunFailed)
		}
	} else {
		// Static membership: every group's view, and each node's
		// neighbourhood, installed at time 0.
		views := make(map[event.GroupID]*event.ViewInfo, len(asg.Groups))
		for g, ms := range asg.Groups {
			views[g] = &event.ViewInfo{Group: g, ID: 1, Members: ms, Joined: ms}
		}
		nbs := membership.Static(views)
		sites := membership.SiteViews(asg.Nodes, func(n event.NodeID) event.SiteID { return siteOf[n] }, 1)
		for _, id := range asg.Nodes {
			st := env.Stacks[id]
			for _, g := range asg.Of[id] {
				st.InstallView(views[g])
			}
			if nb := nbs[id]; nb != nil {
				membership.SetSites(nb, sites)
				st.InstallNeighbourhood(nb)
			}
		}
	}

	// Fault times count from the start of sending (after membership has
	// settled), so a fault never strikes while views are being installed.
	frozen := map[event.NodeID][2]event.Time{}
	faults := make([]Fault, 0, len(sc.Faults))
	for _, f := range sc.Faults {
		ft, err := ParseFault(f)
		if err != nil {
			return nil, fmt.Errorf("fault %q: %w", f, err)
		}
		ft.At = env.SendStart.Add(ft.At.Duration())
		ft.Schedule(net)
		faults = append(faults, ft)
		if ft.Kind == FaultFreeze {
			frozen[ft.Node] = [2]event.Time{ft.At, ft.At.Add(ft.For)}
		}
	}

	// Senders.
	rng := rand.New(rand.NewPCG(sc.Seed, 0x5e4d))
	start := env.SendStart
	col.SetStart(start)
	sendEnd := start.Add(sc.Duration)
	// One message buffer for every sender: a cast copies it, and a
	// buffer of each sender's own was one more cold read of the message's
	// every line per cast at thousands of nodes.
	buf := make([]byte, sc.MsgSize)
	for _, id := range asg.Senders {
		s := senders[id]
		s.buf = buf
		s.nd = net.Node(id)
		if w, ok := frozen[id]; ok {
			s.thaw = w[1]
		}
		s.end = sendEnd
		// Stagger senders inside one period (or one quantum at max) so
		// they do not all fire in the same instant.
		if sc.Rate > 0 {
			s.period = 1e9 / sc.Rate
			s.total = int64(sc.Duration.Seconds() * sc.Rate)
			s.start = start + event.Time(rng.Float64()*s.period)
		} else {
			s.start = start + event.Time(rng.Float64()*float64(MaxQuantum))
		}
		if s.total == 0 && sc.Rate > 0 {
			s.done = true
			continue
		}
		s.arm(net, s.start, col, &sc)
	}

	end := sendEnd.Add(sc.Drain)
	total := end.Sub(0)
	slice := max(time.Millisecond, total/1000)
	for net.Now() < end {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		net.RunUntil(min(net.Now().Add(slice), end))
		if progress != nil {
			progress(ProgressInfo{Done: net.Now().Duration(), Total: total, Events: net.Stats().Deliveries})
		}
		if net.Now() >= sendEnd && col.Outstanding() == 0 {
			break
		}
	}

	nodes := make([]NodeCounters, 0, len(asg.Nodes)+len(env.extra))
	for _, id := range asg.Nodes {
		st := env.Stacks[id]
		nodes = append(nodes, NodeCounters{Node: id, Alive: alive(id), Layers: st.Counters(), Net: st.Net()})
	}
	for _, st := range env.extra {
		nodes = append(nodes, NodeCounters{Node: st.Self(), Alive: alive(st.Self()), Layers: st.Counters(), Net: st.Net()})
	}
	stats := net.Stats()
	rep := col.Finish(Outcome{
		Spec: spec.String(), Network: "sim", End: net.Now(), Wall: time.Since(wall),
		Alive: alive, Nodes: nodes, Faults: faults, StaticMembership: !usesGMS,
		SiteOf:         func(id event.NodeID) event.SiteID { return siteOf[id] },
		Frozen:         func(id event.NodeID) bool { nd := net.Node(id); return nd != nil && !nd.Down() && nd.Frozen() },
		DroppedByModel: stats.DroppedData, DroppedOverflow: stats.OverflowDrops, DroppedControl: stats.DroppedControl,
		DroppedOther: stats.SendQueueDrops + stats.PartitionDrops + stats.WANQueueDrops + stats.DownDrops,
		Notes:        env.Notes,
	})
	env.addFigures(rep)
	return rep, nil
}

// arm queues the sender's next attempt at time t unless one is queued.
func (s *sender) arm(net *sim.Network, t event.Time, col *Collector, sc *Scenario) {
	if s.armed || s.done {
		return
	}
	s.armed = true
	if s.fireFn == nil {
		s.fireFn = func() { s.armed = false; s.fire(net, col, sc) }
	}
	// the group of its next cast, for the network to warm the stack's
	// layers for it (a hint: the run is the same whatever it says)
	g := event.NoGroup
	if len(s.groups) > 0 {
		g = s.groups[int(s.k%int64(len(s.groups)))]
	}
	net.AtCast(t, s.nd, g, s.fireFn)
}

// fire casts every message that is due, in round-robin over the sender's
// groups, until the stack pushes back or none is due. At rate max it casts
// up to MaxBurst and comes back after MaxQuantum.
func (s *sender) fire(net *sim.Network, col *Collector, sc *Scenario) {
	now := net.Now()
	if now >= s.end {
		s.done = true
		return
	}
	if s.nd.Down() || s.nd.Frozen() {
		if s.thaw > now { // frozen: carry on once thawed
			s.arm(net, s.thaw, col, sc)
		} else {
			s.done = true
		}
		return
	}
	burst := 0
	for {
		if s.period > 0 {
			if s.k >= s.total {
				s.done = true
				return
			}
			due := s.start + event.Time(float64(s.k)*s.period)
			if due > now {
				s.arm(net, due, col, sc)
				return
			}
		} else if burst >= sc.MaxBurst {
			s.arm(net, now.Add(MaxQuantum), col, sc)
			return
		}
		g := s.groups[int(s.k%int64(len(s.groups)))]
		if s.isHeld(g) {
			col.Backpressure()
			s.waiting = true // OnFlow re-arms
			return
		}
		idx := col.NextIndex(s.id, g)
		PutStamp(s.buf, Stamp{Sender: s.id, Group: g, Index: idx, Sent: now})
		err := s.st.Cast(g, s.buf)
		switch {
		case err == nil:
			col.Sent(s.id, g, idx)
			s.k++
			burst++
		case errors.Is(err, stack.ErrBackpressure):
			col.Backpressure()
			if s.isHeld(g) {
				s.waiting = true
			} else {
				// The application queue is full; the stack does not say
				// when it drains, so look again a little later.
				s.arm(net, now.Add(MaxQuantum), col, sc)
			}
			return
		default:
			s.done = true // closed: the node is gone
			return
		}
	}
}

// watchTransport is the simulated network as a stack sees it, watching the
// experiment's casts leave the node: it tells the collector which accepted
// casts the stack has handed to the network, so casts still queued in the
// stack at the end are counted apart from what the network lost. It reads
// the stamp at the end of data packets (the payload is the packet's tail)
// and allocates nothing.
type watchTransport struct {
	*sim.Node
	self event.NodeID
	col  *Collector
	size int
}

// Send watches and transmits a packet to one node.
func (w *watchTransport) Send(to event.NodeID, pkt []byte) {
	w.look(pkt)
	w.Node.Send(to, pkt)
}

// Multicast watches and transmits a packet on a group's channel.
func (w *watchTransport) Multicast(g event.GroupID, pkt []byte) {
	w.look(pkt)
	w.Node.Multicast(g, pkt)
}

// MulticastOn watches and transmits a packet on another channel (a site's,
// a region's).
func (w *watchTransport) MulticastOn(ch event.ChannelID, pkt []byte) {
	w.look(pkt)
	w.Node.MulticastOn(ch, pkt)
}

func (w *watchTransport) look(pkt []byte) {
	if len(pkt) < stack.FrameSize+w.size || w.size < PayloadHeader {
		return
	}
	f, err := stack.ParseFrame(pkt)
	if err != nil || f.Control || f.Kind != event.Cast && f.Kind != event.Send || f.Src != w.self {
		return
	}
	st, err := ReadStamp(pkt[len(pkt)-w.size:])
	if err != nil || st.Sender != w.self || st.Group != f.Group {
		return
	}
	w.col.LeftStack(w.self, st.Group, st.Index)
}

// simCauses maps the simulator's drop reasons to the report's causes.
var simCauses = map[string]string{
	sim.DropLoss: DropModel, sim.DropOverflow: DropOverflow, sim.DropSendQueue: DropQueue,
	sim.DropPartition: DropPartition, sim.DropWANQueue: DropWAN, sim.DropDown: DropDown,
}

// simDrop is the simulator's drop hook: it counts every dropped data
// packet by cause and ties it to the experiment message it carried (the
// payload is the packet's tail), per receiver. A multicast refused by a
// full send queue is lost for every other member of the group. Control
// packets are left to the network's own counters.
func (c *Collector) simDrop(from, to event.NodeID, g event.GroupID, pkt []byte, reason string) {
	if len(pkt) > 0 && pkt[0]&1 != 0 { // the control flag, as sim.Stats counts it
		return
	}
	cause, ok := simCauses[reason]
	if !ok {
		cause = DropMalformed
	}
	var st Stamp
	var stp *Stamp
	if f, err := stack.ParseFrame(pkt); err == nil && c.sc.MsgSize >= PayloadHeader && len(pkt) >= stack.FrameSize+c.sc.MsgSize {
		if s, err := ReadStamp(pkt[len(pkt)-c.sc.MsgSize:]); err == nil && (f.Group == event.NoGroup || f.Group == s.Group) {
			st, stp = s, &st
		}
	}
	if to != event.NoNode {
		c.Dropped(cause, to, stp)
		return
	}
	if stp != nil {
		g = st.Group
	}
	if c.rank(g, from) < 0 {
		c.Dropped(cause, event.NoNode, nil)
		return
	}
	for _, m := range c.groups[g-1] {
		if m != from {
			c.Dropped(cause, m, stp)
		}
	}
}
