package tests

import (
	"context"
	"testing"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/experiment"
	_ "github.com/layercast/layercast/layers/all"
)

// TestFifoNeverGivesUpUnderReliable: with the default bounds, fifo's reorder
// buffer can never overflow over reliable (reliable tracks at most `window`
// numbers ahead of the first gap and drops, then NAKs, what lies beyond), so
// a slow recovery costs time, never a message. Before the bounds agreed
// (reliable's window 8192 against fifo's 4096 messages and 4 MB), a sender
// at 20,000 msgs/s with NAKs answered half a second late overflowed fifo,
// which gave the gap up: a promise broken with nothing to explain it.
func TestFifoNeverGivesUpUnderReliable(t *testing.T) {
	sp, err := compose.Parse("fifo : reliable(nak_delay=400ms, nak_retry=400ms)")
	if err != nil {
		t.Fatal(err)
	}
	sc := experiment.Default()
	for k, v := range map[string]string{"nodes": "3", "group-size": "3", "groups-per-node": "1", "senders": "1",
		"rate": "20000", "duration": "1s", "drain": "10s", "loss": "uniform:2%", "seed": "3"} {
		if err := sc.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := experiment.Run(context.Background(), "sim", sp, sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Broken) != 0 || rep.Missing != 0 {
		t.Fatalf("broken %q, missing %d: fifo gave up messages reliable was still recovering", rep.Broken, rep.Missing)
	}
}
