package pack_test

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/testbed/testkit"
)

// BenchmarkPackUnpack: 1,000-byte casts through the pack layer at node 1,
// packed 8 to a datagram (default 8 KB), handed to node 2 and unpacked
// there; the clock moves every 256 casts so held packs leave. 0 allocs per
// message in steady state.
func BenchmarkPackUnpack(b *testing.B) {
	var now event.Time
	clock := stack.ClockFunc(func() event.Time { return now })
	delivered := 0
	pool := &event.Pool{}
	rx, err := stack.New(stack.Config{Self: 2, Transport: &testkit.Transport{}, Clock: clock, Pool: pool,
		Layers: layertest.Registered(nil, "pack")(),
		App:    stack.AppFuncs{OnDeliver: func(stack.Delivery) { delivered++ }}})
	if err != nil {
		b.Fatal(err)
	}
	tx, err := stack.New(stack.Config{Self: 1, Clock: clock, Pool: pool, Layers: layertest.Registered(nil, "pack")(),
		Transport: &testkit.Transport{Deliver: func(p testkit.Packet) { _ = rx.Receive(p.Data) }}})
	if err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 1000)
	step := func(n int) {
		for i := 0; i < n; i++ {
			if err := tx.Cast(1, payload); err != nil {
				b.Fatal(err)
			}
			if i%256 == 255 {
				now += event.Time(time.Millisecond)
				tx.Tick()
			}
		}
		now += event.Time(time.Millisecond)
		tx.Tick()
	}
	step(4096) // warm the pool
	delivered = 0
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	b.ResetTimer()
	step(b.N)
	b.StopTimer()
	if delivered != b.N {
		b.Fatalf("delivered %d of %d", delivered, b.N)
	}
}
