package layertest

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/membership"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
)

// pipe is a transport for node self that hands every packet at once to
// the other stacks (a multicast, on any channel, to all of them, whatever
// their subscriptions).
func pipe(stacks map[event.NodeID]*stack.Stack, self event.NodeID) chanPipe {
	return chanPipe{&testkit.Transport{Deliver: func(p testkit.Packet) {
		for id, st := range stacks {
			if id != self && (p.To == event.NoNode || p.To == id) {
				_ = st.Receive(p.Data)
			}
		}
	}}}
}

// chanPipe carries the channels of multi-group layers (a QSM region's) as
// it carries groups' (stack.Channels).
type chanPipe struct{ *testkit.Transport }

// MulticastOn multicasts on channel ch as on a group's.
func (c chanPipe) MulticastOn(ch event.ChannelID, pkt []byte) { c.Multicast(ch.Group(), pkt) }

// SubscribeChannel does nothing: the pipe delivers everything.
func (c chanPipe) SubscribeChannel(event.ChannelID) error { return nil }

// UnsubscribeChannel does nothing.
func (c chanPipe) UnsubscribeChannel(event.ChannelID) error { return nil }

// BenchCastDeliverSizes runs BenchCastDeliver with 64-byte and 1 KiB
// payloads as sub-benchmarks 64B and 1KiB.
func BenchCastDeliverSizes(b *testing.B, mk func() []stack.Entry) {
	b.Run("64B", func(b *testing.B) { BenchCastDeliver(b, 64, mk) })
	b.Run("1KiB", func(b *testing.B) { BenchCastDeliver(b, 1024, mk) })
}

// BenchSitesCastDeliverSizes is BenchCastDeliverSizes with the two nodes in
// two Spread sites (node i in site i, each its site's only member), the
// site views handed in with the view: a message crosses the wide area.
func BenchSitesCastDeliverSizes(b *testing.B, mk func() []stack.Entry) {
	b.Run("64B", func(b *testing.B) { benchCastDeliver(b, 64, mk, true) })
	b.Run("1KiB", func(b *testing.B) { benchCastDeliver(b, 1024, mk, true) })
}

// BenchCastDeliver measures the per-message cost of a stack built by mk: a
// cast at node 1, through the layers and the frame, received and delivered
// at node 2 over a direct pipe, with a clock step every 256 messages so
// stability digests (or token rounds) free the buffers. Both nodes get the
// group's view and their neighbourhood (multi-group layers need it). It
// fails unless every cast is delivered.
func BenchCastDeliver(b *testing.B, size int, mk func() []stack.Entry) {
	benchCastDeliver(b, size, mk, false)
}

func benchCastDeliver(b *testing.B, size int, mk func() []stack.Entry, sites bool) {
	var now event.Time
	clock := stack.ClockFunc(func() event.Time { return now })
	stacks := map[event.NodeID]*stack.Stack{}
	delivered := 0
	pool := &event.Pool{}
	for _, id := range []event.NodeID{1, 2} {
		cfg := stack.Config{
			Self: id, Transport: pipe(stacks, id), Clock: clock, Layers: mk(), Pool: pool,
			App: stack.AppFuncs{OnDeliver: func(stack.Delivery) { delivered++ }},
		}
		if sites {
			cfg.Site = event.SiteID(id)
		}
		st, err := stack.New(cfg)
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
	if sites {
		svs := []event.SiteView{{Site: 1, ID: 1, Members: v.Members[:1]}, {Site: 2, ID: 1, Members: v.Members[1:]}}
		for id, st := range stacks {
			st.InstallNeighbourhood(&event.Neighbourhood{Self: id, Groups: []event.GroupID{1},
				Views: map[event.GroupID]*event.ViewInfo{1: v}, Own: -1, Sites: svs, OwnSite: int(id - 1)})
		}
	}
	payload := make([]byte, size)
	settle := func() {
		now += event.Time(100 * time.Millisecond)
		stacks[1].Tick()
		stacks[2].Tick()
	}
	for i := 0; i < 4096; i++ { // warm up pools and rings
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
