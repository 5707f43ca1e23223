// Package experiment runs layercast stacks under a workload and measures
// them: the harness behind `stacktool run` and `stacktool compare`.
//
// A Scenario says how many nodes there are, how they are placed in groups
// (balanced and random from the seed, as in the Ricochet paper), who sends
// how fast for how long, and what the network does (latency, jitter, loss,
// capacity, faults). Run builds one stack per node from a compose.Spec on
// the chosen network ("sim" by default; see Networks), installs the
// membership (static views, or a membership service through GMSSetup when
// the spec has gms), drives the senders, checks every delivery (duplicates,
// FIFO order per sender and group, latency, recovery) with a Collector and
// returns a Report, whose JSON form is the contract of `stacktool run
// --json`.
//
//	spec, _ := compose.Load("specs/baseline.stack")
//	sc := experiment.Default()
//	sc.Set("loss", "uniform:5%")
//	rep, err := experiment.Run(ctx, "sim", spec, sc, nil)
//
// On the simulator a run is a pure function of spec, scenario and seed:
// everything in the Report except WallSeconds is the same byte for byte.
package experiment
