// Package sim is a deterministic discrete-event network: a virtual clock,
// nodes with unicast links and multicast channels, latency and jitter, loss,
// and one goroutine that steps every node's stack in virtual-time order. The
// same seed gives the same run, byte for byte.
//
// Usage:
//
//	net := sim.New(sim.Config{Seed: 7, Latency: time.Millisecond})
//	nd := net.AddNode(1)
//	st, _ := stack.New(stack.Config{Self: 1, Transport: nd, Clock: net, Layers: layers})
//	nd.Attach(st)
//	net.At(0, func() { st.Cast(g, payload) })
//	net.RunUntil(event.Time(10 * time.Second))
package sim

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// Config sets up a network.
type Config struct {
	// Seed makes the run repeatable.
	Seed uint64
	// Latency is the one-way delay of every link.
	Latency time.Duration
	// Jitter adds a uniform random delay in [0, Jitter) to each packet.
	// Packets between one pair of nodes may then be reordered, as on a
	// real network.
	Jitter time.Duration
	// Loss drops packets on arrival at each receiver independently (nil:
	// no loss).
	Loss LossModel
}

// LossModel decides, per receiver, whether a packet arriving there is lost.
// Implementations keep per-receiver state (bursts) and use the given random
// source only, so runs stay deterministic.
type LossModel interface {
	Drop(rx event.NodeID, rng *rand.Rand) bool
}

// Uniform drops each packet independently with probability P.
type Uniform struct{ P float64 }

// Drop implements LossModel.
func (u Uniform) Drop(_ event.NodeID, rng *rand.Rand) bool { return u.P > 0 && rng.Float64() < u.P }

// Network is the simulated network and its virtual clock. It is not safe for
// concurrent use; everything runs on the caller's goroutine.
type Network struct {
	cfg   Config
	now   event.Time
	rng   *rand.Rand
	q     evQueue
	seq   uint64
	nodes map[event.NodeID]*Node
	order []*Node
	subs  map[event.GroupID][]*Node
	stats Stats
}

// Stats counts what the network did.
type Stats struct {
	// Deliveries is packets handed to a receiving stack.
	Deliveries int64
	// Dropped is packets lost by the loss model (per receiver).
	Dropped int64
	// DroppedData and DroppedControl split Dropped by frame flag.
	DroppedData, DroppedControl int64
	// Sent is packets sent (a multicast counts once).
	Sent int64
}

// New makes an empty network.
func New(cfg Config) *Network {
	return &Network{
		cfg:   cfg,
		rng:   rand.New(rand.NewPCG(cfg.Seed, 0x5eed)),
		nodes: map[event.NodeID]*Node{},
		subs:  map[event.GroupID][]*Node{},
	}
}

// Now is the virtual time. Network implements stack.Clock.
func (n *Network) Now() event.Time { return n.now }

// Stats returns the network's counters.
func (n *Network) Stats() Stats { return n.stats }

// Node is one node's attachment to the network; it implements
// stack.Transport for the stack attached to it.
type Node struct {
	net  *Network
	id   event.NodeID
	st   *stack.Stack
	wake event.Time // the earliest wake-up already queued
	down bool
}

// AddNode adds a node. Attach its stack before running.
func (n *Network) AddNode(id event.NodeID) *Node {
	nd := &Node{net: n, id: id, wake: event.Never}
	n.nodes[id] = nd
	n.order = append(n.order, nd)
	return nd
}

// Node returns the node with that id, or nil.
func (n *Network) Node(id event.NodeID) *Node { return n.nodes[id] }

// Attach connects the node's stack.
func (nd *Node) Attach(st *stack.Stack) { nd.st = st; nd.net.reschedule(nd) }

// ID is the node's id.
func (nd *Node) ID() event.NodeID { return nd.id }

// Stack is the attached stack.
func (nd *Node) Stack() *stack.Stack { return nd.st }

// Send implements stack.Transport.
func (nd *Node) Send(to event.NodeID, pkt []byte) {
	n := nd.net
	n.stats.Sent++
	dst := n.nodes[to]
	if dst == nil || nd.down {
		return
	}
	n.transmit(dst, pkt)
}

// Multicast implements stack.Transport.
func (nd *Node) Multicast(g event.GroupID, pkt []byte) {
	n := nd.net
	n.stats.Sent++
	if nd.down {
		return
	}
	for _, dst := range n.subs[g] {
		if dst != nd {
			n.transmit(dst, pkt)
		}
	}
}

// Subscribe implements stack.Transport.
func (nd *Node) Subscribe(g event.GroupID) error {
	s := nd.net.subs[g]
	i, found := slices.BinarySearchFunc(s, nd.id, func(a *Node, id event.NodeID) int { return int(a.id) - int(id) })
	if !found {
		nd.net.subs[g] = slices.Insert(s, i, nd)
	}
	return nil
}

// Unsubscribe implements stack.Transport.
func (nd *Node) Unsubscribe(g event.GroupID) error {
	s := nd.net.subs[g]
	i, found := slices.BinarySearchFunc(s, nd.id, func(a *Node, id event.NodeID) int { return int(a.id) - int(id) })
	if found {
		nd.net.subs[g] = slices.Delete(s, i, i+1)
	}
	return nil
}

// transmit schedules pkt's arrival at dst, or drops it.
func (n *Network) transmit(dst *Node, pkt []byte) {
	if n.cfg.Loss != nil && n.cfg.Loss.Drop(dst.id, n.rng) {
		n.stats.Dropped++
		if len(pkt) > 0 && pkt[0]&1 != 0 {
			n.stats.DroppedControl++
		} else {
			n.stats.DroppedData++
		}
		return
	}
	d := n.cfg.Latency
	if n.cfg.Jitter > 0 {
		d += time.Duration(n.rng.Int64N(int64(n.cfg.Jitter)))
	}
	cp := append([]byte(nil), pkt...)
	n.push(simEvent{at: n.now.Add(d), kind: evPacket, node: dst, pkt: cp})
}

// At schedules fn at virtual time t (or now, if t is past).
func (n *Network) At(t event.Time, fn func()) {
	if t < n.now {
		t = n.now
	}
	n.push(simEvent{at: t, kind: evFunc, fn: fn})
}

// After schedules fn after d.
func (n *Network) After(d time.Duration, fn func()) { n.At(n.now.Add(d), fn) }

// RunUntil processes events in time order until the next one is after t,
// then sets the clock to t.
func (n *Network) RunUntil(t event.Time) {
	for len(n.q) > 0 && n.q[0].at <= t {
		e := n.pop()
		n.now = e.at
		n.handle(&e)
	}
	if n.now < t {
		n.now = t
	}
}

// Run runs for d of virtual time.
func (n *Network) Run(d time.Duration) { n.RunUntil(n.now.Add(d)) }

func (n *Network) handle(e *simEvent) {
	switch e.kind {
	case evPacket:
		nd := e.node
		if nd.down || nd.st == nil {
			return
		}
		n.stats.Deliveries++
		_ = nd.st.Receive(e.pkt)
		n.reschedule(nd)
	case evWake:
		nd := e.node
		if e.at != nd.wake {
			return // superseded by an earlier wake-up
		}
		nd.wake = event.Never
		if nd.down || nd.st == nil {
			return
		}
		nd.st.Tick()
		n.reschedule(nd)
	case evFunc:
		e.fn()
		// the function may have stepped any stack
		for _, nd := range n.order {
			n.reschedule(nd)
		}
	}
}

// reschedule queues a wake-up for the node's next timer if it is earlier
// than the one already queued.
func (n *Network) reschedule(nd *Node) {
	if nd.st == nil {
		return
	}
	t := nd.st.Next()
	if t == event.Never || t >= nd.wake {
		return
	}
	if t < n.now {
		t = n.now
	}
	nd.wake = t
	n.push(simEvent{at: t, kind: evWake, node: nd})
}

// Crash stops a node for good: it sends and receives nothing more.
func (n *Network) Crash(id event.NodeID) {
	if nd := n.nodes[id]; nd != nil {
		nd.down = true
	}
}

type evKind uint8

const (
	evPacket evKind = iota
	evWake
	evFunc
)

type simEvent struct {
	at   event.Time
	seq  uint64
	kind evKind
	node *Node
	pkt  []byte
	fn   func()
}

// evQueue is a binary heap ordered by (at, seq).
type evQueue []simEvent

func (n *Network) push(e simEvent) {
	n.seq++
	e.seq = n.seq
	n.q = append(n.q, e)
	i := len(n.q) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !n.q.less(i, p) {
			break
		}
		n.q[i], n.q[p] = n.q[p], n.q[i]
		i = p
	}
}

func (q evQueue) less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}

func (n *Network) pop() simEvent {
	q := n.q
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q[last] = simEvent{}
	q = q[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= len(q) {
			break
		}
		m := l
		if r := l + 1; r < len(q) && q.less(r, l) {
			m = r
		}
		if !q.less(m, i) {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	n.q = q
	return top
}
