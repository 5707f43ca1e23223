package mflow

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// probe sits under mflow and records, per node, when acknowledgements
// arrive and how many data bytes have arrived but not been processed.
type probe struct {
	stack.Base
	ackTimes []event.Time
}

func (p *probe) Up(ev *event.Event) {
	if ev.Kind == event.Send && ev.Control {
		p.ackTimes = append(p.ackTimes, p.Ctx.Now())
	}
	p.Ctx.Up(ev)
}

// cluster is n nodes on a lossless simulated network (no jitter, so every
// link is reliable and FIFO), each with mflow over a probe.
type cluster struct {
	t      *testing.T
	net    *sim.Network
	g      event.GroupID
	ids    []event.NodeID
	stacks map[event.NodeID]*stack.Stack
	layers map[event.NodeID]*Layer
	probes map[event.NodeID]*probe
	// delivered[receiver][sender] is the next expected sequence number.
	delivered map[event.NodeID]map[event.NodeID]uint64
	got       int
	flow      map[event.NodeID]bool // false while held off
	holdOffs  int
	resumes   int
	seq       map[event.NodeID]uint64 // next sequence number per sender
	// lax ignores deliveries out of sequence instead of failing (forged
	// input may be delivered).
	lax bool
	// lat holds every send-to-delivery latency of messages of at least 16
	// bytes (castEvery stamps the send time after the sequence number).
	lat []time.Duration
}

func newCluster(t *testing.T, n int, cfg Config, latency time.Duration) *cluster {
	t.Helper()
	c := &cluster{
		t: t, net: sim.New(sim.Config{Seed: 7, Latency: latency}), g: 1,
		stacks: map[event.NodeID]*stack.Stack{}, layers: map[event.NodeID]*Layer{},
		probes: map[event.NodeID]*probe{}, delivered: map[event.NodeID]map[event.NodeID]uint64{},
		flow: map[event.NodeID]bool{}, seq: map[event.NodeID]uint64{},
	}
	for i := 1; i <= n; i++ {
		c.addNode(event.NodeID(i), cfg)
	}
	c.install(c.ids)
	return c
}

func (c *cluster) addNode(id event.NodeID, cfg Config) {
	nd := c.net.AddNode(id)
	l, p := New(cfg), &probe{}
	self := id
	c.delivered[id] = map[event.NodeID]uint64{}
	c.flow[id] = true
	st, err := stack.New(stack.Config{
		Self: id, Transport: nd, Clock: c.net, Seed: 1,
		Layers: []stack.Entry{{Name: "mflow", Layer: l}, {Name: "probe", Layer: p}},
		App: stack.AppFuncs{
			OnDeliver: func(d stack.Delivery) {
				if c.lax && len(d.Payload) < 8 {
					return // forged input (fuzzing)
				}
				seq := binary.BigEndian.Uint64(d.Payload)
				// A receiver that joins late starts wherever the stream is.
				if want, ok := c.delivered[self][d.From]; ok && seq != want {
					if c.lax {
						return
					}
					c.t.Fatalf("node %v delivered %d from %v, want %d", self, seq, d.From, want)
				}
				c.delivered[self][d.From] = seq + 1
				c.got++
				if len(d.Payload) >= 16 {
					c.lat = append(c.lat, c.net.Now().Sub(event.Time(binary.BigEndian.Uint64(d.Payload[8:]))))
				}
			},
			OnFlow: func(g event.GroupID, ok bool) {
				c.flow[self] = ok
				if ok {
					c.resumes++
				} else {
					c.holdOffs++
				}
			},
		},
	})
	if err != nil {
		c.t.Fatal(err)
	}
	nd.Attach(st)
	c.ids = append(c.ids, id)
	c.stacks[id], c.layers[id], c.probes[id] = st, l, p
}

var viewID uint64

// install gives every node the new view (members and those left out).
func (c *cluster) install(members []event.NodeID) {
	viewID++
	v := &event.ViewInfo{Group: c.g, ID: viewID, Members: append([]event.NodeID(nil), members...)}
	for _, id := range c.ids {
		c.stacks[id].InstallView(v)
	}
}

// castEvery makes sender cast count messages of size bytes, one every
// gap, starting at start; a cast refused for back-pressure is retried at
// the next tick. It returns a pointer to the number cast so far.
func (c *cluster) castEvery(sender event.NodeID, size, count int, gap time.Duration, start event.Time) *int {
	sent := new(int)
	payload := make([]byte, size)
	var tick func()
	tick = func() {
		if *sent >= count {
			return
		}
		if c.flow[sender] {
			binary.BigEndian.PutUint64(payload, c.seq[sender])
			if size >= 16 {
				binary.BigEndian.PutUint64(payload[8:], uint64(c.net.Now()))
			}
			if err := c.stacks[sender].Cast(c.g, payload); err == nil {
				*sent++
				c.seq[sender]++
			}
		}
		c.net.After(gap, tick)
	}
	c.net.At(start, tick)
	return sent
}

// counter reads one of a node's mflow counters.
func (c *cluster) counter(id event.NodeID, name string) int64 {
	for _, lc := range c.stacks[id].Counters() {
		if lc.Layer != "mflow" {
			continue
		}
		for i, n := range lc.Names {
			if n == name {
				return lc.Values[i]
			}
		}
	}
	return 0
}

// total sums a counter over every node.
func (c *cluster) total(name string) int64 {
	var s int64
	for _, id := range c.ids {
		s += c.counter(id, name)
	}
	return s
}

// exactLimit is the limit the sender l should hold for a receiver count r
// once everything sent has arrived: window plus what the receiver has
// taken in, minus what it counted and not yet returned (its count and its
// kept-back offset), plus the headroom its offset gives.
func exactLimit(l *Layer, sent int64, r *receiver) int64 {
	return l.cfg.Window + sent - r.c - r.off + l.headroom(r.off)
}
