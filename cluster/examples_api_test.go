package cluster_test

import (
	"fmt"
	"log"
	"time"

	"github.com/layercast/layercast/cluster"
)

// Building a cluster: a spec string (or the path of a .stack file) and
// options; a spec that cannot work is refused here with the reason.
func ExampleNew() {
	c, err := cluster.New("fifo : reliable", cluster.WithSeed(7), cluster.WithLoss("1%"),
		cluster.WithLatency(500*time.Microsecond, 100*time.Microsecond))
	fmt.Println(c != nil, err)
	_, err = cluster.New("fifo : relaible")
	fmt.Println(err != nil)
	// Output:
	// true <nil>
	// true
}

// Naming groups and their members; the nodes are every member of some
// group.
func ExampleCluster_Group() {
	c, _ := cluster.New("fifo : reliable")
	_ = c.Group("prices", 1, 2, 3)
	_ = c.Group("news", 3, 4)
	fmt.Println(c.Nodes(), c.Members("news"))
	fmt.Println(c.Group("solo", 5))
	// Output:
	// [1 2 3 4] [3 4]
	// cluster: group "solo" has 1 member(s); a group needs at least 2
}

// Casting: errors say what is wrong.
func ExampleCluster_Cast() {
	c, _ := cluster.New("fifo : reliable")
	_ = c.Group("prices", 1, 2, 3)
	_ = c.Group("news", 3, 4)
	if err := c.Start(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.Cast(1, "prices", []byte("tick")))
	fmt.Println(c.Cast(1, "news", []byte("hello")))
	fmt.Println(c.Cast(1, "weather", []byte("rain")))
	// Output:
	// <nil>
	// cluster: node 1 is not a member of "news" (members [3 4])
	// cluster: no group "weather" (groups: prices, news)
}

// Receiving deliveries and views through callbacks.
func ExampleCluster_OnDeliver() {
	c, _ := cluster.New("fifo : reliable")
	_ = c.Group("chat", 1, 2, 3)
	c.OnView(func(v cluster.View) { fmt.Printf("node %d: view %d of %s: %v\n", v.Node, v.ID, v.Group, v.Members) })
	c.OnDeliver(func(d cluster.Delivery) {
		fmt.Printf("node %d got %q from %d in %s at %v\n", d.Node, d.Payload, d.From, d.Group, d.At)
	})
	_ = c.Start()
	_ = c.Cast(2, "chat", []byte("hi"))
	_ = c.RunUntilQuiet()
	// Output:
	// node 1: view 1 of chat: [1 2 3]
	// node 2: view 1 of chat: [1 2 3]
	// node 3: view 1 of chat: [1 2 3]
	// node 1 got "hi" from 2 in chat at 1ms
	// node 3 got "hi" from 2 in chat at 1ms
}

// Running until quiet: the simulated cluster runs until nothing has been
// delivered for Config.Quiet and no send waits; losses are recovered on the
// way, and every counter can be read afterwards.
func ExampleCluster_RunUntilQuiet() {
	c, _ := cluster.New("fifo : reliable", cluster.WithLoss("10%"), cluster.WithSeed(3))
	_ = c.Group("g", 1, 2, 3, 4)
	delivered := 0
	c.OnDeliver(func(cluster.Delivery) { delivered++ })
	_ = c.Start()
	for i := 0; i < 50; i++ {
		_ = c.Cast(1, "g", []byte("x"))
	}
	if err := c.RunUntilQuiet(); err != nil {
		log.Fatal(err)
	}
	m := c.Metrics()
	fmt.Println("delivered", delivered, "of", 3*50)
	fmt.Println("packets lost", m.Sim.Dropped > 0, "- delivered by reliable", m.Sum("reliable", "delivered"))
	// Output:
	// delivered 150 of 150
	// packets lost true - delivered by reliable 150
}

// Joining with a membership service: for a spec ending in gms, Start runs
// the service and every member's join; a later Join takes effect when the
// service's view arrives, and until then the node's casts say so.
func ExampleCluster_Join() {
	c, _ := cluster.New("fifo : reliable : gms")
	_ = c.Group("a", 1, 2)
	_ = c.Group("b", 2, 3)
	if err := c.Start(); err != nil {
		log.Fatal(err)
	}
	_ = c.Join(3, "a")
	fmt.Println(c.Cast(3, "a", []byte("early")))
	_ = c.Run(time.Second)
	fmt.Println(c.Cast(3, "a", []byte("in")))
	// Output:
	// cluster: node 3 has no view of "a" yet: join it or install its view (with gms, run the cluster until the service has installed it)
	// <nil>
}

// The same cluster on real UDP multicast: every node runs in this process on
// its own socket, with multicast on the loopback interface. It needs a
// network where multicast is routed on lo (a network namespace: see the
// README), so go test only compiles it; tests/embed_chan_udp_test.go runs
// it in a namespace and checks that it prints what its last comment says.
func ExampleWithUDP() {
	c, err := cluster.New("fifo : reliable", cluster.WithUDP("lo"))
	if err != nil {
		log.Fatal(err)
	}
	_ = c.Group("prices", 1, 2, 3)
	deliveries := c.Deliveries() // or OnDeliver, which runs on the nodes' goroutines over UDP
	if err := c.Start(); err != nil {
		log.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if err := c.CastWait(1, "prices", []byte(fmt.Sprint("tick", i))); err != nil {
			log.Fatal(err)
		}
	}
	if err := c.RunUntilQuiet(); err != nil {
		log.Fatal(err)
	}
	c.Close() // the channel holds the 10 deliveries (fewer than its 256) and is closed
	got := map[int][]string{}
	for d := range deliveries {
		got[d.Node] = append(got[d.Node], string(d.Payload))
	}
	fmt.Println("node 2:", got[2])
	fmt.Println("node 3:", got[3])
	// On UDP it prints:
	// node 2: [tick0 tick1 tick2 tick3 tick4]
	// node 3: [tick0 tick1 tick2 tick3 tick4]
}

// Running for a duration: Run advances the simulated network by exactly
// that much virtual time (casts made in between go out as it runs), and Now
// says where the clock is.
func ExampleCluster_Run() {
	c, _ := cluster.New("fifo : reliable", cluster.WithLatency(2*time.Millisecond, 0))
	_ = c.Group("g", 1, 2)
	got := 0
	c.OnDeliver(func(cluster.Delivery) { got++ })
	_ = c.Start()
	_ = c.Cast(1, "g", []byte("a"))
	_ = c.Run(time.Millisecond)
	fmt.Println(c.Now(), "delivered", got)
	_ = c.Run(time.Millisecond)
	fmt.Println(c.Now(), "delivered", got)
	// Output:
	// 1ms delivered 0
	// 2ms delivered 1
}

// Reading metrics: every node's counters, by layer, and the simulated
// network's totals.
func ExampleCluster_Metrics() {
	c, _ := cluster.New("fifo : reliable : lec(r=4, c=2)", cluster.WithLoss("5%"), cluster.WithSeed(2))
	_ = c.Group("a", 1, 2, 3)
	_ = c.Group("b", 2, 3, 4)
	_ = c.Start()
	for i := 0; i < 100; i++ {
		_ = c.Cast(2, "a", []byte("x"))
		_ = c.Cast(3, "b", []byte("y"))
		_ = c.Run(time.Millisecond)
	}
	_ = c.RunUntilQuiet()
	m := c.Metrics()
	fmt.Println("nodes:", len(m.Nodes), "delivered by fifo:", m.Sum("fifo", "delivered"))
	fmt.Println("lost some:", m.Sim.Dropped > 0, "rebuilt some by lec:", m.Sum("lec", "recovered") > 0)
	fmt.Println("node 1 received data:", m.Nodes[0].Counter("lec", "data_in") > 0)
	// Output:
	// nodes: 4 delivered by fifo: 400
	// lost some: true rebuilt some by lec: true
	// node 1 received data: true
}
