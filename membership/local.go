package membership

import (
	"cmp"
	"slices"
	"strings"

	"github.com/layercast/layercast/event"
)

// LocalRegions computes Ricochet's regions as seen from one node (Ricochet
// section 4.1): the node's groups (sorted) split the union of their members
// into disjoint regions, one per non-empty subset S of the groups, holding
// the nodes that are in every group of S and in no other group of the list.
// A node in groups A, B and C gets up to seven regions: abc, ab, ac, bc, a, b,
// c. Members are sorted and include self where it belongs (always in the
// region of all its groups); Ricochet's repair-target counts leave self out,
// which the caller does by subtracting one from that region's size.
//
// The order is fixed: regions of more groups first, then by the position of
// their groups in groups (abc, ab, ac, bc, a, b, c). A group missing from views
// counts as empty. The cost is the sum of the groups' sizes times a small
// constant, independent of how many other groups exist.
func LocalRegions(groups []event.GroupID, views map[event.GroupID]*event.ViewInfo) []event.LocalRegion {
	return localRegions(groups, func(g event.GroupID) *event.ViewInfo { return views[g] })
}

func localRegions(groups []event.GroupID, view func(event.GroupID) *event.ViewInfo) []event.LocalRegion {
	if len(groups) == 0 {
		return nil
	}
	// For each node in any of the groups, the positions (ascending) of the
	// groups it is in.
	in := map[event.NodeID][]int32{}
	for i, g := range groups {
		v := view(g)
		if v == nil {
			continue
		}
		for _, m := range v.Members {
			in[m] = append(in[m], int32(i))
		}
	}
	type bucket struct {
		pos     []int32
		members []event.NodeID
	}
	byKey := map[string]*bucket{}
	var buckets []*bucket
	var key strings.Builder
	for m, pos := range in {
		key.Reset()
		for _, p := range pos {
			key.WriteByte(byte(p))
			key.WriteByte(byte(p >> 8))
			key.WriteByte(byte(p >> 16))
		}
		b := byKey[key.String()]
		if b == nil {
			b = &bucket{pos: pos}
			byKey[key.String()] = b
			buckets = append(buckets, b)
		}
		b.members = append(b.members, m)
	}
	slices.SortFunc(buckets, func(a, b *bucket) int {
		if len(a.pos) != len(b.pos) {
			return len(b.pos) - len(a.pos)
		}
		return slices.Compare(a.pos, b.pos)
	})
	out := make([]event.LocalRegion, len(buckets))
	for i, b := range buckets {
		gs := make([]event.GroupID, len(b.pos))
		for j, p := range b.pos {
			gs[j] = groups[p]
		}
		slices.Sort(b.members)
		out[i] = event.LocalRegion{Groups: gs, Members: b.members}
	}
	return out
}

// Assemble builds a node's Neighbourhood from the group views and QSM region
// views it holds: its groups are those whose view lists self; Local is
// LocalRegions over them; Regions are the given region views that overlap
// one of its groups, sorted by region id, and Own points at the one that
// lists self (-1 if none). views and regions are not kept; the views
// themselves (immutable) are shared.
func Assemble(self event.NodeID, views map[event.GroupID]*event.ViewInfo, regions map[event.RegionID]*event.RegionView) *event.Neighbourhood {
	nb := &event.Neighbourhood{Self: self, Views: map[event.GroupID]*event.ViewInfo{}, Own: -1}
	for g, v := range views {
		if v != nil && v.Has(self) {
			nb.Groups = append(nb.Groups, g)
			nb.Views[g] = v
		}
	}
	slices.Sort(nb.Groups)
	nb.Local = LocalRegions(nb.Groups, nb.Views)
	for _, r := range regions {
		if overlaps(r.Groups, nb.Groups) {
			nb.Regions = append(nb.Regions, *r)
		}
	}
	slices.SortFunc(nb.Regions, func(a, b event.RegionView) int { return cmp.Compare(a.Region, b.Region) })
	for i := range nb.Regions {
		if _, ok := slices.BinarySearch(nb.Regions[i].Members, self); ok {
			nb.Own = i
			break
		}
	}
	return nb
}

// overlaps reports whether two sorted group lists share a group.
func overlaps(a, b []event.GroupID) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			return true
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return false
}
