package mflow

import (
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// TestSteadyStateAllocatesNothing: 1000 multicasts with their receipts and
// the 44 bulk acknowledgements they cause, sender and receiver, allocate
// nothing once warm (the benchmark rounds to whole allocations per message,
// which would hide one per acknowledgement).
func TestSteadyStateAllocatesNothing(t *testing.T) {
	clock := stack.ClockFunc(func() event.Time { return 0 })
	ta, tb := &pipe{}, &pipe{}
	mk := func(self event.NodeID, tr *pipe) *stack.Stack {
		st, err := stack.New(stack.Config{Self: self, Transport: tr, Clock: clock, Layers: []stack.Entry{{Name: "mflow", Layer: New(DefaultConfig())}}})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	a, r := mk(1, ta), mk(2, tb)
	v := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}}
	a.InstallView(v)
	r.InstallView(v)
	payload := make([]byte, 1000)
	run := func() {
		for i := 0; i < 1000; i++ {
			if err := a.Cast(1, payload); err != nil {
				t.Fatal(err)
			}
			ta.flush(r)
			tb.flush(a)
		}
	}
	run()
	acks := r.Counters()[0].Values[0]
	if n := testing.AllocsPerRun(5, run); n != 0 {
		t.Errorf("%v allocations per 1000 messages in steady state, want 0", n)
	}
	if r.Counters()[0].Values[0] == acks {
		t.Fatal("no acknowledgements in the measured runs")
	}
}
