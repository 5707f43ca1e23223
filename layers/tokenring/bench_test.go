package tokenring_test

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/membership"
	"github.com/layercast/layercast/stack"
)

// chanPipe is a transport that hands every packet at once to the other
// stacks, multicasts (on any channel) to all of them.
type chanPipe struct {
	self   event.NodeID
	stacks map[event.NodeID]*stack.Stack
}

func (p *chanPipe) deliver(to event.NodeID, pkt []byte) {
	for id, st := range p.stacks {
		if id != p.self && (to == event.NoNode || to == id) {
			_ = st.Receive(pkt)
		}
	}
}

func (p *chanPipe) Send(to event.NodeID, pkt []byte)          { p.deliver(to, pkt) }
func (p *chanPipe) Multicast(_ event.GroupID, pkt []byte)     { p.deliver(event.NoNode, pkt) }
func (p *chanPipe) MulticastOn(_ event.ChannelID, pkt []byte) { p.deliver(event.NoNode, pkt) }
func (p *chanPipe) Subscribe(event.GroupID) error             { return nil }
func (p *chanPipe) Unsubscribe(event.GroupID) error           { return nil }
func (p *chanPipe) SubscribeChannel(event.ChannelID) error    { return nil }
func (p *chanPipe) UnsubscribeChannel(event.ChannelID) error  { return nil }
func (p *chanPipe) String() string                            { return "pipe" }

// BenchmarkCastDeliver is one cast through fifo : tokenring at node 1,
// multicast on the region's channel and delivered at node 2, with a clock
// step every 256 casts so that token rounds ACK and purge. The steady
// state allocates nothing per message.
func BenchmarkCastDeliver(b *testing.B) {
	for _, size := range []int{64, 1024} {
		b.Run(map[int]string{64: "64B", 1024: "1KiB"}[size], func(b *testing.B) { benchCastDeliver(b, size) })
	}
}

func benchCastDeliver(b *testing.B, size int) {
	var now event.Time
	clock := stack.ClockFunc(func() event.Time { return now })
	stacks := map[event.NodeID]*stack.Stack{}
	delivered := 0
	pool := &event.Pool{}
	mk := entries(map[string]string{"rate_control": "off"})
	for _, id := range []event.NodeID{1, 2} {
		st, err := stack.New(stack.Config{
			Self: id, Transport: &chanPipe{self: id, stacks: stacks}, Clock: clock, Layers: mk(), Pool: pool,
			App: stack.AppFuncs{OnDeliver: func(stack.Delivery) { delivered++ }},
		})
		if err != nil {
			b.Fatal(err)
		}
		stacks[id] = st
	}
	v := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}}
	nbs := membership.Static(map[event.GroupID]*event.ViewInfo{1: v})
	for id, st := range stacks {
		st.InstallView(v)
		st.InstallNeighbourhood(nbs[id])
	}
	payload := make([]byte, size)
	settle := func() {
		for range 3 { // a token round, its ACK, the purge on the next
			now += event.Time(60 * time.Millisecond)
			stacks[1].Tick()
			stacks[2].Tick()
		}
	}
	for i := 0; i < 8192; i++ { // warm up pools, rings and caches
		_ = stacks[1].Cast(1, payload)
		if i%256 == 255 {
			settle()
		}
	}
	settle()
	delivered = 0
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := stacks[1].Cast(1, payload); err != nil {
			b.Fatalf("Cast: %v", err)
		}
		if i%256 == 255 {
			settle()
		}
	}
	b.StopTimer()
	if delivered != b.N {
		b.Fatalf("delivered %d of %d", delivered, b.N)
	}
}
