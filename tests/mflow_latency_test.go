package tests

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/layers/mflow"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// latencies runs one sender casting 1 KB at rate per second to n-1
// receivers (hosts taking in capacity packets per second) through the
// given layers and returns every send-to-delivery latency, sorted.
func latencies(t *testing.T, names []string, params map[string]map[string]string, n, rate, capacity int, latency, d time.Duration) []time.Duration {
	t.Helper()
	net := sim.New(sim.Config{Seed: 8, Latency: latency})
	var lat []time.Duration
	var stacks []*stack.Stack
	var members []event.NodeID
	for id := event.NodeID(1); id <= event.NodeID(n); id++ {
		layers := append(buildLayers(t, names, params), stack.Entry{Name: "host", Layer: &rxHost{service: time.Second / time.Duration(capacity), capacity: 1 << 20}})
		st, err := stack.New(stack.Config{Self: id, Transport: net.AddNode(id), Clock: net, Seed: 2, Layers: layers,
			App: stack.AppFuncs{OnDeliver: func(dl stack.Delivery) {
				lat = append(lat, net.Now().Sub(event.Time(binary.BigEndian.Uint64(dl.Payload))))
			}}})
		if err != nil {
			t.Fatal(err)
		}
		net.Node(id).Attach(st)
		stacks = append(stacks, st)
		members = append(members, id)
	}
	v := &event.ViewInfo{Group: 1, ID: 1, Members: members}
	for _, st := range stacks {
		st.InstallView(v)
	}
	payload := make([]byte, 1000)
	var tick func()
	tick = func() {
		if net.Now() >= event.Time(d) {
			return
		}
		binary.BigEndian.PutUint64(payload, uint64(net.Now()))
		if err := stacks[0].Cast(1, payload); err != nil {
			t.Fatalf("Cast at %v: %v", net.Now(), err)
		}
		net.After(time.Second/time.Duration(rate), tick)
	}
	net.At(0, tick)
	net.Run(d + 2*time.Second)
	if want := (n - 1) * rate * int(d/time.Second); len(lat) != want {
		t.Fatalf("%v: %d deliveries, want %d", names, len(lat), want)
	}
	slices.Sort(lat)
	return lat
}

func q(l []time.Duration, p float64) time.Duration { return l[int(p*float64(len(l)-1))] }

// TestMflowAddsNoLatency: with the ack_thresh stacktool mflow-params gives
// for the workload, mflow : fifo : reliable delivers with the same latency
// distribution as fifo : reliable at a rate below capacity.
func TestMflowAddsNoLatency(t *testing.T) {
	const n, rate, capacity = 10, 1000, 5000
	const latency, d = 2 * time.Millisecond, 3 * time.Second
	cfg := mflow.DefaultConfig()
	w := mflow.Workload{N: n, Size: 1000 + float64(cfg.Overhead), Rate: rate, Delay: latency + time.Second/capacity, Window: float64(cfg.Window)}
	thresh := int64(mflow.SafeAckThresh(w))

	base := latencies(t, []string{"fifo", "reliable"}, nil, n, rate, capacity, latency, d)
	with := latencies(t, []string{"mflow", "fifo", "reliable"}, map[string]map[string]string{"mflow": {"ack_thresh": fmt.Sprint(thresh)}}, n, rate, capacity, latency, d)
	for _, r := range []struct {
		name string
		l    []time.Duration
	}{{"fifo : reliable", base}, {fmt.Sprintf("mflow(ack_thresh=%d) : fifo : reliable", thresh), with}} {
		t.Logf("%-42s p50 %v  p90 %v  p99 %v  max %v", r.name, q(r.l, .5), q(r.l, .9), q(r.l, .99), r.l[len(r.l)-1])
	}
	for _, p := range []float64{.5, .9, .99, 1} {
		if q(with, p) != q(base, p) {
			t.Errorf("p%.0f latency: %v with mflow, %v without", 100*p, q(with, p), q(base, p))
		}
	}
}
