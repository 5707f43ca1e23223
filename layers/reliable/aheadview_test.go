package reliable_test

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/transport/sim"
)

// n1 is removed and re-admitted (it sees itself in Joined of view 2 and
// starts a new stream) and casts at once; n2 still holds view 1 when the new
// stream's first messages arrive. They must not be taken for the old
// stream's continuation: once n2 installs view 2 it gets the new stream
// from its start, each message once (soak seed 166 of specs/gms.stack: 4
// duplicates and 36 FIFO violations).
func TestCastOfANewerViewWaitsForIt(t *testing.T) {
	c := layertest.New(t, sim.Config{Seed: 5, Latency: time.Millisecond}, 2, relEntries(nil))
	const g = event.GroupID(1)
	all := []event.NodeID{1, 2}
	c.Install(&event.ViewInfo{Group: g, ID: 1, Members: all})
	cast := c.Caster(1, g)
	cast(3)
	c.Net.RunUntil(event.Time(100 * time.Millisecond))
	readmit := &event.ViewInfo{Group: g, ID: 2, Members: all, Joined: []event.NodeID{1}, Left: []event.NodeID{1}}
	c.Stacks[1].InstallView(readmit)
	sent := cast(5)
	c.Net.RunUntil(event.Time(150 * time.Millisecond))
	c.Stacks[2].InstallView(readmit)
	c.Net.RunUntil(event.Time(3 * time.Second))
	seen := map[uint32]int{}
	for _, s := range c.Got[2][g][1] {
		seen[s]++
	}
	for s := uint32(1); s <= sent; s++ {
		if seen[s] > 1 {
			t.Errorf("n2 delivered n1's cast %d %d times", s, seen[s])
		}
		if s > 3 && seen[s] == 0 {
			t.Errorf("n2 never delivered n1's cast %d of the new stream", s)
		}
	}
}
