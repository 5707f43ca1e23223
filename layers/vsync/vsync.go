package vsync

import (
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/ring"
	"github.com/layercast/layercast/internal/wirecodec"
	"github.com/layercast/layercast/stack"
)

// Config is the layer's configuration (see register.go for the documented
// parameters).
type Config struct {
	// MaxBytes bounds what the layer holds per group: delivered messages
	// kept until stable, old-view messages waiting for the cut, new-view
	// messages waiting for the view, casts waiting for the flush to end.
	MaxBytes int64
	// StableInterval is how often members gossip how far they delivered,
	// while something is kept.
	StableInterval time.Duration
	// FlushTimeout bounds a flush that stopped moving: once no report and
	// no old-view cast arrived for this long, the view is installed with
	// what the node has (counted in flush_timeouts; the soak shows none).
	FlushTimeout time.Duration
}

// Layer is the vsync layer of one node.
type Layer struct {
	stack.Base
	cfg    Config
	self   event.NodeID
	groups map[event.GroupID]*group
	wc     *wirecodec.Codec
	c      counters
	held   int64 // bytes held over every group
	kept   int64 // bytes of delivered messages kept for re-sending, over every group
}

// group is one group's state at this node.
type group struct {
	id   event.GroupID
	view *event.ViewInfo // the view the application has (nil: none yet)
	tag  uint32          // uint32(view.ID)
	// prev is the tag of the view installed before view: casts tagged
	// between prev and tag belong to views this node skipped.
	prev uint32
	// joinTag is the tag of the view in which this node last (re)joined.
	joinTag uint32

	peers map[event.NodeID]*peer

	// flush state
	target     *event.ViewInfo            // the view being flushed to (nil: not flushing)
	later      []*event.ViewInfo          // views that arrived during the flush, in order
	since      event.Time                 // when the flush began
	moved      event.Time                 // when the flush last made progress (a report, an old-view cast arrived)
	told       event.Time                 // when this node last cast its report in the flush
	reports    map[event.NodeID][]*report // per member, its reports for targets not installed yet, oldest first
	cutKnown   bool
	cut        map[event.NodeID]uint32       // per old-view sender: the most a survivor delivered
	low        map[event.NodeID]uint32       // and the least
	holder     map[event.NodeID]event.NodeID // who re-sends up to the cut (NoNode: nobody needs to)
	resent     map[event.NodeID]uint32       // per sender, up to where this node re-sent in this flush
	waiting    []held                        // old-view arrivals during the flush not delivered yet (after our report and before the cut, past the cut, or out of order)
	checking   bool                          // tryInstall is running (a delivery it makes calls it back)
	again      bool                          // and was called back meanwhile
	early      []held                        // arrivals tagged with a view not installed yet
	earlyBytes int64                         // what early holds
	timer      *stack.Timer

	ownSeq uint32                      // our casts to the group so far
	ownHi  uint32                      // our last cast in the current view (0: none)
	queue  ring.Ring[*event.Message]   // casts waiting for the flush to end
	kept   map[event.NodeID]*keptQueue // delivered messages of the current view, per sender

	blocked, belowHeld, upHeld bool

	gossip    *stack.Timer
	gossiping bool
	dirty     bool                     // delivered since the last gossip
	stab      map[event.NodeID][]entry // each member's last gossip in the view
	released  map[event.NodeID]uint32  // per sender, up to where every member delivered (let go)

}

// peer is what we know of one member's stream.
type peer struct {
	dlv  uint32 // highest sequence number delivered (0: none, or its stream restarted)
	hi   uint32 // highest delivered in the current view (0: none)
	tell bool   // we rejoined: tell the application what we missed of this stream
}

// held is a message held back with what its header said.
type held struct {
	from     event.NodeID
	tag, seq uint32
	m        *event.Message
	cost     int64
}

// kept is a delivered message kept for re-sending.
type kept struct {
	seq  uint32
	m    *event.Message
	b    []byte
	cost int64
}

type keptQueue struct {
	ring.Ring[kept]
}

// New returns a vsync layer.
func New(cfg Config) *Layer {
	return &Layer{cfg: cfg, groups: map[event.GroupID]*group{}, wc: newCodec()}
}

var (
	_ stack.Layer       = (*Layer)(nil)
	_ stack.HeaderSizer = (*Layer)(nil)
	_ stack.Closer      = (*Layer)(nil)
)

// HeaderSize implements stack.HeaderSizer.
func (l *Layer) HeaderSize() int { return maxHeader }

// Init implements stack.Layer.
func (l *Layer) Init(ctx *stack.Context) error {
	l.Ctx, l.self = ctx, ctx.Self()
	ctx.BindCounters(&l.c)
	return nil
}

func (l *Layer) groupFor(id event.GroupID) *group {
	g := l.groups[id]
	if g == nil {
		g = &group{id: id, peers: map[event.NodeID]*peer{}, reports: map[event.NodeID][]*report{},
			cut: map[event.NodeID]uint32{}, low: map[event.NodeID]uint32{}, released: map[event.NodeID]uint32{}, holder: map[event.NodeID]event.NodeID{}, resent: map[event.NodeID]uint32{}, kept: map[event.NodeID]*keptQueue{}}
		g.timer = l.Ctx.NewTimer(func() { l.flushTimeout(g) })
		g.gossip = l.Ctx.NewTimer(func() { l.gossipTick(g) })
		l.groups[id] = g
	}
	return g
}

func (g *group) peerFor(id event.NodeID) *peer {
	p := g.peers[id]
	if p == nil {
		p = &peer{}
		g.peers[id] = p
	}
	return p
}

// hold adds d bytes to what the layer holds.
func (l *Layer) hold(d int64) {
	l.held += d
	l.c.Bytes.Set(l.held)
	l.c.Peak.Max(l.held)
}

// Down implements stack.Layer.
func (l *Layer) Down(ev *event.Event) {
	switch {
	case ev.Kind == event.Cast && ev.Control:
		ev.Msg.Prepend(1)[0] = tPass
		l.Ctx.Down(ev)
	case ev.Kind == event.Cast && ev.Peer == event.NoNode:
		l.castDown(ev)
	default:
		l.Ctx.Down(ev)
	}
}

// castDown numbers an application cast and sends it, or queues it while
// the group flushes (or has no view yet): never dropped.
func (l *Layer) castDown(ev *event.Event) {
	g := l.groupFor(ev.Group)
	if g.view == nil || !g.view.Has(l.self) || g.target != nil || g.queue.Len() > 0 {
		m := ev.Msg.Compact()
		g.queue.Push(m)
		l.hold(event.HeldCost(m.Len()))
		l.c.Queued.Inc()
		l.holdOff(g)
		return
	}
	l.sendData(g, ev.Msg)
}

func (l *Layer) sendData(g *group, m *event.Message) {
	g.ownSeq++
	g.ownHi = g.ownSeq
	putData(m.Prepend(dataHeaderSize), g.tag, g.ownSeq)
	if g.view.Size() > 1 {
		// kept for re-sending should we be the one with it in a flush
		m = m.Compact()
		m.Retain()
		l.keep(g, l.self, g.ownSeq, m, m.Bytes()[dataHeaderSize:])
	}
	l.Ctx.Down(&event.Event{Kind: event.Cast, Group: g.id, Msg: m})
}

// holdOff tells the application to stop casting (once).
func (l *Layer) holdOff(g *group) {
	if !g.upHeld {
		g.upHeld = true
		l.Ctx.Up(&event.Event{Kind: event.HoldOff, Group: g.id})
	}
}

// resume lets the application cast again when nothing holds it.
func (l *Layer) resume(g *group) {
	if g.upHeld && !g.belowHeld && g.target == nil && g.queue.Len() == 0 && g.view != nil && g.view.Has(l.self) {
		g.upHeld = false
		l.Ctx.Up(&event.Event{Kind: event.Resume, Group: g.id})
	}
}

// sendQueued sends the casts that waited for the flush, in order.
func (l *Layer) sendQueued(g *group) {
	for g.queue.Len() > 0 && g.target == nil && g.view != nil && g.view.Has(l.self) {
		m := g.queue.Pop()
		l.hold(-event.HeldCost(m.Len()))
		l.sendData(g, m)
	}
	l.resume(g)
}

// Up implements stack.Layer.
func (l *Layer) Up(ev *event.Event) {
	switch ev.Kind {
	case event.Cast:
		if ev.Peer == l.self || ev.Group == event.NoGroup {
			l.Ctx.Up(ev)
			return
		}
		l.castUp(ev)
	case event.View:
		if ev.View != nil && ev.View.Group == ev.Group {
			l.viewUp(ev.View)
			return
		}
		l.Ctx.Up(ev)
	case event.HoldOff, event.Resume:
		g := l.groupFor(ev.Group)
		g.belowHeld = ev.Kind == event.HoldOff
		if g.belowHeld {
			l.holdOff(g)
		} else {
			l.resume(g)
		}
	default:
		l.Ctx.Up(ev)
	}
}

// castUp reads vsync's header and acts on it.
func (l *Layer) castUp(ev *event.Event) {
	b := ev.Msg.Bytes()
	if len(b) == 0 {
		l.Ctx.DropMalformed(ev, l.c.Malformed)
		return
	}
	switch b[0] {
	case tPass:
		if !ev.Control {
			l.Ctx.DropMalformed(ev, l.c.Malformed)
			return
		}
		_, _ = ev.Msg.Consume(1)
		l.Ctx.Up(ev)
	case tData, tResend:
		h, n, err := readHeader(b)
		if err != nil || ev.Control {
			l.Ctx.DropMalformed(ev, l.c.Malformed)
			return
		}
		from := ev.Peer
		if b[0] == tResend {
			from = h.from
			if from == l.self {
				l.c.Duplicates.Inc()
				ev.Msg.Release()
				return
			}
		}
		_, _ = ev.Msg.Consume(n)
		g := l.groupFor(ev.Group)
		l.arrive(g, held{from: from, tag: h.tag, seq: h.seq, m: ev.Msg})
	case tReport:
		r, err := decodeReport(l.wc, b[1:])
		if err != nil || ev.Control {
			l.Ctx.DropMalformed(ev, l.c.Malformed)
			return
		}
		ev.Msg.Release()
		l.reportUp(l.groupFor(ev.Group), ev.Peer, &r)
	case tStable:
		s, err := decodeStable(l.wc, b[1:])
		if err != nil {
			l.Ctx.DropMalformed(ev, l.c.Malformed)
			return
		}
		ev.Msg.Release()
		l.stableUp(l.groupFor(ev.Group), ev.Peer, &s)
	default:
		l.Ctx.DropMalformed(ev, l.c.Malformed)
	}
}

// arrive places a cast (or a cast sent again) from h.from: delivered in
// the view it was cast in, held while that view is not installed yet or
// while the flush's cut is unknown, and discarded when it belongs to a view
// this node has left behind (beyond the cut, or a view it skipped: then
// the application is told what it missed).
func (l *Layer) arrive(g *group, h held) {
	switch {
	case g.view == nil || h.tag > g.tag:
		l.holdEarly(g, h)
	case !g.view.Has(h.from) || h.from == l.self:
		l.c.NonMember.Inc()
		h.m.Release()
	case h.tag < g.tag:
		l.stale(g, h)
	case g.target != nil && (!g.cutKnown || h.seq > g.cut[h.from] || !next(g.peers[h.from], h.seq)):
		// after our report, before the cut: delivering it now could pass
		// the cut; past the cut: a later cut may take it; out of order
		// (a copy from another survivor ahead of the sender's): it waits
		if p := g.peers[h.from]; p != nil && p.dlv != 0 && h.seq <= p.dlv {
			l.c.Duplicates.Inc()
			h.m.Release()
			return
		}
		h.m = h.m.Compact()
		h.cost = event.HeldCost(h.m.Len())
		g.waiting = append(g.waiting, h)
		l.hold(h.cost)
		g.moved = l.Ctx.Now()
		if !g.cutKnown {
			// before the cut, arrivals are what the reports this node
			// waits for come behind (FIFO); after it, one past the cut or
			// out of order brings it no nearer
			l.stillCatchingUp(g)
		}
	default:
		was := l.hiOf(g, h.from)
		l.deliver(g, h)
		if g.target != nil {
			g.moved = l.Ctx.Now()
			l.tryInstall(g)
			if l.hiOf(g, h.from) > was {
				l.stillCatchingUp(g)
			}
		}
	}
}

// stillCatchingUp casts this node's report again when old-view casts keep
// bringing it nearer the end of its flush (delivered, or, before the cut is
// known, arriving ahead of the reports it waits for) and it has not
// reported for a third of flush_timeout. Members that agreed already hear nothing else from a
// survivor still recovering the old view (under overload, by NAK, for
// longer than flush_timeout): its report is their progress, so they do not
// give the flush up and install without it. Only arrivals here trigger it,
// so agreed members never keep each other waiting; a survivor that stops
// receiving stops reporting, and the flush still times out.
func (l *Layer) stillCatchingUp(g *group) {
	if g.target == nil || g.view == nil || l.cfg.FlushTimeout <= 0 || l.Ctx.Now().Sub(g.told) < l.cfg.FlushTimeout/3 {
		return
	}
	l.c.CatchingUp.Inc()
	l.sendReport(g)
}

// next reports whether seq is not ahead of p's stream in the current
// view: nothing of it delivered in the view yet (its first cast here may
// follow a gap, told lost), the next one, or a copy of one delivered. A
// gap inside the view is only a copy from another survivor ahead of the
// sender's own: it is filled.
func next(p *peer, seq uint32) bool {
	return p == nil || p.hi == 0 || seq <= p.hi+1
}

// holdEarly keeps a cast of a view not installed here yet.
func (l *Layer) holdEarly(g *group, h held) {
	h.m = h.m.Compact()
	h.cost = event.HeldCost(h.m.Len())
	if g.earlyBytes+h.cost > l.cfg.MaxBytes {
		l.c.Overflow.Inc()
		h.m.Release()
		return
	}
	g.early = append(g.early, h)
	g.earlyBytes += h.cost
	l.hold(h.cost)
}

// stale handles a cast of a view older than the installed one: a late copy
// or one beyond a flush's cut (nobody delivers it), or, for a view this
// node skipped or missed while out of the group, one the application is
// told it missed.
func (l *Layer) stale(g *group, h held) {
	p := g.peers[h.from]
	if p != nil && (p.tell || h.tag > g.prev) && p.dlv != 0 && h.seq > p.dlv {
		if l.Ctx.Logging() {
			l.Ctx.Logf("skipped-view cast from %v tag %d seq %d (view %d prev %d)", h.from, h.tag, h.seq, g.tag, g.prev)
		}
		l.tellLost(g, h.from, p, h.seq+1)
		l.c.SkippedView.Inc()
	} else {
		l.c.Late.Inc()
	}
	h.m.Release()
}

// tellLost tells the application that p's messages from p.dlv+1 to end-1
// will not be delivered here, and moves past them.
func (l *Layer) tellLost(g *group, from event.NodeID, p *peer, end uint32) {
	if p.dlv == 0 || end <= p.dlv+1 {
		if p.dlv == 0 {
			p.dlv = end - 1
		}
		return
	}
	l.c.ToldLost.Add(int64(end - p.dlv - 1))
	l.Ctx.Up(&event.Event{Kind: event.Lost, Group: g.id, Peer: from, Lost: &event.LostRange{First: p.dlv + 1, End: end, Bounded: true}})
	p.dlv = end - 1
}

// deliver passes a current-view cast up (a duplicate is dropped; a gap in
// the sender's numbers is told lost) and keeps it for re-sending.
func (l *Layer) deliver(g *group, h held) {
	p := g.peerFor(h.from)
	if p.dlv != 0 && h.seq <= p.dlv {
		l.c.Duplicates.Inc()
		h.m.Release()
		return
	}
	if p.dlv != 0 && h.seq > p.dlv+1 {
		l.tellLost(g, h.from, p, h.seq)
	}
	p.dlv, p.hi, p.tell = h.seq, h.seq, false
	l.c.Delivered.Inc()
	g.dirty = true // the sender keeps it until our gossip says we have it
	l.armGossip(g)
	if g.view.Size() > 2 {
		h.m = h.m.Compact()
		h.m.Retain()
		l.keep(g, h.from, h.seq, h.m, h.m.Bytes())
	}
	l.Ctx.Up(&event.Event{Kind: event.Cast, Group: g.id, Peer: h.from, Msg: h.m})
}

// keep holds a delivered message (one reference of m) for re-sending
// within max_bytes: past it the sender's oldest is let go.
func (l *Layer) keep(g *group, from event.NodeID, seq uint32, m *event.Message, b []byte) {
	q := g.kept[from]
	if q == nil {
		q = &keptQueue{}
		g.kept[from] = q
	}
	k := kept{seq: seq, m: m, b: b, cost: event.HeldCost(len(b))}
	q.Push(k)
	l.hold(k.cost)
	l.kept += k.cost
	for l.kept > l.cfg.MaxBytes && q.Len() > 1 {
		l.unkeep(q)
		l.c.Unkept.Inc()
	}
	l.armGossip(g)
}

// armGossip starts the stability gossip if it is not running.
func (l *Layer) armGossip(g *group) {
	if !g.gossiping {
		g.gossiping = true
		g.gossip.Reset(l.cfg.StableInterval)
	}
}

func (l *Layer) unkeep(q *keptQueue) {
	k := q.Pop()
	l.hold(-k.cost)
	l.kept -= k.cost
	k.m.Release()
}

// releaseKept lets go of every kept message (a view was installed: what
// was delivered in the old one is settled).
func (l *Layer) releaseKept(g *group) {
	clear(g.released)
	for id, q := range g.kept {
		for q.Len() > 0 {
			l.unkeep(q)
		}
		delete(g.kept, id)
	}
}

// Close implements stack.Closer: it releases everything held.
func (l *Layer) Close() {
	for _, g := range l.groups {
		l.dropHeld(g)
	}
}

// dropHeld releases every message the group holds.
func (l *Layer) dropHeld(g *group) {
	l.releaseKept(g)
	for _, h := range g.waiting {
		l.hold(-h.cost)
		h.m.Release()
	}
	for _, h := range g.early {
		l.hold(-h.cost)
		h.m.Release()
	}
	g.waiting, g.early, g.earlyBytes = nil, nil, 0
	for g.queue.Len() > 0 {
		m := g.queue.Pop()
		l.hold(-event.HeldCost(m.Len()))
		m.Release()
	}
}
