package hop

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/layercast/layercast/event"
)

// maxSite is the largest SiteID hop routes (sites are kept in 64-bit masks;
// Spread is meant for several tens of sites).
const maxSite = 63

// edge is one potential WAN link of the static topology.
type edge struct {
	a, b event.SiteID
	w    int
}

// parseLinks reads the links parameter: comma-separated A-B or A-B:W
// (weight W, default 1). Empty means every pair of sites is joined with
// weight 1 (a full mesh).
func parseLinks(s string) ([]edge, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "mesh" {
		return nil, nil
	}
	var out []edge
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		pair, wt, hasW := strings.Cut(item, ":")
		a, b, ok := strings.Cut(pair, "-")
		e := edge{w: 1}
		x, err1 := strconv.ParseUint(strings.TrimSpace(a), 10, 8)
		y, err2 := strconv.ParseUint(strings.TrimSpace(b), 10, 8)
		if !ok || err1 != nil || err2 != nil || x > maxSite || y > maxSite || x == y {
			return nil, fmt.Errorf("hop: links: %q is not A-B with two different sites in [0, %d]", item, maxSite)
		}
		e.a, e.b = event.SiteID(x), event.SiteID(y)
		if hasW {
			w, err := strconv.Atoi(strings.TrimSpace(wt))
			if err != nil || w < 1 || w > 1<<20 {
				return nil, fmt.Errorf("hop: links: weight %q of %s must be an integer in [1, %d]", wt, pair, 1<<20)
			}
			e.w = w
		}
		out = append(out, e)
	}
	return out, nil
}

// routes are the dissemination trees of every live site as one site sees
// them: for each source site, this site's children and, per child, the
// mask of the sites in its subtree (for pruning).
type routes struct {
	children [maxSite + 1][]child
}

type child struct {
	site    event.SiteID
	subtree uint64
}

// downs is the link state every site announces in its heartbeats:
// downs[a] has bit b when site a's representative declared its link to b
// down. An edge carries nothing when either end declared it down.
type downs [maxSite + 1]uint64

// cut reports whether the link between a and b is down.
func (d *downs) cut(a, b event.SiteID) bool {
	return d != nil && (d[a]&(1<<b) != 0 || d[b]&(1<<a) != 0)
}

// neighbours returns the live sites joined to me by an edge that is up.
func neighbours(edges []edge, d *downs, live uint64, me event.SiteID) uint64 {
	var out uint64
	if edges == nil {
		for s := event.SiteID(0); s <= maxSite; s++ {
			if s != me && live&(1<<s) != 0 && !d.cut(me, s) {
				out |= 1 << s
			}
		}
		return out
	}
	for _, e := range edges {
		if live&(1<<e.a) == 0 || live&(1<<e.b) == 0 || d.cut(e.a, e.b) {
			continue
		}
		switch me {
		case e.a:
			out |= 1 << e.b
		case e.b:
			out |= 1 << e.a
		}
	}
	return out
}

// weight is the edge weight between a and b, or 0 if they are not joined.
func weight(edges []edge, a, b event.SiteID) int {
	if edges == nil {
		return 1
	}
	for _, e := range edges {
		if e.a == a && e.b == b || e.a == b && e.b == a {
			return e.w
		}
	}
	return 0
}

// compute builds, for every live source site, the shortest-path tree over
// the live sites and the links that are up (Dijkstra, ties to the smaller
// site id so every site computes the same trees from the same link state)
// and keeps my children in it. It returns the live sites my own tree
// reaches (me included): the others are cut off by every path.
func (r *routes) compute(edges []edge, d *downs, live uint64, me event.SiteID) (reach uint64) {
	for s := range r.children {
		r.children[s] = r.children[s][:0]
	}
	var parent [maxSite + 1]int
	var dist [maxSite + 1]int
	for src := event.SiteID(0); src <= maxSite; src++ {
		if live&(1<<src) == 0 {
			continue
		}
		shortestTree(edges, d, live, src, &parent, &dist)
		if src == me {
			for x := 0; x <= maxSite; x++ {
				if live&(1<<x) != 0 && dist[x] < infDist {
					reach |= 1 << x
				}
			}
		}
		for c := event.SiteID(0); c <= maxSite; c++ {
			if live&(1<<c) != 0 && c != src && parent[c] == int(me) {
				r.children[src] = append(r.children[src], child{site: c, subtree: subtree(&parent, live, c)})
			}
		}
	}
	return reach
}

// infDist is the distance of a site no path reaches.
const infDist = 1 << 60

// shortestTree fills parent (-1: root or unreachable) and dist for the tree
// rooted at src.
func shortestTree(edges []edge, d *downs, live uint64, src event.SiteID, parent, dist *[maxSite + 1]int) {
	const inf = infDist
	var done uint64
	for i := range dist {
		dist[i], parent[i] = inf, -1
	}
	dist[src] = 0
	for {
		u, best := -1, inf
		for i := 0; i <= maxSite; i++ {
			if live&(1<<i) != 0 && done&(1<<i) == 0 && dist[i] < best {
				u, best = i, dist[i]
			}
		}
		if u < 0 {
			return
		}
		done |= 1 << u
		for v := 0; v <= maxSite; v++ {
			if live&(1<<v) == 0 || done&(1<<v) != 0 {
				continue
			}
			w := weight(edges, event.SiteID(u), event.SiteID(v))
			if w == 0 || d.cut(event.SiteID(u), event.SiteID(v)) {
				continue
			}
			if d := best + w; d < dist[v] || d == dist[v] && u < parent[v] {
				dist[v], parent[v] = d, u
			}
		}
	}
}

// subtree is the mask of c and every site below it.
func subtree(parent *[maxSite + 1]int, live uint64, c event.SiteID) uint64 {
	var m uint64
	for x := 0; x <= maxSite; x++ {
		if live&(1<<x) == 0 {
			continue
		}
		for y := x; y >= 0; y = parent[y] {
			if y == int(c) {
				m |= 1 << x
				break
			}
		}
	}
	return m
}
