package sim_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// regionLayer is a multi-group layer in miniature: it subscribes to a
// region's channel through its Context and casts on it.
type regionLayer struct{ stack.Base }

func (l *regionLayer) castOn(ch event.ChannelID, g event.GroupID, body string) {
	l.Ctx.Down(&event.Event{Kind: event.Cast, Group: g, Channel: ch, Msg: l.Ctx.MessageFrom([]byte(body))})
}

// Nodes 1 and 2 subscribe to region 5's channel; node 4 only to group 5's
// (same id, another kind). Node 3 casts on the region: 1 and 2 receive it,
// with the group the frame names; after node 2 unsubscribes only node 1
// does. The trace names the channel.
func TestRegionChannel(t *testing.T) {
	net := sim.New(sim.Config{Seed: 3, Latency: time.Millisecond})
	var trace []string
	net.SetTrace(func(e sim.TraceEvent) {
		if e.Kind == sim.TraceSend {
			trace = append(trace, e.String())
		}
	})
	got := map[event.NodeID][]string{}
	layers := map[event.NodeID]*regionLayer{}
	stacks := map[event.NodeID]*stack.Stack{}
	for id := event.NodeID(1); id <= 4; id++ {
		nd := net.AddNode(id)
		l := &regionLayer{}
		st, err := stack.New(stack.Config{Self: id, Transport: nd, Clock: net, Layers: []stack.Entry{{Name: "region", Layer: l}},
			App: stack.AppFuncs{OnDeliver: func(d stack.Delivery) {
				got[id] = append(got[id], fmt.Sprintf("%s@%v", d.Payload, d.Group))
			}}})
		if err != nil {
			t.Fatal(err)
		}
		nd.Attach(st)
		layers[id], stacks[id] = l, st
	}
	region := layers[1].Ctx.Channel(event.RegionChannel, 5)
	net.At(0, func() {
		for _, id := range []event.NodeID{1, 2} {
			if err := layers[id].Ctx.Subscribe(region); err != nil {
				t.Errorf("node %v: Subscribe(%v) = %v", id, region, err)
			}
		}
		if err := layers[4].Ctx.Subscribe(event.ChannelOf(5)); err != nil {
			t.Error(err)
		}
		stacks[3].Inject(0, false, event.Event{Kind: event.Cast, Group: 9, Channel: region, Msg: layers[3].Ctx.MessageFrom([]byte("one"))})
	})
	net.At(event.Time(10*time.Millisecond), func() {
		if err := layers[2].Ctx.Unsubscribe(region); err != nil {
			t.Error(err)
		}
		stacks[3].Inject(0, false, event.Event{Kind: event.Cast, Group: 9, Channel: region, Msg: layers[3].Ctx.MessageFrom([]byte("two"))})
	})
	net.Run(time.Second)
	want := "1:[one@g9 two@g9] 2:[one@g9] 3:[] 4:[]"
	if s := fmt.Sprintf("1:%v 2:%v 3:%v 4:%v", got[1], got[2], got[3], got[4]); s != want {
		t.Fatalf("delivered %s, want %s", s, want)
	}
	if s := strings.Join(trace, "; "); s != "0s send 3->region5 13B; 10ms send 3->region5 13B" {
		t.Fatalf("trace %s", s)
	}
	if err := layers[1].Ctx.Subscribe(event.ChannelID(1 << 40)); err == nil {
		t.Fatal("a malformed channel id subscribed")
	}
}
