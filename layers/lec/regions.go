package lec

import (
	"slices"

	"github.com/layercast/layercast/event"
)

// target is one region a repair bin draws destinations from, with the
// average number of destinations per repair (Figure 7's edge labels).
type target struct {
	region int
	avg    float64
}

// binPlan is a repair bin as Algorithm 1 sets it up: the set of groups whose
// data it collects and the regions it sends its repairs to.
type binPlan struct {
	groups  []event.GroupID
	targets []target
}

// eps absorbs float rounding when Algorithm 1 compares remainders.
const eps = 1e-9

// planBins is Algorithm 1 of the paper (section 4.1.2). regions[i] are the
// group sets of the node's regions and sizes[i] their sizes without the node
// itself; c gives each group's c of its rate-of-fire (r, c). For each populated region
// Ri, most groups first, and its group set Rt = Ri: the bin of Rt selects
// cmin = min over G in Rt of c_G^Ri targets from Ri, the groups whose
// remainder is cmin leave Rt, the others keep c_G^Ri - cmin, and the next
// (smaller) Rt compensates. c_G^Ri = c_G * |Ri| / |G|: proportional to the
// region's share of the group, so the targets over all regions of G sum to
// c (stratified sampling).
func planBins(regions [][]event.GroupID, sizes []int, c func(event.GroupID) float64) []*binPlan {
	gsize := map[event.GroupID]int{}
	for i, gs := range regions {
		for _, g := range gs {
			gsize[g] += sizes[i]
		}
	}
	order := make([]int, 0, len(regions))
	for i := range regions {
		if sizes[i] > 0 && len(regions[i]) > 0 {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(regions[b]) - len(regions[a]) })

	byKey := map[string]*binPlan{}
	var plans []*binPlan
	rem := map[event.GroupID]float64{}
	for _, ri := range order {
		clear(rem)
		rt := slices.Clone(regions[ri])
		for _, g := range rt {
			rem[g] = c(g) * float64(sizes[ri]) / float64(gsize[g])
		}
		for len(rt) > 0 {
			cmin := rem[rt[0]]
			for _, g := range rt[1:] {
				cmin = min(cmin, rem[g])
			}
			if cmin > eps {
				k := groupsKey(rt)
				p := byKey[k]
				if p == nil {
					p = &binPlan{groups: slices.Clone(rt)}
					byKey[k] = p
					plans = append(plans, p)
				}
				p.targets = append(p.targets, target{region: ri, avg: cmin})
			}
			next := rt[:0]
			for _, g := range rt {
				if rem[g]-cmin > eps {
					rem[g] -= cmin
					next = append(next, g)
				}
			}
			rt = next
		}
	}
	return plans
}

// groupsKey is a map key for a sorted group set.
func groupsKey(gs []event.GroupID) string {
	b := make([]byte, 0, 4*len(gs))
	for _, g := range gs {
		b = append(b, byte(g), byte(g>>8), byte(g>>16), byte(g>>24))
	}
	return string(b)
}
