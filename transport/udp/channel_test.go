package udp

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

func TestChannelAddr(t *testing.T) {
	for g := event.GroupID(1); g <= 100; g++ {
		a, err := ChannelAddr(event.ChannelOf(g), 47000)
		if err != nil || a.String() != GroupAddr(g, 47000).String() {
			t.Fatalf("group %v: ChannelAddr %v %v, GroupAddr %v", g, a, err, GroupAddr(g, 47000))
		}
	}
	// A region and a group with the same id never share a socket.
	ga, _ := ChannelAddr(event.Channel(event.GroupChannel, 5), 47000)
	ra, _ := ChannelAddr(event.Channel(event.RegionChannel, 5), 47000)
	sa, _ := ChannelAddr(event.Channel(event.SiteChannel, 5), 47000)
	if ga.Port == ra.Port || ra.Port == sa.Port || ga.Port == sa.Port || !ra.IP.IsMulticast() || ra.IP.To4()[0] != 239 {
		t.Fatalf("group %v, region %v, site %v", ga, ra, sa)
	}
	if _, err := ChannelAddr(event.ChannelID(1<<63|5), 47000); err == nil {
		t.Error("a channel of an unknown kind mapped")
	}
	if _, err := ChannelAddr(event.Channel(event.SiteChannel, 5), 65535); err == nil {
		t.Error("a port past 65535 accepted")
	}
	if _, err := New(Config{Self: 1, MulticastPort: 65535}, nil); err == nil {
		t.Error("MulticastPort 65535 accepted: the other kinds of channel have no port left")
	}
}

// chanLayer subscribes to channels and casts on them when told (through
// Node.Do, on the node goroutine).
type chanLayer struct{ stack.Base }

func (l *chanLayer) castOn(st *stack.Stack, ch event.ChannelID, g event.GroupID, payload string) {
	m := l.Ctx.MessageFrom([]byte(payload))
	l.Ctx.Down(&event.Event{Kind: event.Cast, Group: g, Channel: ch, Msg: m})
	st.Pump()
}

// TestChannelsNetns runs TestChannelsInside in a fresh network namespace.
func TestChannelsNetns(t *testing.T) { inNetns(t, "TestChannelsInside") }

// TestChannelsInside: three stacks on UDP; the layers of nodes 1 and 2
// subscribe to region 5's channel through their Context. What node 3's
// layer casts on the region reaches both; after node 2 unsubscribes, only
// node 1. A node subscribed to group 5 (same id, another kind) hears none
// of it.
func TestChannelsInside(t *testing.T) {
	if os.Getenv("LC_UDP_NETNS") == "" {
		t.Skip("runs only inside the namespace TestChannelsNetns creates")
	}
	var mu sync.Mutex
	got := map[event.NodeID][]string{}
	layers := map[event.NodeID]*chanLayer{}
	nodes := map[event.NodeID]*stack.Node{}
	for id := event.NodeID(1); id <= 4; id++ {
		tr, err := New(Config{Self: id, MulticastPort: 47200}, nil)
		if err != nil {
			t.Fatal(err)
		}
		l := &chanLayer{}
		nd, err := stack.NewNode(stack.NodeConfig{Stack: stack.Config{Self: id, Transport: tr,
			Layers: []stack.Entry{{Name: "chan", Layer: l}},
			App: stack.AppFuncs{OnDeliver: func(d stack.Delivery) {
				mu.Lock()
				got[id] = append(got[id], string(d.Payload))
				mu.Unlock()
			}}}})
		if err != nil {
			t.Fatal(err)
		}
		tr.SetSink(nd)
		defer tr.Close()
		defer nd.Close()
		layers[id], nodes[id] = l, nd
	}
	region := event.Channel(event.RegionChannel, 5)
	do := func(id event.NodeID, fn func(st *stack.Stack) error) {
		t.Helper()
		var err error
		if derr := nodes[id].Do(func(st *stack.Stack) { err = fn(st) }); derr != nil || err != nil {
			t.Fatalf("node %v: %v %v", id, derr, err)
		}
	}
	for _, id := range []event.NodeID{1, 2} {
		do(id, func(*stack.Stack) error { return layers[id].Ctx.Subscribe(region) })
	}
	do(4, func(*stack.Stack) error { return layers[4].Ctx.Subscribe(event.ChannelOf(5)) })
	wait := func(id event.NodeID, n int) {
		t.Helper()
		for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			mu.Lock()
			k := len(got[id])
			mu.Unlock()
			if k >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %v delivered %d, want %d", id, k, n)
			}
		}
	}
	do(3, func(st *stack.Stack) error { layers[3].castOn(st, region, 9, "one"); return nil })
	wait(1, 1)
	wait(2, 1)
	do(2, func(*stack.Stack) error { return layers[2].Ctx.Unsubscribe(region) })
	do(3, func(st *stack.Stack) error { layers[3].castOn(st, region, 9, "two"); return nil })
	wait(1, 2)
	time.Sleep(100 * time.Millisecond) // what node 2 would get has had time to arrive
	mu.Lock()
	defer mu.Unlock()
	if g := got[1]; len(g) != 2 || g[0] != "one" || g[1] != "two" {
		t.Errorf("node 1 delivered %q, want [one two]", g)
	}
	if g := got[2]; len(g) != 1 || g[0] != "one" {
		t.Errorf("node 2 delivered %q, want [one]: nothing after unsubscribing", g)
	}
	if len(got[3]) != 0 || len(got[4]) != 0 {
		t.Errorf("node 3 delivered %q, node 4 (group 5's channel) %q, want nothing", got[3], got[4])
	}
}
