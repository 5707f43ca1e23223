package cluster_test

import (
	"fmt"
	"log"
	"time"

	"github.com/layercast/layercast/cluster"
	_ "github.com/layercast/layercast/layers/all" // register the layers
)

// Five nodes in three named, overlapping groups on the simulator with 2%
// loss: every member casts 100 messages to each of its groups, and every
// other member must get each of them once, in the sender's order. This is
// the README's program; replacing cluster.WithLoss("2%") by
// cluster.WithUDP("lo") runs it on UDP multicast.
func Example() {
	c, err := cluster.New("fifo : reliable : lec(r=8, c=5)",
		cluster.WithLoss("2%")) // cluster.WithUDP("lo") runs it on UDP multicast
	if err != nil {
		log.Fatal(err)
	}
	names := []string{"prices", "news", "trades"}
	groups := map[string][]int{"prices": {1, 2, 3}, "news": {2, 3, 4, 5}, "trades": {1, 4, 5}}
	for _, g := range names {
		c.Group(g, groups[g]...)
	}
	next, bad := map[string]int{}, 0 // next: the message expected next, by receiver, group and sender
	c.OnDeliver(func(d cluster.Delivery) {
		k := fmt.Sprint(d.Node, d.Group, d.From)
		if string(d.Payload) != fmt.Sprint(next[k]) {
			bad++
		}
		next[k]++
	})
	if err := c.Start(); err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 100; i++ {
		for _, g := range names {
			for _, from := range groups[g] {
				if err := c.Cast(from, g, []byte(fmt.Sprint(i))); err != nil {
					log.Fatal(err)
				}
			}
		}
		c.Run(10 * time.Millisecond)
	}
	if err := c.RunUntilQuiet(); err != nil {
		log.Fatal(err)
	}
	for _, g := range names {
		for _, to := range groups[g] {
			for _, from := range groups[g] {
				if to != from && next[fmt.Sprint(to, g, from)] != 100 {
					bad++
				}
			}
		}
	}
	fmt.Println("missing or out of order:", bad)
	// Output: missing or out of order: 0
}
