package tokenring

import (
	"maps"
	"slices"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// region is the node's own region (receiver side): its partitions, the
// token's path, and a receive stream per sender.
type region struct {
	id       event.RegionID
	ch       event.ChannelID
	view     uint64
	joinView uint64 // the first view of the region this node held
	members  []event.NodeID
	groups   map[event.GroupID]bool
	// p partitions; this node is in partition part, at position pos of
	// it. parts[j] is partition j's members, leader first.
	p, part, pos uint32
	parts        [][]event.NodeID
	// rot[j] moves this node's pulls from partition j on to the next
	// member (pullPeer).
	rot []int
	// path is one round of the token: each partition's members in order,
	// then its leader again (where the partition's loop ends). hopPart[h]
	// is the partition of hop h; start[j] and finish[j] are partition j's
	// first and last hops.
	path          []event.NodeID
	hopPart       []uint32
	start, finish []int

	streams map[event.NodeID]*stream
	order   []*stream // by sender: deterministic iteration

	// timer makes the tokens at the region leader (or the member acting
	// for it) and is a watchdog elsewhere; tokenAt is when a token of the
	// current view last came.
	timer   *stack.Timer
	tokenAt event.Time
	round   uint32 // last round made (region leader)
	done    uint32 // last round completed (region leader)
	// owed: the interval passed while round was out; the next token is
	// made when it completes. lastRound is how long the last completed
	// round took.
	owed      bool
	lastRound time.Duration
	// madeAt[n % len] is when round n was made (rounds overlap only when
	// one is taken for lost, roundLost).
	madeAt [64]event.Time
	// last holds, at the region leader, the previous completed round's
	// results per sender; lastOrder its senders in order.
	last      map[event.NodeID]lastRec
	lastOrder []event.NodeID
	// floorAsk holds when this node last asked a sender for its floor in
	// a group (floorMsg), until answered; at most maxFloorAsks.
	floorAsk map[groupMember]event.Time
}

// maxFloorAsks bounds the floor queries a node has outstanding (past it,
// they are forgotten, and asked again as packets come).
const maxFloorAsks = 4096

// lastRec is what the region leader keeps from a round for the next: the
// cutoff, the purge point and each partition's union of NAK sets.
type lastRec struct {
	c, p uint32
	au   [][]uint32
	al   []uint32
}

// leader is the region leader.
func (r *region) leader() event.NodeID { return r.parts[0][0] }

// acting is the member that makes the region's tokens and completes their
// rounds: the first on the token's path that this node does not take for
// silent (the leader, unless it stopped answering).
func (l *Layer) acting(r *region) event.NodeID {
	for _, n := range r.path {
		if n == l.self || !l.silent(n) {
			return n
		}
	}
	return r.leader()
}

// has reports whether n is a member of the region's current view.
func (r *region) has(n event.NodeID) bool {
	_, ok := slices.BinarySearch(r.members, n)
	return ok
}

// newRegion makes the node's own region from its view.
func (l *Layer) newRegion(rv *event.RegionView) *region {
	r := &region{id: rv.Region, ch: l.Ctx.Channel(event.RegionChannel, uint32(rv.Region)), joinView: rv.ID,
		streams: map[event.NodeID]*stream{}, last: map[event.NodeID]lastRec{}, floorAsk: map[groupMember]event.Time{}}
	r.timer = l.Ctx.NewTimer(func() { l.makeToken(r) })
	l.setView(r, rv)
	return r
}

// setView rebuilds partitions and the token's path for a new region view.
// Tokens of the old view die where they arrive (their view differs).
func (l *Layer) setView(r *region, rv *event.RegionView) {
	r.view = rv.ID
	r.members = rv.Members
	r.groups = make(map[event.GroupID]bool, len(rv.Groups))
	for _, g := range rv.Groups {
		r.groups[g] = true
	}
	n := len(rv.Members)
	p := max(1, n/l.cfg.Replicas)
	r.p = uint32(p)
	r.parts = make([][]event.NodeID, p)
	r.rot = make([]int, p)
	for k, m := range rv.Members {
		if m == l.self {
			r.part, r.pos = uint32(k%p), uint32(len(r.parts[k%p]))
		}
		r.parts[k%p] = append(r.parts[k%p], m)
	}
	r.path, r.hopPart = r.path[:0], r.hopPart[:0]
	r.start, r.finish = make([]int, p), make([]int, p)
	for j, ms := range r.parts {
		r.start[j] = len(r.path)
		for _, m := range ms {
			r.path = append(r.path, m)
			r.hopPart = append(r.hopPart, uint32(j))
		}
		r.finish[j] = len(r.path)
		r.path = append(r.path, ms[0])
		r.hopPart = append(r.hopPart, uint32(j))
	}
	// Results of rounds over the old view are still right about the
	// packets (only members left or came), so the leader keeps them; a new
	// leader starts afresh.
	r.done, r.owed = r.round, false // the old view's token dies where it arrives
	if l.acting(r) == l.self {
		if len(r.last) > 0 || l.unstable(r) {
			r.timer.Reset(l.cfg.Interval)
		}
	} else {
		r.timer.Stop()
		clear(r.last)
		r.lastOrder = r.lastOrder[:0]
	}
}

// unstable reports whether some stream has data the region has not
// purged yet.
func (l *Layer) unstable(r *region) bool {
	for _, s := range r.order {
		if s.high > s.lastP {
			return true
		}
	}
	return false
}

// release frees the region's caches and stops its timer.
func (r *region) release(l *Layer) {
	r.timer.Stop()
	for _, s := range r.order {
		s.release(l)
	}
	clear(r.streams)
	r.order = nil
}

// stream returns the receive stream of sender s, making it with floor
// floor if new.
func (l *Layer) stream(r *region, s event.NodeID, floor uint32) *stream {
	if st := r.streams[s]; st != nil {
		return st
	}
	st := newStream(s, max(1, floor), l.cfg.Window)
	r.streams[s] = st
	i, _ := slices.BinarySearchFunc(r.order, s, func(a *stream, b event.NodeID) int { return int(a.sender) - int(b) })
	r.order = slices.Insert(r.order, i, st)
	return st
}

// install takes a new neighbourhood: the regions each group spans (sender
// side) and the node's own region (receiver side).
func (l *Layer) install(nb *event.Neighbourhood) {
	l.nb = nb
	rejoined := l.noteViews(nb)
	clear(l.spans)
	seen := make(map[event.RegionID]bool, len(nb.Regions))
	for i := range nb.Regions {
		rv := &nb.Regions[i]
		o := l.out[rv.Region]
		switch {
		case o == nil:
			// A region that comes back is numbered on from where it was
			// left, its members told that everything before is given up
			// (flagFresh): their streams of this sender may have outlived
			// its absence, and took new packets numbered from 1 again for
			// old ones (qsm-gms soak seeds 76, 96).
			next := max(1, l.resume[rv.Region])
			delete(l.resume, rv.Region)
			o = &outRegion{id: rv.Region, ch: l.Ctx.Channel(event.RegionChannel, uint32(rv.Region)),
				view: rv.ID, members: rv.Members, next: next, vbase: next, acked: next - 1, fresh: next > 1,
				gvbase: map[event.GroupID]uint32{}, sview: uint32(rv.ID)}
			o.hist = []stretchRec{{view: uint32(rv.ID), vbase: next, g: o.gvbase}}
			o.probe = l.Ctx.NewTimer(func() { l.probeFire(o) })
			l.out[rv.Region] = o
		case o.view != rv.ID || slices.ContainsFunc(rv.Members, func(m event.NodeID) bool { return rejoined[m] }):
			for _, m := range rv.Members {
				// A member gms removed and readmitted may come back to a
				// region of the same id and view id (the region was made
				// anew): it is a newcomer all the same (qsm-gms soak seed
				// 162: its stream began at the old view base, and fifo
				// waited for casts from before its readmission).
				if !slices.Contains(o.members, m) || rejoined[m] {
					if o.next > o.vbase { // the stretch ending had packets: it is the previous one now
						o.pview, o.pvbase, o.pgvbase = o.sview, o.vbase, o.gvbase
						o.gvbase = map[event.GroupID]uint32{}
						if len(o.hist) >= maxStretches {
							o.hist = slices.Delete(o.hist, 0, 1)
						}
						o.hist = append(o.hist, stretchRec{})
					}
					o.vbase = o.next // a newcomer is owed what is sent from here on
					clear(o.gvbase)  // and of each group, from the next packet
					o.sview = uint32(rv.ID)
					// (an empty stretch ending is merged into this one)
					o.hist[len(o.hist)-1] = stretchRec{view: o.sview, vbase: o.vbase, g: o.gvbase}
					o.fresh = false // the packets below vbase are still owed to the others
					// The front cast, if it went here in the old view, goes
					// again: the newcomer (moved from a region the cast had
					// not reached) is owed it; the others' fifo drops the
					// copy by its group number (qsm-gms soak seed 78).
					l.frontSent = slices.DeleteFunc(l.frontSent, func(x *outRegion) bool { return x == o })
					break
				}
			}
			if rejoined[l.self] {
				// Readmitted itself: fifo above every member starts its
				// stream afresh at the readmitting view, and nothing cast
				// before is owed to anyone, so no previous stretch
				// (receivers that joined the region before would take it
				// for theirs, and wait for packets long purged).
				o.pview, o.pvbase, o.pgvbase = 0, 0, nil
				o.hist = o.hist[len(o.hist)-1:]
			}
			if o.pview == uint32(rv.ID) && o.sview == uint32(rv.ID) {
				// The previous stretch began in a view of the same id as
				// this one: the region was made anew (same id, same view
				// id) and a member came back to it. Its receivers, which
				// tell a stretch owed to them by its view (not before the
				// one they joined in), would take it for theirs: a
				// readmitted member began its senders' group streams at
				// the old stretch's base, and fifo waited to the end for
				// casts from before its readmission (qsm-gms soak seed
				// 367: 67 owed deliveries held). So no previous stretch.
				o.pview, o.pvbase, o.pgvbase = 0, 0, nil
				o.hist = o.hist[len(o.hist)-1:]
			}
			o.view, o.members = rv.ID, rv.Members
		}
		seen[rv.Region] = true
		for _, g := range rv.Groups {
			if _, mine := slices.BinarySearch(nb.Groups, g); mine {
				l.spans[g] = append(l.spans[g], o)
			}
		}
	}
	if l.sendQ.Len() > 0 {
		l.sendQ.Front().next = 0 // frontSent says where it went
	}
	for _, id := range slices.Sorted(maps.Keys(l.out)) {
		if !seen[id] {
			l.handOver(l.out[id])
			l.out[id].release(l)
			delete(l.out, id)
		}
	}
	if nb.Own < 0 || nb.Own >= len(nb.Regions) {
		l.dropOwn()
	} else {
		rv := &nb.Regions[nb.Own]
		switch {
		case l.own == nil || l.own.id != rv.Region:
			l.dropOwn()
			l.own = l.newRegion(rv)
			if err := l.Ctx.Subscribe(l.own.ch); err != nil && l.Ctx.Logging() {
				l.Ctx.Logf("subscribe %v: %v", l.own.ch, err)
			}
		case l.own.view != rv.ID:
			l.setView(l.own, rv)
		}
		l.pruneStreams(l.own, rejoined)
	}
	l.prunePeers()
	l.feed.Ready() // casts queued for a group whose regions just became known
}

// dropOwn leaves the node's own region.
func (l *Layer) dropOwn() {
	if l.own == nil {
		return
	}
	l.own.release(l)
	_ = l.Ctx.Unsubscribe(l.own.ch)
	l.own = nil
}

// pruneStreams drops the streams of senders that are in none of the
// region's groups any more (they left, or gms removed them), and of those
// the views list as (re)joined one of the node's groups: a sender readmitted
// without this node seeing its removal may be a new process numbering from
// 1 again, and its old stream held the new packets for duplicates while
// the purge point it last saw (in the old numbering) raised the token's.
func (l *Layer) pruneStreams(r *region, rejoined map[event.NodeID]bool) {
	keep := r.order[:0]
	for _, s := range r.order {
		if l.inRegionGroups(r, s.sender) && (s.sender == l.self || !rejoined[s.sender]) {
			keep = append(keep, s)
			continue
		}
		s.release(l)
		delete(r.streams, s.sender)
		delete(r.last, s.sender)
		if i := slices.Index(r.lastOrder, s.sender); i >= 0 {
			r.lastOrder = slices.Delete(r.lastOrder, i, i+1)
		}
	}
	clear(r.order[len(keep):])
	r.order = keep
}

// inRegionGroups reports whether n is a member of one of r's groups.
func (l *Layer) inRegionGroups(r *region, n event.NodeID) bool {
	for g := range r.groups {
		if v := l.nb.Views[g]; v != nil && v.Has(n) {
			return true
		}
	}
	return false
}

// isMember reports whether n is a member of g in the node's views.
func (l *Layer) isMember(g event.GroupID, n event.NodeID) bool {
	if l.nb == nil {
		return false
	}
	v := l.nb.Views[g]
	return v != nil && v.Has(n)
}

// dataUp takes a regional data packet: first multicast, a sender's
// retransmission, or a peer's push or pull answer.
func (l *Layer) dataUp(ev *event.Event) {
	m := ev.Msg
	h, err := parseData(m.Bytes())
	if err != nil {
		l.drop(ev)
		return
	}
	r := l.own
	g, s := event.GroupID(h.group), event.NodeID(h.sender)
	if r == nil || event.RegionID(h.region) != r.id || !r.groups[g] || !l.isMember(g, s) ||
		(ev.Kind == event.Send && !r.has(ev.Peer)) || (ev.Kind == event.Cast && ev.Peer != s) {
		l.c.Foreign.Inc()
		m.Release()
		return
	}
	if uint64(h.gview) > l.nb.Views[g].ID {
		// Cast in a view of g this node has not installed: not handed up
		// nor recorded (views.go).
		l.c.AheadOfView.Inc()
		m.Release()
		return
	}
	if s == l.self { // our own packet, pushed or pulled back to cache it
		l.c.Duplicates.Inc()
		if st := r.streams[s]; st != nil && h.seq%r.p == r.part && st.lacksCached(h.seq) {
			st.put(l, h.seq, m)
			return
		}
		m.Release()
		return
	}
	floor, gfloor := h.seq, h.gseq
	if uint64(h.view) >= r.joinView {
		floor, gfloor = h.vbase, h.gvbase
		if h.pview != 0 && uint64(h.pview) >= r.joinView {
			// The stretch before this packet's began in or after the view
			// this node joined in: it is owed that stretch as well (the
			// packets of it all missed this node, and another view brought
			// members before the first packet came).
			floor, gfloor = h.pvbase, h.pgvbase
		}
	}
	if h.pview != 0 && uint64(h.pview) > r.joinView && uint64(h.view) >= r.joinView {
		// The header names the stretch before this packet's, and that
		// began after the view this node joined in: stretches between may
		// be owed to it too, and the header cannot say where they began.
		// Unless the group's floor is known (answered, or taken from a
		// packet handed up before), the sender is asked (floorUp), and the
		// packet dropped unrecorded: the region recovers it once the
		// stream begins at the floor owed.
		gf, ok := uint32(0), false
		if st := r.streams[s]; st != nil {
			gf, ok = st.gfloor[g]
		}
		if !ok {
			l.askFloor(r, s, g)
			l.c.FloorWaits.Inc()
			m.Release()
			return
		}
		floor, gfloor = 0, gf
	}
	st := l.stream(r, s, floor)
	if h.flags&flagFresh != 0 && st.next < h.vbase {
		// The sender numbers anew from vbase and gave up what is below.
		l.c.Skipped.Add(int64(st.purge(l, h.vbase-1)))
	}
	now := l.Ctx.Now()
	switch res := st.receive(h.seq, now); res {
	case rxDup:
		l.c.Duplicates.Inc()
		if h.seq%r.p == r.part && st.lacksCached(h.seq) {
			st.put(l, h.seq, m) // received before the partitions were rebuilt; cache it now
			return
		}
		m.Release()
		return
	case rxOut:
		l.c.OutOfWindow.Inc()
		m.Release()
		return
	case rxGap:
		l.c.LossDiscovered.Add(int64(st.lastGap))
	}
	if h.seq%r.p == r.part {
		st.put(l, h.seq, m.Clone())
	}
	at, wasLost := st.lost[h.seq]
	delete(st.lost, h.seq)
	// A packet sent again (by the sender or a peer) recovers a loss; one
	// a layer below recovered (lec) keeps that layer's mark; the first
	// copy arriving late recovers nothing.
	if h.flags&flagAgain != 0 && m.Recovery.By == "" {
		by := "tokenring"
		if ev.Kind == event.Cast {
			by = "tokenring-sender"
			l.c.RecoveredAgain.Inc()
		}
		l.c.Recovered.Inc()
		m.Recovery = event.Recovery{By: by}
		if wasLost {
			d := int64(now - at)
			l.c.RecoveryNs.Add(d)
			l.c.RecoveredTimed.Inc()
			l.c.RecoveryRoundsM.Add(d * 1000 / int64(l.cfg.Interval))
			m.Recovery.Discovered = at
		}
	}
	l.rc.received()
	if !r.timer.Pending() {
		r.timer.Reset(l.cfg.Interval) // a token, or the watchdog
	}
	if !l.owed(g, s, h.gview) {
		// Cast in a view of g before the sender's or this node's last
		// (re)admission (views.go): not owed, and a node readmitted after
		// a removal may have delivered it already in its earlier
		// membership. The stream records it (the token's NAK sets stay
		// right), but it does not go up. Not the region's view: numbered
		// in a view of the region before this node joined it, by a
		// sender that learnt late of its move (it joined another group),
		// a cast of g it was owed by g's view went nowhere else, and was
		// lost (qsm-gms soak --quick seed 5071: 16 owed deliveries).
		l.c.Foreign.Inc()
		m.Release()
		return
	}
	if _, ok := st.gfloor[g]; !ok {
		st.gfloor[g] = gfloor // what the layers above began the group's stream at
	}
	_, _ = m.Consume(dataHeaderSize)
	l.c.Delivered.Inc()
	l.Ctx.Up(&event.Event{Kind: event.Cast, Group: g, Peer: s, Msg: m, Seq: h.gseq, Start: gfloor})
}

// cacheOwn caches the node's own packet seq if its partition caches it.
func (r *region) cacheOwn(l *Layer, seq uint32, m *event.Message) {
	st := r.streams[l.self]
	if st != nil && seq%r.p == r.part && st.lacksCached(seq) {
		m.Retain()
		st.put(l, seq, m)
	}
}

// recordOwn records the node's own packet seq in its own region, as if
// received (its partition may cache it).
func (r *region) recordOwn(l *Layer, seq uint32, m *event.Message) {
	st := l.stream(r, l.self, seq)
	st.receive(seq, l.Ctx.Now())
	l.rc.received() // the sender receives its own packets at the rate it sends
	r.cacheOwn(l, seq, m)
	if !r.timer.Pending() {
		r.timer.Reset(l.cfg.Interval) // a token, or the watchdog
	}
}

// askFloor asks sender s where this node is owed its packets of group g
// from (floorMsg), at most once an interval while unanswered.
func (l *Layer) askFloor(r *region, s event.NodeID, g event.GroupID) {
	k := groupMember{g, s}
	now := l.Ctx.Now()
	if at, ok := r.floorAsk[k]; ok && now-at < event.Time(l.cfg.Interval) {
		return
	}
	if len(r.floorAsk) >= maxFloorAsks {
		clear(r.floorAsk)
	}
	r.floorAsk[k] = now
	l.sendBody(s, tFloor, &floorMsg{R: uint32(r.id), S: uint32(s), G: uint32(g), J: uint32(r.joinView)})
}

// floorUp takes a floor query (at the sender) or its answer (at the
// newcomer that asked).
func (l *Layer) floorUp(ev *event.Event) {
	var m floorMsg
	err := l.wc.Decode(ev.Msg.Bytes()[1:], &m)
	ev.Msg.Release()
	if err == nil {
		err = m.check()
	}
	if err != nil {
		l.c.Malformed.Inc()
		return
	}
	if m.F == 0 {
		o := l.out[event.RegionID(m.R)]
		if m.S != uint32(l.self) || o == nil || !o.has(ev.Peer) {
			l.c.Foreign.Inc()
			return
		}
		m.F, m.GF = l.floorOf(o, event.GroupID(m.G), m.J)
		l.sendBody(ev.Peer, tFloor, &m)
		return
	}
	r := l.own
	if r == nil || event.RegionID(m.R) != r.id || ev.Peer != event.NodeID(m.S) || uint64(m.J) != r.joinView {
		l.c.Foreign.Inc()
		return
	}
	k := groupMember{event.GroupID(m.G), event.NodeID(m.S)}
	if _, asked := r.floorAsk[k]; !asked {
		return // answered already, or a stale answer
	}
	delete(r.floorAsk, k)
	st := l.stream(r, event.NodeID(m.S), m.F)
	if _, ok := st.gfloor[k.g]; !ok {
		st.gfloor[k.g] = m.GF
	}
}

// floorOf is where a member that joined region o in view j is owed the
// sender's packets from: the first sequence number of the first stretch
// begun in a view not before j (the current one if none is: the region
// was made anew), and the first group sequence number of g from there on
// (the next one g gets here if none was sent yet).
func (l *Layer) floorOf(o *outRegion, g event.GroupID, j uint32) (uint32, uint32) {
	i := slices.IndexFunc(o.hist, func(s stretchRec) bool { return s.view >= j })
	if i < 0 {
		i = len(o.hist) - 1
	}
	for _, s := range o.hist[i:] {
		if gb := s.g[g]; gb != 0 {
			return o.hist[i].vbase, gb
		}
	}
	next := max(1, l.gnext[g])
	if l.sendQ.Len() > 0 {
		if q := l.sendQ.Front(); q.g == g && q.gseq != 0 && !slices.Contains(l.frontSent, o) {
			next = q.gseq // numbered, not sent here yet
		}
	}
	return o.hist[i].vbase, next
}
