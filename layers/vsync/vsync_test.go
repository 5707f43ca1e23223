package vsync_test

import (
	"errors"
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
