package ring

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/transport/sim"
)

// A member that left a two-member ring for a ring of its own (its site view
// lost the other, which does not know yet and keeps sending it the old
// ring's token) holds its own token between visits. The old ring's copies
// must not replace the token in hand: one that did was handled as the new
// ring's, whose aru it never raised, and the one-member ring went round at
// one instant for ever, virtual time standing still (spread-site-soak
// seeds 45 and 49). The test looks at every step whether the held token is
// the current ring's, so it fails at once rather than hanging.
func TestStrayTokenDoesNotReplaceHeldToken(t *testing.T) {
	c := newCluster(t, sim.Config{Seed: 3, Latency: time.Millisecond, Jitter: 100 * time.Microsecond}, 2, testConfig())
	v1 := &event.ViewInfo{Group: 1, ID: 1, Members: ids(2)}
	c.install(v1)
	for _, s := range ids(2) {
		c.castLoop(s, 1, 400, time.Millisecond, 100)
	}
	// Only node 2 learns that node 1 is gone; node 1 stays in the old
	// ring, passing its token to node 2 until it gives up.
	v2 := &event.ViewInfo{Group: 1, ID: 2, Members: []event.NodeID{2}, Left: []event.NodeID{1}}
	c.net.At(event.Time(150*time.Millisecond), func() { c.install(v2, 2) })
	l := c.layers[2]
	stray := false
	var check func()
	check = func() {
		if l.cur != nil && l.holding && l.tok.Ring != l.cur.id {
			t.Fatalf("at %v node 2 holds a token of ring %08x in ring %08x", c.net.Now(), l.tok.Ring, l.cur.id)
		}
		if l.cur != nil && len(l.cur.members) == 1 && c.counter(2, "tokens_stale") > 0 {
			stray = true
		}
		if c.net.Now() < event.Time(time.Second) {
			c.net.After(100*time.Microsecond, check)
		}
	}
	c.net.At(0, check)
	c.net.Run(time.Second)
	if !stray {
		t.Fatal("node 2 got no token of the old ring while in its own: the test tests nothing")
	}
	// Node 2's ring went on: every cast of its own was delivered, once and
	// in order, and it holds nothing more.
	delete(c.sent[1], 1)
	c.checkAll([]*event.ViewInfo{v2}, 2)
	if b := c.counter(2, "buffer_bytes"); b != 0 {
		t.Errorf("node 2 still holds %d bytes", b)
	}
}
