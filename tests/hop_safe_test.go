package tests

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	_ "github.com/layercast/layercast/layers/all"
	"github.com/layercast/layercast/stack"
)

// hopTap sits below hop in a test stack and notes when each test message
// first reached the node: a payload-sized packet whose hop header (type 1,
// data) names its origin at bytes 7..10; the payload is the packet's tail
// and its first 4 bytes the sender's sequence.
type hopTap struct {
	stack.Base
	arrived map[uint64]event.Time // origin<<32 | seq
}

// hopTaps are the taps of the nodes built since the last reset, in order.
var hopTaps []*hopTap

func init() {
	compose.Register(compose.LayerInfo{
		Name: "hoptap", Summary: "test tap under hop: when each test message first arrived",
		New: func(compose.Params) (stack.Layer, error) {
			t := &hopTap{arrived: map[uint64]event.Time{}}
			hopTaps = append(hopTaps, t)
			return t, nil
		},
	})
}

func (t *hopTap) Up(ev *event.Event) {
	if ev.Msg != nil && ev.Msg.Len() >= hopPayload+11 && (ev.Kind == event.Send || ev.Kind == event.Cast) {
		if b := ev.Msg.Bytes(); b[0] == 1 {
			k := uint64(binary.BigEndian.Uint32(b[7:]))<<32 | uint64(binary.BigEndian.Uint32(b[len(b)-hopPayload:]))
			if _, seen := t.arrived[k]; !seen {
				t.arrived[k] = t.Ctx.Now()
			}
		}
	}
	t.Ctx.Up(ev)
}

// TestHopSafe: with safe=on, a node delivers a message only after every
// site's representative holds it (one node per site here: after every
// node received it), still in the one agreed order; the slow link from
// site 1 to site 3 makes sites 1 and 2 wait for site 3.
func TestHopSafe(t *testing.T) {
	for _, safe := range []bool{true, false} {
		hopTaps = nil
		sites := map[event.NodeID]event.SiteID{1: 1, 2: 2, 3: 3}
		groups := map[event.GroupID][]event.NodeID{1: {1, 2, 3}}
		wan := wanMesh(3, "uniform:1%")
		l := wan[[2]int{1, 3}]
		l.Latency = 150 * time.Millisecond
		wan[[2]int{1, 3}] = l
		spec := "hop(link_rate=400KB, safe=off) : hoptap"
		if safe {
			spec = "hop(link_rate=400KB, safe=on) : hoptap"
		}
		h := newHopNet(t, spec, 7, sites, wan, groups)
		h.castEvery(1, 1, sec(0.1), sec(2), 10*time.Millisecond)
		h.castEvery(2, 1, sec(0.1), sec(2), 25*time.Millisecond)
		h.net.RunUntil(sec(6))
		h.checkAll(1, []event.NodeID{1, 2}, []event.NodeID{1, 2, 3})
		early := 0
		for rx := event.NodeID(1); rx <= 3; rx++ {
			for _, d := range h.got[rx] {
				k := uint64(d.from)<<32 | uint64(d.seq)
				for y, tap := range hopTaps {
					at, ok := tap.arrived[k]
					if event.NodeID(y+1) == d.from {
						continue // the sender holds its own
					}
					if !ok || at > d.at {
						early++
					}
				}
			}
		}
		t.Logf("safe=%v: %d deliveries before every site held the message; latency of n1's last at n2: %v", safe, early, h.from(2, 1)[len(h.from(2, 1))-1].at)
		if safe && early != 0 {
			t.Errorf("safe=on: %d deliveries came before every site held the message", early)
		}
		if !safe && early == 0 {
			t.Errorf("safe=off delivered nothing before every site held it: the test cannot tell safe from agreed")
		}
	}
}
