package sim_test

import (
	"strings"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// ackFeed sends control packets through a feed, built when pulled.
type ackFeed struct {
	stack.Base
	nd       *sim.Node
	feed     *stack.Feed
	left     int
	badPulls int
}

func (l *ackFeed) Init(ctx *stack.Context) error {
	l.Ctx = ctx
	l.feed = ctx.NewFeed(true, func() bool {
		if !l.nd.Writable() {
			l.badPulls++
		}
		l.left--
		l.Ctx.Down(&event.Event{Kind: event.Cast, Group: 1, Control: true, Msg: l.Ctx.MessageFrom([]byte("ctl"))})
		return l.left > 0
	})
	return nil
}

// On a node whose NIC takes one packet a millisecond (the simulator's
// capacity model), control packets readied while application data waits go
// out before that data, and the feed is asked only while the NIC has room.
func TestFeedsOnSimCapacity(t *testing.T) {
	net := sim.New(sim.Config{Seed: 1, Latency: time.Millisecond})
	nd := net.AddNode(1)
	net.SetCapacity(1, sim.Capacity{SendPPS: 1000, HighWater: 2})
	l := &ackFeed{nd: nd}
	st, err := stack.New(stack.Config{Self: 1, Transport: nd, Clock: nd, Layers: []stack.Entry{{Name: "ack", Layer: l}}})
	if err != nil {
		t.Fatal(err)
	}
	nd.Attach(st)
	var sends []string
	net.SetTrace(func(e sim.TraceEvent) {
		if e.Kind == sim.TraceSend {
			if e.Size == stack.FrameSize+3 {
				sends = append(sends, "C")
			} else {
				sends = append(sends, "d")
			}
		}
	})
	net.At(0, func() {
		for range 10 {
			if err := st.Cast(1, []byte("data")); err != nil {
				t.Fatal(err)
			}
		}
	})
	net.At(event.Time(3500*time.Microsecond), func() {
		l.left = 3
		l.feed.Ready()
	})
	net.Run(time.Second)
	// By 3.5ms the NIC has sent 3 and holds 2 (its high-water mark); data
	// waits in the stack. The next packets handed to the NIC are control.
	if got := strings.Join(sends, ""); got != "dddddCCCddddd" {
		t.Fatalf("packets handed to the NIC: %s, want dddddCCCddddd", got)
	}
	if l.badPulls != 0 {
		t.Fatalf("the feed was asked %d times while the NIC was full", l.badPulls)
	}
}
