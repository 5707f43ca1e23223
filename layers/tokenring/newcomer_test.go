package tokenring_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/membership"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/transport/sim"
)

// cutOff drops every packet to node rx while on is true.
type cutOff struct {
	rx event.NodeID
	on *bool
}

func (c cutOff) Drop(rx event.NodeID, _ *rand.Rand) bool { return *c.on && rx == c.rx }

// joinGroup installs view v of group 1 (oneGroup's group) and its region's
// view (region view id = v.ID, as gms numbers it) at every member.
func joinGroup(c interface {
	install(id event.NodeID, v *event.ViewInfo, nb *event.Neighbourhood)
}, v *event.ViewInfo) {
	nbs := membership.Static(map[event.GroupID]*event.ViewInfo{v.Group: v})
	for _, id := range v.Members {
		nb := nbs[id]
		for i := range nb.Regions {
			nb.Regions[i].ID = v.ID
		}
		c.install(id, v, nb)
	}
}

// A newcomer whose first packet from a sender comes from a later stretch
// of the sender's numbering (a second view brought another member before
// any packet of the first reached it) is still owed, and delivers, every
// cast from the view it joined in: n5 joins at 100 ms and receives nothing
// until 200 ms; n6 joins at 150 ms, so the sender's packets from then on
// carry a later view base. n5's stream and fifo must start at the first
// cast of the view that brought n5, not at the later base.
func TestNewcomerFloorFromLaterStretch(t *testing.T) {
	newcomerFloor(t, 150*time.Millisecond)
}

// Two views bring members (n6 at 130 ms, n7 at 160 ms) after the one that
// brought n5 (100 ms) and before any packet reaches n5: its first packet
// is two stretches of the sender's numbering past the one it is owed from.
// n5 must still deliver every cast from the view that brought it, in
// order. The data header names one stretch back only, so n5 asks the
// sender for its floor (floorMsg); before that fix its streams began at
// n6's stretch and it delivered 270 casts from 131 on, owed 300 from 101
// on.
func TestNewcomerFloorTwoStretchesBack(t *testing.T) {
	newcomerFloor(t, 130*time.Millisecond, 160*time.Millisecond)
}

// newcomerFloor: n1 casts 400 to group 1 of n1-n4; n5 joins at 100 ms, cut
// off until 200 ms; one more member joins at each of later. n5 must
// deliver every cast from the view that brought it, in order.
func newcomerFloor(t *testing.T, later ...time.Duration) {
	t.Helper()
	on := false
	c := cluster(t, sim.Config{Seed: 1, Latency: time.Millisecond, Jitter: 50 * time.Microsecond, Loss: cutOff{rx: 5, on: &on}}, 5+len(later), nil)
	v1 := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3, 4}, Joined: []event.NodeID{1, 2, 3, 4}}
	installStatic(c, []*event.ViewInfo{v1})
	inst := installer{c.Stacks}
	sent := map[event.GroupID]map[event.NodeID]uint32{}
	c.CastLoop(1, 1, 400, time.Millisecond, 100, sent)
	var owedFrom uint32
	c.Net.At(event.Time(100*time.Millisecond), func() {
		on = true
		owedFrom = sent[1][1] + 1 // the next cast is numbered in view 2
		joinGroup(inst, &event.ViewInfo{Group: 1, ID: 2, Members: []event.NodeID{1, 2, 3, 4, 5}, Joined: []event.NodeID{5}})
	})
	members := []event.NodeID{1, 2, 3, 4, 5}
	for i, at := range later {
		id := event.NodeID(6 + i)
		members = append(members, id)
		v := &event.ViewInfo{Group: 1, ID: uint64(3 + i), Members: append([]event.NodeID(nil), members...), Joined: []event.NodeID{id}}
		c.Net.At(event.Time(at), func() { joinGroup(inst, v) })
	}
	c.Net.At(event.Time(200*time.Millisecond), func() { on = false })
	c.Net.Run(3 * time.Second)
	got := c.Got[5][1][1]
	total := sent[1][1]
	if owedFrom < 50 || total != 400 {
		t.Fatalf("set-up: view 2 came after %d casts, %d cast in all; want about 100 and 400", owedFrom-1, total)
	}
	want := total - owedFrom + 1
	if uint32(len(got)) != want || (len(got) > 0 && got[0] != owedFrom) {
		first := uint32(0)
		if len(got) > 0 {
			first = got[0]
		}
		t.Errorf("n5 delivered %d casts from %d on, want %d from %d on (every cast since the view that brought it)", len(got), first, want, owedFrom)
	}
	for i := 1; i < len(got); i++ {
		if got[i] != got[i-1]+1 {
			t.Fatalf("n5 delivered %d after %d, want in order without gaps", got[i], got[i-1])
		}
	}
}

type installer struct {
	stacks map[event.NodeID]*stack.Stack
}

func (in installer) install(id event.NodeID, v *event.ViewInfo, nb *event.Neighbourhood) {
	in.stacks[id].InstallView(v)
	in.stacks[id].InstallNeighbourhood(nb)
}

// installAt installs the group views at node id with a neighbourhood whose
// own region has view id rv (none: the node is in no group).
func installAt(c *layertest.Cluster, id event.NodeID, v *event.ViewInfo, rv uint64) {
	c.Stacks[id].InstallView(v)
	nb := membership.Static(map[event.GroupID]*event.ViewInfo{v.Group: v})[id]
	if nb == nil {
		nb = &event.Neighbourhood{Self: id, Own: -1, Views: map[event.GroupID]*event.ViewInfo{}}
	}
	for i := range nb.Regions {
		nb.Regions[i].ID = rv
	}
	c.Stacks[id].InstallNeighbourhood(nb)
}

// installAll installs v, and its region at view rv, at every member of v.
func installAll(c *layertest.Cluster, v *event.ViewInfo, rv uint64) {
	for _, id := range v.Members {
		installAt(c, id, v, rv)
	}
}

// threeJoined is a cluster of three nodes on cfg, all joined in view 1 of
// group 1 and in region view 1.
func threeJoined(t *testing.T, cfg sim.Config) *layertest.Cluster {
	t.Helper()
	c := cluster(t, cfg, 3, nil)
	installAll(c, &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3}, Joined: []event.NodeID{1, 2, 3}}, 1)
	return c
}

// A member readmitted to a region made anew with the same id and its first
// view id (as gms does: qsm-gms soak seed 367) takes the region's purge
// point as its floor. n1 is cut off and removed; n2, alone with the sender
// n3 in the region (view 2), ACKs and purges what n3 casts meanwhile, and
// n3 frees it. n1 is readmitted (region view 1 again) before the others
// learn it: n3's packets carry a view (2) not before n1's and the view base
// 1, so n1 begins n3's stream at 1, below what the region purged; nobody
// has those packets
// (they were cast while n1 was out and are not owed to it). The region's
// purge point and ACK must not stay at n1's floor: n3 frees every packet
// by the end, and n1 delivers every cast numbered from its readmission
// on, in order.
func TestReadmittedTakesRegionPurgePoint(t *testing.T) {
	on := false
	c := threeJoined(t, sim.Config{Seed: 2, Latency: time.Millisecond, Jitter: 50 * time.Microsecond, Loss: cutOff{rx: 1, on: &on}})
	sent := map[event.GroupID]map[event.NodeID]uint32{}
	c.CastLoop(3, 1, 600, time.Millisecond, 100, sent)
	v2 := &event.ViewInfo{Group: 1, ID: 2, Members: []event.NodeID{2, 3}, Left: []event.NodeID{1}}
	v3 := &event.ViewInfo{Group: 1, ID: 3, Members: []event.NodeID{1, 2, 3}, Joined: []event.NodeID{1}}
	c.Net.At(event.Time(100*time.Millisecond), func() {
		on = true
		installAt(c, 1, &event.ViewInfo{Group: 2, ID: 1, Members: []event.NodeID{4}}, 0)
		installAt(c, 2, v2, 2)
		installAt(c, 3, v2, 2)
	})
	var owedFrom uint32
	c.Net.At(event.Time(300*time.Millisecond), func() {
		on = false
		installAt(c, 1, v3, 1) // the region made anew: same id, its first view id
	})
	c.Net.At(event.Time(320*time.Millisecond), func() {
		owedFrom = sent[1][3] + 1 // the next cast is numbered in view 3
		installAt(c, 3, v3, 1)
		installAt(c, 2, v3, 1)
	})
	c.Net.Run(3 * time.Second)
	total := sent[1][3]
	if total != 600 || owedFrom < 250 {
		t.Fatalf("set-up: %d cast in all, view 3 after %d; want 600, about 320", total, owedFrom-1)
	}
	if p := c.Counter("tokenring", "pending", 3); p != 0 {
		t.Errorf("pending at the sender at the end = %d, want 0 (the region's ACK held at n1's floor)", p)
	}
	got := c.Got[1][1][3]
	var fromOwed []uint32
	for _, x := range got {
		if x >= owedFrom {
			fromOwed = append(fromOwed, x)
		}
	}
	if want := total - owedFrom + 1; uint32(len(fromOwed)) != want {
		t.Errorf("n1 delivered %d of the %d casts from its readmission (%d on), want all", len(fromOwed), want, owedFrom)
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("n1 delivered %d after %d, want in order", got[i], got[i-1])
		}
	}
}
