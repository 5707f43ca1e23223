package reproduce

import (
	"fmt"
	"math"
	"strings"

	"github.com/layercast/layercast/compose"
)

// get reads a field of a run (missing reads as zero).
func (r Run) get(f Field) float64 {
	v, _ := f.Eval(r.Report)
	return v
}

// lecR is the r (data packets per repair) of the run's lec layer.
func (r Run) lecR() float64 {
	sp, err := compose.Parse(r.Report.Spec)
	if err != nil {
		return 8
	}
	for _, l := range sp.Layers {
		if l.Name != "lec" {
			continue
		}
		for _, a := range l.Args {
			if a.Key == "r" {
				var v float64
				if _, err := fmt.Sscan(a.Value, &v); err == nil {
					return v
				}
			}
		}
	}
	return 8 // lec's default
}

// whyLoss25 sets what LEC recovers against what repairs usable on arrival
// would recover, from the run's own counters: a repair holds r packets, so
// it is usable on arrival only when the r-1 others all arrived.
func whyLoss25(runs []Run) string {
	var parts []string
	for _, r := range runs {
		dropped, in := r.get("loss.dropped"), r.get("layers.lec.data_in")
		loss := dropped / math.Max(in+dropped, 1)
		k := r.get("layers.lec.repairs_received") * r.lecR() / math.Max(in+dropped, 1)
		usable := math.Pow(1-loss, r.lecR()-1)
		firstTry := 1 - math.Pow(1-usable, k)
		lec := r.get("loss.recovered_by.lec?")
		parts = append(parts, fmt.Sprintf(
			"each packet reached each receiver in %.1f repairs on average, and a repair is usable on arrival only when its %.0f other packets all arrived ((1-%.0f%%)^%.0f = %.0f%%), so repairs used on arrival would recover about %.0f%% of drops, near the paper's 40%%; LEC recovered %.0f%%, the rest from the %.0f repairs it kept while two or more of their packets were missing (unusable_buffered) and used once the others came back (by NAK %.0f, by LEC %.0f: recovered_xor2)",
			k, r.lecR()-1, 100*loss, r.lecR()-1, 100*usable, 100*firstTry, 100*lec/math.Max(dropped, 1),
			r.get("layers.lec.unusable_buffered"), r.get("loss.recovered_by.nak?"), r.get("layers.lec.recovered_xor2?")))
	}
	return strings.Join(parts, "; ")
}

// scenarioNum reads a numeric key of the run's scenario ("nodes").
func (r Run) scenarioNum(key string) float64 {
	for _, kv := range strings.Fields(r.Report.Scenario) {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			var f float64
			if _, err := fmt.Sscan(v, &f); err == nil {
				return f
			}
		}
	}
	return 0
}

// whyGroupsLatency lists, per point, recovery and discovery latency: the
// first follows the second.
func whyGroupsLatency(runs []Run) string {
	var parts []string
	for _, r := range runs {
		parts = append(parts, fmt.Sprintf("%s: recovery %.1f ms after discovery %.1f ms",
			r.Point, r.get("loss.recovery_latency_ms.mean"), r.get("loss.discovery_latency_ms.mean")))
	}
	return "recovery latency follows the time to discover a loss, and here discovery does not grow with the groups per node (" + strings.Join(parts, "; ") +
		"); each node receives the same rate at every d, and these runs do not show the slower per-region repair traffic that makes Figure 15 rise"
}

// whyBurstLatency splits recovery by mechanism: what NAK recovered took at
// least its nak_delay; and a burst lasts 100 packets of a receiver's rate.
func whyBurstLatency(runs []Run) string {
	var parts []string
	for _, r := range runs {
		lec, nak := r.get("loss.recovered_by.lec?"), r.get("loss.recovered_by.nak?")
		all := math.Max(r.get("loss.recovered"), 1)
		perNode := r.get("offered_msgs_per_s") * (r.scenarioNum("group-size") - 1) / math.Max(r.scenarioNum("nodes"), 1)
		parts = append(parts, fmt.Sprintf(
			"%s: LEC brought back %.0f%% and NAK %.0f%% of the recovered packets; NAK asks only after nak_delay (100 ms), so its share alone adds at least %.0f ms to the mean of %.0f ms; a burst of 100 packets at the %.0f packets a second a node receives spans %.0f ms",
			r.Point, 100*lec/all, 100*nak/all, nak/all*100, r.get("loss.recovery_latency_ms.mean"), perNode, 100/math.Max(perNode, 1e-9)*1000))
	}
	return strings.Join(parts, "; ")
}

// whyLEC accounts for the drops LEC did not rebuild, from its counters.
func whyLEC(runs []Run) string {
	var parts []string
	for _, r := range runs {
		dropped := math.Max(r.get("loss.dropped"), 1)
		parts = append(parts, fmt.Sprintf(
			"%s: of %.0f drops LEC rebuilt %.0f%% and NAK %.0f%%; LEC kept %.0f repairs while two or more of their packets were missing and dropped %.0f of them unused (unusable_evicted), %.0f repairs came after their packets left the window (repairs_stale), and %.0f remembered losses were dropped by the bounds (lost_evicted)",
			r.Point, dropped, 100*r.get("loss.recovered_by.lec?")/dropped, 100*r.get("loss.recovered_by.nak?")/dropped,
			r.get("layers.lec.unusable_buffered"), r.get("layers.lec.unusable_evicted"), r.get("layers.lec.repairs_stale"), r.get("layers.lec.lost_evicted")))
	}
	return strings.Join(parts, "; ")
}
