package mflow

import (
	"encoding/binary"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// latencyRun has node 1 multicast 1 KB every 1/rate seconds to n-1
// receivers whose hosts take in capacity packets per second, and returns
// every send-to-delivery latency, sorted.
func latencyRun(t *testing.T, n int, useMflow bool, cfg Config, rate, capacity int, latency, d time.Duration) []time.Duration {
	t.Helper()
	net := sim.New(sim.Config{Seed: 5, Latency: latency})
	var lat []time.Duration
	var stacks []*stack.Stack
	var members []event.NodeID
	for id := event.NodeID(1); id <= event.NodeID(n); id++ {
		var entries []stack.Entry
		if useMflow {
			entries = append(entries, stack.Entry{Name: "mflow", Layer: New(cfg)})
		}
		entries = append(entries, stack.Entry{Name: "host", Layer: &host{service: time.Second / time.Duration(capacity), capacity: 1 << 20}})
		st, err := stack.New(stack.Config{Self: id, Transport: net.AddNode(id), Clock: net, Layers: entries,
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
			t.Fatalf("Cast: %v", err)
		}
		net.After(time.Second/time.Duration(rate), tick)
	}
	net.At(0, tick)
	net.Run(d + time.Second)
	if want := (n - 1) * rate * int(d/time.Second); len(lat) != want {
		t.Fatalf("%d deliveries, want %d", len(lat), want)
	}
	slices.Sort(lat)
	return lat
}

func pct(l []time.Duration, p float64) time.Duration { return l[int(p*float64(len(l)-1))] }

// TestNoAddedLatency: with the ack_thresh mflow-params gives (equation 6,
// less one message for the footnote's overshoot) for the workload, mflow adds no latency to the same stack without it at
// a rate below capacity; with ack_thresh = window (no slack for the
// acknowledgements' round trip) it does, which shows the measure can tell.
func TestNoAddedLatency(t *testing.T) {
	const n, rate, capacity = 10, 1000, 5000
	const latency, d = 2 * time.Millisecond, 3 * time.Second
	cfg := EnsembleConfig()
	// ε: propagation plus the host's service time for one packet.
	w := Workload{N: n, Size: 1000 + float64(cfg.Overhead), Rate: rate, Delay: latency + time.Second/capacity, Window: float64(cfg.Window)}
	cfg.AckThresh = int64(SafeAckThresh(w)) // what stacktool mflow-params prints

	base := latencyRun(t, n, false, cfg, rate, capacity, latency, d)
	with := latencyRun(t, n, true, cfg, rate, capacity, latency, d)
	tight := cfg
	tight.AckThresh = cfg.Window
	bad := latencyRun(t, n, true, tight, rate, capacity, latency, d)
	for _, r := range []struct {
		name string
		l    []time.Duration
	}{{"without mflow", base}, {"mflow ack_thresh=" + itoa(cfg.AckThresh), with}, {"mflow ack_thresh=window", bad}} {
		t.Logf("%-28s p50 %v  p90 %v  p99 %v  max %v", r.name, pct(r.l, .5), pct(r.l, .9), pct(r.l, .99), r.l[len(r.l)-1])
	}
	for _, p := range []float64{.5, .9, .99, 1} {
		if pct(with, p) != pct(base, p) {
			t.Errorf("p%.0f latency with mflow %v, without %v: mflow added latency", 100*p, pct(with, p), pct(base, p))
		}
	}
	if bad[len(bad)-1] <= base[len(base)-1] {
		t.Errorf("ack_thresh = window added no latency (max %v vs %v): the measure cannot tell", bad[len(bad)-1], base[len(base)-1])
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
