package event

import "slices"

// ViewInfo is one numbered view of one group: who its members are.
// A view is immutable once installed; layers may keep the pointer.
type ViewInfo struct {
	Group GroupID
	// ID increases with every view of the group.
	ID uint64
	// Members in a fixed order shared by every member (sorted by NodeID).
	Members []NodeID
	// Joined and Left are the changes from the previous view, when known.
	Joined []NodeID
	Left   []NodeID
}

// Has reports whether n is a member.
func (v *ViewInfo) Has(n NodeID) bool {
	_, ok := slices.BinarySearch(v.Members, n)
	return ok
}

// Rank returns n's position in Members, or -1.
func (v *ViewInfo) Rank(n NodeID) int {
	i, ok := slices.BinarySearch(v.Members, n)
	if !ok {
		return -1
	}
	return i
}

// Size is the number of members.
func (v *ViewInfo) Size() int { return len(v.Members) }

// RegionID names a QSM region: the set of nodes that are members of exactly
// the same groups.
type RegionID uint32

// RegionView is one numbered view of a QSM region (QSM 2006 section 2.1):
// nodes with identical group sets. A group view maps onto a set of region
// views.
type RegionView struct {
	Region RegionID
	ID     uint64
	// Groups that every member of the region belongs to (sorted).
	Groups []GroupID
	// Members sorted by NodeID.
	Members []NodeID
}

// LocalRegion is one of Ricochet's regions as seen from one node (section
// 4.1): the nodes of the node's groups that belong to exactly the subset
// Groups of them. The node's own regions partition the union of its groups.
type LocalRegion struct {
	// Groups is the subset of the node's groups whose intersection, minus the
	// other groups of the node, this region is (sorted).
	Groups []GroupID
	// Members sorted by NodeID; the node itself is included where it belongs.
	Members []NodeID
}

// Neighbourhood is the derived membership a multi-group layer needs about one
// node, computed by the membership service (or the static membership source)
// once per change and handed down in a Regions event.
type Neighbourhood struct {
	Self NodeID
	// Groups the node belongs to (sorted), with their current views.
	Groups []GroupID
	Views  map[GroupID]*ViewInfo
	// Local are the node's Ricochet regions.
	Local []LocalRegion
	// Regions are the QSM region views of every region that overlaps one of
	// the node's groups; Own is the index in Regions of the node's own region.
	Regions []RegionView
	Own     int
	// Sites are the views of every site that has a member of one of the
	// node's groups (sorted by SiteID); OwnSite is the index in Sites of
	// the node's own site, or -1 when Sites is empty.
	Sites   []SiteView
	OwnSite int
}

// Has reports whether n is a member of the region.
func (r *RegionView) Has(n NodeID) bool {
	_, ok := slices.BinarySearch(r.Members, n)
	return ok
}

// SiteID names a Spread site: the nodes of one LAN, joined to other sites by
// wide-area links. Site 0 is the default: every node is in it unless its
// runner says otherwise (stack.Config.Site).
type SiteID uint32

// SiteView is one numbered view of a site: the live nodes placed in it that
// belong to at least one group (sorted by NodeID). Membership computes it
// from the site each node declared; the site's representative on the wide
// area is chosen from Members (Spread section 3.1).
type SiteView struct {
	Site SiteID
	ID   uint64
	// Members sorted by NodeID.
	Members []NodeID
}

// Has reports whether n is a member of the site.
func (s *SiteView) Has(n NodeID) bool {
	_, ok := slices.BinarySearch(s.Members, n)
	return ok
}
