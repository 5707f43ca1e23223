package experiment

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/membership/removal"
	"github.com/layercast/layercast/stack"
)

// Report is the outcome of one run. Its JSON form is the contract of
// `stacktool run --json` (issue 2): fields may be added, never renamed.
// Everything except WallSeconds (and Extra entries a summarizer marks as
// wall-clock) depends only on the spec, the scenario and the seed.
type Report struct {
	Spec     string `json:"spec"`
	Network  string `json:"network"`
	Seed     uint64 `json:"seed"`
	Scenario string `json:"scenario"`
	// SimSeconds is the virtual time the run took (sending plus drain,
	// ended early once everything was delivered).
	SimSeconds  float64 `json:"sim_seconds"`
	WallSeconds float64 `json:"wall_seconds"`
	// MessagesSent counts casts the stacks accepted.
	MessagesSent int64 `json:"messages_sent"`
	// Deliveries counts distinct (receiver, message) deliveries, owed or
	// not (see Collector); a sender's own messages are not counted.
	Deliveries int64 `json:"deliveries"`
	// DeliveriesExpected counts owed deliveries: (receiver, message) pairs
	// where the receiver was in the sender's view of the group when it
	// cast and neither had crashed by the end.
	DeliveriesExpected int64 `json:"deliveries_expected"`
	// DeliveriesOfExpected is how many of DeliveriesExpected were made
	// (the same set: DeliveriesExpected = DeliveriesOfExpected + Missing).
	DeliveriesOfExpected int64 `json:"deliveries_of_expected"`
	// NotOwed counts deliveries of messages not owed to their receiver
	// (it was out of the sender's view when the sender cast, or one of
	// them crashed): neither expected nor duplicates.
	NotOwed int64 `json:"not_owed"`
	// DeliveredAll: every owed delivery was made (Missing is 0).
	DeliveredAll bool  `json:"delivered_all"`
	Duplicates   int64 `json:"duplicates"`
	// GivenUp counts messages a layer told the application it gave up
	// (event.Lost, e.g. fifo skipping a gap its reorder buffer could not
	// hold); an unbounded report counts one.
	GivenUp        int64 `json:"given_up"`
	FIFOViolations int64 `json:"fifo_violations"`
	// AgreedViolations counts deliveries out of agreed order (agreed.go);
	// 0 when the stack does not promise agreed order (not checked).
	AgreedViolations int64 `json:"agreed_violations"`
	// VsyncViolations counts (pair of members, pair of consecutive views
	// both installed with both members in them) where the two delivered
	// different sets of messages in the first view (vsync.go); 0 when the
	// stack does not promise view synchrony (not checked).
	VsyncViolations int64 `json:"vsync_violations"`
	// Missing is DeliveriesExpected minus what was delivered of it.
	Missing int64 `json:"missing"`
	// NeverSent counts casts the stacks accepted but had not handed to
	// the network by the end (still queued in the stack or its layers);
	// nil when the network cannot tell (it is not watched).
	NeverSent *int64 `json:"never_sent,omitempty"`
	// MissingNeverSent is the part of Missing whose messages were never
	// sent (so the network did not lose them).
	MissingNeverSent int64 `json:"missing_never_sent"`
	// MissingExplained is the part of Missing that something the harness
	// did explains (the notes say what): a fault still in force at the end
	// (crash, freeze, partition not healed), a node removed for good, or
	// a cast made around the receiver's removal from the sender's view.
	MissingExplained int64 `json:"missing_explained"`
	// MissingUnexplained is the rest of Missing: the stack lost them.
	MissingUnexplained int64 `json:"missing_unexplained"`
	// Promises are the properties the stack gives that the run checks
	// ("reliable", "fifo"); Broken says, in words, which it broke: an
	// unexplained missing delivery when it gives reliable delivery, a FIFO
	// violation when it gives FIFO order, a duplicate always. A command
	// exits 1 when Broken is not empty.
	Promises []string `json:"promises"`
	Broken   []string `json:"broken_promises"`
	// The *Examples name the first cases (up to MaxExamples, in a fixed
	// order) behind a count, so that a broken promise says which messages:
	// the text report prints them under its PROMISE BROKEN line. Each is
	// set whenever its count is not 0, promised or not, and absent
	// otherwise (and agreed and vsync ones only where those are checked).
	//
	// MissingExamples are runs of consecutive owed deliveries missing
	// with no fault to explain them (MissingUnexplained), in the order
	// (group, sender, receiver, index): receiver, group, sender, the first
	// index and how many, the sender's view when it cast them, how many the
	// network dropped to the receiver or the sender never sent, and what
	// the receiver delivered of the stream.
	MissingExamples []MissingExample `json:"missing_examples,omitempty"`
	// DuplicateExamples are the first duplicate deliveries (Duplicates)
	// and FIFOViolationExamples the first deliveries out of FIFO order
	// (FIFOViolations, with the index they came after), in the order the
	// collector saw them.
	DuplicateExamples     []DeliveryExample `json:"duplicate_examples,omitempty"`
	FIFOViolationExamples []DeliveryExample `json:"fifo_violation_examples,omitempty"`
	// AgreedViolationExamples name, per member out of agreed order (by
	// group, then member), the yardstick member and the first position
	// where their orders differ, with the two messages there.
	AgreedViolationExamples []AgreedExample `json:"agreed_violation_examples,omitempty"`
	// VsyncViolationExamples name, per violation, the two members, the
	// two views, the sender whose messages they delivered differently in
	// the first view, and how many (and the last) each delivered.
	VsyncViolationExamples []VsyncExample `json:"vsync_violation_examples,omitempty"`
	// ThroughputMsgsPerS is the mean over receivers of messages delivered
	// per second of virtual time (from the start to its last delivery; with
	// a warm-up, from the warm-up's end to the end of sending).
	ThroughputMsgsPerS float64 `json:"throughput_msgs_per_s"`
	// OfferedMsgsPerS is what the senders cast per second of sending time.
	OfferedMsgsPerS float64    `json:"offered_msgs_per_s"`
	LatencyMs       Percentile `json:"latency_ms"`
	Loss            LossReport `json:"loss"`
	Overhead        Overhead   `json:"overhead"`
	// PeakBufferBytes is the largest, over nodes, sum of the layers'
	// peak_buffer_bytes counters.
	PeakBufferBytes int64 `json:"peak_buffer_bytes"`
	// BufferPeaks is, per layer with a buffer peak counter
	// (compose.BufferPeakRole), its largest value at any one node: what the
	// soak checks against the layer's bound (BufferBounds).
	BufferPeaks map[string]int64 `json:"buffer_peaks,omitempty"`
	// Backpressure counts casts the stacks refused for a while
	// (stack.ErrBackpressure); the senders retried them.
	Backpressure int64 `json:"backpressure"`
	// Layers holds every layer's counters summed over nodes.
	Layers map[string]map[string]int64 `json:"layers"`
	// LayerRatios are per-layer figures that are not sums (acks per
	// message, efficiency), set by summarizers. In JSON they appear inside
	// the layer's object under "layers", next to its counters.
	LayerRatios map[string]map[string]float64 `json:"-"`
	// LayerBreakdowns are per-layer counts split by a key, set by
	// summarizers (compose.Summary.Breakdowns); in JSON each is an object
	// inside the layer's, under "layers".
	LayerBreakdowns map[string]map[string]map[string]int64 `json:"-"`
	// Network-level counters (packets).
	Net NetReport `json:"net"`
	// Notes are remarks from the harness and the summarizers.
	Notes []string `json:"notes"`
	// Removals lists every node the membership service removed from its
	// groups, when and why (silent, partitioned, left, restarted, reset),
	// as the service says (removal.Reporter); each is a note too. Empty
	// without a membership service.
	Removals []removal.Record `json:"removals,omitempty"`
	// Extra holds fields summarizers add.
	Extra map[string]any `json:"extra,omitempty"`
}

// specPromises lists what the spec's layers give that a run checks.
func specPromises(spec string) []string {
	sp, err := compose.Load(spec)
	if err != nil {
		return []string{}
	}
	out := []string{}
	for _, l := range sp.Layers {
		info, ok := compose.Lookup(l.Name)
		if !ok {
			continue
		}
		for _, p := range []compose.Property{compose.Reliable, compose.FIFO, agreedOrder, viewSynchrony} {
			if slices.Contains(info.Gives, p) && !slices.Contains(out, string(p)) {
				out = append(out, string(p))
			}
		}
	}
	slices.Sort(out)
	return out
}

// brokenPromises says which promises a report shows broken.
func brokenPromises(r *Report) []string {
	out := []string{}
	for _, b := range brokenList(r) {
		out = append(out, b.line)
	}
	return out
}

// brokenList is brokenPromises with, for each line, the kind of examples
// that name its cases.
func brokenList(r *Report) []brokenPromise {
	var out []brokenPromise
	if r.Duplicates > 0 {
		out = append(out, brokenPromise{fmt.Sprintf("%d duplicate deliveries", r.Duplicates), duplicateExamples})
	}
	if r.FIFOViolations > 0 && slices.Contains(r.Promises, string(compose.FIFO)) {
		out = append(out, brokenPromise{fmt.Sprintf("%d FIFO violations (the stack gives FIFO order)", r.FIFOViolations), fifoExamples})
	}
	if r.MissingUnexplained > 0 && slices.Contains(r.Promises, string(compose.Reliable)) {
		out = append(out, brokenPromise{fmt.Sprintf("%d owed deliveries missing with no fault to explain them (the stack gives reliable delivery)", r.MissingUnexplained), missingExamplesKind})
	}
	if s := agreedBroken(r); s != "" {
		out = append(out, brokenPromise{s, agreedExamples})
	}
	if s := vsyncBroken(r); s != "" {
		out = append(out, brokenPromise{s, vsyncExamples})
	}
	return out
}

// brokenDetail is the lines naming the cases of the broken promise line
// (one of r.Broken), found again from the report's fields so that a report
// read back from JSON prints them too; none for a line it does not know.
func brokenDetail(r *Report, line string) []string {
	for _, b := range brokenList(r) {
		if b.line == line {
			return exampleLines(r, b.kind)
		}
	}
	return nil
}

// Percentile summarises a latency distribution in milliseconds.
type Percentile struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// MeanP99 summarises a distribution in milliseconds.
type MeanP99 struct {
	Mean float64 `json:"mean"`
	P99  float64 `json:"p99"`
}

// LossReport is what the network lost and how the stack got it back.
type LossReport struct {
	// Dropped is data packets the network lost, counted per receiver:
	// the sum of DroppedBy, every cause (before issue 9 only the loss
	// model and receive buffer overflow were counted; a run without
	// faults, capacity or WAN gives the same number).
	Dropped int64 `json:"dropped"`
	// DroppedBy splits Dropped by where each drop happened.
	DroppedBy DropCauses `json:"dropped_by"`
	// DroppedByModel is data packets lost by the loss model (DroppedBy.Model).
	DroppedByModel int64 `json:"dropped_by_model"`
	// DroppedOverflow is data packets lost to full receive buffers; over
	// UDP every packet the kernel dropped, at the receive queue
	// (DroppedBy.Kernel) or at the send (DroppedBy.Queue).
	DroppedOverflow int64 `json:"dropped_overflow"`
	// DroppedControl is control packets lost by the loss model.
	DroppedControl int64 `json:"dropped_control"`
	// DroppedOther is packets lost to full send queues, partitions, WAN
	// queues and crashed receivers.
	DroppedOther int64 `json:"dropped_other"`
	// Recovered is counted over the same set as Dropped: deliveries of a
	// message at a receiver after a data packet carrying it to that
	// receiver was dropped. A message is recovered once however many of
	// its packets were dropped (a dropped retransmission is one more drop,
	// DropOutcome.Again), so Recovered <= Dropped.
	Recovered int64 `json:"recovered"`
	// RecoveredBy splits Recovered by the mechanism the delivering layer
	// named ("unmarked": it named none).
	RecoveredBy map[string]int64 `json:"recovered_by"`
	// RecoveredPct is 100 * Recovered / Dropped; null when nothing was
	// dropped.
	RecoveredPct *float64 `json:"recovered_pct"`
	// RecoveredWithoutDrop is deliveries a layer marked recovered with no
	// recorded drop of that message to that receiver (the packet was late,
	// or its drop was not tied to a message: the kernel's drops over UDP).
	// They are not in Recovered.
	RecoveredWithoutDrop int64 `json:"recovered_without_drop"`
	// DropOutcome says what became of every drop counted in Dropped.
	DropOutcome DropOutcome `json:"drop_outcome"`
	// DiscoveryLatencyMs: when the loss was discovered, after the packet
	// would have arrived (send time plus link latency).
	DiscoveryLatencyMs MeanP99 `json:"discovery_latency_ms"`
	// RecoveryLatencyMs: delivery time after the packet would have arrived.
	RecoveryLatencyMs MeanP99 `json:"recovery_latency_ms"`
	// RecoveryLatencyByMs splits RecoveryLatencyMs by mechanism (the keys
	// of RecoveredBy): Ricochet's NAK layer promises its own tail.
	RecoveryLatencyByMs map[string]Percentile `json:"recovery_latency_by_ms"`
}

// DropOutcome splits LossReport.Dropped by what became of each drop; the
// fields sum to Dropped.
type DropOutcome struct {
	// Recovered: the message was delivered at that receiver later.
	Recovered int64 `json:"recovered"`
	// Missing: never delivered, and owed to that receiver.
	Missing int64 `json:"missing"`
	// NotOwed: never delivered, and not owed (the receiver was out of the
	// sender's view, or one of them crashed).
	NotOwed int64 `json:"not_owed"`
	// Again: a drop of a message the receiver had already lost once or
	// already delivered (retransmissions, repairs, late copies).
	Again int64 `json:"again"`
	// Untied: drops tied to no single message (coded repairs, packets
	// the network counted but did not read, malformed packets).
	Untied int64 `json:"untied"`
}

// Overhead is control traffic per data message sent.
type Overhead struct {
	ControlPacketsPerMsg float64 `json:"control_packets_per_msg"`
	ControlBytesPerMsg   float64 `json:"control_bytes_per_msg"`
	// AcksPerMsg is every layer's acknowledgements (the counters their
	// registrations give compose.AckRole: mflow's credit acks, reliable's
	// point-to-point acks, ...) summed, per message sent; AcksPerMsgBy
	// splits it by layer.
	AcksPerMsg   float64            `json:"acks_per_msg"`
	AcksPerMsgBy map[string]float64 `json:"acks_per_msg_by,omitempty"`
}

// NetReport is what the stacks' bottom edges counted, summed over nodes.
type NetReport struct {
	PacketsSent        int64 `json:"packets_sent"`
	BytesSent          int64 `json:"bytes_sent"`
	ControlPacketsSent int64 `json:"control_packets_sent"`
	ControlBytesSent   int64 `json:"control_bytes_sent"`
	PacketsReceived    int64 `json:"packets_received"`
	Malformed          int64 `json:"malformed"`
}

// NodeCounters are one node's counters at the end of a run, for
// summarizers.
type NodeCounters struct {
	Node   event.NodeID
	Alive  bool
	Layers []stack.LayerCounters
	Net    stack.NetStats
}

// Counter returns the value of a layer's counter on this node (0 if absent).
func (nc *NodeCounters) Counter(layer, name string) int64 {
	for _, l := range nc.Layers {
		if l.Layer != layer {
			continue
		}
		for i, n := range l.Names {
			if n == name {
				return l.Values[i]
			}
		}
	}
	return 0
}

// summarizeLayers asks every layer of the run whose registration has a
// Summarize for its ratios and notes (compose.LayerInfo.Summarize), with its
// counters summed and per node; the report shows what the layer says
// without knowing its counters.
func summarizeLayers(rep *Report, nodes []NodeCounters, messages int64) {
	for _, name := range slices.Sorted(maps.Keys(rep.Layers)) {
		info, ok := compose.Lookup(name)
		if !ok || info.Summarize == nil {
			continue
		}
		c := compose.Counters{Total: rep.Layers[name], Messages: messages}
		for _, nc := range nodes {
			for _, l := range nc.Layers {
				if l.Layer != name {
					continue
				}
				vals := make(map[string]int64, len(l.Names))
				for i, n := range l.Names {
					vals[n] = l.Values[i]
				}
				c.Nodes = append(c.Nodes, compose.NodeCounters{Node: nc.Node, Alive: nc.Alive, Values: vals})
			}
		}
		s := info.Summarize(c)
		for _, k := range slices.Sorted(maps.Keys(s.Ratios)) {
			rep.SetLayerRatio(name, k, s.Ratios[k])
		}
		for _, k := range slices.Sorted(maps.Keys(s.Breakdowns)) {
			if rep.LayerBreakdowns == nil {
				rep.LayerBreakdowns = map[string]map[string]map[string]int64{}
			}
			if rep.LayerBreakdowns[name] == nil {
				rep.LayerBreakdowns[name] = map[string]map[string]int64{}
			}
			rep.LayerBreakdowns[name][k] = s.Breakdowns[k]
		}
		for _, n := range s.Notes {
			rep.Notes = append(rep.Notes, name+": "+n)
		}
		if s.Extra != nil {
			if rep.Extra == nil {
				rep.Extra = map[string]any{}
			}
			rep.Extra[name] = s.Extra
		}
	}
}

// Summarizer inspects a finished run's per-node counters and adds notes or
// Extra fields to the report. It must be deterministic (no wall clock, no
// map-order dependence).
type Summarizer func(rep *Report, nodes []NodeCounters)

// Summarizers run, in order, at the end of every run, after the layers'
// own summaries (compose.LayerInfo.Summarize): a layer explains its counters
// in its registration, not here.
var Summarizers []Summarizer

// Mask returns a copy of the report with its wall-clock fields zeroed, so
// two runs with the same seed compare equal.
func (r *Report) Mask() *Report {
	c := *r
	c.WallSeconds = 0
	return &c
}

// SetLayerRatio records a non-summable per-layer figure (see LayerRatios).
func (r *Report) SetLayerRatio(layer, name string, v float64) {
	if r.LayerRatios == nil {
		r.LayerRatios = map[string]map[string]float64{}
	}
	m := r.LayerRatios[layer]
	if m == nil {
		m = map[string]float64{}
		r.LayerRatios[layer] = m
	}
	m[name] = v
}

// mergeLayers adds every layer's figures of one kind to the layers' JSON
// objects.
func mergeLayers[V any](into map[string]map[string]any, from map[string]map[string]V) {
	for l, m := range from {
		o := into[l]
		if o == nil {
			o = make(map[string]any, len(m))
			into[l] = o
		}
		for k, v := range m {
			o[k] = v
		}
	}
}

// MarshalJSON writes the report with LayerRatios merged into "layers", so
// that e.g. layers.mflow.acks_per_msg sits beside layers.mflow.acks_sent.
func (r *Report) MarshalJSON() ([]byte, error) {
	type plain Report // no methods: avoids recursion
	if len(r.LayerRatios) == 0 && len(r.LayerBreakdowns) == 0 {
		return json.Marshal((*plain)(r))
	}
	merged := make(map[string]map[string]any, len(r.Layers))
	mergeLayers(merged, r.Layers)
	mergeLayers(merged, r.LayerRatios)
	mergeLayers(merged, r.LayerBreakdowns)
	return json.Marshal(&struct {
		*plain
		Layers map[string]map[string]any `json:"layers"`
	}{(*plain)(r), merged})
}
