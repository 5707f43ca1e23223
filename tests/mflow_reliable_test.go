package tests

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	_ "github.com/layercast/layercast/layers/fifo"
	"github.com/layercast/layercast/layers/mflow"
	_ "github.com/layercast/layercast/layers/reliable"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/testbed/simstack"
	"github.com/layercast/layercast/transport/sim"
)

// TestMflowOverReliableUnderLoss runs mflow : fifo : reliable on a
// network losing 5% of packets (data and acknowledgements alike): every
// message reaches every receiver, the sender never stalls for good, and
// the acknowledgements per message still follow equation 2, since
// receivers count what they deliver and reliable recovers lost acks.
func TestMflowOverReliableUnderLoss(t *testing.T) {
	const n, msgs, size = 6, 3000, 1000
	const thresh = 12500
	r := castRun{names: []string{"mflow", "fifo", "reliable"}, params: map[string]map[string]string{"mflow": {"window": "50000", "ack_thresh": "12500"}},
		n: n, seed: 3, net: sim.Config{Seed: 11, Latency: time.Millisecond, Loss: sim.Uniform{P: 0.05}},
		gap: time.Millisecond, until: msgs*time.Millisecond + 5*time.Second, msgs: msgs}.run(t)
	if r.sent != msgs {
		t.Fatalf("sent %d of %d", r.sent, msgs)
	}
	for id := event.NodeID(2); id <= n; id++ {
		if len(r.distinct[id]) != msgs {
			t.Errorf("node %v delivered %d distinct of %d", id, len(r.distinct[id]), msgs)
		}
	}
	var acks, casts int64
	for id := range r.stacks {
		acks += r.counter(id, "mflow", "acks_sent")
		casts += r.counter(id, "mflow", "casts")
	}
	weight := float64(size + mflow.EnsembleConfig().Overhead)
	eff := float64(casts) / float64(casts+acks)
	want := mflow.Efficiency(n, weight, thresh)
	t.Logf("5%% loss: %d casts, %d mflow acks (%.3f per message, equation 2: %.3f); efficiency %.4f, equation 3: %.4f; network dropped %d packets",
		casts, acks, float64(acks)/float64(casts), mflow.AcksPerMsg(n, weight, thresh), eff, want, r.net.Stats().Dropped)
	if math.Abs(eff-want)/want > 0.02 {
		t.Errorf("efficiency %.4f under loss, equation 3 gives %.4f", eff, want)
	}
}

// TestMflowViewChangesUnderLoss: two senders multicast through
// mflow : fifo : reliable on a network losing 2% of packets while members
// leave and join. No sender stalls for good, and every member of the final
// view delivers, in order, everything each sender cast after it joined.
func TestMflowViewChangesUnderLoss(t *testing.T) {
	const msgs = 2000
	net := sim.New(sim.Config{Seed: 12, Latency: time.Millisecond, Loss: sim.Uniform{P: 0.02}})
	stacks := map[event.NodeID]*stack.Stack{}
	next := map[event.NodeID]map[event.NodeID]uint64{} // receiver -> sender -> next seq
	flowOK := map[event.NodeID]bool{}
	for id := event.NodeID(1); id <= 6; id++ {
		self := id
		next[id] = map[event.NodeID]uint64{}
		flowOK[id] = true
		layers := layertest.Registered(map[string]map[string]string{"mflow": {"window": "50000", "ack_thresh": "25000"}}, "mflow", "fifo", "reliable")()
		stacks[id] = simstack.Add(t, net, stack.Config{Self: id, Clock: net, Seed: 4, Layers: layers,
			App: stack.AppFuncs{
				OnDeliver: func(d stack.Delivery) {
					seq := binary.BigEndian.Uint64(d.Payload)
					if want, ok := next[self][d.From]; ok && seq != want {
						t.Errorf("node %v delivered %d from %v, want %d", self, seq, d.From, want)
					}
					next[self][d.From] = seq + 1
				},
				OnFlow: func(_ event.GroupID, ok bool) { flowOK[self] = ok },
			}}, nil)
	}
	viewID := uint64(0)
	install := func(members ...event.NodeID) {
		viewID++
		v := &event.ViewInfo{Group: 1, ID: viewID, Members: members}
		for _, st := range stacks {
			st.InstallView(v)
		}
	}
	install(1, 2, 3, 4, 5)
	sent := map[event.NodeID]int{}
	for _, s := range []event.NodeID{1, 3} {
		s := s
		payload := make([]byte, 1000)
		var tick func()
		tick = func() {
			if sent[s] == msgs {
				return
			}
			if flowOK[s] {
				binary.BigEndian.PutUint64(payload, uint64(sent[s]))
				if stacks[s].Cast(1, payload) == nil {
					sent[s]++
				}
			}
			net.After(500*time.Microsecond, tick)
		}
		net.At(0, tick)
	}
	net.At(event.Time(200*time.Millisecond), func() { install(1, 3, 4, 5) })
	net.At(event.Time(400*time.Millisecond), func() { install(1, 3, 4, 5, 6) })
	net.At(event.Time(600*time.Millisecond), func() { install(1, 3, 5, 6) })
	net.Run(8 * time.Second)
	for _, s := range []event.NodeID{1, 3} {
		if sent[s] != msgs {
			t.Errorf("sender %v cast %d of %d: stalled across view changes", s, sent[s], msgs)
		}
		for _, r := range []event.NodeID{1, 3, 5, 6} {
			if r != s && next[r][s] != msgs {
				t.Errorf("node %v delivered up to %d from %v, want %d", r, next[r][s], s, msgs)
			}
		}
	}
}
