package cluster_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/layercast/layercast/cluster"
	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// pair builds two simulated nodes running spec in group 1; node 2's
// application is in.
func pair(t testing.TB, spec string, loss string, in *cluster.Inbox) (*sim.Network, *stack.Stack) {
	sp, err := compose.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	var lm sim.LossModel
	if loss != "" {
		if lm, err = sim.ParseLoss(loss); err != nil {
			t.Fatal(err)
		}
	}
	net := sim.New(sim.Config{Seed: 3, Latency: time.Millisecond, Loss: lm})
	view := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}}
	var sender *stack.Stack
	for id := event.NodeID(1); id <= 2; id++ {
		layers, err := compose.Build(sp)
		if err != nil {
			t.Fatal(err)
		}
		nd := net.AddNode(id)
		cfg := stack.Config{Self: id, Transport: nd, Clock: nd, Layers: layers, Seed: 3}
		if id == 2 {
			cfg.App = in
		}
		st, err := stack.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		nd.Attach(st)
		st.InstallView(view)
		if id == 1 {
			sender = st
		}
	}
	return net, sender
}

// One node's stack with an Inbox as its application: deliveries come in
// order through its channel while a slow reader keeps it full, and with
// nobody reading the network's run waits at the channel's bound until the
// Inbox is closed.
func TestInbox(t *testing.T) {
	const n, size = 200, 4
	in := cluster.NewInbox(size)
	net, sender := pair(t, "fifo : reliable", "uniform:5%", in)
	got := make(chan int, 1)
	go func() {
		next := 0
		for d := range in.Deliveries {
			if string(d.Payload) != fmt.Sprint(next) {
				t.Errorf("delivery %d is %q", next, d.Payload)
			}
			if next++; next%20 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
		got <- next
	}()
	for i := 0; i < n; i++ {
		if err := sender.Cast(1, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
		net.Run(time.Millisecond)
	}
	net.Run(5 * time.Second)
	if v := <-in.Views; v.ID != 1 || len(v.Members) != 2 {
		t.Errorf("view %+v, want view 1 of 2 members", v)
	}
	in.Close()
	if g := <-got; g != n {
		t.Errorf("the reader got %d deliveries, want %d", g, n)
	}

	// Nobody reads: the run stops at the bound; Close lets it finish.
	in2 := cluster.NewInbox(size)
	net2, sender2 := pair(t, "fifo : reliable", "", in2)
	for i := 0; i < 20; i++ {
		if err := sender2.Cast(1, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	var ran atomic.Bool
	go func() { net2.Run(time.Second); ran.Store(true) }()
	deadline := time.Now().Add(20 * time.Second)
	for len(in2.Deliveries) < size && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	if len(in2.Deliveries) != size || ran.Load() {
		t.Fatalf("unread inbox: holds %d (bound %d), run finished %v; want it full and the run waiting", len(in2.Deliveries), size, ran.Load())
	}
	in2.Close()
	for deadline := time.Now().Add(20 * time.Second); !ran.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the run still waits after the Inbox was closed")
		}
	}
	left := 0
	for range in2.Deliveries {
		left++
	}
	if left != size {
		t.Errorf("after Close the inbox gave %d, want the %d it held", left, size)
	}
}

// One node run by hand with an Inbox as its application (stack.NewNode
// takes it the same way over UDP: stack.NodeConfig{Stack: stack.Config{App:
// in, ...}}). Read the channels on a goroutine of their own, and close the
// Inbox before the node; here the few deliveries fit in the channel, so
// they are read after the run.
func ExampleInbox() {
	in := cluster.NewInbox(16)
	sp, _ := compose.Parse("fifo : reliable")
	net := sim.New(sim.Config{Seed: 1, Latency: time.Millisecond})
	view := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}}
	stacks := map[event.NodeID]*stack.Stack{}
	for id := event.NodeID(1); id <= 2; id++ {
		layers, _ := compose.Build(sp)
		nd := net.AddNode(id)
		cfg := stack.Config{Self: id, Transport: nd, Clock: nd, Layers: layers}
		if id == 2 {
			cfg.App = in // node 2's application
		}
		stacks[id], _ = stack.New(cfg)
		nd.Attach(stacks[id])
		stacks[id].InstallView(view)
	}
	_ = stacks[1].Cast(1, []byte("hello"))
	_ = stacks[1].Cast(1, []byte("world"))
	net.Run(time.Second)
	in.Close()
	for v := range in.Views {
		fmt.Println("view", v.ID, "of group", v.Group, v.Members)
	}
	for d := range in.Deliveries {
		fmt.Printf("%q from node %d\n", d.Payload, d.From)
	}
	// Output:
	// view 1 of group g1 [n1 n2]
	// "hello" from node 1
	// "world" from node 1
}
