package tokenring_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/transport/sim"
)

// A sender that restarts (a new process under the same id: its numbering
// begins at 1 again) and is readmitted to its group before its peers saw
// it removed: their streams of it, and the purge points they last saw
// (about 300, in the old numbering), must not hold its new packets for
// duplicates nor purge them as stable. n1 and n2 deliver every cast of the
// new process, in order, and the new process frees every packet it sent.
func TestRestartedSenderNumbersAnew(t *testing.T) {
	c := threeJoined(t, sim.Config{Seed: 3, Latency: time.Millisecond, Jitter: 50 * time.Microsecond})
	sent := map[event.GroupID]map[event.NodeID]uint32{}
	c.CastLoop(3, 1, 300, 500*time.Microsecond, 100, sent)
	c.Net.Run(time.Second)
	if p := c.Counter("tokenring", "pending", 3); p != 0 || len(c.Got[1][1][3]) != 300 {
		t.Fatalf("set-up: pending %d at n3, n1 delivered %d of 300", p, len(c.Got[1][1][3]))
	}
	// n3 restarts: a new stack, readmitted in view 2 (Joined), which n1
	// and n2 install without a view that removed it.
	var got map[event.NodeID][]uint32 = map[event.NodeID][]uint32{}
	nd := c.Net.Node(3)
	st, err := stack.New(stack.Config{Self: 3, Transport: nd, Clock: c.Net, Layers: entries(nil)(), Seed: 7, AppQueue: 64, Log: layertest.Log,
		App: stack.AppFuncs{OnDeliver: func(d stack.Delivery) { got[d.From] = append(got[d.From], binary.BigEndian.Uint32(d.Payload)) }}})
	if err != nil {
		t.Fatal(err)
	}
	nd.Attach(st)
	c.Stacks[3] = st
	installAll(c, &event.ViewInfo{Group: 1, ID: 2, Members: []event.NodeID{1, 2, 3}, Joined: []event.NodeID{3}}, 2)
	before := map[event.NodeID]int{1: len(c.Got[1][1][3]), 2: len(c.Got[2][1][3])}
	cast := c.Caster(3, 1) // numbered from 1 again
	for i := 0; i < 30; i++ {
		c.Net.At(c.Net.Now().Add(time.Duration(i)*10*time.Millisecond), func() { cast(10) })
	}
	c.Net.Run(3 * time.Second)
	for _, id := range []event.NodeID{1, 2} {
		all := c.Got[id][1][3]
		fresh := all[before[id]:]
		if len(fresh) != 300 {
			t.Errorf("%v delivered %d of the restarted sender's 300 casts", id, len(fresh))
		}
		for i, x := range fresh {
			if x != uint32(i+1) {
				t.Errorf("%v: the restarted sender's cast %d delivered as %d, want in order from 1", id, i+1, x)
				break
			}
		}
	}
	if p := c.Counter("tokenring", "pending", 3); p != 0 {
		t.Errorf("pending at the restarted sender at the end = %d, want 0", p)
	}
	if s := c.Counter("tokenring", "skipped", 1, 2); s != 0 {
		t.Errorf("n1, n2 gave up %d packets, want none", s)
	}
}

// A sender readmitted (Joined) without a restart, in a view every member
// installs without the one that removed it: it numbers on, and every
// member (itself included, as fifo drops its state at the view that
// readmits it) delivers every cast it makes from its readmission on.
func TestReadmittedSenderNumbersOn(t *testing.T) {
	c := threeJoined(t, sim.Config{Seed: 3, Latency: time.Millisecond, Jitter: 50 * time.Microsecond})
	cast := c.Caster(3, 1)
	for i := 0; i < 30; i++ {
		c.Net.At(event.Time(time.Duration(i)*10*time.Millisecond), func() { cast(10) })
	}
	c.Net.Run(time.Second)
	if p := c.Counter("tokenring", "pending", 3); p != 0 || len(c.Got[1][1][3]) != 300 {
		t.Fatalf("set-up: pending %d at n3, n1 delivered %d of 300", p, len(c.Got[1][1][3]))
	}
	installAll(c, &event.ViewInfo{Group: 1, ID: 2, Members: []event.NodeID{1, 2, 3}, Joined: []event.NodeID{3}}, 2)
	for i := 0; i < 30; i++ {
		c.Net.At(c.Net.Now().Add(time.Duration(i)*10*time.Millisecond), func() { cast(10) })
	}
	c.Net.Run(3 * time.Second)
	for _, id := range []event.NodeID{1, 2} {
		all := c.Got[id][1][3]
		if len(all) != 600 {
			t.Errorf("%v delivered %d of n3's 600 casts, want 300 before and 300 after its readmission", id, len(all))
		}
		for i := 1; i < len(all); i++ {
			if all[i] != all[i-1]+1 {
				t.Errorf("%v delivered %d after %d", id, all[i], all[i-1])
				break
			}
		}
	}
	if p := c.Counter("tokenring", "pending", 3); p != 0 {
		t.Errorf("pending at n3 at the end = %d, want 0", p)
	}
}
