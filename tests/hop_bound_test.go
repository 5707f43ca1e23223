package tests

import (
	"strings"
	"testing"

	"github.com/layercast/layercast/experiment"
)

// TestSpreadBufferBounds: hop and ring declare the bound of their buffers,
// so a soak's memory invariant covers them. A representative crash in a
// site of three (the members keep the site's messages until the far site
// has them) holds hop and ring buffers; both stay within their bounds, and
// the same peaks judged against a smaller max_pending and window name the
// layer and its parameter.
func TestSpreadBufferBounds(t *testing.T) {
	rep, sc := simRun(t, "../specs/spread.stack", "",
		"nodes", "5", "groups-per-node", "1", "group-size", "5", "seed", "9",
		"site", "1=1-3", "site", "2=4-5", "fault", "crash:1@2s")
	mem, err := experiment.BufferBounds(rep, mustLoad(t, "../specs/spread.stack"), sc)
	if err != nil || len(mem) != 2 || mem[0].Layer != "hop" || mem[1].Layer != "ring" {
		t.Fatalf("BufferBounds = %+v, %v; want hop and ring", mem, err)
	}
	for _, m := range mem {
		if m.Peak <= 0 {
			t.Errorf("%s peak buffer %d, want some held (the run buffers)", m.Layer, m.Peak)
		}
	}
	if k, d := experiment.MemoryCheck(mem); k != "" {
		t.Errorf("MemoryCheck = %s %s, want every peak within its bound", k, d)
	}
	for _, c := range []struct{ spec, layer, param string }{
		{"hop(max_pending=16, window=16) : ring(member_limit=40) : gms", "hop", "max_pending 16"},
		{"hop(link_rate=240KB) : ring(member_limit=40, window=16, ring_limit=4) : gms", "ring", "window 16"},
	} {
		mem, _ = experiment.BufferBounds(rep, mustLoad(t, c.spec), sc)
		if k, d := experiment.MemoryCheck(mem); k != experiment.SoakMemory || !strings.Contains(d, c.layer) || !strings.Contains(d, c.param) {
			t.Errorf("MemoryCheck(peaks %v against %s) = %q %q, want memory naming %s and %s", rep.BufferPeaks, c.spec, k, d, c.layer, c.param)
		}
	}
}
