package ring

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// benchNet is an in-memory network for benchmarks: packets queue (in
// reused buffers) and are handed over when the benchmark drains the queue.
type benchNet struct {
	stacks map[event.NodeID]*stack.Stack
	q      []benchPkt
	free   [][]byte
	now    event.Time
}

type benchPkt struct {
	from, to event.NodeID // to: NoNode for a multicast
	b        []byte
}

type benchPort struct {
	n    *benchNet
	self event.NodeID
}

func (p benchPort) put(to event.NodeID, pkt []byte) {
	var b []byte
	if k := len(p.n.free); k > 0 {
		b, p.n.free = p.n.free[k-1][:0], p.n.free[:k-1]
	}
	p.n.q = append(p.n.q, benchPkt{from: p.self, to: to, b: append(b, pkt...)})
}

func (p benchPort) Send(to event.NodeID, pkt []byte)          { p.put(to, pkt) }
func (p benchPort) Multicast(_ event.GroupID, pkt []byte)     { p.put(event.NoNode, pkt) }
func (p benchPort) MulticastOn(_ event.ChannelID, pkt []byte) { p.put(event.NoNode, pkt) }
func (p benchPort) Subscribe(event.GroupID) error             { return nil }
func (p benchPort) Unsubscribe(event.GroupID) error           { return nil }
func (p benchPort) SubscribeChannel(event.ChannelID) error    { return nil }
func (p benchPort) UnsubscribeChannel(event.ChannelID) error  { return nil }
func (n *benchNet) drain() {
	for len(n.q) > 0 {
		p := n.q[0]
		n.q = n.q[1:]
		n.now += event.Time(10 * time.Microsecond)
		for id, st := range n.stacks {
			if id != p.from && (p.to == event.NoNode || p.to == id) {
				_ = st.Receive(p.b)
			}
		}
		n.free = append(n.free, p.b)
		for _, st := range n.stacks {
			if st.Next() <= n.now {
				st.Tick()
			}
		}
	}
	n.q = n.q[:0]
}

// BenchmarkCastDeliver: a cast at node 1 of a three-member ring, ordered
// by the token and delivered at all three (the token's cost included). The
// data path allocates nothing per message.
func BenchmarkCastDeliver(b *testing.B) {
	n := &benchNet{stacks: map[event.NodeID]*stack.Stack{}}
	delivered := 0
	pool := &event.Pool{}
	cfg := testConfig()
	for _, id := range ids(3) {
		st, err := stack.New(stack.Config{Self: id, Transport: benchPort{n, id}, Clock: stack.ClockFunc(func() event.Time { return n.now }),
			Layers: []stack.Entry{{Name: "ring", Layer: New(cfg)}}, Pool: pool,
			App: stack.AppFuncs{OnDeliver: func(stack.Delivery) { delivered++ }}})
		if err != nil {
			b.Fatal(err)
		}
		n.stacks[id] = st
	}
	v := &event.ViewInfo{Group: 1, ID: 1, Members: ids(3)}
	for _, st := range n.stacks {
		st.InstallView(v)
	}
	payload := make([]byte, 100)
	step := func() {
		n.drain()
		n.now += event.Time(time.Millisecond)
		for _, st := range n.stacks {
			st.Tick()
		}
	}
	cast := func(k int) {
		for i := 0; i < k; i++ {
			for n.stacks[1].Cast(1, payload) != nil {
				step() // held off: let the token take some
			}
		}
		for range 20 { // the token goes round while there is work
			step()
		}
	}
	cast(4096) // warm up pools, rings and windows
	delivered = 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 64 {
		cast(min(64, b.N-i))
	}
	b.StopTimer()
	if delivered != 3*b.N {
		b.Fatalf("delivered %d of %d", delivered, 3*b.N)
	}
}
