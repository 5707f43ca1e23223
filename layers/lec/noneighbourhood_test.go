package lec

import (
	"strings"
	"testing"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
)

// A cast made before lec has a neighbourhood has no region to be repaired
// in: lec counts it and the report says so, rather than doing nothing in
// silence (issue 14: a user wiring a stack by hand got no word).
func TestCastWithoutNeighbourhoodIsSaid(t *testing.T) {
	l := New(Config{R: 8, C: 5, Stagger: 1, Window: 2e9, MaxHeld: 1024, MaxUnusable: 64})
	st, err := stack.New(stack.Config{Self: 1, Transport: &testkit.Transport{}, Clock: stack.ClockFunc(func() event.Time { return 1e9 }),
		Layers: []stack.Entry{{Name: "lec", Layer: l}}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	st.InstallView(&event.ViewInfo{Group: 9, ID: 1, Members: []event.NodeID{1, 2, 3}})
	if err := st.Cast(9, []byte("before")); err != nil {
		t.Fatal(err)
	}
	if got := l.c.NoNeighbourhood.Value(); got != 1 {
		t.Fatalf("no_neighbourhood = %d after a cast with no neighbourhood, want 1", got)
	}
	st.InstallNeighbourhood(&event.Neighbourhood{Self: 1, Groups: []event.GroupID{9},
		Local: []event.LocalRegion{{Groups: []event.GroupID{9}, Members: []event.NodeID{1, 2, 3}}}})
	if err := st.Cast(9, []byte("after")); err != nil {
		t.Fatal(err)
	}
	if got := l.c.NoNeighbourhood.Value(); got != 1 {
		t.Errorf("no_neighbourhood = %d after a cast with a neighbourhood, want it to stay 1", got)
	}
	info, _ := compose.Lookup("lec")
	sum := info.Summarize(compose.Counters{Total: map[string]int64{"no_neighbourhood": 1}})
	if len(sum.Notes) != 1 || !strings.Contains(sum.Notes[0], "before lec had a neighbourhood") {
		t.Errorf("report notes %q, want one saying the casts had no neighbourhood", sum.Notes)
	}
}
