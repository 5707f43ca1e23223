package hop

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/testkit"
	"github.com/layercast/layercast/stack"
)

// BenchmarkHopLink measures one message's cost across a Hop link: a cast at
// site 1's representative, sent over the link (token bucket, window, acks)
// and delivered in agreed order at site 2's, with a clock step every 256
// messages. The steady state allocates nothing.
func BenchmarkHopLink(b *testing.B) {
	for _, size := range []int{64, 1024} {
		b.Run(map[int]string{64: "64B", 1024: "1KiB"}[size], func(b *testing.B) { benchLink(b, size) })
	}
}

func benchLink(b *testing.B, size int) {
	var now event.Time
	clock := stack.ClockFunc(func() event.Time { return now })
	stacks := map[event.NodeID]*stack.Stack{}
	delivered := 0
	pool := &event.Pool{}
	for _, id := range []event.NodeID{1, 2} {
		self := id
		tr := &testkit.Transport{Deliver: func(p testkit.Packet) {
			for o, st := range stacks {
				if o != self && (p.To == event.NoNode || p.To == o) {
					_ = st.Receive(p.Data)
				}
			}
		}}
		l := New(Config{LinkRate: 1 << 40, Bucket: 1 << 30, Window: 1024, NackDelay: 5 * time.Millisecond, NackRetry: 200 * time.Millisecond,
			MaxRetries: 20, AckShort: 10 * time.Millisecond, AckLong: 100 * time.Millisecond, AckEvery: 32, Heartbeat: 20 * time.Millisecond,
			DeadAfter: time.Hour, MaxQueue: 1 << 16, MaxPending: 8192})
		st, err := stack.New(stack.Config{Self: id, Site: event.SiteID(id), Transport: tr, Clock: clock, Pool: pool,
			Layers: []stack.Entry{{Name: "hop", Layer: l}},
			App:    stack.AppFuncs{OnDeliver: func(stack.Delivery) { delivered++ }}})
		if err != nil {
			b.Fatal(err)
		}
		stacks[id] = st
	}
	v := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}}
	sites := []event.SiteView{{Site: 1, ID: 1, Members: []event.NodeID{1}}, {Site: 2, ID: 1, Members: []event.NodeID{2}}}
	for id, st := range stacks {
		st.InstallView(v)
		st.InstallNeighbourhood(&event.Neighbourhood{Self: id, Groups: []event.GroupID{1}, Views: map[event.GroupID]*event.ViewInfo{1: v}, Own: -1, Sites: sites, OwnSite: int(id - 1)})
	}
	payload := make([]byte, size)
	step := func() {
		now += event.Time(time.Millisecond)
		stacks[1].Tick()
		stacks[2].Tick()
	}
	for i := 0; i < 8192; i++ { // warm up pools and rings
		_ = stacks[1].Cast(1, payload)
		if i%256 == 255 {
			step()
		}
	}
	for i := 0; i < 100; i++ {
		step()
	}
	delivered = 0
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := stacks[1].Cast(1, payload); err != nil {
			b.Fatalf("Cast: %v", err)
		}
		if i%256 == 255 {
			step()
		}
	}
	for i := 0; i < 100; i++ {
		step()
	}
	b.StopTimer()
	if delivered != b.N {
		b.Fatalf("delivered %d of %d", delivered, b.N)
	}
}
