package stamp_test

import (
	"context"
	"testing"
	"time"

	"github.com/layercast/layercast/compose"
	_ "github.com/layercast/layercast/docs/stamp"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/experiment"
	"github.com/layercast/layercast/experiment/sweep"
	_ "github.com/layercast/layercast/layers/all"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/transport/sim"
)

// The guide's layer is registered, passes the checks `stacktool check`
// runs, and compared with the same stack without it (what `stacktool
// compare` does) it delivers everything and reports the one-way latency
// the network gives (1 ms links).
func TestStampRegisteredCheckedCompared(t *testing.T) {
	if _, ok := compose.Lookup("stamp"); !ok {
		t.Fatal("stamp is not registered")
	}
	var cfg sweep.Config
	for _, src := range []string{"stamp : fifo : reliable", "fifo : reliable"} {
		sp, err := compose.Parse(src)
		if err == nil {
			err = compose.Check(sp)
		}
		if err != nil {
			t.Fatalf("check %q: %v", src, err)
		}
		cfg.Stacks = append(cfg.Stacks, sweep.Stack{Label: src, Spec: sp})
	}
	cfg.Base = experiment.Default()
	cfg.Base.Nodes, cfg.Base.GroupsPerNode, cfg.Base.GroupSize = 8, 2, 4
	cfg.Base.Duration, cfg.Base.Loss = time.Second, "uniform:2%"
	pl, err := sweep.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sweep.Run(context.Background(), pl, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if !r.Report.DeliveredAll || len(r.Report.Broken) > 0 {
			t.Errorf("%s: delivered all %v, broken %v", r.Report.Spec, r.Report.DeliveredAll, r.Report.Broken)
		}
	}
	st := res[0].Report.Layers["stamp"]
	mean := res[0].Report.LayerRatios["stamp"]["latency_us_mean"]
	if st["stamped"] == 0 || st["received"] < st["stamped"] || mean < 1000 || mean > 5000 {
		t.Errorf("stamp counters %v, mean latency %v µs; want every message stamped and received, about 1 ms", st, mean)
	}
}

// FuzzStamp feeds a node whose stack is stamp alone arbitrary packets (and
// casts, views, time): a short or garbled stamp is dropped and counted,
// never a panic.
func FuzzStamp(f *testing.F) {
	f.Add([]byte{1, 3, 0, 0, 0})
	f.Add([]byte{5, 6, 10, 1, 12, 0, 0, 0, 0, 0, 0, 0, 1, 'x', 'y', 'z', 'w'})
	f.Fuzz(func(t *testing.T, b []byte) {
		c := layertest.New(t, sim.Config{Seed: 1, Latency: time.Millisecond}, 3, layertest.Registered(nil, "stamp"))
		c.Lax = true
		c.Install(&event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3}})
		c.Script(b)
	})
}
