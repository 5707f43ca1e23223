// Command marketdata fans market data out over many overlapping groups: 3
// feed handlers publish ticks for 24 symbols, one group per symbol, and
// 9 subscribers each follow their own 8 symbols, so every subscriber sits
// in many groups that overlap with everyone else's. The stack is Ricochet's
// (`fifo : reliable : lec`): lateral error correction across the groups a
// node shares with its neighbours rebuilds most lost ticks within
// milliseconds, and NAKs fetch the rest. The network loses 1% of packets.
// The program checks that every subscriber got every tick of each of its
// symbols, in order, and exits 1 if one did not.
//
//	go run ./examples/marketdata
package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"time"

	"github.com/layercast/layercast/cluster"
	_ "github.com/layercast/layercast/layers/all" // register the layers
)

const (
	feeds       = 3  // nodes 1..3
	subscribers = 9  // nodes 4..12
	symbols     = 24 // symbol s is published by feed 1 + s%feeds
	follows     = 8  // symbols per subscriber
	ticks       = 300
)

func main() {
	c, err := cluster.New("fifo : reliable(nak_delay=20ms) : lec(r=8, c=5)", cluster.WithLoss("1%"), cluster.WithSeed(1),
		cluster.WithLatency(200*time.Microsecond, 50*time.Microsecond))
	if err != nil {
		fail(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	members := make([][]int, symbols)
	for s := range members {
		members[s] = []int{1 + s%feeds}
	}
	for sub := feeds + 1; sub <= feeds+subscribers; sub++ {
		for _, s := range rng.Perm(symbols)[:follows] {
			members[s] = append(members[s], sub)
		}
	}
	for s := range members {
		if len(members[s]) == 1 { // nobody follows it: give it one subscriber
			members[s] = append(members[s], feeds+1+s%subscribers)
		}
		sort.Ints(members[s])
		if err := c.Group(name(s), members[s]...); err != nil {
			fail(err)
		}
	}
	type key struct{ node, sym int }
	next := map[key]int{} // the tick each subscriber expects next, per symbol
	bad, byLEC, late := 0, 0, time.Duration(0)
	sent := map[int]time.Duration{} // tick -> when its round was cast
	c.OnDeliver(func(d cluster.Delivery) {
		var sym, seq int
		fmt.Sscanf(string(d.Payload), "S%d %d", &sym, &seq)
		k := key{d.Node, sym}
		if seq != next[k] {
			bad++
		}
		next[k] = seq + 1
		if d.RecoveredBy == "lec" {
			byLEC++
		}
		late = max(late, d.At-sent[seq])
	})
	if err := c.Start(); err != nil {
		fail(err)
	}
	defer c.Close()
	for t := 0; t < ticks; t++ {
		sent[t] = c.Now()
		for s := range members {
			tick := fmt.Appendf(nil, "S%d %d %.2f", s, t, 100+rng.NormFloat64())
			// CastWait runs the network while the send queue is full.
			if err := c.CastWait(members[s][0], name(s), tick); err != nil {
				fail(err)
			}
		}
		if err := c.Run(time.Millisecond); err != nil {
			fail(err)
		}
	}
	if err := c.RunUntilQuiet(); err != nil {
		fail(err)
	}
	owed := 0
	for s, ms := range members {
		for _, n := range ms[1:] {
			owed += ticks
			if next[key{n, s}] != ticks {
				bad++
				fmt.Printf("subscriber %d got %d of %d ticks of %s\n", n, next[key{n, s}], ticks, name(s))
			}
		}
	}
	m := c.Metrics()
	fmt.Printf("%d symbols over %d overlapping groups, %d subscriptions, %d ticks owed; %d packets lost, %d ticks rebuilt by lec, %d fetched by NAK; slowest tick %v after its round\n",
		symbols, len(members), owed/ticks, owed, m.Sim.Dropped, byLEC, m.Sum("reliable", "recovered_nak"), late.Round(time.Millisecond))
	if bad > 0 {
		fmt.Printf("FAIL: %d ticks missing or out of order\n", bad)
		os.Exit(1)
	}
	fmt.Println("ok: every subscriber got every tick of its symbols, in order")
}

func name(s int) string { return fmt.Sprintf("SYM%02d", s) }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "marketdata:", err)
	os.Exit(1)
}
