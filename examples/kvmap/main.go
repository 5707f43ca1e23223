// Command kvmap is a replicated key-value map: five replicas in one group
// on a simulated network that loses 2% of packets, every update multicast
// to the group. It runs in one of two orders:
//
//   - fifo (the default): `fifo : reliable : gms`, per-sender FIFO order.
//     Each replica writes (sets and deletes) only its own keys, so FIFO
//     order from each writer is all it takes for every replica to end with
//     the same map. A writer applies its own update at once.
//   - agreed (-order agreed): `ring : gms`, Spread's Ring protocol, one
//     agreed (total) order for every member. Every replica writes the same
//     keys at the same time, so concurrent writes to one key conflict; each
//     replica applies every update, its own included, only when the stack
//     delivers it, and the agreed order makes every replica settle each
//     conflict the same way.
//
// The program checks that every replica's map equals the one meant (fifo:
// its writers' updates in order; agreed: every update applied in the agreed
// order, which every replica must have delivered identically), and exits 1
// if one does not. -spec runs another stack instead, to see which keep the
// promise (`-order agreed -spec 'fifo : reliable : gms'` does not).
//
//	go run ./examples/kvmap
//	go run ./examples/kvmap -order agreed
package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/layercast/layercast/cluster"
	_ "github.com/layercast/layercast/layers/all" // register the layers
)

const (
	replicas = 5
	updates  = 200 // per replica
	keys     = 16  // per replica (fifo) or shared by all (agreed)
)

// specs are the stacks of the two orders.
var specs = map[string]string{
	"fifo":   "fifo : reliable : gms",
	"agreed": "ring(member_limit=20, ring_limit=100, token_timeout=200ms) : gms",
}

// op is writer's i-th update: "set KEY VALUE" or "del KEY". With own keys
// each writer has a key space of its own (r2/k5); without, every writer
// writes k0..k15, and in each round all of them write the same key.
func op(writer, i int, own bool) string {
	k := fmt.Sprintf("k%d", (i*7)%keys)
	if own {
		k = fmt.Sprintf("r%d/%s", writer, k)
	}
	if i%5 == 4 {
		return "del " + k
	}
	return fmt.Sprintf("set %s w%d.%d", k, writer, i)
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
	order := flag.String("order", "fifo", "fifo (each replica writes its own keys) or agreed (every replica writes the same keys)")
	other := flag.String("spec", "", "run this stack instead of the order's own (to see which stacks keep the promise)")
	flag.Parse()
	spec, ok := specs[*order]
	if !ok {
		fmt.Fprintf(os.Stderr, "kvmap: -order %q: want fifo or agreed\n", *order)
		os.Exit(2)
	}
	if *other != "" {
		spec = *other
	}
	agreed := *order == "agreed"
	c, err := cluster.New(spec, cluster.WithLoss("2%"), cluster.WithSeed(1))
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
	logs := map[int][]string{}           // replica -> the updates it delivered, in order
	for _, n := range members {
		state[n] = map[string]string{}
	}
	c.OnDeliver(func(d cluster.Delivery) {
		u := string(d.Payload)
		apply(state[d.Node], u)
		logs[d.Node] = append(logs[d.Node], u)
	})
	if err := c.Start(); err != nil {
		fail(err)
	}
	defer c.Close()

	want := map[string]string{} // fifo: what the writers meant, their own updates in order
	for i := 0; i < updates; i++ {
		for _, w := range members {
			u := op(w, i, !agreed)
			if !agreed {
				apply(want, u)
				apply(state[w], u) // a FIFO writer applies its own update at once
			}
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
	if agreed {
		// The map meant is every update applied in the agreed order: the
		// first replica's, which every other must have delivered too,
		// each update exactly once.
		ref := logs[members[0]]
		if len(ref) != replicas*updates {
			bad++
			fmt.Printf("replica %d delivered %d updates, want %d\n", members[0], len(ref), replicas*updates)
		}
		for _, n := range members[1:] {
			if !slices.Equal(logs[n], ref) {
				bad++
				fmt.Printf("replica %d delivered its %d updates in another order than replica %d\n", n, len(logs[n]), members[0])
			}
		}
		for _, u := range ref {
			apply(want, u)
		}
	}
	for _, n := range members {
		if !maps.Equal(state[n], want) {
			bad++
			fmt.Printf("replica %d: %d keys, differs from the %d keys meant\n", n, len(state[n]), len(want))
		}
	}
	m := c.Metrics()
	fmt.Printf("%s order over %s: %d replicas, %d updates each, %d keys in the map; %d packets lost on the way\n",
		*order, spec, replicas, updates, len(want), m.Sim.Dropped)
	if agreed {
		fmt.Printf("in each round all %d replicas wrote the same key at once: %d writes that conflict with another\n",
			replicas, updates*replicas)
	}
	if bad > 0 {
		fmt.Printf("FAIL: %d checks failed\n", bad)
		os.Exit(1)
	}
	fmt.Println("ok: every replica holds the same map")
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "kvmap:", err)
	os.Exit(1)
}
