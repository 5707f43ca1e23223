package tokenring_test

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/layertest"
	_ "github.com/layercast/layercast/layers/fifo"
	_ "github.com/layercast/layercast/layers/tokenring"
	"github.com/layercast/layercast/membership"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// entries builds fifo over tokenring (tokenring with the given parameters).
func entries(given map[string]string) func() []stack.Entry {
	return layertest.Registered(map[string]map[string]string{"tokenring": given}, "fifo", "tokenring")
}

// cluster is n nodes running fifo : tokenring on the given network.
func cluster(t *testing.T, cfg sim.Config, n int, given map[string]string) *layertest.Cluster {
	t.Helper()
	return layertest.New(t, cfg, n, entries(given))
}

// installStatic installs the views at their members and every member's
// neighbourhood (the static membership source).
func installStatic(c *layertest.Cluster, views []*event.ViewInfo) {
	m := map[event.GroupID]*event.ViewInfo{}
	for _, v := range views {
		c.Install(v)
		m[v.Group] = v
	}
	for id, nb := range membership.Static(m) {
		c.Stacks[id].InstallNeighbourhood(nb)
	}
}

// oneGroup is group 1 over nodes 1..n.
func oneGroup(n int) *event.ViewInfo {
	ms := make([]event.NodeID, n)
	for i := range ms {
		ms[i] = event.NodeID(i + 1)
	}
	return &event.ViewInfo{Group: 1, ID: 1, Members: ms, Joined: ms}
}

func TestDeliversInOrderUnderLoss(t *testing.T) {
	c := cluster(t, sim.Config{Seed: 3, Latency: time.Millisecond, Jitter: 100 * time.Microsecond, Loss: sim.Uniform{P: 0.01}}, 12, nil)
	views := []*event.ViewInfo{oneGroup(12)}
	installStatic(c, views)
	sent := map[event.GroupID]map[event.NodeID]uint32{}
	c.CastLoop(1, 1, 2000, 500*time.Microsecond, 200, sent)
	c.Net.Run(5 * time.Second)
	c.CheckExactlyOnce(views, sent, true)
	t.Logf("recovered %d, naks %d, pushes %d, pulled %d, rounds %d",
		c.Counter("tokenring", "recovered", c.All()...), c.Counter("tokenring", "naks_sent", c.All()...),
		c.Counter("tokenring", "pushes", c.All()...), c.Counter("tokenring", "pulled", c.All()...),
		c.Counter("tokenring", "token_rounds", c.All()...))
}

// Three overlapping groups (five regions), seven senders, 2% loss: every
// member delivers every message of every sender once, in order.
func TestThreeGroupsManySenders(t *testing.T) {
	c := cluster(t, sim.Config{Seed: 5, Latency: time.Millisecond, Jitter: 200 * time.Microsecond, Loss: sim.Uniform{P: 0.02}}, 9, nil)
	views := layertest.ThreeGroups()
	installStatic(c, views)
	sent := map[event.GroupID]map[event.NodeID]uint32{}
	for _, s := range []event.NodeID{1, 2, 3} {
		c.CastLoop(s, 1, 300, time.Millisecond, 100, sent)
	}
	for _, s := range []event.NodeID{4, 9} {
		c.CastLoop(s, 2, 300, 2*time.Millisecond, 200, sent)
	}
	for _, s := range []event.NodeID{5, 7} {
		c.CastLoop(s, 3, 300, time.Millisecond, 50, sent)
	}
	c.Net.Run(5 * time.Second)
	c.CheckExactlyOnce(views, sent, true)
	if p := c.Counter("tokenring", "pending", c.All()...); p != 0 {
		t.Errorf("pending at the end = %d, want 0 (every packet ACKed)", p)
	}
}
