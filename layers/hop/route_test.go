package hop

import (
	"fmt"
	"slices"
	"testing"

	"github.com/layercast/layercast/event"
)

func mask(ss ...event.SiteID) uint64 {
	var m uint64
	for _, s := range ss {
		m |= 1 << s
	}
	return m
}

// describe prints my children in the tree of src as "c{subtree},...".
func describe(r *routes, src event.SiteID) string {
	var out []string
	for _, c := range r.children[src] {
		var sub []event.SiteID
		for s := event.SiteID(0); s <= maxSite; s++ {
			if c.subtree&(1<<s) != 0 {
				sub = append(sub, s)
			}
		}
		out = append(out, fmt.Sprintf("%d%v", c.site, sub))
	}
	return fmt.Sprint(out)
}

// TestRoutes: shortest-path trees per source site, from the links and the
// live sites, as each site sees its children (Spread 3.1).
func TestRoutes(t *testing.T) {
	cases := []struct {
		links    string
		live     uint64
		me, src  event.SiteID
		children string
	}{
		// A chain: site 2 forwards site 1's packets to 3, whose subtree
		// holds 4; towards the source it forwards nothing.
		{"1-2,2-3,3-4", mask(1, 2, 3, 4), 2, 1, "[3[3 4]]"},
		{"1-2,2-3,3-4", mask(1, 2, 3, 4), 2, 4, "[1[1]]"},
		{"1-2,2-3,3-4", mask(1, 2, 3, 4), 4, 1, "[]"},
		// A full mesh: the source sends to every site directly.
		{"", mask(1, 2, 3), 1, 1, "[2[2] 3[3]]"},
		{"", mask(1, 2, 3), 2, 1, "[]"},
		// Weights: 1-3 is dearer than 1-2-3, so 2 forwards to 3.
		{"1-2:1,2-3:1,1-3:5", mask(1, 2, 3), 1, 1, "[2[2 3]]"},
		{"1-2:1,2-3:1,1-3:5", mask(1, 2, 3), 2, 1, "[3[3]]"},
		// Site 2 dead: the direct link carries it again.
		{"1-2:1,2-3:1,1-3:5", mask(1, 3), 1, 1, "[3[3]]"},
		// A chain cut in the middle: what lies beyond is unreachable.
		{"1-2,2-3,3-4", mask(1, 2, 4), 2, 1, "[]"},
		// Equal costs: the smaller site id is the parent.
		{"1-2,1-3,2-4,3-4", mask(1, 2, 3, 4), 2, 1, "[4[4]]"},
		{"1-2,1-3,2-4,3-4", mask(1, 2, 3, 4), 3, 1, "[]"},
	}
	for _, c := range cases {
		edges, err := parseLinks(c.links)
		if err != nil {
			t.Fatal(err)
		}
		var r routes
		r.compute(edges, nil, c.live, c.me)
		if got := describe(&r, c.src); got != c.children {
			t.Errorf("links %q live %b: children of site %d in the tree of %d = %s, want %s", c.links, c.live, c.me, c.src, got, c.children)
		}
	}
}

// TestRoutesAroundDownLinks: a link declared down by either end carries
// nothing; the trees go around it over the links still up, and a site no
// path reaches is reported cut off.
func TestRoutesAroundDownLinks(t *testing.T) {
	cases := []struct {
		links    string
		down     [][2]event.SiteID // site a declared its link to b down
		me, src  event.SiteID
		children string
		reach    uint64
	}{
		// Full mesh, 2-3 down (declared by 2): site 1 relays 2's packets
		// to 3 and 3's to 2; 2 sends its own only to 1.
		{"", [][2]event.SiteID{{2, 3}}, 1, 2, "[3[3]]", mask(1, 2, 3)},
		{"", [][2]event.SiteID{{2, 3}}, 1, 3, "[2[2]]", mask(1, 2, 3)},
		{"", [][2]event.SiteID{{2, 3}}, 2, 2, "[1[1 3]]", mask(1, 2, 3)},
		// Declared by the other end only: the same trees.
		{"", [][2]event.SiteID{{3, 2}}, 2, 2, "[1[1 3]]", mask(1, 2, 3)},
		// Site 3 cut from both: no tree reaches it.
		{"", [][2]event.SiteID{{1, 3}, {3, 2}}, 1, 1, "[2[2]]", mask(1, 2)},
		{"", [][2]event.SiteID{{1, 3}, {3, 2}}, 3, 3, "[]", mask(3)},
		// A chain with its middle link down is two halves.
		{"1-2,2-3,3-4", [][2]event.SiteID{{2, 3}}, 2, 1, "[]", mask(1, 2)},
	}
	for _, c := range cases {
		edges, err := parseLinks(c.links)
		if err != nil {
			t.Fatal(err)
		}
		var d downs
		for _, x := range c.down {
			d[x[0]] |= 1 << x[1]
		}
		live := mask(1, 2, 3)
		if c.links != "" {
			live = mask(1, 2, 3, 4)
		}
		var r routes
		reach := r.compute(edges, &d, live, c.me)
		if got := describe(&r, c.src); got != c.children || reach != c.reach {
			t.Errorf("links %q down %v: site %d's children in the tree of %d = %s, reach %b; want %s, %b", c.links, c.down, c.me, c.src, got, reach, c.children, c.reach)
		}
	}
}

func TestParseLinks(t *testing.T) {
	for _, bad := range []string{"1", "1-1", "1-x", "1-2:0", "1-64", "1-2:abc", "-", "1-2,,"} {
		if _, err := parseLinks(bad); err == nil {
			t.Errorf("parseLinks(%q) = nil error", bad)
		}
	}
	e, err := parseLinks(" 1-2:3, 3-2 ")
	if err != nil || !slices.Equal(e, []edge{{1, 2, 3}, {3, 2, 1}}) {
		t.Errorf("parseLinks = %v, %v", e, err)
	}
}
