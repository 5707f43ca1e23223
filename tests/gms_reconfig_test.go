package tests

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	_ "github.com/layercast/layercast/layers/all"
	"github.com/layercast/layercast/layers/gms"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/simstack"
	"github.com/layercast/layercast/transport/sim"
)

// TestReliableReconfiguresOnGMSViews checks issue 3's item 4 with the real
// membership service: reliable over gms, 2% loss, six nodes casting to one
// group; n3 crashes at 2s and n7 joins at 2.5s. Every survivor delivers
// every message of every surviving sender (reliable stops waiting for n3
// once the view drops it), and the joiner delivers every message a sender
// cast after installing the view that added it.
func TestReliableReconfiguresOnGMSViews(t *testing.T) {
	net := sim.New(sim.Config{Seed: 3, Latency: time.Millisecond, Loss: sim.Uniform{P: 0.02}})
	svc := gms.NewServiceLayer(gms.ServiceConfig{ViewInterval: 100 * time.Millisecond, FDTimeout: 500 * time.Millisecond})
	simstack.Add(t, net, stack.Config{Self: gms.ServiceNode, Clock: net, Layers: []stack.Entry{{Name: "gms_service", Layer: svc}}}, nil)
	info, ok := compose.Lookup("reliable")
	finfo, fok := compose.Lookup("fifo")
	if !ok || !fok {
		t.Fatal("reliable or fifo is not registered")
	}
	last := map[[2]uint32]int64{} // (rx, tx) -> last sequence delivered
	fifoBad := 0
	const N = 7
	late := event.NodeID(7)
	sendTimes := map[event.NodeID][]event.Time{}
	sawLate := map[event.NodeID]event.Time{}
	stacks := map[event.NodeID]*stack.Stack{}
	got := map[[3]uint32]bool{} // rx, tx, seq
	sentBy := map[event.NodeID]int{}
	viewsAt := map[event.NodeID]map[event.GroupID]*event.ViewInfo{}
	for i := 1; i <= N; i++ {
		id := event.NodeID(i)
		rl, err := info.New(compose.MustParams("reliable", nil))
		if err != nil {
			t.Fatal(err)
		}
		fl, err := finfo.New(compose.MustParams("fifo", nil))
		if err != nil {
			t.Fatal(err)
		}
		gl := gms.New(gms.Config{Heartbeat: 100 * time.Millisecond, FDTimeout: 500 * time.Millisecond})
		viewsAt[id] = map[event.GroupID]*event.ViewInfo{}
		st := simstack.Add(t, net, stack.Config{Self: id, Clock: net, Seed: 1, Layers: []stack.Entry{{Name: "fifo", Layer: fl}, {Name: "reliable", Layer: rl}, {Name: "gms", Layer: gl}},
			App: stack.AppFuncs{
				OnDeliver: func(d stack.Delivery) {
					seq := binary.BigEndian.Uint32(d.Payload)
					got[[3]uint32{uint32(id), uint32(d.From), seq}] = true
					k := [2]uint32{uint32(id), uint32(d.From)}
					if prev, ok := last[k]; ok && int64(seq) <= prev {
						fifoBad++
					}
					last[k] = int64(seq)
				},
				OnView: func(v *event.ViewInfo) {
					viewsAt[id][v.Group] = v
					if v.Has(late) && sawLate[id] == 0 {
						sawLate[id] = net.Now()
					}
				},
			}}, nil)
		stacks[id] = st
		if id != late {
			st.Join(1)
		}
	}
	net.At(event.Time(2500*time.Millisecond), func() { stacks[late].Join(1) })
	net.Run(500 * time.Millisecond)
	crashed := event.NodeID(3)
	for i := 1; i <= N; i++ {
		id := event.NodeID(i)
		var tick func()
		tick = func() {
			if net.Now() > event.Time(4*time.Second) || (id == crashed && net.Now() >= event.Time(2*time.Second)) {
				return
			}
			if v := viewsAt[id][1]; v == nil || !v.Has(id) {
				// Not a member yet (the joiner): cast once it is. (A
				// cast before the sender's first view is not counted
				// as owed to anyone.)
				net.After(10*time.Millisecond, tick)
				return
			}
			b := make([]byte, 100)
			binary.BigEndian.PutUint32(b, uint32(sentBy[id]))
			if err := stacks[id].Cast(1, b); err == nil {
				sentBy[id]++
				sendTimes[id] = append(sendTimes[id], net.Now())
			}
			net.After(10*time.Millisecond, tick)
		}
		net.After(time.Duration(i)*time.Millisecond, tick)
	}
	net.At(event.Time(2*time.Second), func() { net.Crash(crashed) })
	net.RunUntil(event.Time(8 * time.Second))
	for rx := 1; rx <= N; rx++ {
		if event.NodeID(rx) == crashed {
			continue
		}
		if v := viewsAt[event.NodeID(rx)][1]; v == nil || v.Has(crashed) {
			t.Errorf("n%d: view %+v", rx, v)
		}
		for tx := 1; tx <= N; tx++ {
			if tx == rx || event.NodeID(tx) == crashed {
				continue
			}
			miss := 0
			for s := 0; s < sentBy[event.NodeID(tx)]; s++ {
				if event.NodeID(rx) == late && (sawLate[event.NodeID(tx)] == 0 || sendTimes[event.NodeID(tx)][s] <= sawLate[event.NodeID(tx)]) {
					continue // sent before the sender saw the joiner
				}
				if !got[[3]uint32{uint32(rx), uint32(tx), uint32(s)}] {
					miss++
				}
			}
			if miss > 0 {
				t.Errorf("n%d missed %d of %d from n%d", rx, miss, sentBy[event.NodeID(tx)], tx)
			}
		}
	}
	if fifoBad > 0 {
		t.Errorf("%d deliveries out of FIFO order", fifoBad)
	}
	n := 0
	for k := range got {
		if k[0] == uint32(late) {
			n++
		}
	}
	t.Logf("late joiner delivered %d; joined view seen at %v", n, sawLate)
	t.Logf("sent %v; service %+v", sentBy, svc.Service().Stats())
}
