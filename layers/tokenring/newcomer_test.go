package tokenring_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/membership"
	"github.com/layercast/layercast/stack"
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
	on := false
	c := cluster(t, sim.Config{Seed: 1, Latency: time.Millisecond, Jitter: 50 * time.Microsecond, Loss: cutOff{rx: 5, on: &on}}, 6, nil)
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
	c.Net.At(event.Time(150*time.Millisecond), func() {
		joinGroup(inst, &event.ViewInfo{Group: 1, ID: 3, Members: []event.NodeID{1, 2, 3, 4, 5, 6}, Joined: []event.NodeID{6}})
	})
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
