package fifo_test

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/transport/sim"
)

// A removed node that misses the view re-admitting it (the others' view 2
// lists it in Joined) and first installs view 3 starts its stream at view 3,
// while the others start it at view 2: its stream must still be placed
// (soak seed 31 of specs/gms.stack: every later cast of the rejoined node
// was held at the others forever).
func TestRejoinerThatMissedItsReadmittingView(t *testing.T) {
	c := layertest.New(t, sim.Config{Seed: 3, Latency: time.Millisecond}, 3, fifoEntries(nil))
	const g = event.GroupID(1)
	all := []event.NodeID{1, 2, 3}
	c.Install(&event.ViewInfo{Group: g, ID: 1, Members: all})
	cast := c.Caster(2, g)
	cast(5)
	c.Net.RunUntil(event.Time(100 * time.Millisecond))
	// n2 learns it was removed (R1) and casts while out of every view
	c.Stacks[2].InstallView(&event.ViewInfo{Group: g, ID: 2, Members: []event.NodeID{1, 3}, Left: []event.NodeID{2}})
	cast(1) // held below until a view comes; reliable numbers it then
	c.Net.RunUntil(event.Time(200 * time.Millisecond))
	// the others see it removed and re-admitted in one batch (R2)
	readmit := &event.ViewInfo{Group: g, ID: 2, Members: all, Joined: []event.NodeID{2}, Left: []event.NodeID{2}}
	c.Stacks[1].InstallView(readmit)
	c.Stacks[3].InstallView(readmit)
	c.Net.RunUntil(event.Time(300 * time.Millisecond))
	// everyone installs view 3; n2 never saw view 2
	v3 := &event.ViewInfo{Group: g, ID: 3, Members: all}
	c.Install(v3)
	atView3, sent := cast(0), uint32(0)
	for i := 0; i < 10; i++ {
		c.Net.RunUntil(c.Net.Now().Add(10 * time.Millisecond))
		sent = cast(1)
	}
	c.Net.RunUntil(event.Time(3 * time.Second))
	for _, rx := range []event.NodeID{1, 3} {
		got := map[uint32]bool{}
		for _, s := range c.Got[rx][g][2] {
			got[s] = true
		}
		for s := atView3 + 1; s <= sent; s++ {
			if !got[s] {
				t.Errorf("%v never delivered n2's cast %d (cast after n2 installed view 3)", rx, s)
			}
		}
		if b := c.Counter("fifo", "buffer_bytes", rx); b != 0 {
			t.Errorf("%v: fifo still holds %d bytes", rx, b)
		}
	}
}
