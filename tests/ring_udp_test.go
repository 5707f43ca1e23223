package tests

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/udp"
)

// Issue 11 over a real network: one site of 4 processes running the Ring
// protocol over UDP in a network namespace (loopback only), every one
// casting: every process delivers every message once, all in the same
// order.
func TestRingUDPNetns(t *testing.T) {
	ns := newNetns(t)
	const nodes, count = 4, 200
	got := runChildren(t, ns, "TestRingUDPProcess", nodes, func(i int) []string {
		return []string{fmt.Sprintf("LAYERCAST_RING_NODE=%d", i+1),
			fmt.Sprintf("LAYERCAST_RING_NODES=%d", nodes), fmt.Sprintf("LAYERCAST_RING_COUNT=%d", count)}
	})
	want := got[0]
	for i, got := range got {
		if len(got) != nodes*count {
			t.Errorf("node %d delivered %d messages, want %d", i+1, len(got), nodes*count)
		}
		checkNumbered(t, i+1, got)
		if !slices.Equal(got, want) {
			for k := range min(len(got), len(want)) {
				if got[k] != want[k] {
					t.Errorf("node %d's delivery %d is %s, node 1's is %s: not the same order", i+1, k, got[k], want[k])
					break
				}
			}
		}
	}
}

// TestRingUDPProcess is one node of TestRingUDPNetns, run in the namespace
// by it (skipped otherwise): a `ring` stack over UDP with the group's view
// installed statically, casting LAYERCAST_RING_COUNT messages and printing
// every delivery ("D <from> <seq>") in order, then "DONE" once it has all;
// it keeps the ring going until its standard input closes.
func TestRingUDPProcess(t *testing.T) {
	self, err := strconv.Atoi(os.Getenv("LAYERCAST_RING_NODE"))
	if err != nil {
		t.Skip("run by TestRingUDPNetns")
	}
	nodes, _ := strconv.Atoi(os.Getenv("LAYERCAST_RING_NODES"))
	count, _ := strconv.Atoi(os.Getenv("LAYERCAST_RING_COUNT"))
	book := map[event.NodeID]*net.UDPAddr{}
	var members []event.NodeID
	for i := 1; i <= nodes; i++ {
		book[event.NodeID(i)] = &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7700 + i}
		members = append(members, event.NodeID(i))
	}
	tr, err := udp.New(udp.Config{Self: event.NodeID(self), Book: book, MulticastPort: 27100}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	pr := newDeliveryPrinter(nodes * count)
	nd, err := stack.NewNode(stack.NodeConfig{BlockOnBackpressure: true, Stack: stack.Config{
		Self: event.NodeID(self), Transport: tr, Seed: uint64(self),
		Layers: compose.MustBuild("ring(token_timeout=500ms, token_retransmit=20ms)"),
		App:    stack.AppFuncs{OnDeliver: pr.deliver},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer nd.Close()
	tr.SetSink(nd)
	v := &event.ViewInfo{Group: 1, ID: 1, Members: members}
	if err := nd.Do(func(st *stack.Stack) { st.InstallView(v) }); err != nil {
		t.Fatal(err)
	}
	castNumbered(t, nd, count, 2*time.Millisecond)
	pr.finish()
}
