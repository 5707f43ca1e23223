package experiment

import (
	"fmt"

	"github.com/layercast/layercast/compose"
)

func init() { Summarizers = append(Summarizers, bufferPeaks) }

// bufferPeaks records in the report, per layer, the largest buffer peak
// (the counter its registration gives compose.BufferPeakRole) of any node.
func bufferPeaks(rep *Report, nodes []NodeCounters) {
	roles := counterRoles{}
	for _, nc := range nodes {
		for _, l := range nc.Layers {
			for i, name := range l.Names {
				if roles.of(l.Layer, name) != compose.BufferPeakRole {
					continue
				}
				if rep.BufferPeaks == nil {
					rep.BufferPeaks = map[string]int64{}
				}
				rep.BufferPeaks[l.Layer] = max(rep.BufferPeaks[l.Layer], l.Values[i])
			}
		}
	}
}

// BufferUse is one layer's peak buffer in a run against the bound its
// parameters set for the scenario's load (compose.LayerInfo.BufferBound).
type BufferUse struct {
	Layer string `json:"layer"`
	// Peak is the most bytes the layer held at once at any one node.
	Peak int64 `json:"peak_bytes"`
	// Bound is the most it may hold on a node, and Words how that is made up.
	Bound int64  `json:"bound_bytes"`
	Words string `json:"bound"`
}

// Over reports whether the peak passed the bound.
func (u BufferUse) Over() bool { return u.Peak > u.Bound }

// String reads "reliable 1.2 MB of 4.0 MB (max_buffer 4MB x 1 groups)".
func (u BufferUse) String() string {
	return fmt.Sprintf("%s %s of %s (%s)", u.Layer, kbText(u.Peak), kbText(u.Bound), u.Words)
}

func kbText(b int64) string {
	if b >= 10<<20 {
		return fmt.Sprintf("%.1f MB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%.1f KB", float64(b)/1024)
}

// appQueue is the stacks' application queue in simulated runs: the
// default of stack.Config.AppQueue, which they leave unset.
const appQueue = 256

// LoadOf is what each node of a scenario carries: every node is in
// GroupsPerNode groups of GroupSize members (Assign) and casts MsgSize
// bytes.
func LoadOf(sc Scenario) compose.NodeLoad {
	return compose.NodeLoad{Groups: sc.GroupsPerNode, Members: sc.GroupSize, MaxMessage: sc.MsgSize, AppQueue: appQueue}
}

// BufferBounds compares, for every layer of sp whose registration bounds
// its buffer, the run's peak (Report.BufferPeaks) with that bound under
// sc's load. Layers without a bound are not listed.
func BufferBounds(rep *Report, sp *compose.Spec, sc Scenario) ([]BufferUse, error) {
	ls, err := compose.Explain(sp)
	if err != nil {
		return nil, err
	}
	var out []BufferUse
	for _, l := range ls {
		if l.Info.BufferBound == nil {
			continue
		}
		b, words := l.Info.BufferBound(l.Params, LoadOf(sc))
		out = append(out, BufferUse{Layer: l.Info.Name, Peak: rep.BufferPeaks[l.Info.Name], Bound: b, Words: words})
	}
	return out, nil
}
