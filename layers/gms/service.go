package gms

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/membership"
	"github.com/layercast/layercast/membership/removal"
)

// ServiceConfig sets up a membership Service.
type ServiceConfig struct {
	// ViewInterval is the shortest time between two view installations:
	// changes that arrive in between are batched into the next one (QSM
	// 2005 section 2.1: changes at a predefined maximum rate).
	ViewInterval time.Duration
	// FDTimeout is how long a node may stay silent before it is suspected,
	// for nodes whose heartbeats declare no timeout of their own.
	FDTimeout time.Duration
	// SuspectTimeout is how long a suspected node is probed before it is
	// declared failed and removed, for nodes whose heartbeats declare none
	// (default FDTimeout). A node is removed only if nothing at all is
	// heard from it for its fd timeout plus its suspect timeout.
	SuspectTimeout time.Duration
	// MinTimeout and MaxTimeout bound the fd and suspect timeouts a
	// heartbeat may declare (defaults 1ms and 1h); values outside are
	// clamped and counted (ServiceStats.Clamped).
	MinTimeout, MaxTimeout time.Duration
	// MaxNodes bounds the nodes the service keeps a record of (default
	// 65536); packets from further nodes are refused and counted.
	MaxNodes int
	// MaxGroupsPerNode bounds the groups one node may be in (default
	// 8192); MaxGroups bounds the groups in the system (default 1<<20).
	// Joins beyond either are refused, counted, and named in the ack so
	// the node stops asking.
	MaxGroupsPerNode, MaxGroups int
	// MaxRequest bounds the joins and leaves one request may carry
	// (default 8192); a larger request is refused whole.
	MaxRequest int
	// MaxEntries bounds the node ids and group ids carried by one update
	// packet; a larger update is split into parts (default 8000, about 40 KB).
	MaxEntries int
	// UpdateLog bounds the update packets kept per node until its
	// heartbeat says it applied them (default DefaultUpdateLog, negative:
	// none), so that lost ones are sent again as they were and the node
	// installs every view; a node that lost more gets a full update, which
	// skips views. The entries they hold are bounded too (4 MaxEntries).
	UpdateLog int
	// Send transmits one membership packet to a node. payload is valid only
	// during the call. Required.
	Send func(to event.NodeID, payload []byte)
	// Log, if set, receives one line per view installed and per node that
	// joined the system, was suspected, failed or left.
	Log func(format string, args ...any)
	// Store, if set, keeps the service's state for the next leader of a
	// replicated service (persist.go): it is saved before a request is
	// acknowledged and before views are sent. A failed save stops the
	// service. Nil: nothing is saved (one service, the simulator).
	Store membership.Store
	// Indirect is how many members the service asks to probe a suspect
	// for it (SWIM's ping-req; memberlist's IndirectChecks): a suspect
	// that one of them reaches is not removed on the service's silence
	// alone (default DefaultIndirect; negative: none).
	Indirect int
	// MaxRemovals bounds the removal records kept for the report (default
	// DefaultMaxRemovals; the oldest go first).
	MaxRemovals int
	// CutReportTTL is how long a member's report of a wide-area cut
	// counts toward the sides of a split (cut.go; default
	// DefaultCutReportTTL). Keep it above the reporting layer's repeat
	// interval (hop's dead_after).
	CutReportTTL time.Duration
}

// Defaults of the service's bounds.
const (
	DefaultMinTimeout       = time.Millisecond
	DefaultMaxTimeout       = time.Hour
	DefaultMaxNodes         = 1 << 16
	DefaultMaxGroupsPerNode = 8192
	DefaultMaxGroups        = 1 << 20
	DefaultMaxRequest       = 8192
	DefaultUpdateLog        = 64
	DefaultIndirect         = 3
	DefaultMaxRemovals      = 4096
)

// ServiceStats counts what a Service did.
type ServiceStats struct {
	Commits      int64 // view installations (batches)
	Views        int64 // group views installed
	NodeUpdates  int64 // per-node updates sent (each may take several packets)
	Packets      int64 // membership packets sent
	Resyncs      int64 // full state updates sent after a node fell behind
	Resent       int64 // update packets sent again to a node that lost them
	SplitParts   int64 // update packets followed by another part of the same update
	Suspected    int64 // nodes suspected after fd timeout of silence
	Probes       int64 // probes sent to suspected nodes
	Cleared      int64 // suspicions cleared by a packet from the node
	Failed       int64 // nodes declared failed by the failure detector
	Late         int64 // nodes silent past their fd timeout but inside their adaptive (phi) window: not suspected yet
	PingReqs     int64 // requests to members to probe a suspect (indirect probes)
	Vouched      int64 // reports from members that they reached a suspect
	Partitioned  int64 // failed nodes that members still reached: cut off from the service (counted in Failed too)
	Left         int64 // nodes that said goodbye
	Restarted    int64 // nodes replaced by a new life of themselves
	CutOff       int64 // nodes removed as the smaller side of a wide-area cut a member reported (msgCut)
	CutIgnored   int64 // cut reports that removed nobody (the reporter's side the smaller, or the reporter not in a group or suspected)
	RemovedSent  int64 // "you were removed" notices sent
	Resets       int64 // live nodes whose wishes the service did not hold: told to join again
	Refused      int64 // nodes, requests and joins refused by a bound
	Clamped      int64 // heartbeat timeouts outside [MinTimeout, MaxTimeout]
	Malformed    int64 // packets that could not be decoded
	Unexpected   int64 // well-formed packets of a type a service does not take
	LastAffected int   // nodes updated by the last installation
}

// ErrRefused is wrapped by the error Receive returns for a packet refused
// by one of the service's bounds.
var ErrRefused = errors.New("gms: refused by the service's bounds")

// Service is the centralised membership service of QSM and Ricochet as a
// pure state machine: it keeps every group's member list (in a
// membership.Index), takes join and leave requests, runs the failure
// detector over heartbeats, batches changes and installs new views at most
// once per ViewInterval, and sends each affected node only what concerns it:
// the new views of its groups and the QSM region views overlapping them.
//
// The caller feeds it packets (Receive) and time (Tick), and wakes it at
// Next. It starts no goroutine and reads no clock; ServiceLayer runs it
// inside a stack, on the simulator or over UDP.
type Service struct {
	cfg   ServiceConfig
	idx   *membership.Index
	peers map[event.NodeID]*peer
	// lists holds the peers not suspected in heard order, one list per
	// fd timeout, so the next suspicion is always at the head of a list.
	lists map[time.Duration]*peerList
	// suspects are the peers silent past their fd window, being probed
	// (few: a slice in suspicion order keeps runs repeatable).
	suspects []*peer
	// late are the peers silent past their fd timeout whose adaptive
	// window (phi.go) has not run out yet (few, in lateness order).
	late []*peer
	// removals records every removal and why (bounded by MaxRemovals;
	// removalsDropped counts the oldest dropped).
	removals        []removal.Record
	removalsDropped int64

	dirty      bool
	commitAt   event.Time
	lastCommit event.Time
	resync     []*peer

	// Spread sites: every commit computes the site views (site 0 too) and
	// sends them to every node in a group when they change (sites.go);
	// sitesSeen is set from the first commit on.
	sitesSeen bool
	sites     []event.SiteView
	siteIDs   map[event.SiteID]uint64

	// cuts holds each site's latest report of a wide-area cut (cut.go).
	cuts map[event.SiteID]*cutReport

	unsaved bool // state changed since the last Store.Save
	// term counts the leaders of a replicated service (0 unreplicated):
	// leader k numbers its updates to the nodes it restored from k<<32 on,
	// past every number an earlier leader sent them (termBase).
	term   uint64
	halted error // a Store.Save failed: the service does nothing more

	codec *codecState
	in    wireMsg
	out   wireMsg
	stats ServiceStats
}

// peer is what the service knows about one live node.
type peer struct {
	id       event.NodeID
	site     event.SiteID    // the Spread site it declared
	inc      uint64          // the node's incarnation
	lastReq  uint64          // highest request applied
	refused  []event.GroupID // joins of request lastReq refused (repeated in its acks)
	digest   uint64          // groupDigest of its groups, if digestOK
	digestOK bool            // (only apply changes a live peer's groups)
	heard    event.Time      // last packet from it
	timeout  time.Duration   // silence before it is suspected
	suspectT time.Duration   // probing before a suspect is removed
	interval time.Duration   // its heartbeat interval: suspects are probed at this pace
	suspect  bool            // in Service.suspects, not in a list
	probeAt  event.Time      // next probe, while suspect
	// The adaptive window (phi.go): the accrual threshold the node
	// declared (0: static), the window's ceiling, what its timed
	// heartbeats taught, and the window that follows.
	phi      float64
	fdMax    time.Duration
	arr      arrivals
	lastBeat event.Time
	beats    bool          // lastBeat is set
	window   time.Duration // silence before suspicion: in [timeout, max(timeout, fdMax)]
	late     bool          // in Service.late, not in a list
	// While suspect: the members asked to probe it, and the last that
	// reached it (vouchBy, at vouched): it is kept while they do, up to
	// twice its window and suspect timeout.
	helpers  []event.NodeID
	vouched  event.Time
	vouchBy  event.NodeID
	sent     uint64 // last update sequence number sent
	applied  uint64 // last update sequence number it applied (its heartbeat)
	lastSend event.Time
	needFull bool
	list     *peerList
	prev     *peer
	next     *peer

	// log holds the update packets sent since the last one it applied
	// (sequence numbers applied+1..sent, bounded by UpdateLog): when some
	// are lost they are sent again as they were, so that it installs
	// every view. A full update in their place would
	// skip views, hiding a removal and re-admission (R2) and the views in
	// which others cast to it (soak seeds 11, 31, 40, 66, 96 of
	// specs/gms.stack).
	log     []wireMsg
	logCost int
}

type peerList struct {
	head, tail *peer
	d          time.Duration // the fd timeout of its peers (its key in Service.lists)
}

func (l *peerList) remove(p *peer) {
	if p.prev != nil {
		p.prev.next = p.next
	} else {
		l.head = p.next
	}
	if p.next != nil {
		p.next.prev = p.prev
	} else {
		l.tail = p.prev
	}
	p.prev, p.next = nil, nil
}

func (l *peerList) pushBack(p *peer) {
	p.prev, p.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = p
	} else {
		l.head = p
	}
	l.tail = p
}

// orDefault sets *v to d when *v is 0 or negative (a bound or timeout
// left unset).
func orDefault[T int | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// NewService makes a service with no members.
func NewService(cfg ServiceConfig) (*Service, error) {
	if cfg.Send == nil {
		return nil, fmt.Errorf("gms: ServiceConfig.Send is nil")
	}
	if cfg.ViewInterval < 0 || cfg.FDTimeout <= 0 {
		return nil, fmt.Errorf("gms: view interval %v must be >= 0 and failure timeout %v > 0", cfg.ViewInterval, cfg.FDTimeout)
	}
	if cfg.SuspectTimeout < 0 {
		return nil, fmt.Errorf("gms: suspect timeout %v must be >= 0", cfg.SuspectTimeout)
	}
	if cfg.SuspectTimeout == 0 {
		cfg.SuspectTimeout = cfg.FDTimeout
	}
	orDefault(&cfg.MinTimeout, DefaultMinTimeout)
	orDefault(&cfg.MaxTimeout, DefaultMaxTimeout)
	if cfg.MinTimeout > cfg.MaxTimeout {
		return nil, fmt.Errorf("gms: timeout range [%v, %v] is empty", cfg.MinTimeout, cfg.MaxTimeout)
	}
	for _, b := range []*int{&cfg.MaxNodes, &cfg.MaxGroupsPerNode, &cfg.MaxGroups, &cfg.MaxRequest} {
		if *b < 0 {
			return nil, fmt.Errorf("gms: negative bound %d", *b)
		}
	}
	orDefault(&cfg.MaxNodes, DefaultMaxNodes)
	orDefault(&cfg.MaxGroupsPerNode, DefaultMaxGroupsPerNode)
	orDefault(&cfg.MaxGroups, DefaultMaxGroups)
	orDefault(&cfg.MaxRequest, DefaultMaxRequest)
	orDefault(&cfg.MaxEntries, 8000)
	orDefault(&cfg.CutReportTTL, DefaultCutReportTTL)
	orDefault(&cfg.MaxRemovals, DefaultMaxRemovals)
	// A negative UpdateLog or Indirect means none: only 0 takes the default.
	if cfg.UpdateLog == 0 {
		cfg.UpdateLog = DefaultUpdateLog
	}
	if cfg.Indirect == 0 {
		cfg.Indirect = DefaultIndirect
	}
	return &Service{
		cfg:        cfg,
		idx:        membership.NewIndex(),
		peers:      map[event.NodeID]*peer{},
		lists:      map[time.Duration]*peerList{},
		lastCommit: -event.Never,
		codec:      newCodec(),
	}, nil
}

// Stats returns the service's counters.
func (s *Service) Stats() ServiceStats { return s.stats }

// Index exposes the membership tables (read only: tests and tools).
func (s *Service) Index() *membership.Index { return s.idx }

// Live is the number of nodes the failure detector watches.
func (s *Service) Live() int { return len(s.peers) }

// Next is when the service next needs Tick: the earliest suspicion, probe
// or removal deadline, or the pending view installation.
func (s *Service) Next() event.Time {
	t := event.Never
	if s.halted != nil {
		return t
	}
	if s.dirty {
		t = s.commitAt
	}
	for _, l := range s.lists {
		if l.head != nil {
			t = min(t, l.head.heard.Add(l.head.timeout))
		}
	}
	for _, p := range s.late {
		t = min(t, p.heard.Add(p.window))
	}
	for _, p := range s.suspects {
		t = min(t, p.probeAt, p.failAt())
	}
	return t
}

// maxProbes bounds the probes sent to one suspect in its suspicion period.
const maxProbes = 8

// failAt is when a suspect is removed if nothing is heard from it: its
// window and suspect timeout after it was last heard, or, while a member
// reaches it, one suspect timeout after the last such report, but never
// later than twice its window and suspect timeout after it was last heard.
func (p *peer) failAt() event.Time {
	t := p.heard.Add(p.window + p.suspectT)
	if p.vouchBy != event.NoNode {
		t = min(p.heard.Add(2*(p.window+p.suspectT)), max(t, p.vouched.Add(p.suspectT)))
	}
	return t
}

// Tick runs the failure detector and installs pending changes that are due.
//
// The failure detector has three steps, after Lifeguard (Dadgar, Phillips
// and Currey, "Lifeguard: local health awareness for more accurate failure
// detection", 2018, as hashicorp/memberlist implements it: state.go's
// indirect probes, suspicion.go) and the φ accrual detector (phi.go):
//
//   - late: silence past a node's fd timeout, while its adaptive window
//     (the silence at which φ reaches its threshold, at most fd_max) has
//     not run out. A node whose heartbeats are jittery gets a longer
//     window; a regular one is suspected at its fd timeout, as before.
//   - suspect: silence past its window. The service probes it directly,
//     once per heartbeat interval, and asks up to Indirect members of its
//     groups to probe it too (SWIM's ping-req); anything heard from it
//     clears the suspicion (issue 8 item 4: one missed window under loss
//     does not remove a live node).
//   - removed: nothing heard for its suspect timeout more, and no member
//     reached it. A suspect that a member reaches is cut off from the
//     service only: it is not removed on the service's opinion alone, but
//     kept while members reach it, up to twice its window and suspect
//     timeout (its updates wait in the log for the link to heal); then it
//     is removed as partitioned from the service, since it cannot install
//     views while the service cannot reach it.
//
// Every removal is recorded with its reason (Removals).
func (s *Service) Tick(now event.Time) {
	if s.halted != nil {
		return
	}
	// In timeout order, so that runs repeat exactly.
	for _, d := range slices.Sorted(maps.Keys(s.lists)) {
		l := s.lists[d]
		for l.head != nil && now >= l.head.heard.Add(l.head.timeout) {
			if p := l.head; now < p.heard.Add(p.window) {
				s.makeLate(p, now)
			} else {
				s.suspect(p, now, event.NoNode)
			}
		}
	}
	for i := 0; i < len(s.late); {
		if p := s.late[i]; now >= p.heard.Add(p.window) {
			s.suspect(p, now, event.NoNode) // takes it out of late
			continue
		}
		i++
	}
	for i := 0; i < len(s.suspects); {
		p := s.suspects[i]
		if now >= p.failAt() {
			s.fail(p, now) // takes it out of suspects: i now names the next one
			continue
		}
		if now >= p.probeAt {
			s.probe(p, now)
		}
		i++
	}
	if s.dirty && now >= s.commitAt {
		s.commit(now)
	}
}

// makeLate moves p, silent past its fd timeout, to the late peers: its
// adaptive window has not run out.
func (s *Service) makeLate(p *peer, now event.Time) {
	s.unlist(p)
	p.late = true
	s.late = append(s.late, p)
	s.stats.Late++
	s.logf("%v late: silent since %v, past its fd timeout %v but inside its window %v (jittery heartbeats: mean %v, sd %v)",
		p.id, p.heard, p.timeout, p.window, time.Duration(p.arr.mean), time.Duration(p.arr.sd()))
}

// suspect makes p a suspect and probes it: after its window of silence
// (by is NoNode), or at once when node by reports it unreachable. A
// suspect that answers is cleared; one silent until failAt is removed.
func (s *Service) suspect(p *peer, now event.Time, by event.NodeID) {
	if p == nil || p.suspect || p.id == by {
		return
	}
	s.unlist(p)
	p.suspect = true
	s.suspects = append(s.suspects, p)
	s.stats.Suspected++
	s.pickHelpers(p, by)
	if by == event.NoNode {
		s.logf("%v suspected: silent since %v (window %v); probing it for %v, and through %v", p.id, p.heard, p.window, p.suspectT, p.helpers)
	} else {
		s.logf("%v suspected: %v reports it unreachable; probing it, and through %v", p.id, by, p.helpers)
	}
	s.probe(p, now)
}

// pickHelpers chooses the members that probe suspect p for the service:
// up to Indirect live members of its groups, not suspect nor late, the
// ones after it in each group's member list (so that the work spreads),
// never the member that reported it (by).
func (s *Service) pickHelpers(p *peer, by event.NodeID) {
	p.helpers = p.helpers[:0]
	p.vouchBy = event.NoNode
	k := s.cfg.Indirect
	for _, g := range s.idx.Groups(p.id) {
		ms := s.idx.Members(g)
		i := max(0, slices.Index(ms, p.id))
		for j := 1; j < len(ms) && len(p.helpers) < k; j++ {
			h := ms[(i+j)%len(ms)]
			if q := s.peers[h]; q == nil || q.suspect || q.late || h == by || slices.Contains(p.helpers, h) {
				continue
			}
			p.helpers = append(p.helpers, h)
		}
		if len(p.helpers) >= k {
			break
		}
	}
}

// probe asks a suspect to answer at once, and its helpers to probe it.
func (s *Service) probe(p *peer, now event.Time) {
	s.stats.Probes++
	p.probeAt = now.Add(p.interval)
	s.send(p.id, &wireMsg{T: msgProbe})
	for _, h := range p.helpers {
		s.stats.PingReqs++
		s.send(h, &wireMsg{T: msgPingReq, Peers: []event.NodeID{p.id}})
	}
}

// fail removes suspect p: silent past failAt.
func (s *Service) fail(p *peer, now event.Time) {
	s.stats.Failed++
	silent := now.Sub(p.heard)
	r := removal.Record{Node: p.id, At: now, Cause: removal.Silent, SilentMs: ms(silent), WindowMs: ms(p.window), SuspectMs: ms(p.suspectT)}
	if p.beats && p.phi > 0 {
		r.Phi = math.Round(phiOf(&p.arr, silent)*10) / 10
	}
	why := fmt.Sprintf("silent for %v", silent)
	if r.Phi > 0 {
		why += fmt.Sprintf(" (phi %.1f, threshold %g)", r.Phi, p.phi)
	}
	if p.vouchBy != event.NoNode {
		s.stats.Partitioned++
		r.Cause, r.HeardBy = removal.Partitioned, p.vouchBy
		r.Reason = fmt.Sprintf("partitioned from the service: %s, while %v still reached it %v ago; kept for twice its window %v + suspect timeout %v",
			why, p.vouchBy, now.Sub(p.vouched), p.window, p.suspectT)
	} else {
		r.Reason = fmt.Sprintf("%s: suspected after its window %v (fd timeout %v), probed for %v", why, p.window, p.timeout, p.suspectT)
		if len(p.helpers) > 0 {
			r.Reason += fmt.Sprintf(", directly and through %v, none reached it", p.helpers)
		} else {
			r.Reason += ", directly (no other member to ask)"
		}
	}
	lastReq := p.lastReq
	s.remove(p, now, r)
	s.send(p.id, &wireMsg{T: msgRemoved, Seq: lastReq})
	s.stats.RemovedSent++
}

// remove records why p is removed and drops it.
func (s *Service) remove(p *peer, now event.Time, r removal.Record) {
	r.Groups = len(s.idx.Groups(p.id))
	r.AtMs = ms(now.Sub(0))
	// The log lines read as they did before the records (tools grep them).
	switch r.Cause {
	case removal.Silent, removal.Partitioned:
		s.logf("%v failed: %s; removing it from %d groups", p.id, r.Reason, r.Groups)
	case removal.Left:
		s.logf("%v leaves the system; removing it from %d groups", p.id, r.Groups)
	case removal.Restarted:
		s.logf("%v restarted; removing its previous life from %d groups", p.id, r.Groups)
	default:
		s.logf("%v: %s; removing it from %d groups", p.id, r.Reason, r.Groups)
	}
	if len(s.removals) >= s.cfg.MaxRemovals {
		s.removals[0] = removal.Record{}
		s.removals = s.removals[1:]
		s.removalsDropped++
	}
	s.removals = append(s.removals, r)
	s.drop(p, now)
}

// Removals returns the removal records kept, oldest first (do not modify),
// and how many older ones were dropped.
func (s *Service) Removals() ([]removal.Record, int64) { return s.removals, s.removalsDropped }

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Receive handles one membership packet from node from. A malformed packet
// is counted and its error returned (wrapping ErrMalformed), as is one
// refused by a bound (ErrRefused); nothing else happens.
func (s *Service) Receive(now event.Time, from event.NodeID, b []byte) error {
	if s.halted != nil {
		return s.halted
	}
	m := &s.in
	if err := s.codec.decode(b, m); err != nil {
		s.stats.Malformed++
		return fmt.Errorf("from %v: %w", from, err)
	}
	if from == event.NoNode {
		s.stats.Malformed++
		return fmt.Errorf("%w: %v from node 0", ErrMalformed, m.T)
	}
	switch m.T {
	case msgHeartbeat:
		if s.peers[from] == nil && m.Settled && m.Seq > 0 {
			// It believes the service holds its requests up to m.Seq,
			// but the service has no record of it: it was removed (its
			// notice may have been lost) or the service restarted. No
			// record is made, so the notice repeats with every
			// heartbeat until its joins arrive.
			s.sendRemoved(from, m.Seq)
			return nil
		}
		p := s.hear(now, from, m)
		if p == nil {
			return fmt.Errorf("%w: heartbeat from %v: already %d nodes", ErrRefused, from, len(s.peers))
		}
		if m.Settled && (p.lastReq < m.Seq || (p.lastReq == m.Seq && s.digest(p) != m.Want)) {
			// Its requests were all acknowledged, yet the service does
			// not hold what it wants: its record was dropped and made
			// again, or a removal notice was lost. Start it over: drop
			// its memberships and tell it to join again; it will, and
			// the views that readmit it list it in Joined (R2). This is
			// what makes membership settle under loss (issue 8 item 3):
			// every heartbeat compares, so one lost notice only delays.
			s.stats.Resets++
			s.remove(p, now, removal.Record{Node: from, At: now, Cause: removal.Reset,
				Reason: fmt.Sprintf("it wants %d groups the service does not hold (request %d, service applied %d); told to join again", m.Wants, m.Seq, p.lastReq)})
			s.sendRemoved(from, m.Seq)
			return nil
		}
		p.applied = m.Applied
		p.trimLog()
		if m.Applied > p.sent || (m.Applied < p.sent && now.Sub(p.lastSend) >= s.resyncAfter(p)) {
			// It lost an update (or holds another life's numbers).
			if !p.needFull {
				p.needFull = true
				s.resync = append(s.resync, p)
				s.schedule(now)
			}
		}
	case msgRequest:
		p := s.hear(now, from, m)
		if p == nil {
			return fmt.Errorf("%w: request from %v: already %d nodes", ErrRefused, from, len(s.peers))
		}
		if m.Seq > p.lastReq {
			p.lastReq = m.Seq
			p.refused = s.apply(now, p, m)
			s.unsaved = true
			if err := s.save(); err != nil {
				return err // not acknowledged: the next leader has no record of it
			}
		}
		if m.Seq == p.lastReq {
			s.send(from, &wireMsg{T: msgAck, Seq: m.Seq, Refused: p.refused})
		} else {
			s.send(from, &wireMsg{T: msgAck, Seq: m.Seq})
		}
	case msgSuspect:
		if p := s.peers[from]; p != nil && p.inc == m.Inc {
			for _, id := range m.Peers {
				s.suspect(s.peers[id], now, from)
			}
		}
	case msgCut:
		s.cut(now, from, m)
	case msgAlive:
		// A helper reached suspects: only those it was asked about count.
		if s.peers[from] == nil {
			return nil
		}
		for _, id := range m.Peers {
			if p := s.peers[id]; p != nil && p.suspect && slices.Contains(p.helpers, from) {
				s.stats.Vouched++
				if p.vouchBy == event.NoNode {
					s.logf("%v reached suspect %v, which the service has not heard since %v: keeping it", from, id, p.heard)
				}
				p.vouched, p.vouchBy = now, from
			}
		}
	case msgBye:
		if p := s.peers[from]; p != nil && p.inc == m.Inc {
			s.stats.Left++
			s.remove(p, now, removal.Record{Node: from, At: now, Cause: removal.Left, Reason: "left the system (goodbye)"})
		}
	default:
		s.stats.Unexpected++
		return fmt.Errorf("%w: a service does not take %v packets (from %v)", ErrMalformed, m.T, from)
	}
	return nil
}

// digest is groupDigest of p's groups, cached: heartbeats compare it often.
func (s *Service) digest(p *peer) uint64 {
	if !p.digestOK {
		p.digest, p.digestOK = groupDigest(s.idx.Groups(p.id)), true
	}
	return p.digest
}

func (s *Service) sendRemoved(to event.NodeID, seq uint64) {
	s.send(to, &wireMsg{T: msgRemoved, Seq: seq})
	s.stats.RemovedSent++
}

// apply takes one request's leaves and joins, all in one batch (joining d
// groups one at a time moved the node through d intermediate regions, each
// costing O(d): a 23.7 KB request took 10 s), within the service's bounds.
// It returns the joins refused.
func (s *Service) apply(now event.Time, p *peer, m *wireMsg) (refused []event.GroupID) {
	if len(m.Join)+len(m.Leave) > s.cfg.MaxRequest {
		s.stats.Refused++
		s.logf("%v: a request of %d joins and %d leaves refused (at most %d)", p.id, len(m.Join), len(m.Leave), s.cfg.MaxRequest)
		return slices.Clone(m.Join)
	}
	p.digestOK = false
	changed := s.idx.LeaveMany(p.id, m.Leave)
	have := s.idx.Groups(p.id)
	room := s.cfg.MaxGroupsPerNode - len(have)
	newGroups := 0
	join := m.Join[:0]
	for _, g := range m.Join {
		if _, in := slices.BinarySearch(have, g); in {
			continue
		}
		fresh := s.idx.Members(g) == nil
		if room <= 0 || (fresh && s.idx.NumGroups()+newGroups >= s.cfg.MaxGroups) {
			refused = append(refused, g)
			continue
		}
		room--
		if fresh {
			newGroups++
		}
		join = append(join, g)
	}
	if len(refused) > 0 {
		s.stats.Refused += int64(len(refused))
		s.logf("%v: %d joins refused (node in %d groups, at most %d; %d groups in the system, at most %d)", p.id, len(refused), len(have), s.cfg.MaxGroupsPerNode, s.idx.NumGroups(), s.cfg.MaxGroups)
	}
	if s.idx.JoinMany(p.id, join) || changed {
		s.schedule(now)
	}
	return refused
}

// hear records a packet from a node, creating or renewing its record. It
// returns nil if the node is new and the service holds MaxNodes already.
func (s *Service) hear(now event.Time, from event.NodeID, m *wireMsg) *peer {
	p := s.peers[from]
	if p != nil && p.inc != m.Inc {
		// A new life of the same node: the old one failed.
		s.stats.Restarted++
		s.remove(p, now, removal.Record{Node: from, At: now, Cause: removal.Restarted,
			Reason: fmt.Sprintf("restarted: a new life replaced the one last heard %v ago", now.Sub(p.heard))})
		p = nil
	}
	if p == nil {
		if len(s.peers) >= s.cfg.MaxNodes {
			s.stats.Refused++
			return nil
		}
		p = &peer{id: from, inc: m.Inc, timeout: s.cfg.FDTimeout, suspectT: s.cfg.SuspectTimeout, lastSend: now}
		p.interval = p.timeout / 4
		p.window = p.timeout
		s.peers[from] = p
		s.logf("%v is up", from)
	}
	s.placeSite(p, m.Site, now)
	if m.T == msgHeartbeat {
		if m.Timeout > 0 {
			p.timeout = s.clamp(time.Duration(m.Timeout))
		}
		if m.Suspect > 0 {
			p.suspectT = s.clamp(time.Duration(m.Suspect))
		}
		p.interval = p.timeout / 4
		if m.Interval > 0 {
			p.interval = min(s.clamp(time.Duration(m.Interval)), p.timeout)
		}
		// At most maxProbes probes per suspicion, whatever the packet
		// says: a forged heartbeat must not buy a stream of probes.
		p.interval = max(p.interval, p.suspectT/maxProbes)
		s.learn(p, now, m)
	}
	if p.suspect {
		s.stats.Cleared++
		s.logf("%v answered: no longer suspected", from)
	}
	s.unlist(p)
	p.helpers, p.vouchBy = p.helpers[:0], event.NoNode
	l := s.lists[p.timeout]
	if l == nil {
		l = &peerList{d: p.timeout}
		s.lists[p.timeout] = l
	}
	p.heard = now
	p.list = l
	l.pushBack(p)
	return p
}

// maxPhi bounds the accrual threshold a heartbeat may declare (φ 16 is a
// chance of 10^-16 that a live node's heartbeat is that late: the normal
// quantile is still finite in float64).
const maxPhi = 16

// learn takes what a heartbeat says of the adaptive window: the node's
// threshold and ceiling, and, for a timed heartbeat (not a probe's
// answer), one more inter-arrival sample; then the window that follows.
func (s *Service) learn(p *peer, now event.Time, m *wireMsg) {
	p.phi = min(float64(m.Phi)/1000, maxPhi)
	p.fdMax = 2 * p.timeout
	if m.FDMax > 0 {
		p.fdMax = s.clamp(time.Duration(m.FDMax))
	}
	if !m.Answer {
		if p.beats {
			p.arr.add(now.Sub(p.lastBeat), p.fdMax)
		}
		p.lastBeat, p.beats = now, true
	}
	p.window = phiWindow(&p.arr, p.phi, p.timeout, p.fdMax)
}

// clamp brings a declared timeout into [MinTimeout, MaxTimeout]: a 2^62 ns
// timeout would never expire, and a tiny one would have the service probe
// and remove at will.
func (s *Service) clamp(d time.Duration) time.Duration {
	if d < s.cfg.MinTimeout || d > s.cfg.MaxTimeout {
		s.stats.Clamped++
		return min(max(d, s.cfg.MinTimeout), s.cfg.MaxTimeout)
	}
	return d
}

// unlist takes p out of its list (dropping the list if it empties), out
// of the late peers, or out of the suspects.
func (s *Service) unlist(p *peer) {
	if p.list != nil {
		p.list.remove(p)
		if p.list.head == nil {
			delete(s.lists, p.list.d) // timeouts come from the network: keep the map small
		}
		p.list = nil
	}
	if p.suspect {
		p.suspect = false
		if i := slices.Index(s.suspects, p); i >= 0 {
			s.suspects = slices.Delete(s.suspects, i, i+1)
		}
	}
	if p.late {
		p.late = false
		if i := slices.Index(s.late, p); i >= 0 {
			s.late = slices.Delete(s.late, i, i+1)
		}
	}
}

// drop forgets a node and takes it out of every group.
func (s *Service) drop(p *peer, now event.Time) {
	s.unlist(p)
	delete(s.peers, p.id)
	if len(s.idx.Remove(p.id)) > 0 {
		s.schedule(now)
	}
}

// resyncAfter is how long an update may be in flight before a heartbeat
// that has not seen it triggers a full state update.
func (s *Service) resyncAfter(p *peer) time.Duration { return p.timeout / 4 }

// schedule marks a change pending: it is installed now if the last
// installation is at least ViewInterval old, else one interval after it.
func (s *Service) schedule(now event.Time) {
	if s.dirty {
		return
	}
	s.dirty = true
	s.commitAt = max(now, s.lastCommit.Add(s.cfg.ViewInterval))
}

// commit installs every pending change and sends each affected node its
// share of it.
func (s *Service) commit(now event.Time) {
	s.dirty = false
	s.lastCommit = now
	c := s.idx.Commit()
	ups := s.idx.Updates(c)
	s.stats.Commits++
	s.stats.Views += int64(len(c.Views))
	s.stats.LastAffected = len(ups)
	sitesChanged := s.commitSites()
	if !c.Empty() || sitesChanged {
		s.unsaved = true
	}
	if s.save() != nil {
		return // nothing sent that the next leader does not hold
	}
	if s.cfg.Log != nil {
		for _, v := range c.Views {
			s.logf("view %v#%d: %d members %v joined %v left %v", v.Group, v.ID, len(v.Members), short(v.Members), short(v.Joined), short(v.Left))
		}
	}
	for _, u := range ups {
		p := s.peers[u.Node]
		if p == nil || (p.needFull && !p.canResend()) {
			continue // gone, or about to get everything below
		}
		s.stats.NodeUpdates++
		s.sendUpdate(p, now, false, u.Views, u.FullRegions, u.Regions, u.Removed, sitesChanged)
	}
	if sitesChanged {
		s.sendSites(now, ups)
	}
	for _, p := range s.resync {
		if !p.needFull || s.peers[p.id] != p {
			continue
		}
		p.needFull = false
		if p.canResend() {
			// every update it lacks is still logged: send them again
			for i := range p.log {
				s.stats.Resent++
				s.send(p.id, &p.log[i])
			}
			p.lastSend = now
			continue
		}
		s.stats.Resyncs++
		s.stats.NodeUpdates++
		var views []*event.ViewInfo
		for _, g := range s.idx.Groups(p.id) {
			if v := s.idx.View(g); v != nil {
				views = append(views, v)
			}
		}
		regions, _ := s.idx.RegionsOf(p.id)
		s.sendUpdate(p, now, true, views, true, regions, nil, s.sitesSeen)
	}
	s.resync = s.resync[:0]
}

// sendUpdate sends one update to p, in parts of at most MaxEntries ids.
func (s *Service) sendUpdate(p *peer, now event.Time, full bool, views []*event.ViewInfo, fullRegions bool, regions []*event.RegionView, removed []event.RegionID, sites bool) {
	m := &s.out
	*m = wireMsg{T: msgUpdate, Full: full, FullRegions: fullRegions, Removed: removed}
	cost := len(removed)
	if sites {
		m.HasSites, m.Sites = true, s.sites
		for _, sv := range s.sites {
			cost += 2 + len(sv.Members)
		}
	}
	if full {
		p.log, p.logCost = p.log[:0], 0 // it starts over from this one
	}
	flush := func(more bool) {
		p.sent++
		m.Seq = p.sent
		m.More = more
		if more {
			s.stats.SplitParts++
		}
		s.send(p.id, m)
		s.keep(p, m)
		*m = wireMsg{T: msgUpdate}
		cost = 0
	}
	for _, v := range views {
		c := 2 + len(v.Members) + len(v.Joined) + len(v.Left)
		if cost > 0 && cost+c > s.cfg.MaxEntries {
			flush(true)
		}
		m.Views = append(m.Views, v)
		cost += c
	}
	for _, r := range regions {
		c := 2 + len(r.Groups) + len(r.Members)
		if cost > 0 && cost+c > s.cfg.MaxEntries {
			flush(true)
		}
		m.Regions = append(m.Regions, r)
		cost += c
	}
	flush(false)
	p.lastSend = now
}

// keep logs an update packet just sent, within the service's bounds (the
// oldest go first: a node that lost one of those gets a full update). Its
// slices are not reused by the service (each part starts from a fresh
// wireMsg), so a shallow copy is safe.
func (s *Service) keep(p *peer, m *wireMsg) {
	if s.cfg.UpdateLog < 0 {
		return
	}
	p.log = append(p.log, *m)
	p.logCost += entries(m) + 1
	for len(p.log) > s.cfg.UpdateLog || (p.logCost > 4*s.cfg.MaxEntries && len(p.log) > 1) {
		p.logCost -= entries(&p.log[0]) + 1
		p.log[0] = wireMsg{}
		p.log = p.log[1:]
	}
}

// canResend reports whether every update the node lacks is still logged.
func (p *peer) canResend() bool {
	n := len(p.log)
	return n > 0 && p.log[0].Seq == p.applied+1 && p.log[n-1].Seq == p.sent
}

// trimLog forgets the logged updates the node has applied.
func (p *peer) trimLog() {
	i := 0
	for i < len(p.log) && p.log[i].Seq <= p.applied {
		p.logCost -= entries(&p.log[i]) + 1
		p.log[i] = wireMsg{}
		i++
	}
	p.log = p.log[i:]
	if len(p.log) == 0 {
		p.log, p.logCost = nil, 0
	}
}

func (s *Service) send(to event.NodeID, m *wireMsg) {
	s.stats.Packets++
	s.cfg.Send(to, s.codec.encode(m))
}

func (s *Service) logf(format string, args ...any) {
	if s.cfg.Log != nil {
		s.cfg.Log(format, args...)
	}
}

// short prints a node list, eliding the middle of long ones.
func short(ns []event.NodeID) string {
	if len(ns) <= 8 {
		return fmt.Sprint(ns)
	}
	return fmt.Sprintf("%v ... %v (%d)", ns[:4], ns[len(ns)-2:], len(ns))
}
