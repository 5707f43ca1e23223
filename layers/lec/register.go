package lec

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/units"
	"github.com/layercast/layercast/stack"
)

func init() {
	compose.Register(compose.LayerInfo{
		Name: "lec",
		Summary: "Ricochet's Lateral Error Correction: most lost multicast packets come back within tens of " +
			"milliseconds, whatever the number of groups per node. Receivers XOR every r data packets of the groups " +
			"a region shares into repair bins and send each repair to random members of that region (Algorithm 1), " +
			"so on average c repairs per received packet reach its group; a receiver missing one packet of a repair " +
			"rebuilds it. Losses it cannot fix are left to a NAK layer above. Only members of the node's views get state " +
			"(their data is held, their repairs read); everything it keeps is bounded by count and bytes.",
		Params: []compose.Param{
			{Name: "r", Type: compose.Int, Default: "8", Doc: "data packets XORed into one repair", Min: 1, Max: 255},
			{Name: "c", Type: compose.Float, Default: "5", Doc: "repairs per received packet sent to its group, on average", Min: 0, Max: 1000},
			{Name: "stagger", Type: compose.Int, Default: "1", Doc: "instances of each repair bin, filled round robin (burst tolerance)", Min: 1, Max: 64},
			{Name: "window", Type: compose.Duration, Default: "2s", Doc: "how long received data, unusable repairs and discovered losses are kept", Min: 0.001, Max: 3600},
			{Name: "max_held", Type: compose.Int, Default: "16384", Doc: "most data packets kept for XORing repairs, most discovered losses remembered, and most rebuilt packets remembered until their copy comes from below", Min: 16, Max: 1 << 24},
			{Name: "max_unusable", Type: compose.Int, Default: "2048", Doc: "most repairs kept while two or more of their packets are missing", Min: 0, Max: 1 << 24},
			{Name: "max_unusable_bytes", Type: compose.Size, Default: "8MiB", Doc: "most bytes of those repairs kept (the oldest go first)", Min: 1, Max: 1 << 40},
			{Name: "max_held_bytes", Type: compose.Size, Default: "64MiB", Doc: "most bytes of data packets kept for XORing repairs, each counted with its buffer (at least 1.5 KB and headers; the oldest go first)", Min: 1, Max: 1 << 40},
			{Name: "c_group", Type: compose.String, Default: "", Doc: "a c of their own for some groups (Algorithm 1 takes a c per group): GROUP=C pairs, e.g. \"g3=8 g7=2\" (g optional)"},
			{Name: "flush", Type: compose.Duration, Default: "0s", Doc: "send the repair of a bin partly filled for this long, so the last packets before a pause (the end of a run) are covered; 0: bins wait for r packets", Min: 0, Max: 3600},
			{Name: "check_every", Type: compose.Duration, Default: "0s", Doc: "0: a repair that waited is rechecked as soon as a packet it lacks arrives or is rebuilt, recursively; " +
				"else the list of unusable repairs is checked this often, one step of rebuilding per check (the paper's behaviour, section 4.2.8)", Min: 0, Max: 60},
			{Name: "max_streams", Type: compose.Int, Default: "65536", Doc: "most (group, sender) receive windows of other senders; only members of the node's views get one, dropped when they leave", Min: 1, Max: 1 << 24},
		},
		Gives:     []compose.Property{compose.ProbabilisticRecovery},
		Hides:     map[compose.Property]string{compose.Sequenced: "a message lec rebuilds from a repair carries no number from the layer that numbered it (put the sequencing layer above lec, as in fifo : reliable : lec)"},
		Counters:  compose.CountersOf(counters{}),
		Summarize: summarize,
		New: func(p compose.Params) (stack.Layer, error) {
			cg, err := parseCGroup(p.String("c_group"))
			if err != nil {
				return nil, err
			}
			return New(Config{
				R: p.Int("r"), C: p.Float("c"), Stagger: p.Int("stagger"), Window: p.Duration("window"),
				MaxHeld: p.Int("max_held"), MaxUnusable: p.Int("max_unusable"),
				MaxUnusableBytes: int64(p.Int("max_unusable_bytes")), MaxHeldBytes: int64(p.Int("max_held_bytes")),
				MaxStreams: p.Int("max_streams"), CheckEvery: p.Duration("check_every"),
				Flush: p.Duration("flush"), CGroup: cg,
			}), nil
		},
	})
}

// parseCGroup reads c_group: GROUP=C pairs separated by spaces or commas,
// GROUP a group id with or without its g.
func parseCGroup(s string) (map[event.GroupID]float64, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' })
	if len(fields) == 0 {
		return nil, nil
	}
	out := make(map[event.GroupID]float64, len(fields))
	for _, f := range fields {
		gs, cs, ok := strings.Cut(f, "=")
		g, gerr := strconv.ParseUint(strings.TrimPrefix(gs, "g"), 10, 32)
		c, cerr := strconv.ParseFloat(cs, 64)
		switch {
		case !ok || gerr != nil || g == 0:
			return nil, fmt.Errorf("lec: c_group: %q is not GROUP=C (e.g. g3=8)", f)
		case cerr != nil || c < 0 || c > 1000 || c != c:
			return nil, fmt.Errorf("lec: c_group: %q: c must be a number from 0 to 1000", f)
		}
		if _, dup := out[event.GroupID(g)]; dup {
			return nil, fmt.Errorf("lec: c_group: group g%d given twice", g)
		}
		out[event.GroupID(g)] = c
	}
	return out, nil
}

// summarize says which unusable-repair mode ran, and what c could not get.
func summarize(c compose.Counters) compose.Summary {
	t := c.Total
	var out compose.Summary
	if n := t["unusable_checks"]; n > 0 {
		out.Notef("unusable repairs checked intermittently (the paper's mode, check_every): %d checks", n)
	} else if t["unusable_buffered"] > 0 {
		out.Notef("unusable repairs rechecked at once, recursively, as the packets they lack come (check_every=0)")
	}
	if n := t["targets_capped"]; n > 0 {
		out.Notef("c asked for %d repair destinations beyond the size of their region (groups smaller than c+1): fewer repairs than c were sent", n)
	}
	if h, f := t["loss_hints"], t["found_above"]; f > 0 {
		out.Notef("%d losses told to the NAK layer as repairs showed them; %d of its retransmissions kept to decode with", h, f)
	}
	if n := t["no_neighbourhood"]; n > 0 {
		out.Notef("%d data packets sent before lec had a neighbourhood: no repairs cover them (gms hands one down with the views; with static membership install it: Stack.InstallNeighbourhood, which cluster does)", n)
	}
	if n := t["bins_flushed"]; n > 0 {
		out.Notef("%d repairs sent from partly filled bins (flush)", n)
	}
	if d := t["data_in"]; d > 0 {
		out.Ratio("xors_per_data", units.Round6(float64(t["xors"])/float64(d)))
		out.Ratio("bins_per_data", units.Round6(float64(t["bin_adds"])/float64(d)))
	}
	return out
}

// counters are the layer's counters: each is named and documented once by
// its tags (compose.CountersOf) and Init binds them (stack.Context.BindCounters).
type counters struct {
	DataIn           *stack.Counter `counter:"data_in" doc:"data packets received"`
	DataSent         *stack.Counter `counter:"data_sent" doc:"data packets sent"`
	NoNeighbourhood  *stack.Counter `counter:"no_neighbourhood" doc:"data packets sent before any neighbourhood (Regions event) arrived: lec had no regions to repair them in"`
	RepairsSent      *stack.Counter `counter:"repairs_sent" doc:"repair packets sent"`
	RepairsBuilt     *stack.Counter `counter:"repairs_built" doc:"repair bins filled"`
	RepairsReceived  *stack.Counter `counter:"repairs_received" doc:"repair packets received"`
	Xors             *stack.Counter `counter:"xors" doc:"packets XORed into bins or out of repairs"`
	Recovered        *stack.Counter `counter:"recovered" doc:"lost packets rebuilt from a repair"`
	RecoveredXor2    *stack.Counter `counter:"recovered_xor2" doc:"lost packets rebuilt from a repair that became usable after another recovery"`
	UnusableBuffered *stack.Counter `counter:"unusable_buffered" doc:"repairs kept while two or more of their packets were missing"`
	UnusableEvicted  *stack.Counter `counter:"unusable_evicted" doc:"such repairs dropped by the window or the bounds"`
	LossDiscovered   *stack.Counter `counter:"loss_discovered" doc:"losses found from a repair or a gap"`
	PeakBuffer       *stack.Counter `counter:"peak_buffer_bytes" kind:"peak" role:"buffer_peak" doc:"most bytes of data and repairs held at once"`
	RepairsStale     *stack.Counter `counter:"repairs_stale" doc:"repairs whose packets were all older than the window"`
	RepairsRedundant *stack.Counter `counter:"repairs_redundant" doc:"repairs of packets all already received"`
	RepairsForeign   *stack.Counter `counter:"repairs_foreign" doc:"repairs from outside the node's regions"`
	Duplicates       *stack.Counter `counter:"duplicates" doc:"data packets received twice"`
	Malformed        *stack.Counter `counter:"malformed" doc:"packets whose lec header did not decode"`
	DataUntracked    *stack.Counter `counter:"data_untracked" doc:"data packets from senders without a receive window (outside the views, or max_streams reached)"`
	DataLate         *stack.Counter `counter:"data_late" doc:"data packets the layer below recovered after their number left the receive window (2048 numbers per sender and group), not rebuilt by lec: passed up without LEC state"`
	StreamsPruned    *stack.Counter `counter:"streams_pruned" doc:"receive windows dropped when their sender left"`
	StreamsFull      *stack.Counter `counter:"streams_full" doc:"senders refused a receive window because max_streams was reached"`
	LostEvicted      *stack.Counter `counter:"lost_evicted" doc:"remembered losses dropped by the bounds"`
	LossHints        *stack.Counter `counter:"loss_hints" doc:"losses told to the NAK layer above as soon as a repair showed them and could not rebuild them (section 4.2.7)"`
	BinAdds          *stack.Counter `counter:"bin_adds" doc:"data packets added to repair bins, one per bin (per data packet: the bin updates whose cost grows with the regions a group spans, Figure 11)"`
	BinsFlushed      *stack.Counter `counter:"bins_flushed" doc:"repairs sent from bins partly filled for the flush time"`
	TargetsCapped    *stack.Counter `counter:"targets_capped" doc:"repair destinations c asked of a region beyond its size (a group smaller than c+1), not sent"`
	UnusableChecks   *stack.Counter `counter:"unusable_checks" doc:"intermittent checks of the unusable repairs (check_every > 0: the paper's mode)"`
	Found            *stack.Counter `counter:"found_above" doc:"lost packets the layer above got by other means (NAK retransmissions) and handed back to decode waiting repairs"`
}
