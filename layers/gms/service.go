package gms

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/membership"
)

// ServiceConfig sets up a membership Service.
type ServiceConfig struct {
	// ViewInterval is the shortest time between two view installations:
	// changes that arrive in between are batched into the next one (QSM
	// 2005 section 2.1: changes at a predefined maximum rate).
	ViewInterval time.Duration
	// FDTimeout is how long a node may stay silent before it is declared
	// failed, for nodes whose heartbeats declare no timeout of their own.
	FDTimeout time.Duration
	// MaxEntries bounds the node ids and group ids carried by one update
	// packet; a larger update is split into parts (default 8000, about 40 KB).
	MaxEntries int
	// Send transmits one membership packet to a node. payload is valid only
	// during the call. Required.
	Send func(to event.NodeID, payload []byte)
	// Log, if set, receives one line per view installed and per node that
	// joined the system, failed or left.
	Log func(format string, args ...any)
}

// ServiceStats counts what a Service did.
type ServiceStats struct {
	Commits      int64 // view installations (batches)
	Views        int64 // group views installed
	NodeUpdates  int64 // per-node updates sent (each may take several packets)
	Packets      int64 // membership packets sent
	Resyncs      int64 // full state updates sent after a node fell behind
	SplitParts   int64 // update packets followed by another part of the same update
	Failed       int64 // nodes declared failed by the failure detector
	RemovedSent  int64 // "you were removed" notices sent
	Malformed    int64 // packets that could not be decoded
	Unexpected   int64 // well-formed packets of a type a service does not take
	LastAffected int   // nodes updated by the last installation
}

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
	// lists holds the live peers in heard order, one list per failure
	// timeout, so the next deadline is always at the head of a list.
	lists map[time.Duration]*peerList

	dirty      bool
	commitAt   event.Time
	lastCommit event.Time
	resync     []*peer

	codec *codecState
	in    wireMsg
	out   wireMsg
	stats ServiceStats
}

// peer is what the service knows about one live node.
type peer struct {
	id       event.NodeID
	inc      uint64        // the node's incarnation
	lastReq  uint64        // highest request applied
	heard    event.Time    // last packet from it
	timeout  time.Duration // its failure timeout
	sent     uint64        // last update sequence number sent
	lastSend event.Time
	needFull bool
	list     *peerList
	prev     *peer
	next     *peer
}

type peerList struct{ head, tail *peer }

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

// NewService makes a service with no members.
func NewService(cfg ServiceConfig) (*Service, error) {
	if cfg.Send == nil {
		return nil, fmt.Errorf("gms: ServiceConfig.Send is nil")
	}
	if cfg.ViewInterval < 0 || cfg.FDTimeout <= 0 {
		return nil, fmt.Errorf("gms: view interval %v must be >= 0 and failure timeout %v > 0", cfg.ViewInterval, cfg.FDTimeout)
	}
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = 8000
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

// Next is when the service next needs Tick: the earliest failure deadline or
// the pending view installation.
func (s *Service) Next() event.Time {
	t := event.Never
	if s.dirty {
		t = s.commitAt
	}
	for _, l := range s.lists {
		if l.head != nil {
			if d := l.head.heard.Add(l.head.timeout); d < t {
				t = d
			}
		}
	}
	return t
}

// Tick runs the failure detector and installs pending changes that are due.
func (s *Service) Tick(now event.Time) {
	// In timeout order, so that runs repeat exactly.
	for _, d := range slices.Sorted(maps.Keys(s.lists)) {
		l := s.lists[d]
		for l.head != nil && now >= l.head.heard.Add(l.head.timeout) {
			p := l.head
			s.stats.Failed++
			s.logf("%v failed: silent since %v (timeout %v); removing it from %d groups", p.id, p.heard, p.timeout, len(s.idx.Groups(p.id)))
			s.drop(p, now)
			s.send(p.id, &wireMsg{T: msgRemoved})
			s.stats.RemovedSent++
		}
	}
	if s.dirty && now >= s.commitAt {
		s.commit(now)
	}
}

// Receive handles one membership packet from node from. A malformed packet
// is counted and its error returned; nothing else happens.
func (s *Service) Receive(now event.Time, from event.NodeID, b []byte) error {
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
		p := s.peers[from]
		if p == nil && m.Member {
			// It believes it is in groups we do not know it in: we
			// removed it (wrongly, since it is alive) or we restarted.
			// It must join again. No record yet, so the notice repeats
			// until its joins arrive.
			s.send(from, &wireMsg{T: msgRemoved})
			s.stats.RemovedSent++
			return nil
		}
		p = s.hear(now, from, m)
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
		if m.Seq > p.lastReq {
			p.lastReq = m.Seq
			changed := false
			for _, g := range m.Leave {
				changed = s.idx.Leave(from, g) || changed
			}
			for _, g := range m.Join {
				changed = s.idx.Join(from, g) || changed
			}
			if changed {
				s.schedule(now)
			}
		}
		s.send(from, &wireMsg{T: msgAck, Seq: m.Seq})
	case msgBye:
		if p := s.peers[from]; p != nil && p.inc == m.Inc {
			s.logf("%v leaves the system; removing it from %d groups", from, len(s.idx.Groups(from)))
			s.drop(p, now)
		}
	default:
		s.stats.Unexpected++
		return fmt.Errorf("%w: a service does not take %v packets (from %v)", ErrMalformed, m.T, from)
	}
	return nil
}

// hear records a packet from a node, creating or renewing its record.
func (s *Service) hear(now event.Time, from event.NodeID, m *wireMsg) *peer {
	timeout := s.cfg.FDTimeout
	if m.T == msgHeartbeat && m.Timeout > 0 {
		timeout = time.Duration(m.Timeout)
	}
	p := s.peers[from]
	if p != nil && p.inc != m.Inc {
		// A new life of the same node: the old one failed.
		s.logf("%v restarted; removing its previous life from %d groups", from, len(s.idx.Groups(from)))
		s.drop(p, now)
		p = nil
	}
	if p == nil {
		p = &peer{id: from, inc: m.Inc, timeout: timeout, lastSend: now}
		s.peers[from] = p
		s.logf("%v is up", from)
	}
	if p.list != nil {
		p.list.remove(p)
	}
	if m.T == msgHeartbeat && m.Timeout > 0 {
		p.timeout = timeout
	}
	l := s.lists[p.timeout]
	if l == nil {
		l = &peerList{}
		s.lists[p.timeout] = l
	}
	p.heard = now
	p.list = l
	l.pushBack(p)
	return p
}

// drop forgets a node and takes it out of every group.
func (s *Service) drop(p *peer, now event.Time) {
	p.list.remove(p)
	p.list = nil
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
	if s.cfg.Log != nil {
		for _, v := range c.Views {
			s.logf("view %v#%d: %d members %v joined %v left %v", v.Group, v.ID, len(v.Members), short(v.Members), short(v.Joined), short(v.Left))
		}
	}
	for _, u := range ups {
		p := s.peers[u.Node]
		if p == nil || p.needFull {
			continue // gone, or about to get everything below
		}
		s.stats.NodeUpdates++
		s.sendUpdate(p, now, false, u.Views, u.FullRegions, u.Regions, u.Removed)
	}
	for _, p := range s.resync {
		if !p.needFull || s.peers[p.id] != p {
			continue
		}
		p.needFull = false
		s.stats.Resyncs++
		s.stats.NodeUpdates++
		var views []*event.ViewInfo
		for _, g := range s.idx.Groups(p.id) {
			if v := s.idx.View(g); v != nil {
				views = append(views, v)
			}
		}
		regions, _ := s.idx.RegionsOf(p.id)
		s.sendUpdate(p, now, true, views, true, regions, nil)
	}
	s.resync = s.resync[:0]
}

// sendUpdate sends one update to p, in parts of at most MaxEntries ids.
func (s *Service) sendUpdate(p *peer, now event.Time, full bool, views []*event.ViewInfo, fullRegions bool, regions []*event.RegionView, removed []event.RegionID) {
	m := &s.out
	*m = wireMsg{T: msgUpdate, Full: full, FullRegions: fullRegions, Removed: removed}
	cost := len(removed)
	flush := func(more bool) {
		p.sent++
		m.Seq = p.sent
		m.More = more
		if more {
			s.stats.SplitParts++
		}
		s.send(p.id, m)
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
