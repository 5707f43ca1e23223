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
// What a report counts (the JSON fields of Report): a delivery is owed to
// a receiver that was in the sender's view of the group when the sender
// cast (the collector records every view each node's application sees)
// and when neither had crashed by the end. deliveries_expected counts owed
// deliveries, deliveries_of_expected how many of them were made and
// missing the rest, so expected = made + missing; not_owed counts
// deliveries of messages that were not owed (fine, neither expected nor
// duplicates). never_sent counts casts the stacks accepted but had not
// handed to the network at the end (the simulator watches packets leave),
// and missing_never_sent the missing deliveries that are theirs, apart
// from what the network lost. missing_explained are the missing
// deliveries a fault still in force at the end (crash, freeze, partition
// not healed), a removal for good, or a removal window (state a stack
// drops when a node is removed or readmitted) explains; the notes say
// which; missing_unexplained are the rest. FIFO order is checked per
// (receiver, sender, group) over the owed deliveries since the receiver
// last joined the group. promises lists what the stack gives that a run
// checks (reliable, fifo) and broken_promises what it broke; stacktool
// exits 1 when it is not empty. missing_examples, duplicate_examples,
// fifo_violation_examples, agreed_violation_examples and
// vsync_violation_examples name the first cases behind those counts (up
// to MaxExamples each, in a fixed order): which messages, at which
// receiver, and what the collector knows of them; the text prints them
// under each PROMISE BROKEN line.
//
// Drops (loss): every data packet the network drops is counted, per
// receiver, where it happened, by cause in loss.dropped_by (model,
// partition, overflow, kernel, queue, wan, down, malformed); loss.dropped
// is their sum (the flat dropped_by_model, dropped_overflow,
// dropped_control and dropped_other keep their meaning). The simulator
// tells the collector each drop with its packet (sim.Network.SetDropHook),
// and the udp network the loss model's drops with the message they
// carried; the kernel's drops over UDP are counted but tied to no message.
// loss.recovered is counted over the same set: deliveries of a message at
// a receiver after a packet carrying it there was dropped, once per
// (receiver, message), so recovered <= dropped; a dropped retransmission
// is one more drop (drop_outcome.again). A delivery a layer marked
// recovered with no such drop is counted in recovered_without_drop, not in
// recovered. drop_outcome splits dropped by what became of each drop
// (recovered, missing, not_owed, again, untied). A percentage whose base
// is zero is not a figure: the table prints "-" and the JSON has null
// (loss.recovered_pct).
//
// On the simulator a run is a pure function of spec, scenario and seed:
// everything in the Report except WallSeconds is the same byte for byte.
package experiment
