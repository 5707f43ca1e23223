package layertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// Rejoin chooses which views a removal and re-admission show (issue 8's
// rejoin contract, R1-R3).
type Rejoin struct {
	// RemovalNotice: the removed node gets the view without itself (R1)
	// before it is re-admitted; otherwise it only sees the re-admitting view
	// with itself in Joined (a lost notice).
	RemovalNotice bool
	// OthersSeeRemoval: the others install a view without the node before
	// the re-admitting one; otherwise they only see the re-admitting view,
	// with the same members and the node in both Left and Joined (R2).
	OthersSeeRemoval bool
	// Loss, if set, drops packets (the rejoin must still hold).
	Loss sim.LossModel
}

// RejoinResult is what RunRejoin observed.
type RejoinResult struct {
	C *Cluster
	// Sent[s] is how many casts s made in all; AtReadmit[s] how many it had
	// made when it installed the re-admitting view.
	Sent, AtReadmit map[event.NodeID]uint32
}

// RejoinNode is the node RunRejoin removes and re-admits.
const RejoinNode event.NodeID = 2

// RunRejoin runs 4 nodes in group 1, every node casting 100 messages a
// second for 3 s; node 2 freezes at 1 s for 800 ms and is removed (view 2)
// meanwhile, then re-admitted in view 3 at 2 s, as r says. The run drains
// until 8 s.
func RunRejoin(t *testing.T, seed uint64, mk func() []stack.Entry, r Rejoin) RejoinResult {
	c := New(t, sim.Config{Seed: seed, Latency: time.Millisecond, Jitter: 200 * time.Microsecond, Loss: r.Loss}, 4, mk)
	all := []event.NodeID{1, 2, 3, 4}
	others := []event.NodeID{1, 3, 4}
	const g = event.GroupID(1)
	c.Install(&event.ViewInfo{Group: g, ID: 1, Members: all})
	res := RejoinResult{C: c, Sent: map[event.NodeID]uint32{}, AtReadmit: map[event.NodeID]uint32{}}
	stopAt := event.Time(3 * time.Second)
	for _, s := range all {
		var step func()
		step = func() {
			if !c.Net.Node(s).Frozen() {
				if err := c.Stacks[s].Cast(g, Payload(res.Sent[s]+1, 64)); err == nil {
					res.Sent[s]++
				}
			}
			if c.Net.Now() < stopAt {
				c.Net.After(10*time.Millisecond, step)
			}
		}
		c.Net.At(event.Time(time.Duration(s)*time.Millisecond), step)
	}
	c.Net.At(event.Time(time.Second), func() { c.Net.Freeze(RejoinNode, 800*time.Millisecond) })
	removal := &event.ViewInfo{Group: g, ID: 2, Members: others, Left: []event.NodeID{RejoinNode}}
	if r.OthersSeeRemoval {
		c.Net.At(event.Time(1300*time.Millisecond), func() {
			for _, id := range others {
				c.Stacks[id].InstallView(removal)
			}
		})
	}
	if r.RemovalNotice {
		c.Net.At(event.Time(1900*time.Millisecond), func() { c.Stacks[RejoinNode].InstallView(removal) })
	}
	readmit := &event.ViewInfo{Group: g, ID: 3, Members: all, Joined: []event.NodeID{RejoinNode}}
	if !r.OthersSeeRemoval {
		readmit.Left = []event.NodeID{RejoinNode}
	}
	c.Net.At(event.Time(2*time.Second), func() {
		for _, id := range all {
			res.AtReadmit[id] = res.Sent[id]
			c.Stacks[id].InstallView(readmit)
		}
	})
	c.Net.RunUntil(event.Time(8 * time.Second))
	return res
}

// Check asserts the rejoin contract: no duplicate at any node, send order
// if ordered, every message between nodes that stayed delivered, every
// message cast after the re-admitting view delivered to and from the
// rejoined node.
func (r RejoinResult) Check(t *testing.T, ordered bool) {
	t.Helper()
	for rx := event.NodeID(1); rx <= 4; rx++ {
		for s := event.NodeID(1); s <= 4; s++ {
			if s == rx {
				continue
			}
			from := uint32(0) // everything after this is owed
			if s == RejoinNode || rx == RejoinNode {
				from = r.AtReadmit[s]
			}
			if err := checkSuffix(r.C.Got[rx][1][s], from, r.Sent[s], ordered); err != nil {
				t.Errorf("node %v from %v: %v", rx, s, err)
			}
		}
	}
}

func checkSuffix(seqs []uint32, from, n uint32, ordered bool) error {
	seen := make(map[uint32]bool, len(seqs))
	for i, s := range seqs {
		if s == 0 || s > n {
			return fmt.Errorf("delivered unknown message %d", s)
		}
		if seen[s] {
			return fmt.Errorf("delivered %d twice", s)
		}
		seen[s] = true
		if ordered && i > 0 && s < seqs[i-1] {
			return fmt.Errorf("delivered %d after %d: out of order", s, seqs[i-1])
		}
	}
	missing := 0
	first := uint32(0)
	for s := from + 1; s <= n; s++ {
		if !seen[s] {
			if missing == 0 {
				first = s
			}
			missing++
		}
	}
	if missing > 0 {
		return fmt.Errorf("%d of messages %d..%d never delivered (first %d)", missing, from+1, n, first)
	}
	return nil
}

// RejoinCases are the seven combinations of views and loss a layer's rejoin
// test runs: the removal notice delivered or lost, the others seeing the
// removal or only the re-admission, without loss and with 5% loss.
func RejoinCases() []struct {
	Name string
	R    Rejoin
} {
	return []struct {
		Name string
		R    Rejoin
	}{
		{"notice", Rejoin{RemovalNotice: true, OthersSeeRemoval: true}},
		{"lost-notice", Rejoin{OthersSeeRemoval: true}},
		{"same-members", Rejoin{RemovalNotice: true}},
		{"lost-notice-same-members", Rejoin{}},
		{"notice-5%-loss", Rejoin{RemovalNotice: true, OthersSeeRemoval: true, Loss: sim.Uniform{P: 0.05}}},
		{"lost-notice-5%-loss", Rejoin{OthersSeeRemoval: true, Loss: sim.Uniform{P: 0.05}}},
		{"same-members-5%-loss", Rejoin{RemovalNotice: true, Loss: sim.Uniform{P: 0.05}}},
	}
}

// TestRejoin runs every RejoinCases case on stacks made by mk (seed 1) and
// checks the rejoin contract (in send order if ordered) and that none of
// the named layers still holds buffered bytes (counter buffer_bytes) at
// the end.
func TestRejoin(t *testing.T, mk func() []stack.Entry, ordered bool, layers ...string) {
	for _, tc := range RejoinCases() {
		t.Run(tc.Name, func(t *testing.T) {
			res := RunRejoin(t, 1, mk, tc.R)
			res.Check(t, ordered)
			for _, id := range res.C.All() {
				for _, layer := range layers {
					if b := res.C.Counter(layer, "buffer_bytes", id); b != 0 {
						t.Errorf("node %v: %s still holds %d bytes", id, layer, b)
					}
				}
			}
		})
	}
}
