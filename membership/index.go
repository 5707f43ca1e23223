package membership

import (
	"cmp"
	"encoding/binary"
	"slices"

	"github.com/layercast/layercast/event"
)

// Index keeps every group's member list, every node's group list and the QSM
// regions they imply, and turns batches of changes into numbered views.
//
// Join, Leave and Remove change the current (pending) state; Commit installs
// it: every group whose member list changed gets a new ViewInfo, every region
// whose member list changed (or that appeared or emptied) gets a new
// RegionView. The work of a change is proportional to the changed node's
// groups and the regions it leaves and enters, never to the number of groups
// in the system. An Index is not safe for concurrent use.
type Index struct {
	groups  map[event.GroupID]*group
	nodes   map[event.NodeID]*node
	regions map[string]*region // live regions by group-set key
	next    event.RegionID

	dirtyGroups  []*group
	dirtyRegions []*region
	dirtyNodes   []*node
	key          []byte // scratch for region keys

	// lastIDs keeps the last view id of groups that emptied, so that a
	// group formed again under the same id goes on numbering its views
	// where it stopped: layers tell old views from new ones by their ids,
	// and an id that went back would make a new view look stale. Bounded
	// by maxLastIDs; past it the table starts afresh (a group that stays
	// empty that long has no member left to confuse).
	lastIDs map[event.GroupID]uint64
}

// maxLastIDs bounds Index.lastIDs.
const maxLastIDs = 1 << 16

type group struct {
	id      event.GroupID
	members []event.NodeID // pending, sorted
	view    *event.ViewInfo
	lastID  uint64
	regions map[event.RegionID]*region // live regions whose group set holds id
	dirty   bool
	// churn holds the members of the committed view taken out since the
	// last Commit (sorted). Those back in members by the Commit were
	// removed and readmitted in one batch: the new view lists them in both
	// Left and Joined so that no member mistakes them for the same life.
	churn []event.NodeID
}

type node struct {
	id     event.NodeID
	groups []event.GroupID // pending, sorted
	region *region
	dirty  bool
}

type region struct {
	id      event.RegionID
	key     string
	groups  []event.GroupID
	members []event.NodeID // pending, sorted
	view    *event.RegionView
	dirty   bool
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{
		groups:  map[event.GroupID]*group{},
		nodes:   map[event.NodeID]*node{},
		regions: map[string]*region{},
	}
}

// Join adds n to g. It reports whether anything changed.
func (x *Index) Join(n event.NodeID, g event.GroupID) bool {
	return x.JoinMany(n, []event.GroupID{g})
}

// JoinMany adds n to every group in gs and moves it to its new region once.
// Joining d groups one at a time would create (and later drop) d
// intermediate regions, each costing O(d); this costs O(d log d). It reports
// whether anything changed.
func (x *Index) JoinMany(n event.NodeID, gs []event.GroupID) bool {
	nd := x.nodes[n]
	if nd == nil {
		nd = &node{id: n}
		x.nodes[n] = nd
	}
	changed := false
	for _, g := range gs {
		i, found := slices.BinarySearch(nd.groups, g)
		if found {
			continue
		}
		changed = true
		nd.groups = slices.Insert(nd.groups, i, g)
		gr := x.groups[g]
		if gr == nil {
			gr = &group{id: g, regions: map[event.RegionID]*region{}, lastID: x.lastIDs[g]}
			delete(x.lastIDs, g)
			x.groups[g] = gr
		}
		j, _ := slices.BinarySearch(gr.members, n)
		gr.members = slices.Insert(gr.members, j, n)
		x.touchGroup(gr)
	}
	if changed {
		x.move(nd)
	}
	return changed
}

// Leave removes n from g. It reports whether anything changed.
func (x *Index) Leave(n event.NodeID, g event.GroupID) bool {
	nd := x.nodes[n]
	if nd == nil {
		return false
	}
	i, found := slices.BinarySearch(nd.groups, g)
	if !found {
		return false
	}
	nd.groups = slices.Delete(nd.groups, i, i+1)
	x.takeOut(x.groups[g], n)
	x.move(nd)
	return true
}

// LeaveMany removes n from every group in gs and moves it to its new region
// once (as JoinMany). It reports whether anything changed.
func (x *Index) LeaveMany(n event.NodeID, gs []event.GroupID) bool {
	nd := x.nodes[n]
	if nd == nil {
		return false
	}
	changed := false
	for _, g := range gs {
		i, found := slices.BinarySearch(nd.groups, g)
		if !found {
			continue
		}
		changed = true
		nd.groups = slices.Delete(nd.groups, i, i+1)
		x.takeOut(x.groups[g], n)
	}
	if changed {
		x.move(nd)
	}
	return changed
}

// Remove takes n out of every group (a crash, or a node that leaves the
// system) and returns the groups it was in.
func (x *Index) Remove(n event.NodeID) []event.GroupID {
	nd := x.nodes[n]
	if nd == nil || len(nd.groups) == 0 {
		return nil
	}
	was := slices.Clone(nd.groups)
	for _, g := range was {
		x.takeOut(x.groups[g], n)
	}
	nd.groups = nd.groups[:0]
	x.move(nd)
	return was
}

// Groups returns the groups n is in now (pending state; do not modify).
func (x *Index) Groups(n event.NodeID) []event.GroupID {
	if nd := x.nodes[n]; nd != nil {
		return nd.groups
	}
	return nil
}

// Members returns g's members now (pending state; do not modify).
func (x *Index) Members(g event.GroupID) []event.NodeID {
	if gr := x.groups[g]; gr != nil {
		return gr.members
	}
	return nil
}

// View returns g's last committed view, or nil.
func (x *Index) View(g event.GroupID) *event.ViewInfo {
	if gr := x.groups[g]; gr != nil {
		return gr.view
	}
	return nil
}

// NumGroups is the number of groups with members (pending state).
func (x *Index) NumGroups() int { return len(x.groups) }

// NumRegions is the number of live regions (pending state).
func (x *Index) NumRegions() int { return len(x.regions) }

// takeOut removes n from gr's pending members, remembering it in churn if
// the committed view lists it.
func (x *Index) takeOut(gr *group, n event.NodeID) {
	if j, ok := slices.BinarySearch(gr.members, n); ok {
		gr.members = slices.Delete(gr.members, j, j+1)
	}
	if gr.view != nil && gr.view.Has(n) {
		if j, ok := slices.BinarySearch(gr.churn, n); !ok {
			gr.churn = slices.Insert(gr.churn, j, n)
		}
	}
	x.touchGroup(gr)
}

func (x *Index) touchGroup(gr *group) {
	if !gr.dirty {
		gr.dirty = true
		x.dirtyGroups = append(x.dirtyGroups, gr)
	}
}

func (x *Index) touchRegion(r *region) {
	if !r.dirty {
		r.dirty = true
		x.dirtyRegions = append(x.dirtyRegions, r)
	}
}

// move puts nd in the region of its (new) group set.
func (x *Index) move(nd *node) {
	if !nd.dirty {
		nd.dirty = true
		x.dirtyNodes = append(x.dirtyNodes, nd)
	}
	if old := nd.region; old != nil {
		if j, ok := slices.BinarySearch(old.members, nd.id); ok {
			old.members = slices.Delete(old.members, j, j+1)
		}
		x.touchRegion(old) // emptied regions are dropped at Commit
		nd.region = nil
	}
	if len(nd.groups) == 0 {
		return
	}
	x.key = x.key[:0]
	for _, g := range nd.groups {
		x.key = binary.BigEndian.AppendUint32(x.key, uint32(g))
	}
	r := x.regions[string(x.key)]
	if r == nil {
		x.next++
		r = &region{id: x.next, key: string(x.key), groups: slices.Clone(nd.groups)}
		x.regions[r.key] = r
		for _, g := range r.groups {
			x.groups[g].regions[r.id] = r
		}
	}
	j, _ := slices.BinarySearch(r.members, nd.id)
	r.members = slices.Insert(r.members, j, nd.id)
	nd.region = r
	x.touchRegion(r)
}

// Change is what one Commit installed.
type Change struct {
	// Views are the new views of groups whose member list changed, by
	// group. A group that emptied gets a last view with no members.
	Views []*event.ViewInfo
	// Regions are the new views of regions that appeared or changed.
	Regions []*event.RegionView
	// Removed are the last views of regions that emptied and are gone.
	Removed []*event.RegionView
	// Moved are the nodes whose group set changed, sorted.
	Moved []event.NodeID
}

// Empty reports whether the commit changed nothing.
func (c *Change) Empty() bool {
	return len(c.Views) == 0 && len(c.Regions) == 0 && len(c.Removed) == 0 && len(c.Moved) == 0
}

// Commit installs every pending change as new group and region views.
func (x *Index) Commit() *Change {
	c := &Change{}
	for _, gr := range x.dirtyGroups {
		gr.dirty = false
		var old []event.NodeID
		if gr.view != nil {
			old = gr.view.Members
		}
		// Members removed and readmitted within this batch (R2 of the
		// rejoin contract): listed in both Joined and Left.
		var back []event.NodeID
		for _, n := range gr.churn {
			if _, ok := slices.BinarySearch(gr.members, n); ok {
				back = append(back, n)
			}
		}
		gr.churn = gr.churn[:0]
		if len(back) == 0 && slices.Equal(old, gr.members) {
			continue
		}
		joined, left := diff(old, gr.members)
		if len(back) > 0 {
			joined = union(joined, back)
			left = union(left, back)
		}
		gr.lastID++
		v := &event.ViewInfo{Group: gr.id, ID: gr.lastID, Members: slices.Clone(gr.members), Joined: joined, Left: left}
		gr.view = v
		c.Views = append(c.Views, v)
	}
	for _, gr := range x.dirtyGroups {
		if len(gr.members) == 0 {
			delete(x.groups, gr.id)
			if x.lastIDs == nil || len(x.lastIDs) >= maxLastIDs {
				x.lastIDs = map[event.GroupID]uint64{}
			}
			x.lastIDs[gr.id] = gr.lastID
		}
	}
	x.dirtyGroups = x.dirtyGroups[:0]
	for _, r := range x.dirtyRegions {
		r.dirty = false
		if len(r.members) == 0 {
			if x.regions[r.key] == r {
				delete(x.regions, r.key)
				for _, g := range r.groups {
					if gr := x.groups[g]; gr != nil {
						delete(gr.regions, r.id)
					}
				}
			}
			if r.view != nil {
				c.Removed = append(c.Removed, r.view)
			}
			continue
		}
		if r.view != nil && slices.Equal(r.view.Members, r.members) {
			continue
		}
		var id uint64 = 1
		if r.view != nil {
			id = r.view.ID + 1
		}
		r.view = &event.RegionView{Region: r.id, ID: id, Groups: r.groups, Members: slices.Clone(r.members)}
		c.Regions = append(c.Regions, r.view)
	}
	x.dirtyRegions = x.dirtyRegions[:0]
	for _, nd := range x.dirtyNodes {
		nd.dirty = false
		c.Moved = append(c.Moved, nd.id)
		if len(nd.groups) == 0 {
			delete(x.nodes, nd.id)
		}
	}
	x.dirtyNodes = x.dirtyNodes[:0]
	slices.SortFunc(c.Views, func(a, b *event.ViewInfo) int { return cmp.Compare(a.Group, b.Group) })
	slices.SortFunc(c.Regions, func(a, b *event.RegionView) int { return cmp.Compare(a.Region, b.Region) })
	slices.SortFunc(c.Removed, func(a, b *event.RegionView) int { return cmp.Compare(a.Region, b.Region) })
	slices.Sort(c.Moved)
	return c
}

// walk merges two sorted lists, calling onlyA, onlyB or both (each may be
// nil) for every element, in order.
func walk(a, b []event.NodeID, onlyA, onlyB, both func(event.NodeID)) {
	call := func(f func(event.NodeID), n event.NodeID) {
		if f != nil {
			f(n)
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i] < b[j]):
			call(onlyA, a[i])
			i++
		case i == len(a) || b[j] < a[i]:
			call(onlyB, b[j])
			j++
		default:
			call(both, a[i])
			i++
			j++
		}
	}
}

// diff returns the members of b not in a and of a not in b (both sorted).
func diff(a, b []event.NodeID) (added, removed []event.NodeID) {
	walk(a, b, func(n event.NodeID) { removed = append(removed, n) }, func(n event.NodeID) { added = append(added, n) }, nil)
	return added, removed
}

// union merges two sorted lists without duplicates.
func union(a, b []event.NodeID) []event.NodeID {
	out := make([]event.NodeID, 0, len(a)+len(b))
	add := func(n event.NodeID) { out = append(out, n) }
	walk(a, b, add, add, add)
	return out
}

// RegionsOf returns the committed views of the live regions that overlap
// any of n's groups, sorted by region id, and the index of n's own region
// (-1 if n is in no group). Call it after Commit.
func (x *Index) RegionsOf(n event.NodeID) ([]*event.RegionView, int) {
	nd := x.nodes[n]
	if nd == nil {
		return nil, -1
	}
	seen := map[event.RegionID]bool{}
	var out []*event.RegionView
	for _, g := range nd.groups {
		for id, r := range x.groups[g].regions {
			if !seen[id] && r.view != nil {
				seen[id] = true
				out = append(out, r.view)
			}
		}
	}
	slices.SortFunc(out, func(a, b *event.RegionView) int { return cmp.Compare(a.Region, b.Region) })
	own := -1
	if nd.region != nil {
		for i, r := range out {
			if r.Region == nd.region.id {
				own = i
				break
			}
		}
	}
	return out, own
}

// RegionsOfGroup returns the committed views of the regions that make up g,
// sorted by region id: a group view maps onto this set of region views.
func (x *Index) RegionsOfGroup(g event.GroupID) []*event.RegionView {
	gr := x.groups[g]
	if gr == nil {
		return nil
	}
	out := make([]*event.RegionView, 0, len(gr.regions))
	for _, r := range gr.regions {
		if r.view != nil {
			out = append(out, r.view)
		}
	}
	slices.SortFunc(out, func(a, b *event.RegionView) int { return cmp.Compare(a.Region, b.Region) })
	return out
}

// Neighbourhood returns n's derived membership after the last Commit: the
// committed views of its groups, its Ricochet regions and the QSM region
// views overlapping its groups.
func (x *Index) Neighbourhood(n event.NodeID) *event.Neighbourhood {
	nb := &event.Neighbourhood{Self: n, Views: map[event.GroupID]*event.ViewInfo{}, Own: -1}
	nd := x.nodes[n]
	if nd == nil {
		return nb
	}
	for _, g := range nd.groups {
		if v := x.groups[g].view; v != nil {
			nb.Groups = append(nb.Groups, g)
			nb.Views[g] = v
		}
	}
	x.fillRegions(nb)
	return nb
}

// fillRegions completes a neighbourhood whose Groups and Views are set:
// its local regions, and the committed regions overlapping its groups.
func (x *Index) fillRegions(nb *event.Neighbourhood) {
	nb.Local = LocalRegions(nb.Groups, nb.Views)
	rs, own := x.RegionsOf(nb.Self)
	nb.Regions = make([]event.RegionView, len(rs))
	for i, r := range rs {
		nb.Regions[i] = *r
	}
	nb.Own = own
}

// Update is what one node must hear after a Commit: only what concerns it.
type Update struct {
	Node event.NodeID
	// Views are the new views of its groups, including groups it has just
	// left (whose view no longer lists it).
	Views []*event.ViewInfo
	// FullRegions says Regions replaces every region view the node holds
	// (its group set changed); otherwise Regions are new or changed region
	// views overlapping its groups and Removed the regions to forget.
	FullRegions bool
	Regions     []*event.RegionView
	Removed     []event.RegionID
}

// Updates splits a Change into per-node updates, sorted by node. Only nodes
// the change concerns get one: members (old and new) of groups with a new
// view, and members of groups overlapping a region that changed. The cost is
// proportional to those nodes' share of the change.
func (x *Index) Updates(c *Change) []*Update {
	by := map[event.NodeID]*Update{}
	get := func(n event.NodeID) *Update {
		u := by[n]
		if u == nil {
			u = &Update{Node: n}
			by[n] = u
		}
		return u
	}
	for _, n := range c.Moved {
		u := get(n)
		u.FullRegions = true
		u.Regions, _ = x.RegionsOf(n)
	}
	for _, v := range c.Views {
		for _, n := range v.Members {
			get(n).Views = append(get(n).Views, v)
		}
		for _, n := range v.Left {
			if !v.Has(n) { // a node removed and readmitted got it above
				get(n).Views = append(get(n).Views, v)
			}
		}
	}
	for _, r := range c.Regions {
		for _, g := range r.Groups {
			for _, n := range x.Members(g) {
				u := get(n)
				if u.FullRegions || (len(u.Regions) > 0 && u.Regions[len(u.Regions)-1] == r) {
					continue
				}
				u.Regions = append(u.Regions, r)
			}
		}
	}
	for _, r := range c.Removed {
		for _, g := range r.Groups {
			for _, n := range x.Members(g) {
				u := get(n)
				if u.FullRegions || (len(u.Removed) > 0 && u.Removed[len(u.Removed)-1] == r.Region) {
					continue
				}
				u.Removed = append(u.Removed, r.Region)
			}
		}
	}
	out := make([]*Update, 0, len(by))
	for _, u := range by {
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b *Update) int { return cmp.Compare(a.Node, b.Node) })
	return out
}

// Static computes every node's Neighbourhood from a fixed set of group
// views: the static membership source of the simulator (no gms layer). The
// given views are used as they are (shared, not copied); region ids and
// region view numbers are assigned deterministically from the sorted group
// and node ids. The result maps each member of any view to its
// Neighbourhood.
func Static(views map[event.GroupID]*event.ViewInfo) map[event.NodeID]*event.Neighbourhood {
	x := NewIndex()
	gs := make([]event.GroupID, 0, len(views))
	for g := range views {
		gs = append(gs, g)
	}
	slices.Sort(gs)
	// Join node by node so regions are numbered in node order.
	byNode := map[event.NodeID][]event.GroupID{}
	var nodes []event.NodeID
	for _, g := range gs {
		for _, n := range views[g].Members {
			if byNode[n] == nil {
				nodes = append(nodes, n)
			}
			byNode[n] = append(byNode[n], g)
		}
	}
	slices.Sort(nodes)
	for _, n := range nodes {
		x.JoinMany(n, byNode[n])
	}
	x.Commit()
	out := make(map[event.NodeID]*event.Neighbourhood, len(nodes))
	for _, n := range nodes {
		nb := &event.Neighbourhood{Self: n, Groups: byNode[n], Views: make(map[event.GroupID]*event.ViewInfo, len(byNode[n]))}
		for _, g := range byNode[n] {
			nb.Views[g] = views[g]
		}
		x.fillRegions(nb)
		out[n] = nb
	}
	return out
}

// NeighbourhoodOf computes one node's Neighbourhood from a fixed set of
// group views (as Static, for one node; regions are computed over all the
// views, so it costs as much as Static).
func NeighbourhoodOf(self event.NodeID, views map[event.GroupID]*event.ViewInfo) *event.Neighbourhood {
	if nb := Static(views)[self]; nb != nil {
		return nb
	}
	return &event.Neighbourhood{Self: self, Views: map[event.GroupID]*event.ViewInfo{}, Own: -1}
}
