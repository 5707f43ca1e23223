// Package ring is Spread's Ring protocol (Amir and Stanton, "The Spread
// Wide Area Group Communication System", section 3.2, Figure 3.3): reliable,
// totally ordered delivery of every multicast inside one site (a LAN), by a
// token that rotates among the site's members.
//
// All the groups of a node share one ring and one order. A Cast going down
// waits in the node's pending queue until the token arrives; the token
// holder then answers the retransmission requests on the token, sends its
// waiting messages (each gets the next link_seq, site_seq and Lamport time
// stamp from the token) up to its flow-control limit on the site's
// multicast channel, adds the link_seq values it misses to the token's
// request list, updates the aru fields by the paper's rules and passes the
// token to its successor (members ordered by node id). Every member keeps
// every packet until the ring's aru (the lesser of this token's and the
// last token's link_aru) says all members have it.
//
// Delivery: in link_seq order (agreed: the same order at every member,
// across groups), as soon as a member holds every packet before it; with
// safe=true only once the aru says every member has it (safe). Messages
// go up under their own group with Peer = the node that cast them into the
// ring: a cast to a group (no channel) to the members of that group, a cast
// on the site's channel (a routing layer above, such as hop, addressing the
// whole site) to every member. Sends and Casts the ring does not order
// (control, one-member, other channels) pass through behind a one-byte
// marker.
//
// Flow control: a member sends at most min(member_limit, ring_limit -
// flow_control + what it sent last time) packets per visit, retransmissions
// included, and, when others have casts waiting too, no more than its share
// of ring_limit in proportion to its share of the token's backlog (Totem's
// rule: a full ring starves nobody). Both sums are running ones that each
// member corrects by its own share only; the leader resets them each
// rotation to what the members counted during it (token.RotSent), so a
// corrupt or forged value cannot stop the ring for good. A full pending
// queue (max_pending) holds the application off (event.HoldOff) until half
// of it has gone (event.Resume).
//
// A token going astray: the successor acknowledges each copy of a token it
// gets, naming the copy, and the sender sends it again until it does (for
// as long as the leader would wait before regenerating it), after a timeout
// that follows the measured acknowledgement round trip (token_retransmit,
// doubled per unanswered copy, until one is measured): under bursty loss a
// token hop costs a burst's length of timeouts, and a rotation must stay
// near its loss-free time; across a WAN the timer rises to the round trip
// instead of sending every token many times. A lost token: the leader (the
// member with the smallest id) regenerates it when it has not seen it for
// token_timeout, or twice the measured rotation when that is longer. The regenerated token's
// sequence jumps ahead, so an old copy still travelling is dropped by any
// member that saw the new one, and its first rotation is quiet: members
// raise the sequence fields to what they have sent or seen and send nothing
// new, so no link_seq is given twice and no message is lost.
//
// Membership: the ring's members are the node's site view (the
// Neighbourhood's Sites[OwnSite]; every node is in site 0 unless placed
// elsewhere, and membership gives site 0's view too), or with sites=off the
// union of every site view (one ring across them all). Only when the
// neighbourhood has no site views is it the union of the members of the
// node's groups. A new member set makes a
// new ring (its id is a hash of the members). Before it carries new
// messages, its token makes recovery rotations: members from an old ring
// raise its highest link_seq, ask for what they miss and answer each
// other's requests; a request that passed every other member unanswered is
// a packet no survivor ever received (a departed member's last casts) and is
// skipped by all. When a rotation changes nothing and nobody misses
// anything, the ring starts, and each member first delivers the rest of the
// old ring in order.
//
// What a membership change guarantees: members that move together from
// one ring to the next deliver the same messages of the old ring (every
// one some survivor received) in the same order, before any message of
// the new ring. A packet no survivor received (only a departed member's
// last casts can be such) is skipped by all and counted in recovery_lost;
// it is not reported as event.Lost, since no survivor knows its group or
// sender. The same rule, in a running ring, skips a number that a request
// on the token asked every member for in vain (a stray or forged token's
// claim), so nothing stalls the ring.
//
// Limits: without site views the ring is the union of the members of the
// node's groups, which is one ring only where that union is the same at
// every member (one group, or groups over the same nodes): give site views
// (gms or the static harness) otherwise. A second change before a new ring
// starts delivers what the first old ring holds at this node without
// recovering it. Ring ids hash the member set and the site view's number;
// without site views only the member set, so there a packet of an earlier
// ring with the same members arriving after two changes would count as the
// current ring's.
package ring

import (
	"hash/fnv"
	"slices"
	"time"

	"github.com/layercast/layercast/event"
	queue "github.com/layercast/layercast/internal/ring"
	"github.com/layercast/layercast/internal/rtt"
	"github.com/layercast/layercast/internal/wirecodec"
	"github.com/layercast/layercast/stack"
)

// Config is the layer's configuration (see register.go for the documented
// parameters).
type Config struct {
	// MemberLimit is the most packets one member sends per visit of the
	// token; RingLimit the most all members send per rotation.
	MemberLimit, RingLimit int
	// Window bounds the packets a member holds per ring.
	Window int
	// MaxPending bounds the casts waiting for the token before the
	// application is held off.
	MaxPending int
	// MaxRtr bounds the retransmission requests on a token.
	MaxRtr int
	// TokenTimeout is how long the leader waits for the token before it
	// regenerates it (at least: twice the measured rotation when longer).
	TokenTimeout time.Duration
	// TokenRetransmit is how long a member waits for its successor to
	// acknowledge the token before it sends it again, until the round
	// trip is measured (then the measured round trip sets the wait).
	TokenRetransmit time.Duration
	// TokenIdle is how long a member holds the token when the ring has
	// nothing to do (nothing sent, asked or missing for a rotation).
	TokenIdle time.Duration
	// Safe delivers a message only once every member has it.
	Safe bool
	// OneRing ignores the site boundaries (sites=off): one ring over the
	// members of every site view, wherever they are, on one channel
	// (wideSite).
	// It is Spread's production design the paper's section 4 compares
	// against: a ring stretched across the wide area, one token rotation
	// crossing every WAN link.
	OneRing bool
}

// wideSite is the site channel's id of the one ring over every site
// (OneRing), above any SiteID a site view uses.
const wideSite = ^uint32(0)

// Layer is the ring layer of one node.
type Layer struct {
	stack.Base
	cfg  Config
	self event.NodeID
	wc   *wirecodec.Codec
	ch   event.ChannelID

	views    map[event.GroupID]*event.ViewInfo
	siteMode bool
	sites    []event.NodeID // the site view's members, in site mode

	cur *ringState // nil: the node is in no ring
	old *ringState // the old ring being recovered, if any

	pending queue.Ring[pend]
	held    map[event.GroupID]bool

	tok, last, stash token // the token in hand, the last one passed on, a future ring's
	rx               token // a token just received, until it is accepted as tok
	hasStash         bool
	stashFrom        event.NodeID
	firstTok         event.Time   // when the node first handled a token
	lastSent         uint32       // packets sent on the last visit (flow control)
	lastBacklog      uint32       // this member's part of the token's Backlog
	hold             *stack.Timer // idle hold (and a one-member ring's "pass")
	// upq holds the views and neighbourhoods going up while the old
	// ring's messages are still to be delivered (viewsync.go); upT
	// releases them in a step of their own.
	upq        []event.Event
	upT        *stack.Timer
	loss       *stack.Timer // token-loss timer (leader)
	rtx        *stack.Timer // token retransmission until acknowledged
	sentTok    []byte       // the last token sent, for retransmission
	sentTokSeq uint64
	sentTo     event.NodeID
	rtxLeft    int
	holding    bool
	// txAt is when each copy of the kept token was sent (txN so far):
	// an acknowledgement names the copy it answers, so every one times
	// the round trip, retransmitted or not.
	txAt      [maxTx]event.Time
	txN       int
	backoff   uint          // doublings of token_retransmit before any round trip is measured
	rtt       rtt.Estimator // the successor's acknowledgement round trip
	lastVisit event.Time    // when the token was last in hand
	srot      time.Duration // the smoothed time of a rotation, from visit to visit

	c counters
}

// ringState is one ring: its members and the packets held.
type ringState struct {
	id      uint32
	members []event.NodeID
	idx     int
	win     window
	// recovering until the first regular token (the new ring's messages
	// wait until the old ring's are delivered).
	recovering bool
	since      event.Time // when the node installed it
	lastSeq    uint64     // the last token sequence handled
	ringAru    uint32     // min(token, last token) link_aru
	siteAru    uint32
	siteLTS    uint32 // highest LTS on a token or handed out
	siteSeq    uint32 // highest site_seq on a token or handed out
	sentSeq    uint32 // highest link_seq this member handed out
	// replaced says the ring replaced another (its start is a recovery).
	replaced bool
	// found is when each missing packet was first noticed missing (a later
	// one arrived, or the token named a higher link_seq), for the report's
	// loss discovery; noted is how far gaps were looked for.
	found map[uint32]event.Time
	noted uint32
}

// pend is a cast waiting for the token.
type pend struct {
	m    *event.Message
	g    event.GroupID
	site bool // cast on the site's channel: for every member
}

// New returns a layer with the given configuration (already checked).
func New(cfg Config) *Layer {
	return &Layer{cfg: cfg, wc: newWireCodec(), views: map[event.GroupID]*event.ViewInfo{}, held: map[event.GroupID]bool{}}
}

var _ stack.Layer = (*Layer)(nil)

// HeaderSize is the largest header the layer prepends.
func (l *Layer) HeaderSize() int { return dataHeaderSize }

// Init implements stack.Layer: counters, timers, and the site's channel.
func (l *Layer) Init(ctx *stack.Context) error {
	l.Ctx = ctx
	l.self = ctx.Self()
	ctx.BindCounters(&l.c)
	l.hold = ctx.NewTimer(l.holdDone)
	l.loss = ctx.NewTimer(l.tokenLost)
	l.rtx = ctx.NewTimer(l.retransmitToken)
	l.upT = ctx.NewTimer(l.releaseUp)
	l.ch = ctx.Channel(event.SiteChannel, uint32(ctx.Site()))
	if l.cfg.OneRing {
		l.ch = ctx.Channel(event.SiteChannel, wideSite)
	}
	return ctx.Subscribe(l.ch)
}

// Down implements stack.Layer.
func (l *Layer) Down(ev *event.Event) {
	switch {
	case ev.Kind == event.Cast && !ev.Control && !ev.OneMember && ev.Peer == event.NoNode &&
		(ev.Channel == 0 || ev.Channel.Kind() == event.SiteChannel):
		l.castDown(ev)
	case ev.Kind == event.Cast || ev.Kind == event.Send:
		ev.Msg.Prepend(1)[0] = tPass
		l.Ctx.Down(ev)
	default:
		l.Ctx.Down(ev)
	}
}

// Up implements stack.Layer.
func (l *Layer) Up(ev *event.Event) {
	switch ev.Kind {
	case event.Cast, event.Send:
		l.packetUp(ev)
	case event.View:
		l.viewUp(ev.View)
		l.membershipUp(ev)
	case event.Regions:
		l.regionsUp(ev.Regions)
		l.membershipUp(ev)
	default:
		l.Ctx.Up(ev)
	}
}

// packetUp dispatches a packet by its type byte.
func (l *Layer) packetUp(ev *event.Event) {
	t, ok := l.Ctx.PacketType(ev, l.c.Malformed)
	if !ok {
		return
	}
	switch {
	case t == tPass:
		_, _ = ev.Msg.Consume(1)
		l.Ctx.Up(ev)
	case t == tData && ev.Kind == event.Cast:
		l.dataUp(ev)
	case t == tToken && ev.Kind == event.Send:
		l.tokenUp(ev)
	case t == tTokenAck && ev.Kind == event.Send:
		l.tokenAckUp(ev)
	default:
		l.drop(ev)
	}
}

// drop discards a malformed packet.
func (l *Layer) drop(ev *event.Event) { l.Ctx.DropMalformed(ev, l.c.Malformed) }

// castDown queues an application cast for the token.
func (l *Layer) castDown(ev *event.Event) {
	l.c.Casts.Inc()
	l.pending.Push(pend{m: ev.Msg, g: ev.Group, site: ev.Channel != 0})
	l.c.PendingPeak.Max(int64(l.pending.Len()))
	if l.pending.Len() >= l.cfg.MaxPending && !l.held[ev.Group] {
		l.held[ev.Group] = true
		l.c.HeldOff.Inc()
		l.Ctx.Up(&event.Event{Kind: event.HoldOff, Group: ev.Group})
	}
	if l.holding && l.cur != nil {
		l.sendWhileHolding()
	}
}

// sendWhileHolding: a cast arrived while the node holds an idle token, so
// it sends now instead of a rotation later (the token is still in hand).
func (l *Layer) sendWhileHolding() {
	if len(l.cur.members) == 1 || l.tok.Type != tokRegular {
		l.hold.Reset(0)
		return
	}
	l.hold.Stop()
	l.holding = false
	l.regularStep()
	l.sendToken()
	l.tok.copyTo(&l.last)
	l.deliver()
}

// resume ends every hold-off once half the pending queue has gone.
func (l *Layer) resume() {
	if len(l.held) == 0 || l.pending.Len() > l.cfg.MaxPending/2 {
		return
	}
	gs := make([]event.GroupID, 0, len(l.held))
	for g := range l.held {
		gs = append(gs, g)
	}
	slices.Sort(gs) // deterministic order
	clear(l.held)
	for _, g := range gs {
		l.Ctx.Up(&event.Event{Kind: event.Resume, Group: g})
	}
}

// viewUp records a group's view; without sites, the ring is the union of
// the node's groups.
func (l *Layer) viewUp(v *event.ViewInfo) {
	if v == nil {
		return
	}
	if v.Has(l.self) {
		l.views[v.Group] = v
	} else {
		delete(l.views, v.Group)
	}
	if !l.siteMode {
		l.setMembers(l.unionOfGroups(), 0)
	}
}

// regionsUp takes the node's site view, when membership gives sites.
func (l *Layer) regionsUp(n *event.Neighbourhood) {
	if l.cfg.OneRing && n != nil && len(n.Sites) > 0 {
		// One ring over every site's members: the same set at every node,
		// unlike the union of each node's groups.
		var all []event.NodeID
		var epoch uint64
		for _, s := range n.Sites {
			all = append(all, s.Members...)
			epoch = epoch*31 + uint64(s.Site)<<32 + s.ID
		}
		slices.Sort(all)
		l.siteMode = true
		l.setMembers(slices.Compact(all), epoch)
		return
	}
	if n == nil || len(n.Sites) == 0 || n.OwnSite < 0 || n.OwnSite >= len(n.Sites) || l.cfg.OneRing {
		if l.siteMode {
			l.siteMode = false
			l.setMembers(l.unionOfGroups(), 0)
		}
		return
	}
	s := n.Sites[n.OwnSite]
	l.siteMode = true
	if ch := l.Ctx.Channel(event.SiteChannel, uint32(s.Site)); ch != l.ch {
		_ = l.Ctx.Unsubscribe(l.ch)
		l.ch = ch
		if err := l.Ctx.Subscribe(ch); err != nil && l.Ctx.Logging() {
			l.Ctx.Logf("subscribe %v: %v", ch, err)
		}
	}
	l.setMembers(s.Members, s.ID)
}

// unionOfGroups is the sorted union of the members of the node's groups.
func (l *Layer) unionOfGroups() []event.NodeID {
	var out []event.NodeID
	for _, v := range l.views {
		out = append(out, v.Members...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ringID names a member set in one epoch: the site view's number (0
// without site views). The same members again in a later site view make
// another ring: a member removed and readmitted (or back from a partition)
// would otherwise take the old ring's packets, and its requests for what
// the others had long freed, as the new ring's, and the recovery would
// never end (spread.stack soak seed 168).
func ringID(members []event.NodeID, epoch uint64) uint32 {
	h := fnv.New32a()
	var b [4]byte
	if epoch != 0 {
		var e [8]byte
		for i := range e {
			e[i] = byte(epoch >> (8 * i))
		}
		_, _ = h.Write(e[:])
	}
	for _, m := range members {
		b[0], b[1], b[2], b[3] = byte(m>>24), byte(m>>16), byte(m>>8), byte(m)
		_, _ = h.Write(b[:])
	}
	if id := h.Sum32(); id != 0 {
		return id
	}
	return 1
}

// member reports whether the node is in group g.
func (l *Layer) member(g event.GroupID) bool {
	_, ok := l.views[g]
	return ok
}

// inRing reports whether n is a member of r.
func (r *ringState) inRing(n event.NodeID) bool {
	_, ok := slices.BinarySearch(r.members, n)
	return ok
}

func (r *ringState) leader() event.NodeID { return r.members[0] }

func (r *ringState) next() event.NodeID { return r.members[(r.idx+1)%len(r.members)] }

func (r *ringState) prev() event.NodeID {
	return r.members[(r.idx+len(r.members)-1)%len(r.members)]
}

// setBuf refreshes the buffer gauges.
func (l *Layer) setBuf() {
	var b int64
	if l.cur != nil {
		b += l.cur.win.bytes
	}
	if l.old != nil {
		b += l.old.win.bytes
	}
	l.c.BufferBytes.Set(b)
	l.c.PeakBuffer.Max(b)
}

// Close releases every held message (the stack is closing).
func (l *Layer) Close() {
	for _, r := range []*ringState{l.cur, l.old} {
		if r != nil {
			r.win.clear()
		}
	}
	for l.pending.Len() > 0 {
		l.pending.Pop().m.Release()
	}
	l.setBuf()
}
