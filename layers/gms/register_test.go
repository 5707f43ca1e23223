package gms

import (
	"testing"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
)

// The member layer's registration names the service it needs, and the
// service is built from its own registration (gms_service's schema) with
// the member's view_interval, fd_timeout and suspect_timeout: what the
// simulator harness starts for a gms spec, without knowing gms.
func TestServiceNeed(t *testing.T) {
	ls, err := compose.ExplainString("gms(service=9, heartbeat=50ms, fd_timeout=300ms, view_interval=70ms)")
	if err != nil {
		t.Fatal(err)
	}
	need, err := ls[0].Info.Service(ls[0].Params)
	if err != nil {
		t.Fatal(err)
	}
	// suspect_timeout 0 means fd_timeout, and phi is on by default with
	// fd_max 0 meaning 2 x fd_timeout: removal within 600+300+70 ms.
	if need.Node != event.NodeID(9) || need.RemovalBound != 970*time.Millisecond || need.Poll != 17500*time.Microsecond {
		t.Errorf("need = %+v, want node 9, removal bound 970ms, poll view_interval/4", need)
	}
	// With phi off, the window is fd_timeout: 300+300+70 ms.
	if ls, err = compose.ExplainString("gms(service=9, heartbeat=50ms, fd_timeout=300ms, view_interval=70ms, phi=0)"); err != nil {
		t.Fatal(err)
	}
	if off, err := ls[0].Info.Service(ls[0].Params); err != nil || off.RemovalBound != 670*time.Millisecond {
		t.Errorf("phi=0: need = %+v, %v, want removal bound 670ms", off, err)
	}
	ssp, err := compose.Parse(need.Spec)
	if err != nil {
		t.Fatalf("service spec %q: %v", need.Spec, err)
	}
	entries, err := compose.BuildService(ssp)
	if err != nil {
		t.Fatalf("service spec %q: %v", need.Spec, err)
	}
	svc, ok := entries[0].Layer.(*ServiceLayer)
	if len(entries) != 1 || !ok {
		t.Fatalf("service stack = %+v, want one gms_service layer", entries)
	}
	if c := svc.Config; c.ViewInterval != 70*time.Millisecond || c.FDTimeout != 300*time.Millisecond || c.SuspectTimeout != 0 {
		t.Errorf("service config %+v, want view_interval 70ms, fd_timeout 300ms, suspect_timeout 0 (= fd_timeout)", c)
	}
}
