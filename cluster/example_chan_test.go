package cluster_test

import (
	"fmt"
	"log"

	"github.com/layercast/layercast/cluster"
)

// Receiving through channels: Deliveries, Views and Losses carry the same
// events as the callbacks, on bounded channels. One goroutine runs the
// cluster, another reads; when a channel is full the cluster waits for its
// reader (the simulated clock stops), so nothing is dropped and nothing
// grows. Close closes the channels, which ends the reading loop.
func ExampleCluster_Deliveries() {
	c, err := cluster.New("fifo : reliable", cluster.WithLoss("20%"), cluster.WithSeed(3),
		cluster.WithChanBuffer(4))
	if err != nil {
		log.Fatal(err)
	}
	_ = c.Group("chat", 1, 2, 3)
	deliveries, views, losses := c.Deliveries(), c.Views(), c.Losses()
	go func() { // the goroutine that runs the cluster
		defer c.Close()
		if err := c.Start(); err != nil {
			log.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			_ = c.CastWait(2, "chat", []byte(fmt.Sprint("m", i)))
		}
		_ = c.RunUntilQuiet()
	}()
	nviews, nlost := 0, 0
	for deliveries != nil || views != nil || losses != nil {
		select {
		case d, ok := <-deliveries:
			if !ok {
				deliveries = nil
				continue
			}
			fmt.Printf("node %d got %q from %d in %s at %v", d.Node, d.Payload, d.From, d.Group, d.At)
			if d.RecoveredBy != "" {
				fmt.Print(", recovered by ", d.RecoveredBy)
			}
			fmt.Println()
		case _, ok := <-views:
			if !ok {
				views = nil
				continue
			}
			nviews++
		case _, ok := <-losses:
			if !ok {
				losses = nil
				continue
			}
			nlost++
		}
	}
	fmt.Println("views installed:", nviews, "- packets lost:", nlost)
	// Output:
	// node 1 got "m0" from 2 in chat at 1ms
	// node 1 got "m1" from 2 in chat at 1ms
	// node 1 got "m2" from 2 in chat at 1ms
	// node 3 got "m0" from 2 in chat at 23ms, recovered by nak
	// node 3 got "m1" from 2 in chat at 23ms
	// node 3 got "m2" from 2 in chat at 23ms
	// views installed: 3 - packets lost: 2
}
