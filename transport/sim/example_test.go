package sim_test

import (
	"fmt"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// A scripted scenario printing every network event: node 1 multicasts to
// 2 and 3 every millisecond, node 3 is frozen for 2.5 ms with room for one
// packet, and the link drops bursts of two.
func ExampleConfig_trace() {
	loss, _ := sim.ParseLoss("bursty:20%,2")
	net := sim.New(sim.Config{Seed: 7, Latency: time.Millisecond, Loss: loss,
		Trace: func(e sim.TraceEvent) { fmt.Println(e) }})
	view := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3}}
	var sender *stack.Stack
	for id := event.NodeID(1); id <= 3; id++ {
		nd := net.AddNode(id)
		st, _ := stack.New(stack.Config{Self: id, Transport: nd, Clock: nd, Layers: []stack.Entry{{Name: "pass", Layer: &pass{}}}})
		nd.Attach(st)
		st.InstallView(view)
		if id == 1 {
			sender = st
		}
	}
	net.SetCapacity(3, sim.Capacity{RecvBuffer: 1})
	f, _ := sim.ParseFault("freeze:3@1500us+2500us")
	f.Schedule(net)
	for i := 0; i < 4; i++ {
		net.At(event.Time(time.Duration(i)*time.Millisecond), func() { _ = sender.Cast(1, []byte("m")) })
	}
	net.Run(10 * time.Millisecond)
	fmt.Printf("%+v\n", net.Stats())
	// Output:
	// 0s send 1->g1 11B
	// 0s drop 1->2 11B loss
	// 1ms send 1->g1 11B
	// 1ms drop 1->2 11B loss
	// 1ms deliver 1->3 11B
	// 1.5ms fault freeze 2.5ms 3
	// 2ms send 1->g1 11B
	// 3ms send 1->g1 11B
	// 3ms deliver 1->2 11B
	// 3ms drop 1->3 11B overflow
	// 4ms fault thaw 3
	// 4ms deliver 1->3 11B
	// 4ms deliver 1->2 11B
	// 4ms deliver 1->3 11B
	// {Deliveries:5 Dropped:2 DroppedData:2 DroppedControl:0 Sent:4 OverflowDrops:1 SendQueueDrops:0 PartitionDrops:0 WANQueueDrops:0 DownDrops:0}
}
