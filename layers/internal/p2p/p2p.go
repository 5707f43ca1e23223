// Package p2p is the reliable point-to-point protocol under the Sends of
// reliable and tokenring: per peer, messages are numbered from 1, kept
// until acknowledged cumulatively, sent again on a timeout and given up
// after too many tries; the receiver delivers them exactly once in the
// sender's order, holding early arrivals within the window, and
// acknowledges every packet it takes. Each message carries the sender's
// floor, its lowest number not yet acknowledged or given up, so that a
// receiver never waits for a message the sender gave up.
//
// It is a pure state machine: no goroutines, clock or I/O. The layer owns
// the wire format and gives it a Host, which sends what it numbers,
// acknowledges, delivers, and makes its timers.
package p2p

import (
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/ring"
	"github.com/layercast/layercast/internal/rtt"
	"github.com/layercast/layercast/internal/seqwin"
	"github.com/layercast/layercast/stack"
)

// Config is the protocol's configuration, the same for every peer.
type Config struct {
	// Window is the most messages unacknowledged towards a peer, and the
	// furthest ahead of the next in order an arrival is taken.
	Window int
	// MaxTries is how many times a send is tried again before the peer's
	// sends are given up (the peer is presumed gone).
	MaxTries int
	// Timeout is the retransmission timeout (with Adaptive, the longest).
	Timeout time.Duration
	// Adaptive: each message is sent again on its own once it has waited
	// the timeout of the round trip measured to the peer (sampled from
	// messages acknowledged at their first try, Karn's rule; at least
	// MinRTO, at most Timeout, which also holds until there is a sample),
	// doubled per try up to 2^MaxBackoff, and the peer's sends are given
	// up when one was tried again more than MaxTries times. Otherwise every
	// unacknowledged message is sent again each Timeout, and they are
	// given up after more than MaxTries timeouts in a row without an
	// acknowledgement.
	Adaptive   bool
	MinRTO     time.Duration
	MaxBackoff int
	// Queue: sends beyond the window wait in a queue, and the Host is told
	// to hold the sender off (Hold); otherwise Send refuses them.
	Queue bool
	// MaxHeldBytes bounds the bytes of early arrivals held from one peer,
	// each counted at event.HeldCost (0: no bound but the window).
	MaxHeldBytes int64
}

// Counters are what the protocol counts; a nil one is not counted.
type Counters struct {
	Retrans     *stack.Counter // messages sent again
	GivenUp     *stack.Counter // messages given up
	Duplicates  *stack.Counter // arrivals taken already
	OutOfWindow *stack.Counter // arrivals beyond the window
	HeldDropped *stack.Counter // early arrivals dropped (no room, or released)
	Stale       *stack.Counter // messages and acknowledgements of a closed session
	Malformed   *stack.Counter // acknowledgements of messages never sent
}

func add(c *stack.Counter, n int) {
	if c != nil {
		c.Add(int64(n))
	}
}

// Timer is a peer's retransmission timer (a *stack.Timer).
type Timer interface {
	Reset(d time.Duration)
	Stop() bool
}

// Host is what the layer does for the protocol.
type Host interface {
	// Now is the current (virtual) time.
	Now() event.Time
	// NewTimer makes a timer that calls fn when it fires.
	NewTimer(fn func()) Timer
	// Transmit sends o to p: the first time (again false) it puts the
	// header on o.Msg (o.Seq, and p.Floor()); again, a copy. o stays the
	// protocol's, and o.Msg with it; o.B is the Host's to keep bytes in.
	Transmit(p *Peer, o *Out, again bool)
	// Ack sends p the acknowledgement of everything up to cum that it
	// numbered in session.
	Ack(p *Peer, cum, session uint32)
	// Deliver hands an arrival up, in p's order; in.Msg is the Host's.
	Deliver(p *Peer, in In)
	// Hold holds the sender off (on: p's window is full and sends wait)
	// or lets it go on (off: p's queue emptied). Only with Config.Queue.
	Hold(p *Peer, on bool)
}

// Out is a message sent to a peer, until it is acknowledged.
type Out struct {
	Msg   *event.Message
	Ctrl  bool          // a control message (not held off)
	Group event.GroupID // the layer's, passed back
	Typ   byte          // the layer's header type, passed back
	Seq   uint32        // its number (set by the protocol)
	B     []byte        // the Host's (Transmit)

	sent  event.Time
	tries int
}

// In is an arrival, until it is delivered.
type In struct {
	Msg   *event.Message
	Ctrl  bool
	Group event.GroupID
	Typ   byte
}

// Proto is the protocol of one layer: its configuration, Host and
// counters, shared by its peers.
type Proto struct {
	cfg  Config
	host Host
	c    Counters
	ring int // a peer's receive ring: Window rounded up to a power of two
}

// New returns the protocol of a layer.
func New(cfg Config, host Host, c Counters) *Proto {
	return &Proto{cfg: cfg, host: host, c: c, ring: seqwin.PowerOfTwo(cfg.Window, 16)}
}

// Peer is the state towards and from one node.
type Peer struct {
	pr *Proto
	id event.NodeID

	// sending
	session uint32         // numbers this node's messages to the peer
	next    uint32         // next number to send
	acked   uint32         // the peer holds everything up to here
	buf     ring.Ring[Out] // sent, not yet acknowledged: acked+1 .. next-1
	pending ring.Ring[Out] // waiting for room in the window (Queue)
	held    bool           // the Host was told to hold off for this peer
	tm      Timer
	armed   bool          // tm is set
	tries   int           // timeouts in a row (not Adaptive)
	rtt     rtt.Estimator // the round trip to the peer (Adaptive)
	silent  bool          // sends given up, nothing heard since

	// receiving
	rsession, oldSession uint32 // the peer's session received in, and the one before
	rnext                uint32 // next in order
	rhold                []In   // ring over the window: early arrivals
	rheld                int    // messages in rhold
	rheldSize            int64  // their bytes (HeldCost)
}

// NewPeer returns the state for node id. session numbers what this node
// sends it (it is in every header, and a receiver that sees a new one
// starts afresh at its floor); a layer without sessions gives 0.
func (pr *Proto) NewPeer(id event.NodeID, session uint32) *Peer {
	p := &Peer{pr: pr, id: id, session: session, next: 1, rnext: 1}
	p.tm = pr.host.NewTimer(p.Expire)
	return p
}

// ID is the peer's node.
func (p *Peer) ID() event.NodeID { return p.id }

// Session is the session this node numbers its messages to the peer in.
func (p *Peer) Session() uint32 { return p.session }

// Floor is the lowest number not yet acknowledged or given up.
func (p *Peer) Floor() uint32 { return p.acked + 1 }

// Inflight is how many messages wait for their acknowledgement.
func (p *Peer) Inflight() int { return int(p.next - 1 - p.acked) }

// Queued is how many messages wait for room in the window.
func (p *Peer) Queued() int { return p.pending.Len() }

// HeldOff says whether the peer's window is full and sends wait.
func (p *Peer) HeldOff() bool { return p.held }

// Silent says whether the peer's sends were given up for too many tries
// and nothing came from it since.
func (p *Peer) Silent() bool { return p.silent }

// SRTT is the smoothed round trip to the peer (0: not measured).
func (p *Peer) SRTT() time.Duration { return p.rtt.SRTT() }

// Receiving says whether the peer has receive state (not released).
func (p *Peer) Receiving() bool { return p.rhold != nil }

// Early is the count and bytes (HeldCost) of early arrivals held.
func (p *Peer) Early() (int, int64) { return p.rheld, p.rheldSize }

// Send numbers o and sends it, or, with the window full, queues it
// (Config.Queue) or refuses it: it reports false, keeping nothing.
func (p *Peer) Send(o Out) bool {
	if p.pending.Len() > 0 || p.Inflight() >= p.pr.cfg.Window {
		if !p.pr.cfg.Queue {
			return false
		}
		p.pending.Push(o)
		if !p.held && !o.Ctrl {
			p.held = true
			p.pr.host.Hold(p, true)
		}
		return true
	}
	p.send(o)
	return true
}

func (p *Peer) send(o Out) {
	o.Seq, o.sent = p.next, p.pr.host.Now()
	p.next++
	p.buf.Push(o)
	p.pr.host.Transmit(p, p.buf.At(p.buf.Len()-1), false)
	if !p.armed {
		p.tries = 0
		p.arm(p.rto())
	}
}

func (p *Peer) arm(d time.Duration) {
	p.armed = true
	p.tm.Reset(d)
}

// rto is how long a send waits for its acknowledgement before it is sent
// again (Config.Adaptive).
func (p *Peer) rto() time.Duration {
	cfg := &p.pr.cfg
	if !cfg.Adaptive || p.rtt.SRTT() == 0 {
		return cfg.Timeout
	}
	return min(cfg.Timeout, max(cfg.MinRTO, p.rtt.RTO()))
}

// Ack takes the peer's acknowledgement of everything up to cum that this
// node numbered in session: it frees them and sends what waited.
func (p *Peer) Ack(cum, session uint32) {
	p.silent = false
	c := &p.pr.c
	if session != p.session {
		add(c.Stale, 1) // acknowledges an earlier session of ours
		return
	}
	if cum >= p.next {
		add(c.Malformed, 1)
		return
	}
	if cum > p.acked {
		if s := p.buf.At(int(cum - p.acked - 1)); s.tries == 0 && p.pr.cfg.Adaptive {
			// the newest it acknowledges, sent once: its round trip
			p.rtt.Sample(time.Duration(p.pr.host.Now() - s.sent))
		}
		for p.acked < cum {
			p.buf.Pop().Msg.Release()
			p.acked++
		}
	}
	if !p.pr.cfg.Adaptive {
		p.tries = 0
		if p.Inflight() == 0 {
			p.stop()
		} else {
			p.arm(p.pr.cfg.Timeout)
		}
	}
	p.flush()
}

func (p *Peer) stop() {
	if p.armed {
		p.tm.Stop()
		p.armed = false
	}
}

// flush sends what waited for room in the window.
func (p *Peer) flush() {
	for p.pending.Len() > 0 && p.Inflight() < p.pr.cfg.Window {
		p.send(p.pending.Pop())
	}
	if p.pending.Len() == 0 && p.held {
		p.held = false
		p.pr.host.Hold(p, false)
	}
}

// Expire is the retransmission timer firing: what has waited its timeout
// is sent again, or, past MaxTries, the peer's sends are given up.
func (p *Peer) Expire() {
	p.armed = false
	n := p.Inflight()
	if n == 0 {
		return
	}
	cfg := &p.pr.cfg
	if !cfg.Adaptive {
		p.tries++
		if p.tries > cfg.MaxTries {
			p.giveUp(n)
			return
		}
		for i := 0; i < n; i++ {
			add(p.pr.c.Retrans, 1)
			p.pr.host.Transmit(p, p.buf.At(i), true)
		}
		p.arm(cfg.Timeout)
		return
	}
	now := p.pr.host.Now()
	rto := p.rto()
	for i := 0; i < n; i++ {
		s := p.buf.At(i)
		// each try in a row doubles the wait, up to Timeout
		if s.sent > now-event.Time(min(rto<<min(s.tries, cfg.MaxBackoff), cfg.Timeout)) {
			continue
		}
		s.tries++
		if s.tries > cfg.MaxTries {
			p.giveUp(n)
			return
		}
		s.sent = now
		add(p.pr.c.Retrans, 1)
		p.pr.host.Transmit(p, s, true)
	}
	p.arm(rto)
}

// giveUp drops what waits for the peer, counting n of it, after too many
// tries: the peer is silent until something comes from it.
func (p *Peer) giveUp(n int) {
	add(p.pr.c.GivenUp, n)
	p.drop()
	p.flush()
	p.silent = true
}

// drop releases what waits for the peer; its numbers are given up.
func (p *Peer) drop() {
	for p.buf.Len() > 0 {
		p.buf.Pop().Msg.Release()
	}
	for p.pending.Len() > 0 {
		p.pending.Pop().Msg.Release()
	}
	p.acked = p.next - 1
	p.stop()
}

// GiveUp gives up everything that waits for the peer (it is gone), if
// anything does.
func (p *Peer) GiveUp() {
	if n := p.Inflight() + p.pending.Len(); n > 0 {
		add(p.pr.c.GivenUp, n)
		p.drop()
		p.flush()
	}
}

// Close releases everything the peer holds, sent or received.
func (p *Peer) Close() {
	p.drop()
	p.ReleaseHeld()
}

// ReleaseHeld drops the early arrivals held from the peer and their ring.
// Where its stream stands is kept: what it sends again starts from its
// floor.
func (p *Peer) ReleaseHeld() {
	for i := range p.rhold {
		if p.rhold[i].Msg != nil {
			p.rhold[i].Msg.Release()
			add(p.pr.c.HeldDropped, 1)
		}
	}
	p.rhold, p.rheld, p.rheldSize = nil, 0, 0
}

// Receive takes message seq of the peer's session, whose sender gave up
// or had acknowledged everything below floor (the layer checked that
// 0 < floor <= seq, and took its header off in.Msg). It delivers what is
// next in order, holds an early arrival within the window, and
// acknowledges, unless it dropped the message for want of room (the
// sender sends it again).
func (p *Peer) Receive(in In, seq, floor, session uint32) {
	p.silent = false
	c := &p.pr.c
	if session != p.rsession {
		if session == p.oldSession {
			add(c.Stale, 1) // a late copy from the peer's earlier session
			in.Msg.Release()
			return
		}
		// The peer made its state for this node afresh: its numbers start
		// again, and everything below its floor was delivered or given up.
		p.ReleaseHeld()
		p.oldSession, p.rsession, p.rnext = p.rsession, session, floor
	}
	w := uint32(p.pr.ring)
	// the sender gave up everything below floor: deliver what is held of
	// it and stop waiting for the rest
	for p.rnext < floor {
		if p.rheld == 0 {
			p.rnext = floor
		} else if hm := &p.rhold[p.rnext&(w-1)]; hm.Msg != nil {
			p.deliver(hm)
		} else {
			p.rnext++
		}
	}
	if p.rhold == nil {
		p.rhold = make([]In, w)
	}
	// the sender keeps at most Window messages in flight from its floor,
	// so nothing legitimate arrives further ahead than that
	cfg := &p.pr.cfg
	switch {
	case seq < p.rnext || (seq < p.rnext+w && p.rhold[seq&(w-1)].Msg != nil):
		add(c.Duplicates, 1) // a copy of one taken: the ack was lost
		in.Msg.Release()
	case seq >= p.rnext+uint32(cfg.Window):
		add(c.OutOfWindow, 1)
		in.Msg.Release()
		return
	case seq != p.rnext && cfg.MaxHeldBytes > 0 && p.rheldSize+event.HeldCost(in.Msg.Len()) > cfg.MaxHeldBytes:
		// early, and no room for its bytes: not acknowledged, so the
		// sender sends it again
		add(c.HeldDropped, 1)
		in.Msg.Release()
		return
	default:
		if seq != p.rnext {
			in.Msg = in.Msg.Compact() // held: in a buffer its charge accounts for
		}
		p.rhold[seq&(w-1)] = in
		p.rheld++
		p.rheldSize += event.HeldCost(in.Msg.Len())
	}
	for p.rhold != nil && p.rhold[p.rnext&(w-1)].Msg != nil {
		p.deliver(&p.rhold[p.rnext&(w-1)])
	}
	p.pr.host.Ack(p, p.rnext-1, p.rsession)
}

// deliver hands up the held arrival hm, the next in order.
func (p *Peer) deliver(hm *In) {
	in := *hm
	*hm = In{}
	p.rheld--
	p.rheldSize -= event.HeldCost(in.Msg.Len())
	p.rnext++
	p.pr.host.Deliver(p, in)
}
