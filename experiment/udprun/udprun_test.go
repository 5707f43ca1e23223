package udprun

import (
	"strings"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/experiment"
	_ "github.com/layercast/layercast/layers/all"
)

func TestExpectedDeliveries(t *testing.T) {
	sc := experiment.Default()
	sc.Nodes, sc.GroupsPerNode, sc.GroupSize, sc.Senders = 8, 2, 4, 3
	sc.Rate, sc.Duration = 101, time.Second
	asg, err := experiment.Assign(sc)
	if err != nil {
		t.Fatal(err)
	}
	// Summed over receivers, every sender's message to a group reaches
	// the group's other members.
	var sum, want int64
	for _, id := range asg.Nodes {
		sum += expectedDeliveries(sc, asg, id, 0)
	}
	for _, s := range asg.Senders {
		for i, g := range asg.Of[s] {
			want += perGroup(101, i, len(asg.Of[s])) * int64(len(asg.Groups[g])-1)
		}
	}
	if sum != want || want != 101*3*3 {
		t.Errorf("expected deliveries sum to %d, want %d (= 101 messages x 3 senders x 3 other members)", sum, want)
	}
	if perGroup(101, 0, 2)+perGroup(101, 1, 2) != 101 || perGroup(101, 0, 2) != 51 {
		t.Error("perGroup does not split round-robin")
	}
	sc.Rate = 0
	if expectedDeliveries(sc, asg, asg.Nodes[0], 0) != -1 {
		t.Error("rate max should expect an unknown count")
	}
	// A fixed count (bench --messages) is known at rate max too.
	sum = 0
	for _, id := range asg.Nodes {
		sum += expectedDeliveries(sc, asg, id, 500)
	}
	if want := want / 101 * 500; sum != want {
		t.Errorf("with 500 messages per sender, expected deliveries sum to %d, want %d", sum, want)
	}
}

func TestCheckMulticastUnknownInterface(t *testing.T) {
	err := CheckMulticast("no-such-if0")
	if err == nil || !strings.Contains(err.Error(), "unshare -n") {
		t.Fatalf("got %v, want an error that says how to run in a namespace", err)
	}
}

func TestWorkerBadArgs(t *testing.T) {
	for _, args := range [][]string{
		{"--id", "0"},
		{"--id", "1", "--scenario", "{"},
		{"--id", "1", "--scenario", "{}", "--spec", "relaible"},
		{"--bogus"},
	} {
		if err := Worker(args, strings.NewReader(""), &strings.Builder{}); err == nil {
			t.Errorf("worker %v: no error", args)
		}
	}
}

func TestWorkerStopsWithoutParent(t *testing.T) {
	sc := experiment.Default()
	sc.Nodes, sc.GroupsPerNode, sc.GroupSize = 2, 1, 2
	b, _ := jsonScenario(sc)
	var out strings.Builder
	// stdin closes at once: the worker must give up by itself, not hang.
	err := Worker([]string{"--id", "1", "--spec", "fifo:reliable", "--scenario", b}, strings.NewReader(""), &out)
	if err == nil || !strings.Contains(out.String(), "ready ") {
		t.Fatalf("err %v, output %q: want ready, then an error for the missing start line", err, out.String())
	}
}

// TestFreePortOutsideEphemeralRange: the run's multicast ports lie outside
// the range the workers' unicast sockets draw from, and are free.
func TestFreePortOutsideEphemeralRange(t *testing.T) {
	lo, hi := ephemeralRange()
	n := int(event.NumChannelKinds)
	for i := 0; i < 20; i++ {
		base, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		if base+n-1 >= lo && base <= hi {
			t.Fatalf("ports %d-%d overlap the ephemeral range %d-%d", base, base+n-1, lo, hi)
		}
		if !portsFree(base, n) {
			t.Fatalf("ports %d-%d not free", base, base+n-1)
		}
	}
}
