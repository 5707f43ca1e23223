package reliable

import (
	"fmt"
	"slices"
	"testing"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/layertest"
	"github.com/layercast/layercast/stack"
)

// TestIndexFollowsViews: through a random run of view changes (members
// leaving, joining, re-admitted, node 1 itself removed and re-admitted,
// groups left), the per-packet index answers exactly what the maps do, for
// every (group, node) pair: no stale member after a view change.
func TestIndexFollowsViews(t *testing.T) {
	var l *Layer
	mk := func() []stack.Entry {
		info, _ := compose.Lookup("reliable")
		x, err := info.New(compose.MustParams("reliable", nil))
		if err != nil {
			t.Fatal(err)
		}
		l = x.(*Layer)
		return []stack.Entry{{Name: "reliable", Layer: x}}
	}
	layertest.RandomViews(t, mk, nil, func(g event.GroupID, n event.NodeID) error {
		wg, wm := l.groups[g], (*member)(nil)
		if wg != nil && wg.view != nil {
			wm = wg.members[n]
		}
		gg, gm := l.lookup(g, n)
		if gm != wm || (wm != nil && gg != wg) {
			return fmt.Errorf("lookup = %p, maps say %p", gm, wm)
		}
		if wm != nil && !slices.Contains(wg.view.Members, n) {
			return fmt.Errorf("member not in view %v", wg.view.Members)
		}
		return nil
	})
}
