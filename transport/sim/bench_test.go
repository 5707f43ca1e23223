package sim_test

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// BenchmarkSimDeliveries measures simulated packet deliveries per wall-clock
// second: one sender multicasts 100-byte messages to 16 receivers through
// pass-through stacks, with latency, jitter and 1% uniform loss. One op is
// one delivery to a receiving stack.
func BenchmarkSimDeliveries(b *testing.B) {
	for _, tc := range []struct {
		name string
		cap  sim.Capacity
	}{
		{"unlimited", sim.Capacity{}},
		{"capacity", sim.Capacity{SendPPS: 1e6, SendQueue: 1 << 12, RecvPPS: 1e6, RecvBuffer: 1 << 12}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			const receivers = 16
			net := sim.New(sim.Config{Seed: 1, Latency: 100 * time.Microsecond, Jitter: 50 * time.Microsecond,
				Loss: sim.Uniform{P: 0.01}, Capacity: tc.cap})
			members := make([]event.NodeID, receivers+1)
			stacks := make([]*stack.Stack, receivers+1)
			for i := range members {
				members[i] = event.NodeID(i + 1)
			}
			view := &event.ViewInfo{Group: grp, ID: 1, Members: members}
			for i, id := range members {
				nd := net.AddNode(id)
				st, err := stack.New(stack.Config{Self: id, Transport: nd, Clock: nd,
					Layers: []stack.Entry{{Name: "pass", Layer: &pass{}}}, AppQueue: 1024})
				if err != nil {
					b.Fatal(err)
				}
				nd.Attach(st)
				st.InstallView(view)
				stacks[i] = st
			}
			payload := make([]byte, 100)
			run := func(deliveries int64) {
				for net.Stats().Deliveries < deliveries {
					for i := 0; i < 64; i++ {
						if err := stacks[0].Cast(grp, payload); err != nil {
							b.Fatal(err)
						}
					}
					net.Run(200 * time.Microsecond)
				}
			}
			run(100_000) // warm the pools and queues
			start := net.Stats().Deliveries
			b.ReportAllocs()
			b.ResetTimer()
			run(start + int64(b.N))
			b.StopTimer()
			d := net.Stats().Deliveries - start
			b.ReportMetric(float64(d)/b.Elapsed().Seconds(), "deliveries/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(d), "ns/delivery")
		})
	}
}
