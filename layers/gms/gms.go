// Package gms is group membership for layercast: a centralised membership
// service with a heartbeat failure detector (QSM 2005 section 2.1, QSM 2006
// section 2.1, Ricochet section 4.2.4), and the gms layer that sits at the
// bottom of every node's stack and talks to it.
//
// A node's stack ends in gms, e.g. "fifo : reliable : gms". The application's
// Join and Leave go down to gms, which turns them into requests to the
// service (retried until acknowledged) and passes them on so the network
// below subscribes to the group's channel. gms sends heartbeats; the service
// learns their inter-arrival times (the φ accrual detector, phi.go) and
// suspects a node that stays silent past its window (fd_timeout, longer for
// jittery heartbeats, at most fd_max), probes it directly (gms answers at
// once) and through a few other members of its groups (SWIM's and
// memberlist's indirect probes: gms pings the suspect for the service and
// reports its answer), and declares it failed and removes it from every
// group only if nothing is heard from it for its suspect timeout more and
// no member reached it; a suspect that members still reach is cut off from
// the service only and kept a while longer (Service.Tick). A node removed
// by mistake hears so, installs views without itself, and joins again.
// Every removal is recorded with its reason (Service.Removals; a run's
// report lists them). Heartbeats also say what the node wants, so a node whose
// removal notice was lost is told again until the service holds its
// wishes. The service batches changes, installs new numbered views at most
// once per view_interval, and sends each affected node only what concerns it; gms
// turns that into View events (one per group, with Joined and Left) and a
// Regions event carrying the node's event.Neighbourhood (its Ricochet regions
// and the QSM region views overlapping its groups) for the multi-group layers
// above.
//
// The service itself is the pure state machine Service; ServiceLayer runs it
// as the only layer of the membership server's stack.
package gms

import (
	"maps"
	"slices"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/membership"
	"github.com/layercast/layercast/stack"
)

// ServiceNode is the node id of the membership service unless a spec says
// otherwise (gms(service=N)). The simulator's service node and the UDP
// node runner's --gms address use it.
const ServiceNode event.NodeID = 0xFFFFFFF0

// Config sets up a node's gms layer.
type Config struct {
	// Service is the membership service's node id.
	Service event.NodeID
	// Heartbeat is the interval between heartbeats to the service.
	Heartbeat time.Duration
	// FDTimeout is how long the service waits for a heartbeat before it
	// suspects this node (sent along with every heartbeat).
	FDTimeout time.Duration
	// SuspectTimeout is how long the service probes this node, once
	// suspected, before it declares it failed and removes it (sent along
	// with every heartbeat; 0: FDTimeout).
	SuspectTimeout time.Duration
	// Retry is how long a join or leave request waits for its
	// acknowledgement before it is sent again.
	Retry time.Duration
	// ViewInterval is the batching interval of the membership service a
	// test harness starts for this stack (the simulator's service node);
	// a real service takes it from its own configuration.
	ViewInterval time.Duration
	// Phi is the accrual detector's threshold the service applies to this
	// node's heartbeats (phi.go): it suspects the node once the silence is
	// that unlikely given the heartbeat inter-arrival times it observed,
	// never sooner than FDTimeout nor later than FDMax (sent with every
	// heartbeat; 0: DefaultPhi; negative: off, FDTimeout alone).
	Phi float64
	// FDMax is the longest silence before suspicion however jittery the
	// heartbeats (sent with every heartbeat; 0: 2 FDTimeout).
	FDMax time.Duration
}

// Layer is a node's gms layer.
type Layer struct {
	stack.Base
	cfg Config

	inc       uint64
	desired   map[event.GroupID]bool
	pending   map[event.GroupID]bool // not yet requested: true join, false leave
	seq       uint64
	since0    uint64   // the first request made by the last rejoin: older removal notices are stale
	flight    *wireMsg // the request waiting for its ack
	want      uint64   // digest of desired (valid while !wantDirty)
	wantDirty bool
	since     event.Time
	hbT       *stack.Timer // heartbeats
	retryT    *stack.Timer // the request in flight
	applied   uint64

	early     map[uint64]*wireMsg // updates that arrived ahead of a missing one
	earlyCost int                 // their entries, bounded by maxEarlyEntries
	// fullIn collects the groups of a full update sent in parts: the groups
	// held but missing from it are known only after its last part.
	fullIn map[event.GroupID]bool

	views   map[event.GroupID]*event.ViewInfo
	regions map[event.RegionID]*event.RegionView
	sites   []event.SiteView // the service's site views (Spread)
	dirty   bool             // the neighbourhood changed since the last Regions event

	// pinging holds the nodes probed for the service (its msgPingReq) and
	// since when, until they answer (bounded by maxPinging).
	pinging map[event.NodeID]event.Time

	gone   bool       // Exit seen: no more heartbeats or requests
	heard  event.Time // last packet from the service
	silent bool       // "service silent" already logged
	codec  *codecState
	in     wireMsg

	c counters
}

// New makes a gms layer.
func New(cfg Config) *Layer {
	if cfg.Service == event.NoNode {
		cfg.Service = ServiceNode
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.FDTimeout <= 0 {
		cfg.FDTimeout = DefaultFDTimeout
	}
	if cfg.SuspectTimeout <= 0 {
		cfg.SuspectTimeout = cfg.FDTimeout
	}
	if cfg.Retry <= 0 {
		cfg.Retry = DefaultRetry
	}
	if cfg.ViewInterval < 0 {
		cfg.ViewInterval = DefaultViewInterval
	}
	if cfg.Phi == 0 {
		cfg.Phi = DefaultPhi
	}
	if cfg.FDMax <= 0 {
		cfg.FDMax = 2 * cfg.FDTimeout
	}
	return &Layer{cfg: cfg}
}

// Config returns the layer's configuration (defaults filled in).
func (l *Layer) Config() Config { return l.cfg }

// Init starts the heartbeats.
func (l *Layer) Init(ctx *stack.Context) error {
	l.Ctx = ctx
	l.inc = ctx.Rand().Uint64() | 1
	l.desired = map[event.GroupID]bool{}
	l.pending = map[event.GroupID]bool{}
	l.views = map[event.GroupID]*event.ViewInfo{}
	l.early = map[uint64]*wireMsg{}
	l.regions = map[event.RegionID]*event.RegionView{}
	l.pinging = map[event.NodeID]event.Time{}
	l.codec = newCodec()
	l.wantDirty = true
	ctx.BindCounters(&l.c)
	l.hbT = ctx.NewTimer(l.heartbeatTimer)
	l.retryT = ctx.NewTimer(l.retryTimer)
	l.hbT.Reset(0)
	return nil
}

// Groups returns the groups the node has asked to be in.
func (l *Layer) Groups() []event.GroupID {
	return slices.Sorted(maps.Keys(l.desired))
}

// Views returns the views the node holds now, by group (do not modify).
func (l *Layer) Views() map[event.GroupID]*event.ViewInfo { return l.views }

// Down turns Join and Leave into requests to the service and passes them
// on; Exit says goodbye to the service.
func (l *Layer) Down(ev *event.Event) {
	switch ev.Kind {
	case event.Join:
		if ev.Group != event.NoGroup && !l.desired[ev.Group] {
			l.desired[ev.Group] = true
			l.wantDirty = true
			l.pending[ev.Group] = true
			l.request()
		}
	case event.Leave:
		if l.desired[ev.Group] {
			delete(l.desired, ev.Group)
			l.wantDirty = true
			l.pending[ev.Group] = false
			l.request()
		}
	case event.Exit:
		if !l.gone {
			l.gone = true
			l.send(&wireMsg{T: msgBye, Inc: l.inc})
		}
	case event.Suspect:
		if c := ev.Cut; c != nil {
			// A layer above finds far sites cut off for good (hop,
			// after dead_after): the service removes the smaller side.
			if !l.gone && len(c.Off) > 0 {
				l.c.Cuts.Inc()
				l.send(&wireMsg{T: msgCut, Inc: l.inc, Cut: c.Off, Reach: c.Reach})
			}
			return
		}
		// A layer above lost touch with a node (hop's dead link): tell
		// the service, which probes it at once.
		if n := ev.Peer; n != event.NoNode && n != l.Ctx.Self() && !l.gone {
			l.c.Suspects.Inc()
			l.send(&wireMsg{T: msgSuspect, Inc: l.inc, Peers: []event.NodeID{n}})
		}
		return
	}
	l.Ctx.Down(ev)
}

// Up takes the service's packets; everything else passes up.
func (l *Layer) Up(ev *event.Event) {
	if ev.Kind != event.Membership {
		l.Ctx.Up(ev)
		return
	}
	defer ev.Msg.Release()
	if ev.Peer != l.cfg.Service {
		if l.fromPeer(ev) {
			return
		}
		l.c.Malformed.Inc()
		if l.Ctx.Logging() {
			l.Ctx.Logf("membership packet from %v, not from the service %v: dropped", ev.Peer, l.cfg.Service)
		}
		return
	}
	m := &l.in
	if err := l.codec.decode(ev.Msg.Bytes(), m); err != nil {
		l.c.Malformed.Inc()
		if l.Ctx.Logging() {
			l.Ctx.Logf("%v", err)
		}
		return
	}
	l.heard = l.Ctx.Now()
	l.silent = false
	switch m.T {
	case msgAck:
		if l.flight != nil && m.Seq == l.flight.Seq {
			l.flight = nil
			l.refuse(m.Refused)
			l.request()
		}
	case msgRemoved:
		if m.Seq < l.since0 {
			return // answers a heartbeat sent before our last rejoin
		}
		l.Ctx.Up(&event.Event{Kind: event.Fail, Peer: l.Ctx.Self()})
		l.rejoin()
	case msgProbe:
		// Suspected: answer at once so that the service does not remove
		// a live node whose heartbeats were lost.
		if !l.gone {
			l.c.Probes.Inc()
			l.Ctx.Up(&event.Event{Kind: event.Suspect, Peer: l.Ctx.Self()})
			l.answer()
		}
	case msgPingReq:
		l.pingFor(m.Peers)
	case msgUpdate:
		l.receiveUpdate(m)
	default:
		l.c.Malformed.Inc()
	}
}

// heartbeatTimer sends a heartbeat and notes a silent service.
func (l *Layer) heartbeatTimer() {
	if l.gone {
		return
	}
	now := l.Ctx.Now()
	l.heartbeat()
	// The service answers requests (it does not answer heartbeats).
	if l.flight != nil && !l.silent && now.Sub(max(l.since, l.heard)) > l.cfg.FDTimeout {
		l.silent = true
		l.Ctx.Logf("no answer from the membership service %v for %v", l.cfg.Service, now.Sub(max(l.since, l.heard)))
	}
	l.hbT.Reset(l.cfg.Heartbeat)
}

// retryTimer sends the request in flight again.
func (l *Layer) retryTimer() {
	if l.gone {
		return
	}
	if l.flight != nil {
		l.c.Retries.Inc()
		l.send(l.flight)
		l.retryT.Reset(l.cfg.Retry)
	}
}

// heartbeat tells the service we are alive, and what we want once every
// request is acknowledged: the service compares that with what it holds
// of us and tells us to join again if they differ (a removal notice that
// was lost, or a removal before our first view: issue 8 item 3).
func (l *Layer) heartbeat() { l.beat(false) }

// answer is the heartbeat that answers a probe: the service does not take
// it as a sample of our heartbeat timing.
func (l *Layer) answer() { l.beat(true) }

func (l *Layer) beat(answer bool) {
	l.c.Heartbeats.Inc()
	m := &wireMsg{T: msgHeartbeat, Inc: l.inc, Applied: l.applied, Timeout: int64(l.cfg.FDTimeout),
		Suspect: int64(l.cfg.SuspectTimeout), Interval: int64(l.cfg.Heartbeat), Member: len(l.views) > 0, Site: l.Ctx.Site(),
		Phi: int64(max(0, l.cfg.Phi) * 1000), FDMax: int64(l.cfg.FDMax), Answer: answer}
	if l.flight == nil && len(l.pending) == 0 {
		if l.wantDirty {
			l.wantDirty = false
			l.want = groupDigest(l.Groups())
		}
		m.Settled, m.Seq, m.Wants, m.Want = true, l.seq, uint64(len(l.desired)), l.want
	}
	l.send(m)
}

// refuse forgets joins the service refused (beyond its bounds), so that
// what we want is what it holds.
func (l *Layer) refuse(gs []event.GroupID) {
	for _, g := range gs {
		if l.desired[g] {
			if _, again := l.pending[g]; again {
				continue // asked for again since: the next request says so
			}
			delete(l.desired, g)
			l.wantDirty = true
			l.c.Refused.Inc()
			l.Ctx.Logf("the membership service refused to add this node to %v (its bounds)", g)
		}
	}
}

// request sends the pending joins and leaves, one request at a time.
func (l *Layer) request() {
	if l.gone || l.flight != nil || len(l.pending) == 0 {
		return
	}
	l.seq++
	m := &wireMsg{T: msgRequest, Inc: l.inc, Seq: l.seq, Site: l.Ctx.Site()}
	for _, g := range slices.Sorted(maps.Keys(l.pending)) {
		if l.pending[g] {
			m.Join = append(m.Join, g)
		} else {
			m.Leave = append(m.Leave, g)
		}
	}
	clear(l.pending)
	l.flight = m
	l.since = l.Ctx.Now()
	l.c.Requests.Inc()
	l.send(m)
	l.retryT.Reset(l.cfg.Retry)
}

// rejoin handles the service's notice that this node is no longer a
// member of anything: it asks again for every group it wants.
//
// First (R1 of the rejoin contract), for every group it held a view of, it
// tells the layers above that it is out: a view with ID one past the held
// one, without self, listing self in Left. They drop all their state for
// the group, so that nothing of the old life (floors, buffers, FIFO
// positions) survives into the view that readmits it.
func (l *Layer) rejoin() {
	l.c.RemovedRejoined.Inc()
	l.Ctx.Logf("the membership service removed this node; joining %d groups again", len(l.desired))
	self := l.Ctx.Self()
	for _, g := range slices.Sorted(maps.Keys(l.views)) {
		l.emitView(leftView(l.views[g], self))
	}
	l.applied = 0
	clear(l.early)
	l.earlyCost = 0
	l.fullIn = nil
	clear(l.views)
	clear(l.regions)
	clear(l.pending)
	for g := range l.desired {
		l.pending[g] = true
	}
	l.sites = nil
	if l.dirty {
		l.dirty = false
		l.Ctx.Up(&event.Event{Kind: event.Regions, Regions: l.neighbourhood()})
	}
	l.flight = nil
	l.since0 = l.seq + 1
	l.request()
}

// leftView is the view a node installs when it learns it was removed:
// old's successor without self, self in Left.
func leftView(old *event.ViewInfo, self event.NodeID) *event.ViewInfo {
	v := &event.ViewInfo{Group: old.Group, ID: old.ID + 1, Left: []event.NodeID{self}}
	for _, n := range old.Members {
		if n != self {
			v.Members = append(v.Members, n)
		}
	}
	return v
}

// maxEarly bounds the updates kept while one before them is missing, and
// maxEarlyEntries the node ids, group ids and region ids they hold (a
// packet may carry up to 64K entries).
const (
	maxEarly        = 256
	maxEarlyEntries = 1 << 17
)

// entries is what an update costs to keep.
func entries(m *wireMsg) int {
	n := len(m.Removed)
	for _, v := range m.Views {
		n += 2 + len(v.Members) + len(v.Joined) + len(v.Left)
	}
	for _, r := range m.Regions {
		n += 2 + len(r.Groups) + len(r.Members)
	}
	return n
}

// receiveUpdate applies updates in sequence order. One that arrives ahead
// of a missing one waits (packets may be reordered); if the missing one
// was lost, our heartbeat's Applied tells the service, which then sends a
// full update.
func (l *Layer) receiveUpdate(m *wireMsg) {
	switch {
	case m.Full || m.Seq == l.applied+1:
		l.update(m)
	case m.Seq > l.applied+1:
		if c := entries(m); len(l.early) < maxEarly && l.earlyCost+c <= maxEarlyEntries && l.early[m.Seq] == nil {
			cp := *m // the decoder gave it fresh slices: keeping them is safe
			l.early[m.Seq] = &cp
			l.earlyCost += c
		}
		return
	default:
		return // old
	}
	for {
		next := l.early[l.applied+1]
		if next == nil {
			break
		}
		delete(l.early, l.applied+1)
		l.earlyCost -= entries(next)
		l.update(next)
	}
	for seq, m := range l.early {
		if seq <= l.applied {
			delete(l.early, seq)
			l.earlyCost -= entries(m)
		}
	}
}

// update applies one update (or one part of it) from the service.
func (l *Layer) update(m *wireMsg) {
	l.applied = m.Seq
	l.c.Updates.Inc()
	self := l.Ctx.Self()
	if m.Full {
		l.c.FullUpdates.Inc()
		l.fullIn = map[event.GroupID]bool{}
	}
	if l.fullIn != nil {
		for _, v := range m.Views {
			l.fullIn[v.Group] = true
		}
	}
	if m.Full || m.FullRegions {
		clear(l.regions)
		l.dirty = true
	}
	for _, id := range m.Removed {
		delete(l.regions, id)
		l.dirty = true
	}
	if m.HasSites {
		l.sites = m.Sites
		l.dirty = true
	}
	for _, r := range m.Regions {
		// Only region views of groups we want are kept, and not too
		// many: the bound holds whatever the packets say.
		if !l.wants(r.Groups) || (l.regions[r.Region] == nil && len(l.regions) >= maxList) {
			continue
		}
		l.regions[r.Region] = r
		l.dirty = true
	}
	for _, v := range m.Views {
		if old := l.views[v.Group]; old != nil && old.ID == v.ID && slices.Equal(old.Members, v.Members) {
			continue // a full update repeating what we hold
		}
		if !l.desired[v.Group] && l.views[v.Group] == nil {
			continue // a group we neither want nor hold (left before its first view)
		}
		if v.Has(self) {
			l.views[v.Group] = v
		} else {
			delete(l.views, v.Group)
		}
		l.emitView(v)
	}
	if l.fullIn != nil && !m.More {
		// The last part of a full update: groups we hold a view of but
		// are no longer in. We were removed while the update saying so
		// was lost (R1: a view without us, then we are out).
		for _, g := range slices.Sorted(maps.Keys(l.views)) {
			if old := l.views[g]; !l.fullIn[g] {
				delete(l.views, g)
				l.emitView(leftView(old, self))
			}
		}
		l.fullIn = nil
	}
	if !m.More && l.dirty {
		l.dirty = false
		l.Ctx.Up(&event.Event{Kind: event.Regions, Regions: l.neighbourhood()})
	}
}

// neighbourhood assembles the node's derived membership from what it holds.
func (l *Layer) neighbourhood() *event.Neighbourhood {
	nb := membership.Assemble(l.Ctx.Self(), l.views, l.regions)
	membership.SetSites(nb, l.sites)
	return nb
}

// wants reports whether one of gs is a group the node asked for or holds.
func (l *Layer) wants(gs []event.GroupID) bool {
	for _, g := range gs {
		if l.desired[g] || l.views[g] != nil {
			return true
		}
	}
	return false
}

func (l *Layer) emitView(v *event.ViewInfo) {
	l.c.ViewsInstalled.Inc()
	l.dirty = true
	l.Ctx.Up(&event.Event{Kind: event.View, Group: v.Group, View: v})
	// The layers below (auth, which rotates its keys with the views) see
	// the views too; the stack's bottom ignores a View going down.
	l.Ctx.Down(&event.Event{Kind: event.View, Group: v.Group, View: v})
}

func (l *Layer) send(m *wireMsg) { l.sendTo(l.cfg.Service, m) }

func (l *Layer) sendTo(to event.NodeID, m *wireMsg) {
	b := l.codec.encode(m)
	l.Ctx.Down(&event.Event{Kind: event.Membership, Peer: to, Msg: l.Ctx.Pool().FromBytes(b)})
}

// maxPinging bounds the nodes probed for the service at once.
const maxPinging = 64

// pingFor probes the nodes the service suspects, for it (its msgPingReq):
// an indirect probe. Their answers go to the service as msgAlive.
func (l *Layer) pingFor(peers []event.NodeID) {
	if l.gone {
		return
	}
	now, self := l.Ctx.Now(), l.Ctx.Self()
	for n, since := range l.pinging {
		if now.Sub(since) > l.cfg.FDMax+l.cfg.SuspectTimeout {
			delete(l.pinging, n) // never answered
		}
	}
	for _, n := range peers {
		if n == self || n == l.cfg.Service {
			continue
		}
		if _, on := l.pinging[n]; !on {
			if len(l.pinging) >= maxPinging {
				continue
			}
			l.pinging[n] = now
		}
		l.c.Pings.Inc()
		l.sendTo(n, &wireMsg{T: msgPing})
	}
}

// fromPeer takes a membership packet from another member: a probe made for
// the service (answered at once) or the answer to one of ours (reported
// to the service). It reports false for anything else.
func (l *Layer) fromPeer(ev *event.Event) bool {
	m := &l.in
	if err := l.codec.decode(ev.Msg.Bytes(), m); err != nil {
		return false
	}
	switch m.T {
	case msgPing:
		if !l.gone {
			l.c.PingsAnswered.Inc()
			l.sendTo(ev.Peer, &wireMsg{T: msgPingAck})
		}
		return true
	case msgPingAck:
		if _, asked := l.pinging[ev.Peer]; asked && !l.gone {
			delete(l.pinging, ev.Peer)
			l.c.AliveReported.Inc()
			l.send(&wireMsg{T: msgAlive, Inc: l.inc, Peers: []event.NodeID{ev.Peer}})
		}
		return true
	}
	return false
}

var _ stack.Layer = (*Layer)(nil)
