package experiment

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/membership/removal"
)

func init() { GMSSetup = setupGMS }

// settleLimit bounds how long setupGMS waits (in virtual time) for the first
// views before it gives up.
const settleLimit = 60 * time.Second

// setupGMS runs the membership service for specs whose layers give views: it
// asks the spec's layers which service they need (compose.LayerInfo.Service:
// for gms, the node gms(service=N) running gms_service with the member's
// view_interval, fd_timeout and suspect_timeout), builds that service's own
// spec with compose.BuildService, has every node join its intended groups,
// and runs the network until every live node's application holds the
// intended view of each of its groups, less the nodes that are down or
// frozen. Senders start then; fault times count from that moment (runSim
// schedules them after this hook, offset by env.SendStart), so a fault never
// strikes while membership settles. It knows no layer: views are the View
// events the applications saw.
func setupGMS(env *SimEnv) error {
	svc, err := compose.ServiceOf(env.Spec, env.Nodes)
	if err != nil {
		return err
	}
	layer, need := svc.Layer, svc.Need
	if _, err := env.AddNode(need.Node, svc.Entries); err != nil {
		return fmt.Errorf("adding the service: %w", err)
	}
	env.service = svc.Name
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
			for _, g := range env.Of[id] {
				v := env.view(id, g)
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
	for !settled() {
		if env.Net.Now().Sub(start) > settleLimit {
			return fmt.Errorf("views not installed after %v of virtual time (%v, %s)", settleLimit, need.Node, need.Describe)
		}
		env.Net.Run(need.Poll)
	}
	env.SendStart = max(env.SendStart, env.Net.Now())
	if err := watchCrashes(env, layer, need); err != nil {
		return err
	}
	env.Notes = append(env.Notes, fmt.Sprintf("%s: %v installed the views of %d groups by %v (%s)",
		layer, need.Node, len(env.Groups), env.Net.Now(), need.Describe))
	return nil
}

// watchCrashes observes, for every crash fault of the scenario, how long the
// membership takes to remove the crashed node: from the crash until every
// surviving member of its groups holds views of all of them without it. It
// records the longest as the service's crash_removal_max_us figure (with
// crash_removals, how many were observed; the harness's measurements,
// reported beside the service layer's counters) and notes each one.
func watchCrashes(env *SimEnv, layer string, need compose.ServiceNeed) error {
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
	var worst time.Duration
	removals := 0
	for _, victim := range slices.Sorted(maps.Keys(crashed)) {
		at := crashed[victim]
		gs := env.Of[victim]
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
					if v := env.view(n, g); v == nil || v.Has(victim) {
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
			env.record(env.service, "crash_removals", int64(removals))
			env.record(env.service, "crash_removal_max_us", worst.Microseconds())
			env.Notes = append(env.Notes, fmt.Sprintf("%s: %v crashed at %v; every surviving member of its %d groups installed views without it %v later (%s = %v)",
				layer, victim, at, len(gs), d, need.RemovalWords, need.RemovalBound))
		}
		env.Net.At(at, poll)
	}
	return nil
}

// view is the latest view of group g that node n's application saw (nil if
// none).
func (e *SimEnv) view(n event.NodeID, g event.GroupID) *event.ViewInfo {
	r := e.col.rank(g, n)
	if r < 0 {
		return nil
	}
	return e.col.lastView(e.col.moff[int(g)-1] + r)
}

// record sets a figure the harness measured, reported with the counters of
// the named layer (a service's layer): the harness's own measurement, not
// the layer's state.
func (e *SimEnv) record(layer, name string, v int64) {
	if e.figures == nil {
		e.figures = map[string]map[string]int64{}
	}
	if e.figures[layer] == nil {
		e.figures[layer] = map[string]int64{}
	}
	e.figures[layer][name] = v
}

// addFigures merges the figures the harness recorded into the report, and
// the removals the service's layers report (removal.Reporter), each with a
// note.
func (e *SimEnv) addFigures(rep *Report) {
	for l, m := range e.figures {
		if rep.Layers[l] == nil {
			rep.Layers[l] = map[string]int64{}
		}
		maps.Copy(rep.Layers[l], m)
	}
	for _, st := range e.extra {
		for i := range st.NumLayers() {
			r, ok := st.Layer(i).(removal.Reporter)
			if !ok {
				continue
			}
			kept, dropped := r.Removals()
			for _, rec := range kept {
				rep.Removals = append(rep.Removals, rec)
				rep.Notes = append(rep.Notes, fmt.Sprintf("removed %v at %v (%s, %d groups): %s", rec.Node, rec.At, rec.Cause, rec.Groups, rec.Reason))
			}
			if dropped > 0 {
				rep.Notes = append(rep.Notes, fmt.Sprintf("%d older removals not listed (the service keeps the last %d)", dropped, len(kept)))
			}
		}
	}
}
