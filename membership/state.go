package membership

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/layercast/layercast/event"
)

// ServiceState is what a membership service must keep so that another
// instance can take over from it (issue 15 item 2): the committed group,
// region and site views with their numbers, the view numbers of groups
// that emptied, and per node what it asked for. A new leader that starts
// from it installs no view numbered at or below one already sent, and
// holds every node's wishes, so no node is removed or told to join again.
type ServiceState struct {
	Index IndexState
	// Nodes are the nodes that made requests, sorted by id.
	Nodes []NodeState
	// Sites are the committed site views; SiteIDs the last view number
	// of every site that ever had one.
	Sites   []event.SiteView
	SiteIDs []SiteViewID
	// Term counts the leaders that restored a state: each one that takes
	// over saves one more, and numbers its updates in its own range.
	Term uint64
}

// NodeState is what a service holds of one node.
type NodeState struct {
	ID      event.NodeID
	Inc     uint64 // the node's incarnation
	Site    event.SiteID
	LastReq uint64          // highest request applied (and acknowledged)
	Refused []event.GroupID // joins of request LastReq refused
	// Groups are the groups the node is in now (sorted), committed or
	// not: a pending join or leave is installed by the next leader.
	Groups []event.GroupID
	// Timeout, Suspect and Interval are the failure-detector timings
	// its heartbeats declared, in nanoseconds.
	Timeout, Suspect, Interval int64
}

// SiteViewID is the last view number of a site.
type SiteViewID struct {
	Site event.SiteID
	ID   uint64
}

// GroupViewID is the last view number of a group.
type GroupViewID struct {
	Group event.GroupID
	ID    uint64
}

// GroupNodes lists nodes of one group.
type GroupNodes struct {
	Group event.GroupID
	Nodes []event.NodeID
}

// IndexState is the committed part of an Index (Index.State, RestoreIndex).
type IndexState struct {
	// Views are the committed views of the groups that have one, sorted
	// by group.
	Views []*event.ViewInfo
	// LastIDs are the last view numbers of groups without a committed
	// view (emptied, or formed again and not yet committed).
	LastIDs []GroupViewID
	// Churn are the committed members taken out of a group since the
	// last Commit (a removal that the next view must show, even if the
	// node is back in by then).
	Churn []GroupNodes
	// Regions are the committed region views; NextRegion the last
	// region id handed out.
	Regions    []*event.RegionView
	NextRegion event.RegionID
}

// Store keeps a membership service's state where the next leader finds it.
// A service calls Save before it sends anything that depends on the state
// (an acknowledgement of a request, a view); an error means the state may
// not be kept (the store is unreachable, or this instance is no longer the
// leader), and the service stops.
type Store interface {
	Save(st *ServiceState) error
}

// Durable is implemented by a membership service (layers/gms's service
// layer) that can keep its state in a Store and start from a saved state
// (nil: from nothing). It is called before the service starts.
type Durable interface {
	UseStore(st Store, from *ServiceState)
}

// State returns the committed part of the index and the removals pending
// since the last Commit; the slices it returns are its own, but the views
// are shared (views are never modified once committed).
func (x *Index) State() IndexState {
	var st IndexState
	for _, gr := range x.groups {
		switch {
		case gr.view != nil:
			st.Views = append(st.Views, gr.view)
		case gr.lastID > 0:
			st.LastIDs = append(st.LastIDs, GroupViewID{gr.id, gr.lastID})
		}
		if len(gr.churn) > 0 {
			st.Churn = append(st.Churn, GroupNodes{gr.id, slices.Clone(gr.churn)})
		}
	}
	for g, id := range x.lastIDs {
		st.LastIDs = append(st.LastIDs, GroupViewID{g, id})
	}
	for _, r := range x.regions {
		if r.view != nil {
			st.Regions = append(st.Regions, r.view)
		}
	}
	// Emptied regions whose last view is not yet committed away are gone
	// from x.regions but were committed: the next Commit reports them
	// Removed, and a restored index that lacks them sends nothing for
	// them; the nodes drop them at their next full region list.
	st.NextRegion = x.next
	slices.SortFunc(st.Views, func(a, b *event.ViewInfo) int { return cmp.Compare(a.Group, b.Group) })
	slices.SortFunc(st.LastIDs, func(a, b GroupViewID) int { return cmp.Compare(a.Group, b.Group) })
	slices.SortFunc(st.Churn, func(a, b GroupNodes) int { return cmp.Compare(a.Group, b.Group) })
	slices.SortFunc(st.Regions, func(a, b *event.RegionView) int { return cmp.Compare(a.Region, b.Region) })
	return st
}

// RestoreIndex rebuilds an index from State: the committed views are the
// committed state again, region ids and view numbers go on where they
// stopped, and the churn is pending again. Regions are derived from the
// group views (a saved region whose group set no node has is dropped; one
// whose members differ gets a new view at the next Commit). A state that
// contradicts itself (unsorted or repeated members, a group or region
// twice) is an error.
func RestoreIndex(st *IndexState) (*Index, error) {
	x := NewIndex()
	for _, v := range st.Views {
		if v == nil || v.ID == 0 || len(v.Members) == 0 {
			return nil, fmt.Errorf("membership: state holds an empty or unnumbered view")
		}
		if !strictlySorted(v.Members) || slices.Contains(v.Members, event.NoNode) {
			return nil, fmt.Errorf("membership: state's view %v#%d has unsorted, repeated or zero members", v.Group, v.ID)
		}
		if x.groups[v.Group] != nil {
			return nil, fmt.Errorf("membership: state holds group %v twice", v.Group)
		}
		x.groups[v.Group] = &group{id: v.Group, members: slices.Clone(v.Members), view: v, lastID: v.ID, regions: map[event.RegionID]*region{}}
	}
	for _, l := range st.LastIDs {
		if gr := x.groups[l.Group]; gr != nil {
			gr.lastID = max(gr.lastID, l.ID)
			continue
		}
		if x.lastIDs == nil {
			x.lastIDs = map[event.GroupID]uint64{}
		}
		x.lastIDs[l.Group] = max(x.lastIDs[l.Group], l.ID)
	}
	// Nodes' group sets, from the views in group order (so sorted).
	for _, v := range st.Views {
		for _, n := range v.Members {
			nd := x.nodes[n]
			if nd == nil {
				nd = &node{id: n}
				x.nodes[n] = nd
			}
			nd.groups = append(nd.groups, v.Group)
		}
	}
	saved := map[string]*event.RegionView{}
	ids := map[event.RegionID]bool{}
	x.next = st.NextRegion
	for _, r := range st.Regions {
		if r == nil || r.Region == 0 || ids[r.Region] || !strictlySorted(r.Groups) {
			return nil, fmt.Errorf("membership: state holds a region view that is nil, unnumbered, repeated or with unsorted groups")
		}
		ids[r.Region] = true
		saved[string(regionKey(nil, r.Groups))] = r
		x.next = max(x.next, r.Region)
	}
	for _, n := range slices.Sorted(maps.Keys(x.nodes)) {
		nd := x.nodes[n]
		x.key = regionKey(x.key[:0], nd.groups)
		r := x.regions[string(x.key)]
		if r == nil {
			r = &region{key: string(x.key), groups: slices.Clone(nd.groups)}
			if sv := saved[r.key]; sv != nil {
				r.id, r.view = sv.Region, sv
			} else {
				x.next++
				r.id = x.next
			}
			x.regions[r.key] = r
			for _, g := range r.groups {
				x.groups[g].regions[r.id] = r
			}
		}
		r.members = append(r.members, n) // in id order: sorted
		nd.region = r
	}
	for _, r := range x.regions {
		if r.view == nil || !slices.Equal(r.view.Members, r.members) {
			x.touchRegion(r)
		}
	}
	for _, c := range st.Churn {
		gr := x.groups[c.Group]
		if gr == nil {
			continue
		}
		for _, n := range c.Nodes {
			x.Leave(n, c.Group)
		}
	}
	return x, nil
}

// Nodes returns the nodes in some group now (pending state), sorted.
func (x *Index) Nodes() []event.NodeID {
	out := make([]event.NodeID, 0, len(x.nodes))
	for n, nd := range x.nodes {
		if len(nd.groups) > 0 {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func regionKey(b []byte, gs []event.GroupID) []byte {
	for _, g := range gs {
		b = binary.BigEndian.AppendUint32(b, uint32(g))
	}
	return b
}

func strictlySorted[T cmp.Ordered](s []T) bool {
	for i := 1; i < len(s); i++ {
		if s[i-1] >= s[i] {
			return false
		}
	}
	return true
}
