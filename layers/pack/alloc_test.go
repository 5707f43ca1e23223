package pack_test

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	_ "github.com/layercast/layercast/layers/reliable"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/testbed/testkit"
)

// TestCastsUnderReliableAllocateNothing: 1,000-byte casts through
// `reliable : pack` at node 1, delivered at node 2, allocate nothing per
// message in steady state. Before, every pack's buffer went back to the
// stack's pool and on to the next cast, which reliable copied into a fresh
// buffer to hold it, and the next pack grew a small buffer again.
func TestCastsUnderReliableAllocateNothing(t *testing.T) {
	var now event.Time
	clock := stack.ClockFunc(func() event.Time { return now })
	mk := layertest.Registered(nil, "reliable", "pack")
	stacks := map[event.NodeID]*stack.Stack{}
	delivered := 0
	for _, id := range []event.NodeID{1, 2} {
		self := id
		// a pool each, as each node in a process of its own
		st, err := stack.New(stack.Config{Self: id, Clock: clock, Pool: &event.Pool{}, Layers: mk(),
			App: stack.AppFuncs{OnDeliver: func(stack.Delivery) { delivered++ }},
			Transport: &testkit.Transport{Deliver: func(p testkit.Packet) {
				for other, st := range stacks {
					if other != self && (p.To == event.NoNode || p.To == other) {
						_ = st.Receive(p.Data)
					}
				}
			}}})
		if err != nil {
			t.Fatal(err)
		}
		stacks[id] = st
	}
	v := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}}
	for _, st := range stacks {
		st.InstallView(v)
	}
	payload := make([]byte, 1000)
	cast := func(n int) {
		for i := 0; i < n; i++ {
			if err := stacks[1].Cast(1, payload); err != nil {
				t.Fatal(err)
			}
			if i%64 == 63 { // packs leave, digests free the buffer
				now += event.Time(100 * time.Millisecond)
				stacks[1].Tick()
				stacks[2].Tick()
			}
		}
	}
	cast(8192) // warm the pools
	delivered = 0
	if a := testing.AllocsPerRun(20, func() { cast(256) }); a != 0 {
		t.Errorf("allocations per 256 casts = %v, want 0", a)
	}
	if delivered != 21*256 {
		t.Errorf("delivered %d of %d", delivered, 21*256)
	}
}
