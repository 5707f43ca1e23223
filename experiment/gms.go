package experiment

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/layers/gms"
	"github.com/layercast/layercast/stack"
)

func init() { GMSSetup = setupGMS }

// settleLimit bounds how long setupGMS waits (in virtual time) for the first
// views before it gives up.
const settleLimit = 60 * time.Second

// setupGMS runs the membership service for specs that end in gms: it adds
// the service node (id and batching interval from the nodes' gms layer,
// gms(service=..., view_interval=..., fd_timeout=...)), has every node join
// its intended groups, and runs the network until every live node holds the
// intended view of each of its groups, less the nodes that are down or
// frozen. Senders start then; fault times count from that moment (runSim
// schedules them after this hook, offset by env.SendStart), so a fault
// never strikes while membership settles.
func setupGMS(env *SimEnv) error {
	layers := map[event.NodeID]*gms.Layer{}
	for _, id := range env.Nodes {
		st := env.Stacks[id]
		for i := 0; i < st.NumLayers(); i++ {
			if l, ok := st.Layer(i).(*gms.Layer); ok {
				layers[id] = l
			}
		}
		if layers[id] == nil {
			return fmt.Errorf("%v: its stack gives views but has no gms layer", id)
		}
	}
	cfg := layers[env.Nodes[0]].Config()
	if slices.Contains(env.Nodes, cfg.Service) {
		return fmt.Errorf("gms service id %v is one of the experiment's nodes; choose another with gms(service=N)", cfg.Service)
	}
	svc := gms.NewServiceLayer(gms.ServiceConfig{ViewInterval: cfg.ViewInterval, FDTimeout: cfg.FDTimeout, SuspectTimeout: cfg.SuspectTimeout})
	if _, err := env.AddNode(cfg.Service, []stack.Entry{{Name: "gms_service", Layer: svc}}); err != nil {
		return fmt.Errorf("adding the membership service: %w", err)
	}
	for _, id := range env.Nodes {
		for _, g := range env.Of[id] {
			if err := env.Stacks[id].Join(g); err != nil {
				return fmt.Errorf("%v join %v: %w", id, g, err)
			}
		}
	}
	// Only nodes that run can settle: a crashed or frozen node (a fault
	// scheduled by a caller that did not defer faults) is neither waited
	// for nor expected in the others' views.
	up := func(id event.NodeID) bool {
		nd := env.Net.Node(id)
		return nd != nil && !nd.Down() && !nd.Frozen()
	}
	settled := func() bool {
		for _, id := range env.Nodes {
			if !up(id) {
				continue
			}
			views := layers[id].Views()
			for _, g := range env.Of[id] {
				v := views[g]
				if v == nil {
					return false
				}
				i := 0
				for _, n := range slices.Sorted(slices.Values(env.Groups[g])) {
					if !up(n) {
						continue
					}
					if i >= len(v.Members) || v.Members[i] != n {
						return false
					}
					i++
				}
				if i != len(v.Members) {
					return false
				}
			}
		}
		return true
	}
	start := env.Net.Now()
	step := max(time.Millisecond, cfg.ViewInterval/4)
	for !settled() {
		if env.Net.Now().Sub(start) > settleLimit {
			return fmt.Errorf("views not installed after %v of virtual time (%v, view_interval %v)", settleLimit, cfg.Service, cfg.ViewInterval)
		}
		env.Net.Run(step)
	}
	env.SendStart = max(env.SendStart, env.Net.Now())
	if err := watchCrashes(env, svc, layers); err != nil {
		return err
	}
	st := svc.Service().Stats()
	env.Notes = append(env.Notes, fmt.Sprintf("gms: %v installed the views of %d groups by %v (%d batches, view_interval %v, fd_timeout %v, heartbeat %v)",
		cfg.Service, len(env.Groups), env.Net.Now(), st.Commits, cfg.ViewInterval, cfg.FDTimeout, cfg.Heartbeat))
	return nil
}

// watchCrashes observes, for every crash fault of the scenario, how long the
// membership takes to remove the crashed node: from the crash until every
// surviving member of its groups holds views of all of them without it. It
// records the longest as the service's crash_removal_max_us counter (with
// crash_removals, how many were observed) and notes each one.
func watchCrashes(env *SimEnv, svc *gms.ServiceLayer, layers map[event.NodeID]*gms.Layer) error {
	crashed := map[event.NodeID]event.Time{}
	for _, f := range env.Scenario.Faults {
		ft, err := ParseFault(f)
		if err != nil {
			return fmt.Errorf("fault %q: %w", f, err)
		}
		if ft.Kind == FaultCrash {
			crashed[ft.Node] = env.SendStart.Add(ft.At.Duration()) // fault times count from the start of sending
		}
	}
	cfg := layers[env.Nodes[0]].Config()
	var worst time.Duration
	removals := 0
	for _, victim := range slices.Sorted(maps.Keys(crashed)) {
		at := crashed[victim]
		var gs []event.GroupID
		if layers[victim] != nil {
			gs = env.Of[victim]
		}
		if len(gs) == 0 {
			continue
		}
		done := func() bool {
			for _, g := range gs {
				for _, n := range env.Groups[g] {
					if n == victim {
						continue
					}
					if t, dead := crashed[n]; dead && t <= env.Net.Now() {
						continue
					}
					if v := layers[n].Views()[g]; v == nil || v.Has(victim) {
						return false
					}
				}
			}
			return true
		}
		var poll func()
		poll = func() {
			if !done() {
				env.Net.After(time.Millisecond, poll)
				return
			}
			d := env.Net.Now().Sub(at)
			removals++
			worst = max(worst, d)
			svc.Record("crash_removals", int64(removals))
			svc.Record("crash_removal_max_us", worst.Microseconds())
			env.Notes = append(env.Notes, fmt.Sprintf("gms: %v crashed at %v; every surviving member of its %d groups installed views without it %v later (fd_timeout %v + suspect_timeout %v + view_interval %v = %v)",
				victim, at, len(gs), d, cfg.FDTimeout, cfg.SuspectTimeout, cfg.ViewInterval, cfg.FDTimeout+cfg.SuspectTimeout+cfg.ViewInterval))
		}
		env.Net.At(at, poll)
	}
	return nil
}
