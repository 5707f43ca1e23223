package lec

import (
	"testing"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
)

// A bin partly filled for the flush time sends its repair, so packets at
// the end of a run are covered; without flush it waits for r packets.
func TestFlushSendsPartlyFilledBins(t *testing.T) {
	for _, flush := range []time.Duration{0, 50 * time.Millisecond} {
		tn := newTestNode(t)
		tn.l.cfg.Flush = flush
		for i := range 3 {
			tn.arrive(i)
		}
		tn.advance(40 * time.Millisecond)
		if tn.tr.Sends != 0 {
			t.Fatalf("flush %v: %d repairs sent after 3 of r=8 packets and 40 ms, want 0", flush, tn.tr.Sends)
		}
		tn.advance(20 * time.Millisecond)
		want, flushed := 0, int64(0)
		if flush > 0 {
			want, flushed = 5, 1 // c=5 destinations among the 7 others
		}
		if tn.tr.Sends != want || tn.l.c.BinsFlushed.Value() != flushed {
			t.Errorf("flush %v: %d repairs sent, %d bins flushed after 60 ms; want %d and %d", flush, tn.tr.Sends, tn.l.c.BinsFlushed.Value(), want, flushed)
		}
	}
}

// c_group gives a group its own c: Algorithm 1 splits it over the regions
// of the group, so the bins' average destinations for it sum to it.
func TestCGroupSetsAGroupsC(t *testing.T) {
	cg, err := parseCGroup("g9=2, 10=7.5")
	if err != nil || cg[9] != 2 || cg[10] != 7.5 || len(cg) != 2 {
		t.Fatalf("parseCGroup = %v, %v; want g9=2 g10=7.5", cg, err)
	}
	for _, bad := range []string{"9", "g=2", "g9=x", "g9=-1", "g9=2 g9=3", "g0=1", "g9=NaN"} {
		if _, err := parseCGroup(bad); err == nil {
			t.Errorf("parseCGroup(%q) accepted", bad)
		}
	}
	tn := newTestNode(t)
	tn.l.cfg.CGroup = map[event.GroupID]float64{9: 2}
	// Group 9 spans two regions of 4 and 3 others; group 10 only the first.
	tn.st.InstallNeighbourhood(&event.Neighbourhood{Self: 1, Groups: []event.GroupID{9, 10},
		Local: []event.LocalRegion{{Groups: []event.GroupID{9, 10}, Members: []event.NodeID{1, 2, 3, 4, 5}},
			{Groups: []event.GroupID{9}, Members: []event.NodeID{6, 7, 8}}}})
	sum := map[event.GroupID]float64{}
	for _, b := range tn.l.bins {
		for _, tg := range b.targets {
			for _, g := range b.groups {
				sum[g] += tg.avg
			}
		}
	}
	if d := sum[9] - 2; d > 1e-9 || d < -1e-9 {
		t.Errorf("group 9's destinations sum to %.3f, want its c_group 2", sum[9])
	}
	if d := sum[10] - 5; d > 1e-9 || d < -1e-9 {
		t.Errorf("group 10's destinations sum to %.3f, want c=5", sum[10])
	}
}

// c larger than a group allows (c=5, three others) is capped, and said.
func TestCCappedByRegionIsCounted(t *testing.T) {
	tn := newTestNode(t)
	tn.st.InstallNeighbourhood(&event.Neighbourhood{Self: 1, Groups: []event.GroupID{9},
		Local: []event.LocalRegion{{Groups: []event.GroupID{9}, Members: []event.NodeID{1, 2, 3, 4}}}})
	capped := tn.l.c.TargetsCapped.Value()
	if capped != 2 {
		t.Errorf("targets_capped = %d after one draw of 5 from 3, want 2", capped)
	}
	tn.data = append(tn.data, []byte("seventh"), []byte("eighth"))
	for i := range 8 {
		tn.arrive(i)
	}
	if tn.tr.Sends != 3 || tn.l.c.TargetsCapped.Value() != 2*capped {
		t.Errorf("%d repairs sent, targets_capped %d; want 3 and %d", tn.tr.Sends, tn.l.c.TargetsCapped.Value(), 2*capped)
	}
	s := summarize(countersOf(tn))
	if len(s.Notes) == 0 {
		t.Errorf("summary has no note of the cap: %+v", s)
	}
}

// countersOf is lec's counters at the node, as a report hands them to
// summarize.
func countersOf(tn *testNode) compose.Counters {
	c := compose.Counters{Total: map[string]int64{}}
	for _, lc := range tn.st.Counters() {
		if lc.Layer == "lec" {
			for i, n := range lc.Names {
				c.Total[n] = lc.Values[i]
			}
		}
	}
	return c
}
