package p2p

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
)

// link is two ends of the protocol on a lossy, reordering path, stepped
// in virtual time: every packet takes 1 to 3 ms, and loss drops it.
type link struct {
	t      *testing.T
	now    event.Time
	rng    *rand.Rand
	loss   float64
	down   bool // every packet is lost
	ends   [2]*end
	flight []packet
	timers []*timer
}

type packet struct {
	at                  event.Time
	to                  int
	ack                 bool
	seq, floor, session uint32
	body                uint32 // the message's number at the sender
}

// end is one node: its protocol, its peer state for the other end, and
// what it delivered.
type end struct {
	l     *link
	i     int
	pr    *Proto
	p     *Peer
	got   []uint32
	holds int
}

type timer struct {
	l  *link
	at event.Time
	on bool
	fn func()
}

func (t *timer) Reset(d time.Duration) { t.at, t.on = t.l.now+event.Time(d), true }
func (t *timer) Stop() bool            { was := t.on; t.on = false; return was }

func (e *end) Now() event.Time { return e.l.now }
func (e *end) NewTimer(fn func()) Timer {
	t := &timer{l: e.l, fn: fn}
	e.l.timers = append(e.l.timers, t)
	return t
}
func (e *end) Transmit(p *Peer, o *Out, _ bool) {
	e.l.send(packet{to: 1 - e.i, seq: o.Seq, floor: p.Floor(), session: p.Session(), body: binary.BigEndian.Uint32(o.Msg.Bytes())})
}
func (e *end) Ack(p *Peer, cum, session uint32) {
	e.l.send(packet{to: 1 - e.i, ack: true, seq: cum, session: session})
}
func (e *end) Deliver(_ *Peer, in In) {
	e.got = append(e.got, binary.BigEndian.Uint32(in.Msg.Bytes()))
	in.Msg.Release()
}
func (e *end) Hold(_ *Peer, on bool) {
	if on {
		e.holds++
	} else {
		e.holds--
	}
}

func newLink(t *testing.T, cfg Config, loss float64, seed uint64) *link {
	l := &link{t: t, rng: rand.New(rand.NewPCG(seed, 1)), loss: loss}
	for i := range l.ends {
		e := &end{l: l, i: i}
		e.pr = New(cfg, e, Counters{})
		e.p = e.pr.NewPeer(event.NodeID(2-i), uint32(i+1))
		l.ends[i] = e
	}
	return l
}

func (l *link) send(p packet) {
	if l.down || l.rng.Float64() < l.loss {
		return
	}
	p.at = l.now + event.Time(time.Millisecond) + event.Time(l.rng.IntN(int(2*time.Millisecond)))
	l.flight = append(l.flight, p)
}

// msg is message number n, as the layers above would Send it.
func msg(n uint32) Out {
	m := event.NewMessage()
	binary.BigEndian.PutUint32(m.Append(4), n)
	return Out{Msg: m}
}

// run steps the link until d has passed.
func (l *link) run(d time.Duration) {
	end := l.now + event.Time(d)
	for {
		next, pi, ti := end, -1, -1
		for i, p := range l.flight {
			if p.at < next {
				next, pi = p.at, i
			}
		}
		for i, t := range l.timers {
			if t.on && t.at < next {
				next, pi, ti = t.at, -1, i
			}
		}
		l.now = next
		switch {
		case ti >= 0:
			l.timers[ti].on = false
			l.timers[ti].fn()
		case pi >= 0:
			p := l.flight[pi]
			l.flight = slices.Delete(l.flight, pi, pi+1)
			e := l.ends[p.to]
			if p.ack {
				e.p.Ack(p.seq, p.session)
				continue
			}
			m := event.NewMessage()
			binary.BigEndian.PutUint32(m.Append(4), p.body)
			e.p.Receive(In{Msg: m}, p.seq, p.floor, p.session)
		default:
			return
		}
	}
}

// inOrder reports whether got is from..to, each once, in order.
func inOrder(got []uint32, from, to uint32) bool {
	if len(got) != int(to-from+1) {
		return false
	}
	for i, n := range got {
		if n != from+uint32(i) {
			return false
		}
	}
	return true
}

var disciplines = map[string]Config{
	"adaptive, queued": {Window: 8, MaxTries: 1000, Timeout: 50 * time.Millisecond, Adaptive: true,
		MinRTO: time.Millisecond, MaxBackoff: 6, Queue: true, MaxHeldBytes: 8 * event.HeldCost(4)},
	"fixed, refused": {Window: 8, MaxTries: 1000, Timeout: 10 * time.Millisecond},
}

// TestDeliversEverythingInOrderOnce: over a path that loses 30% of the
// packets and reorders the rest, each end delivers every message the
// other sent, once and in order, and nothing stays unacknowledged.
func TestDeliversEverythingInOrderOnce(t *testing.T) {
	for name, cfg := range disciplines {
		t.Run(name, func(t *testing.T) {
			for seed := range uint64(5) {
				l := newLink(t, cfg, 0.3, seed)
				sent := [2]uint32{}
				for range 400 {
					for i, e := range l.ends {
						if e.p.Send(msg(sent[i] + 1)) {
							sent[i]++
						}
					}
					l.run(time.Millisecond)
				}
				l.run(5 * time.Second)
				for i, e := range l.ends {
					other := l.ends[1-i]
					if !inOrder(other.got, 1, sent[i]) {
						t.Fatalf("seed %d: end %d sent 1..%d, the other delivered %d: %v", seed, i, sent[i], len(other.got), other.got)
					}
					if n := e.p.Inflight() + e.p.Queued(); n != 0 || e.holds != 0 {
						t.Errorf("seed %d: end %d: %d unacknowledged or queued, held off %d", seed, i, n, e.holds)
					}
					if n, b := other.p.Early(); n != 0 || b != 0 {
						t.Errorf("seed %d: end %d holds %d early arrivals (%d bytes)", seed, 1-i, n, b)
					}
				}
			}
		})
	}
}

// TestGivenUpIsNotWaitedFor: messages the sender gave up (its peer did
// not answer) are not waited for by the receiver: what the sender sends
// after is delivered, and what arrived early before the give-up is
// delivered in order first. The sender is silent until it hears from the
// peer again.
func TestGivenUpIsNotWaitedFor(t *testing.T) {
	for name, cfg := range disciplines {
		t.Run(name, func(t *testing.T) {
			cfg.MaxTries = 3
			l := newLink(t, cfg, 0, 1)
			a, b := l.ends[0], l.ends[1]
			// 2 and 3 arrive, 1 never does; then the path fails whole
			a.p.Send(msg(1))
			l.flight = nil
			a.p.Send(msg(2))
			a.p.Send(msg(3))
			l.run(4 * time.Millisecond)
			l.down = true
			l.run(5 * time.Second)
			if a.p.Inflight() != 0 || !a.p.Silent() {
				t.Fatalf("after the path failed: %d unacknowledged, silent %v; want 0 and silent", a.p.Inflight(), a.p.Silent())
			}
			l.down = false
			a.p.Send(msg(4))
			l.run(time.Second)
			if !slices.Equal(b.got, []uint32{2, 3, 4}) {
				t.Fatalf("delivered %v, want [2 3 4] (1 given up)", b.got)
			}
			if a.p.Silent() {
				t.Errorf("still silent after the peer acknowledged")
			}
		})
	}
}

// TestNewSessionStartsAtItsFloor: a sender that made its state afresh
// (a new session, numbering from 1 again) is delivered from, though the
// receiver kept its state; copies from its earlier session are dropped.
func TestNewSessionStartsAtItsFloor(t *testing.T) {
	cfg := disciplines["fixed, refused"]
	l := newLink(t, cfg, 0, 1)
	a, b := l.ends[0], l.ends[1]
	for n := range uint32(5) {
		a.p.Send(msg(n + 1))
	}
	l.run(time.Second)
	old := a.p
	a.p = a.pr.NewPeer(2, 99)
	for n := range uint32(3) {
		a.p.Send(msg(n + 10))
	}
	l.run(time.Second)
	// a late copy of the old session's message 6
	m := event.NewMessage()
	binary.BigEndian.PutUint32(m.Append(4), 6)
	b.p.Receive(In{Msg: m}, 6, 6, old.Session())
	if !slices.Equal(b.got, []uint32{1, 2, 3, 4, 5, 10, 11, 12}) {
		t.Fatalf("delivered %v, want 1..5 then 10..12", b.got)
	}
}

// TestEarlyArrivalsBoundedByBytes: with MaxHeldBytes, early arrivals
// beyond it are dropped unacknowledged, and come again.
func TestEarlyArrivalsBoundedByBytes(t *testing.T) {
	cfg := disciplines["adaptive, queued"]
	cfg.MaxHeldBytes = 2 * event.HeldCost(4)
	l := newLink(t, cfg, 0, 1)
	a, b := l.ends[0], l.ends[1]
	a.p.Send(msg(1))
	l.flight = nil // 1 is lost: the rest arrive early
	for n := range uint32(6) {
		a.p.Send(msg(n + 2))
	}
	l.run(4 * time.Millisecond)
	if n, bytes := b.p.Early(); n != 2 || bytes > cfg.MaxHeldBytes {
		t.Fatalf("%d early arrivals held (%d bytes), want 2 (bound %d bytes)", n, bytes, cfg.MaxHeldBytes)
	}
	l.run(5 * time.Second)
	if !inOrder(b.got, 1, 7) {
		t.Fatalf("delivered %v, want 1..7", b.got)
	}
}
