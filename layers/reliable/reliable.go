// Package reliable is a sender-sequenced NAK multicast in the style of SRM
// and JGroups NAKACK, the baseline every other layercast protocol is compared
// with.
//
// Per group and sender, casts carry a sequence number. Receivers deliver each
// message up exactly once, as soon as it arrives (ordering is fifo's job),
// notice gaps, and ask the sender for what is missing after a random wait
// of nak_delay_rtts to twice that many measured round trips to it (NORM's
// NACK backoff; at least nak_delay_min, at most nak_delay, and nak_delay
// until a round trip is measured),
// retrying after the timeout of the round trip they measured to the
// sender (srtt + 4 rttvar, RFC 6298; at least nak_retry_min, and nak_retry
// until measured), doubling
// the interval for every round in a row that brought nothing back (up to
// nak_slow or twice the timeout) and at least nak_slow after nak_max_tries
// such rounds; an answer to a later NAK, arriving while a gap NAKed well
// before it is still missing, shows that gap's NAK or answer lost, and it
// is asked for again at once (answered). A sender whose buffer is full,
// or was within nak_slow, marks its casts (flagPressed): its receivers
// NAK a gap they reveal after nak_delay_min alone, send those NAKs in 2
// copies, and send their digest within nak_delay_min of a repair that
// moved their first gap, so the sender's window does not wait on backoff
// and gossip while they recover. A NAK carries its time stamp, and an answer to it by
// unicast echoes it: the round trip is measured from those echoes alone
// (NAK to its first answer, exact however many NAKs asked, as RFC 7323's
// timestamps; one per NAK, none when our retry was overdue, so a freeze of
// our own is not taken for the path), and an echo showing the round trip
// below a quarter of the estimate restarts it (RFC 6298 section 5). One NAK asks for as much as the
// last one brought back (doubling while everything came, up to
// max_nak_retrans), so recovery over a narrow link does not buy bursts its
// queue drops; a round with more gaps than one NAK lists sends several. A
// receiver that measures nak_copies_loss or more on a stream sends its
// NAKs, and asks for their repairs, in 2 copies. Members gossip stability
// digests (JGroups STABLE) while there is something to settle: each lists how
// far the member has received every sender's stream, and the sender's own
// highest sequence number, which also reveals lost tails. A member that
// receives a stream whose sender's round trip it has not measured marks
// its digest to be answered at once and times the answer, so its first
// gap waits a few round trips rather than nak_delay (that answer may be
// another member's, and far too soon: until an echo measures the path,
// retries still wait at least nak_retry). A message every
// member of the current view holds is stable and its sender frees it. The
// sender's buffer is bounded by max_buffer: when it is full, casts wait in the
// layer and the application is told to hold off (event.HoldOff) until
// stability frees room (event.Resume).
//
// Point-to-point Sends (data or control, every one) are made reliable too:
// per-peer sequence numbers, cumulative acknowledgements, retransmission on
// a timeout (p2p_timeout, or the round trip measured to the peer's timeout
// once acknowledgements measured it), delivery in send order. Control casts from layers above pass
// unsequenced.
//
// Retransmission: a NAKed message goes by unicast to the member that asked;
// when a second member asks for the same message within nak_retry/2 (or,
// once NAKs state the group's round trip, within the spread of first NAKs
// that round trip gives), it is multicast once instead, which serves every
// member that lost it (and, arriving before the later members' random
// waits end, spares their NAKs). A sender held off by a full buffer asks
// for digests every nak_retry, or every two group round trips once
// measured. A repeat
// from the same member within 3/4 of the round trip its NAK states (at least
// nak_retry/2, at most nak_slow) crossed the answer and is not resent.
//
// Views: stability is computed over the current view only; a member that
// leaves stops being waited for and its receive state is released; a member
// that joins is owed the stream of every sender from the sender's sequence
// number at the moment the sender installed the view (its floor), learnt
// from the data header (base, base view) or from the sender's digest. Each
// cast delivered up carries its sequence number and that floor
// (event.Event Seq and Start, compose.Sequenced), so the layers above
// (fifo) order by them without a floor rule of their own.
//
// Rejoins (issue 8's contract): a member listed in a view's Joined starts
// afresh even if we knew it (removed and re-admitted, or restarted): its
// stream, what it acknowledged of ours and its floor are discarded, and
// casts or digests it made before that view are ignored. A node that finds
// itself in Joined, or gets a view without itself, drops the group's state
// and starts as a first-time joiner.
//
// Hostile input: only members of a group we share get point-to-point state
// (early arrivals held within p2p_window messages and p2p_max_held bytes,
// released when the peer leaves every shared group); a NAK causes at most
// max_nak_retrans retransmissions; a digest counts only from a current
// member for our current view, and never acknowledges beyond what we sent.
package reliable

import (
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/seqwin"
	"github.com/layercast/layercast/internal/wirecodec"
	"github.com/layercast/layercast/layers/internal/p2p"
	"github.com/layercast/layercast/layers/internal/pairindex"
	"github.com/layercast/layercast/stack"
)

// Config is the layer's configuration (see register.go for the documented
// parameters).
type Config struct {
	// NakDelay is the wait before a gap's first NAK until the round trip
	// to its sender is measured, and the most it waits after.
	NakDelay time.Duration
	// NakDelayMin is the least wait before a gap's first NAK.
	NakDelayMin time.Duration
	// NakDelayRTTs scales the first NAK's wait by the measured round trip
	// (0: always NakDelay); see firstNakAfter.
	NakDelayRTTs float64
	NakRetry     time.Duration
	// NakRetryMin is the least interval between NAK rounds once the round
	// trip to the sender is measured (NakRetry before).
	NakRetryMin    time.Duration
	NakMaxTries    int
	NakSlow        time.Duration
	StableInterval time.Duration
	MaxBuffer      int64
	Window         int
	MaxNakRanges   int
	P2PTimeout     time.Duration
	P2PWindow      int
	P2PMaxTries    int
	// P2PMaxHeldBytes bounds the bytes of early point-to-point arrivals
	// held per peer (their count is bounded by P2PWindow).
	P2PMaxHeldBytes int64
	// MaxNakRetrans bounds the retransmissions one NAK can cause.
	MaxNakRetrans int
	// NakCopies is how many copies of each NAK, and of each
	// retransmission answering one, are sent (1: no redundancy).
	NakCopies int
	// NakCopiesLoss is the loss, measured by a receiver on a sender's
	// stream, from which its NAKs and the retransmissions answering them
	// go in at least 2 copies (0: never; see copies).
	NakCopiesLoss float64
}

// Layer is the reliable layer of one node.
type Layer struct {
	stack.Base
	// the per-packet path's table first, beside Ctx: the cache line a
	// simulator prefetches (stack.Stack.Prefetch) before each step, and
	// Warm reads a few steps before every packet
	hits  pairindex.Table[hitEntry] // (group, sender) -> state on the per-packet path
	stale bool                      // hits needs rebuilding before its next use (see index.go)

	cfg  Config
	self event.NodeID
	wc   *wirecodec.Codec

	groups map[event.GroupID]*group
	gslots []*group // by group.idx
	gfree  []int
	peers  map[event.NodeID]*peer
	pslots []*peer
	nak    nakMsg
	// nakPressed: l.nak is for a stream whose sender's buffer is full
	// (sendNak)
	nakPressed bool
	digest     digestMsg
	bufUsed    int64      // bytes held in every group's retransmission buffer
	p2p        *p2p.Proto // point-to-point Sends (p2p.go)

	c counters

	rebuilt int // times hits was rebuilt (for the start-up test)

	paths map[event.NodeID]*path // round trips to senders (receiver.go)

	// asks for streams a loss hint named before we could place them
	// (hint.go), in due order, with the set of those queued
	asks      []unplacedAsk
	askQueued map[askKey]event.Time // when a hint first named it
	askTm     *stack.Timer

	// further copies of retransmissions, sent copyGap after the first
	// (copyLater)
	later  []laterCopy
	copyTm *stack.Timer
}

// New returns a layer with the given configuration (already checked; a
// zero NakCopies is 1).
func New(cfg Config) *Layer {
	cfg.Window = seqwin.PowerOfTwo(cfg.Window, 64)
	cfg.NakCopies = max(cfg.NakCopies, 1)
	return &Layer{cfg: cfg, groups: map[event.GroupID]*group{}, peers: map[event.NodeID]*peer{}, wc: newWireCodec()}
}

var _ stack.Layer = (*Layer)(nil)

// HeaderSize is the largest header the layer prepends to a data message.
func (l *Layer) HeaderSize() int { return dataHeaderSize + echoSize }

// Init implements stack.Layer.
func (l *Layer) Init(ctx *stack.Context) error {
	l.Ctx = ctx
	l.self = ctx.Self()
	ctx.BindCounters(&l.c)
	l.p2p = l.newP2P()
	l.askTm = ctx.NewTimer(l.askTimer)
	l.copyTm = ctx.NewTimer(l.copyTimer)
	return nil
}

// Down implements stack.Layer.
func (l *Layer) Down(ev *event.Event) {
	switch ev.Kind {
	case event.Cast:
		if ev.Control {
			ev.Msg.Prepend(1)[0] = tPass
			l.Ctx.Down(ev)
			return
		}
		l.castDown(ev)
	case event.Send:
		l.sendDown(ev)
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
		l.installView(ev.View)
		l.Ctx.Up(ev)
	case event.LossHint:
		l.lossHint(ev)
	default:
		l.Ctx.Up(ev)
	}
}

// packetUp dispatches a packet by its header type.
func (l *Layer) packetUp(ev *event.Event) {
	m := ev.Msg
	t, ok := l.Ctx.PacketType(ev, l.c.Malformed)
	if !ok {
		return
	}
	switch {
	case t == tData && ev.Kind == event.Cast:
		l.dataUp(ev)
	case t == tPass && ev.Kind == event.Cast:
		_, _ = m.Consume(1)
		ev.Seq, ev.Start = 0, 0 // unsequenced (compose.Sequenced)
		l.Ctx.Up(ev)
	case t == tDigest && ev.Kind == event.Cast:
		_, _ = m.Consume(1)
		l.digestUp(ev)
	case t == tNak && ev.Kind == event.Send:
		_, _ = m.Consume(1)
		l.nakUp(ev)
	case t == tP2P && ev.Kind == event.Send:
		l.p2pUp(ev)
	case t == tP2PAck && ev.Kind == event.Send:
		l.p2pAckUp(ev)
	default:
		l.drop(ev)
	}
}

// drop discards a malformed packet.
func (l *Layer) drop(ev *event.Event) { l.Ctx.DropMalformed(ev, l.c.Malformed) }

// Close releases every buffered message (the stack is closing).
func (l *Layer) Close() {
	for _, g := range l.gslots {
		if g != nil {
			l.dropGroup(g)
		}
	}
	for _, p := range l.pslots {
		p.Close()
	}
}

// setBuf adjusts the bytes held and the buffer counters.
func (l *Layer) setBuf(delta int64) {
	l.bufUsed += delta
	l.c.BufferBytes.Set(l.bufUsed)
	l.c.PeakBufferBytes.Max(l.bufUsed)
}

// viewTag is the view id as carried on the wire.
func viewTag(v *event.ViewInfo) uint32 { return uint32(v.ID) }
