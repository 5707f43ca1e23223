package membership

import (
	"cmp"
	"slices"

	"github.com/layercast/layercast/event"
)

// SiteViews groups live nodes by the Spread site each declared (siteOf) into
// one view per site, sorted by SiteID, members sorted by NodeID; every view
// is numbered id. Sites with no node get no view.
func SiteViews(nodes []event.NodeID, siteOf func(event.NodeID) event.SiteID, id uint64) []event.SiteView {
	by := map[event.SiteID][]event.NodeID{}
	for _, n := range nodes {
		s := siteOf(n)
		by[s] = append(by[s], n)
	}
	out := make([]event.SiteView, 0, len(by))
	for s, ms := range by {
		slices.Sort(ms)
		out = append(out, event.SiteView{Site: s, ID: id, Members: slices.Compact(ms)})
	}
	slices.SortFunc(out, func(a, b event.SiteView) int { return cmp.Compare(a.Site, b.Site) })
	return out
}

// SetSites gives a neighbourhood the site views (shared, not copied) and
// points OwnSite at the one that lists its node (-1 if none).
func SetSites(nb *event.Neighbourhood, sites []event.SiteView) {
	nb.Sites = sites
	nb.OwnSite = -1
	for i := range sites {
		if sites[i].Has(nb.Self) {
			nb.OwnSite = i
			break
		}
	}
}
