package mflow

import (
	"testing"

	"github.com/layercast/layercast/stack"
)

// TestSteadyStateAllocatesNothing: 1000 multicasts with their receipts and
// the 44 bulk acknowledgements they cause, sender and receiver, allocate
// nothing once warm (the benchmark rounds to whole allocations per message,
// which would hide one per acknowledgement).
func TestSteadyStateAllocatesNothing(t *testing.T) {
	_, r, step := pipePair(t, "mflow", func() stack.Layer { return New(EnsembleConfig()) })
	payload := make([]byte, 1000)
	run := func() {
		for i := 0; i < 1000; i++ {
			step(payload)
		}
	}
	run()
	acksSent := func() int64 {
		c := r.Counters()[0]
		for i, n := range c.Names {
			if n == "acks_sent" {
				return c.Values[i]
			}
		}
		t.Fatalf("no acks_sent among mflow's counters %v", c.Names)
		return 0
	}
	acks := acksSent()
	if n := testing.AllocsPerRun(5, run); n != 0 {
		t.Errorf("%v allocations per 1000 messages in steady state, want 0", n)
	}
	if acksSent() == acks {
		t.Fatal("no acknowledgements in the measured runs")
	}
}
