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
// other member must get each of them once, in the sender's order. Replace
// cluster.WithLoss("2%") by cluster.WithUDP("lo") and the same program runs
// on UDP multicast.
func Example() {
	c, err := cluster.New("fifo : reliable : lec(r=8, c=5)", cluster.WithLoss("2%"))
	if err != nil {
		log.Fatal(err)
	}
	groups := []struct {
		name    string
		members []int
	}{{"prices", []int{1, 2, 3}}, {"news", []int{2, 3, 4, 5}}, {"trades", []int{1, 4, 5}}}
	for _, g := range groups {
		if err := c.Group(g.name, g.members...); err != nil {
			log.Fatal(err)
		}
	}
	next := map[string]int{} // "to/group/from" -> the message expected next
	bad, recovered := 0, 0
	c.OnDeliver(func(d cluster.Delivery) {
		k := fmt.Sprintf("%d/%s/%d", d.Node, d.Group, d.From)
		if string(d.Payload) != fmt.Sprint(next[k]) {
			bad++
		}
		next[k]++
		if d.RecoveredBy != "" {
			recovered++
		}
	})
	if err := c.Start(); err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 100; i++ {
		for _, g := range groups {
			for _, from := range g.members {
				if err := c.Cast(from, g.name, []byte(fmt.Sprint(i))); err != nil {
					log.Fatal(err)
				}
			}
		}
		c.Run(10 * time.Millisecond)
	}
	if err := c.RunUntilQuiet(); err != nil {
		log.Fatal(err)
	}
	for _, g := range groups {
		for _, to := range g.members {
			for _, from := range g.members {
				if n := next[fmt.Sprintf("%d/%s/%d", to, g.name, from)]; to != from && n != 100 {
					bad++
				}
			}
		}
	}
	fmt.Printf("missing or out of order: %d, some recovered: %v\n", bad, recovered > 0)
	// Output: missing or out of order: 0, some recovered: true
}
