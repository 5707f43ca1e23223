package fifo

import (
	"fmt"
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/layertest"
)

// TestIndexFollowsViews: through a random run of view changes (members
// leaving, joining, re-admitted, node 1 itself removed and re-admitted),
// with casts from members between them, the per-packet index answers
// exactly what the views and maps do for every (group, node) pair: no
// stale member or sender after a view change.
func TestIndexFollowsViews(t *testing.T) {
	var l *Layer
	var seqs map[[2]uint32]uint32
	mk := func() []stack.Entry {
		l, seqs = New(16, 1<<20), map[[2]uint32]uint32{}
		return []stack.Entry{{Name: "fifo", Layer: l}}
	}
	cast := func(c *layertest.Cluster, v *event.ViewInfo) {
		// casts from some members (creating senders)
		for _, n := range v.Members[:len(v.Members)/2] {
			k := [2]uint32{uint32(v.Group), uint32(n)}
			seqs[k]++
			c.Stacks[1].Inject(0, true, layertest.SeqCast(v.Group, n, seqs[k], 1, 4))
		}
	}
	layertest.RandomViews(t, mk, cast, func(g event.GroupID, n event.NodeID) error {
		e, wg := l.lookup(g, n), l.groups[g]
		ok := wg != nil && wg.view != nil && n != 1 && wg.view.Has(n)
		switch {
		case !ok && e != nil:
			return fmt.Errorf("indexed, not a member")
		case ok && e == nil:
			return fmt.Errorf("member not indexed")
		case ok && (e.g != wg || e.s != wg.senders[n]):
			return fmt.Errorf("indexed %p %p, maps say %p %p", e.g, e.s, wg, wg.senders[n])
		}
		return nil
	})
}
