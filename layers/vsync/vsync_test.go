package vsync_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/layertest"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

var (
	v1 = &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3}, Joined: []event.NodeID{1, 2, 3}}
	v2 = &event.ViewInfo{Group: 1, ID: 2, Members: []event.NodeID{1, 2}, Left: []event.NodeID{3}}
)

func vsyncStack() func() []stack.Entry {
	return layertest.Registered(nil, "vsync", "fifo", "reliable")
}

// A sender's casts that reached one survivor and not another before the
// sender crashed are sent again by the survivor that has them: both move
// to the next view having delivered all of them (over fifo : reliable
// alone, n2 never gets them: reliable asks only the sender).
func TestFlushResendsFromSurvivor(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mk    func() []stack.Entry
		want2 int
	}{{"vsync", vsyncStack(), 10}, {"without vsync", layertest.Registered(nil, "fifo", "reliable"), 0}} {
		t.Run(tc.name, func(t *testing.T) {
			dropping := false
			c := layertest.New(t, sim.Config{Seed: 1, Latency: time.Millisecond,
				Loss: layertest.DropWhen{Rx: map[event.NodeID]bool{2: true}, On: func() bool { return dropping }}}, 3, tc.mk)
			c.Install(v1)
			c.Net.Run(10 * time.Millisecond)
			dropping = true
			cast := c.Caster(3, 1)
			cast(10)
			c.Net.Run(2 * time.Millisecond) // n1 has them, n2 lost them
			c.Net.Crash(3)
			dropping = false
			c.Install(v2)
			c.Net.Run(time.Second)
			if got := len(c.Got[1][1][3]); got != 10 {
				t.Fatalf("n1 delivered %d of n3's casts, want 10", got)
			}
			if got := len(c.Got[2][1][3]); got != tc.want2 {
				t.Errorf("n2 delivered %d of n3's casts, want %d", got, tc.want2)
			}
			if tc.want2 == 0 {
				return
			}
			if r := c.Counter("vsync", "resent", 1); r != 10 {
				t.Errorf("n1 re-sent %d, want 10", r)
			}
			if f := c.Counter("vsync", "flushes", 1, 2); f != 2 {
				t.Errorf("%d flushes, want 2 (one per survivor)", f)
			}
		})
	}
}

// While a view is being flushed the application is held off (casts get
// back-pressure, never dropped); once every survivor has reported, the view
// is installed and casting resumes.
func TestFlushBlocksCasts(t *testing.T) {
	c := layertest.New(t, sim.Config{Seed: 1, Latency: time.Millisecond}, 3, vsyncStack())
	c.Install(v1)
	c.Net.Run(10 * time.Millisecond)
	c.Net.Crash(3)
	c.Stacks[1].InstallView(v2) // n2 has not heard of it yet: n1 waits for its report
	c.Net.Run(100 * time.Millisecond)
	if !c.Held[1] {
		t.Fatalf("n1 is not held off during the flush")
	}
	if err := c.Stacks[1].Cast(1, layertest.Payload(1, 32)); !errors.Is(err, stack.ErrBackpressure) {
		t.Errorf("Cast during the flush = %v, want ErrBackpressure", err)
	}
	c.Stacks[2].InstallView(v2)
	c.Net.Run(time.Second)
	if c.Held[1] || c.Held[2] {
		t.Fatalf("held off after the flush: n1 %v, n2 %v", c.Held[1], c.Held[2])
	}
	if err := c.Stacks[1].Cast(1, layertest.Payload(1, 32)); err != nil {
		t.Fatalf("Cast after the flush = %v", err)
	}
	c.Net.Run(100 * time.Millisecond)
	if got := c.Got[2][1][1]; len(got) != 1 {
		t.Errorf("n2 delivered %v from n1, want [1]", got)
	}
}

// A survivor that re-sends a crashed sender's casts does not install the
// view before the others have them: should it be removed meanwhile, no
// member moves to the view having delivered more than another (soak seed
// 16: the re-sender froze, was removed, and came back to install the view
// with 6 casts its partner never got). n2 has all 10 of n3's casts, n1 the
// first 5; n2's re-sends never reach n1 and n2 crashes. n1 installs v2
// once v3 removes n2, without waiting for flush_timeout, and n2, which
// never heard that n1 had them, never installs v2.
func TestFlushResenderLostBeforeOthersHaveThem(t *testing.T) {
	dropping := false
	c := layertest.New(t, sim.Config{Seed: 1, Latency: time.Millisecond,
		Loss: layertest.DropWhen{Rx: map[event.NodeID]bool{1: true}, On: func() bool { return dropping }}}, 3, vsyncStack())
	c.Install(v1)
	c.Net.Run(10 * time.Millisecond)
	cast := c.Caster(3, 1)
	cast(5)
	c.Net.Run(10 * time.Millisecond)
	dropping = true
	cast(5)
	c.Net.Run(2 * time.Millisecond) // n2 has 10, n1 has 5
	c.Net.Crash(3)
	dropping = false
	c.Install(v2)
	// the reports cross (1 ms); n2 re-sends n3's last 5 to n1, which loses
	// them, and n2 crashes before recovering them for n1
	c.Net.Run(500 * time.Microsecond)
	dropping = true
	c.Net.Run(time.Millisecond)
	c.Net.Crash(2)
	c.Net.Run(100 * time.Millisecond)
	dropping = false
	c.Stacks[1].InstallView(&event.ViewInfo{Group: 1, ID: 3, Members: []event.NodeID{1}, Left: []event.NodeID{2}})
	c.Net.Run(time.Second)

	if got := len(c.Got[1][1][3]); got != 5 {
		t.Fatalf("n1 delivered %d of n3's casts, want 5", got)
	}
	if got := len(c.Got[2][1][3]); got != 10 {
		t.Fatalf("n2 delivered %d of n3's casts, want 10", got)
	}
	installed := func(id event.NodeID, v uint64) bool {
		return slices.ContainsFunc(c.Views[id], func(w *event.ViewInfo) bool { return w.ID == v })
	}
	if !installed(1, 2) || !installed(1, 3) {
		t.Fatalf("n1 saw views %v, want 2 and 3", c.Views[1])
	}
	if installed(2, 2) {
		t.Errorf("n2 installed view 2 having delivered 10 of n3's casts, n1 5: view synchrony broken")
	}
	if n := c.Counter("vsync", "flush_timeouts", 1); n != 0 {
		t.Errorf("n1 gave %d flushes up after flush_timeout, want 0 (the re-sender is gone, nobody has more)", n)
	}
}

// One survivor re-sends what others lack, however they report again: n1
// and n4 lack the last 5 of n5's casts, n2 (the lowest-numbered that has
// them) re-sends them; n1, once it has them, reports again, and does not
// re-send them to n4 as well (every member picks the re-sender from the
// first reports).
func TestFlushOneResender(t *testing.T) {
	dropping := false
	c := layertest.New(t, sim.Config{Seed: 1, Latency: time.Millisecond,
		Loss: layertest.DropWhen{Rx: map[event.NodeID]bool{1: true, 4: true}, On: func() bool { return dropping }}}, 5, vsyncStack())
	all := []event.NodeID{1, 2, 3, 4, 5}
	c.Install(&event.ViewInfo{Group: 1, ID: 1, Members: all, Joined: all})
	c.Net.Run(10 * time.Millisecond)
	cast := c.Caster(5, 1)
	cast(5)
	c.Net.Run(10 * time.Millisecond)
	dropping = true
	cast(5)
	c.Net.Run(2 * time.Millisecond)
	c.Net.Crash(5)
	dropping = false
	c.Install(&event.ViewInfo{Group: 1, ID: 2, Members: all[:4], Left: []event.NodeID{5}})
	c.Net.Run(time.Second)
	for _, id := range all[:4] {
		if got := len(c.Got[id][1][5]); got != 10 {
			t.Errorf("n%d delivered %d of n5's casts, want 10", id, got)
		}
		if !slices.ContainsFunc(c.Views[id], func(v *event.ViewInfo) bool { return v.ID == 2 }) {
			t.Errorf("n%d did not install view 2 (views %v)", id, c.Views[id])
		}
	}
	if r := c.Counter("vsync", "resent", 2); r != 5 {
		t.Errorf("n2 re-sent %d, want 5", r)
	}
	if r := c.Counter("vsync", "resent", 1, 3, 4); r != 0 {
		t.Errorf("n1, n3, n4 re-sent %d, want 0 (n2 does)", r)
	}
}

// A node the service removed and readmitted in one view gets that view
// under the number gms gave the view it handed up on learning of the
// removal (one past the view it held): n3 sees view 2 without itself,
// then view 2 with itself (Joined and Left), as n1 and n2 see it. It takes
// the second as its new view, and its casts go out and are delivered
// (soak seed 488: the second was dropped as no newer than the first, and
// the node's casts waited in the layer for good).
func TestReadmittedUnderTheNumberOfItsRemoval(t *testing.T) {
	c := layertest.New(t, sim.Config{Seed: 1, Latency: time.Millisecond}, 3, vsyncStack())
	c.Install(v1)
	c.Net.Run(10 * time.Millisecond)
	c.Stacks[3].InstallView(&event.ViewInfo{Group: 1, ID: 2, Members: []event.NodeID{1, 2}, Left: []event.NodeID{3}})
	c.Net.Run(10 * time.Millisecond)
	c.Install(&event.ViewInfo{Group: 1, ID: 2, Members: []event.NodeID{1, 2, 3}, Joined: []event.NodeID{3}, Left: []event.NodeID{3}})
	c.Net.Run(100 * time.Millisecond)
	if vs := c.Views[3]; len(vs) == 0 || !vs[len(vs)-1].Has(3) {
		t.Fatalf("n3's last view is not the one that readmits it (views %v)", vs)
	}
	c.Caster(3, 1)(5)
	c.Caster(1, 1)(5)
	c.Net.Run(time.Second)
	for _, id := range []event.NodeID{1, 2} {
		if got := len(c.Got[id][1][3]); got != 5 {
			t.Errorf("n%d delivered %d of n3's 5 casts after its readmission, want 5", id, got)
		}
	}
	if got := len(c.Got[3][1][1]); got != 5 {
		t.Errorf("n3 delivered %d of n1's 5 casts after its readmission, want 5", got)
	}
}
