// Command kvmap is a replicated key-value map: five replicas in one group,
// every update multicast with per-sender FIFO order (`fifo : reliable :
// gms`) over a simulated network that loses 2% of packets. Each replica
// writes (sets and deletes) only its own keys, so FIFO order from each
// writer is all it takes for every replica to end with the same map. The
// program checks that every replica's map equals the map its writers
// meant, and exits 1 if one does not.
//
//	go run ./examples/kvmap
package main

import (
	"fmt"
	"maps"
	"os"
	"strings"
	"time"

	"github.com/layercast/layercast/cluster"
	_ "github.com/layercast/layercast/layers/all" // register the layers
)

const (
	replicas = 5
	updates  = 200 // per replica
	keys     = 16  // per replica
)

// op is one update: "set KEY VALUE" or "del KEY".
func op(writer, i int) string {
	k := fmt.Sprintf("r%d/k%d", writer, (i*7)%keys)
	if i%5 == 4 {
		return "del " + k
	}
	return fmt.Sprintf("set %s %d", k, i)
}

// apply applies one update to a map.
func apply(m map[string]string, update string) {
	f := strings.Fields(update)
	switch {
	case len(f) == 3 && f[0] == "set":
		m[f[1]] = f[2]
	case len(f) == 2 && f[0] == "del":
		delete(m, f[1])
	}
}

func main() {
	c, err := cluster.New("fifo : reliable : gms", cluster.WithLoss("2%"), cluster.WithSeed(1))
	if err != nil {
		fail(err)
	}
	var members []int
	for i := 1; i <= replicas; i++ {
		members = append(members, i)
	}
	if err := c.Group("kv", members...); err != nil {
		fail(err)
	}
	state := map[int]map[string]string{} // replica -> its map
	for _, n := range members {
		state[n] = map[string]string{}
	}
	c.OnDeliver(func(d cluster.Delivery) { apply(state[d.Node], string(d.Payload)) })
	if err := c.Start(); err != nil {
		fail(err)
	}
	defer c.Close()

	want := map[string]string{} // what the writers meant: their own updates in order
	for i := 0; i < updates; i++ {
		for _, w := range members {
			u := op(w, i)
			apply(want, u)
			apply(state[w], u) // a writer applies its own update at once
			// CastWait runs the network while the send queue is full.
			if err := c.CastWait(w, "kv", []byte(u)); err != nil {
				fail(err)
			}
		}
		if err := c.Run(2 * time.Millisecond); err != nil { // between rounds of updates
			fail(err)
		}
	}
	if err := c.RunUntilQuiet(); err != nil {
		fail(err)
	}
	bad := 0
	for _, n := range members {
		if !maps.Equal(state[n], want) {
			bad++
			fmt.Printf("replica %d: %d keys, differs from the %d keys meant\n", n, len(state[n]), len(want))
		}
	}
	m := c.Metrics()
	fmt.Printf("%d replicas, %d updates each, %d keys in the map; %d packets lost on the way, %d recovered by NAK\n",
		replicas, updates, len(want), m.Sim.Dropped, m.Sum("reliable", "recovered_nak"))
	if bad > 0 {
		fmt.Printf("FAIL: %d replicas differ\n", bad)
		os.Exit(1)
	}
	fmt.Println("ok: every replica holds the same map")
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "kvmap:", err)
	os.Exit(1)
}
