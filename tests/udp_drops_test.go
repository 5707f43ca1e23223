package tests

import (
	"testing"
	"time"
)

// TestUDPDropsByCause is issue 9's honest report over UDP, in a network
// namespace with loopback only: Ricochet under --loss uniform:2% at the
// receivers reports the model's drops as loss.dropped_by.model, the
// kernel's receive-queue drops (if any) as dropped_by.kernel, the causes
// summing to dropped, and never more recovered than dropped.
func TestUDPDropsByCause(t *testing.T) {
	var r struct {
		Network string `json:"network"`
		Loss    struct {
			Dropped         int64            `json:"dropped"`
			DroppedByModel  int64            `json:"dropped_by_model"`
			DroppedOverflow int64            `json:"dropped_overflow"`
			DroppedBy       map[string]int64 `json:"dropped_by"`
			Recovered       int64            `json:"recovered"`
			RecoveredBy     map[string]int64 `json:"recovered_by"`
			RecoveredPct    *float64         `json:"recovered_pct"`
			Without         int64            `json:"recovered_without_drop"`
		} `json:"loss"`
		Notes []string `json:"notes"`
	}
	runUDP(t, 90*time.Second, true, &r, "../specs/ricochet.stack", "--network", "udp",
		"--nodes", "6", "--groups-per-node", "2", "--group-size", "3", "--rate", "1000", "--msg-size", "64",
		"--duration", "1s", "--drain", "5s", "--loss", "uniform:2%", "--json")
	l := r.Loss
	t.Logf("udp ricochet under 2%% loss: dropped %d by %v, recovered %d (%v) by %v, marked without a drop %d",
		l.Dropped, l.DroppedBy, l.Recovered, pctString(l.RecoveredPct), l.RecoveredBy, l.Without)
	for _, n := range r.Notes {
		t.Log("note: ", n)
	}
	if r.Network != "udp" {
		t.Fatalf("network %q", r.Network)
	}
	var sum int64
	for _, n := range l.DroppedBy {
		sum += n
	}
	if _, ok := l.DroppedBy["kernel"]; !ok || sum != l.Dropped {
		t.Errorf("dropped_by %v (no kernel key, or sums to %d, not dropped %d)", l.DroppedBy, sum, l.Dropped)
	}
	if l.DroppedBy["model"] != l.DroppedByModel || l.DroppedByModel < 20 {
		t.Errorf("dropped_by.model %d, dropped_by_model %d: want equal, about 2%% of the data packets", l.DroppedBy["model"], l.DroppedByModel)
	}
	if l.DroppedOverflow != l.DroppedBy["kernel"]+l.DroppedBy["queue"] {
		t.Errorf("dropped_overflow %d, want kernel %d + queue %d", l.DroppedOverflow, l.DroppedBy["kernel"], l.DroppedBy["queue"])
	}
	if l.Recovered > l.Dropped || l.Recovered == 0 || l.RecoveredPct == nil || *l.RecoveredPct > 100 {
		t.Errorf("recovered %d of %d dropped (%v)", l.Recovered, l.Dropped, pctString(l.RecoveredPct))
	}
}

func pctString(p *float64) any {
	if p == nil {
		return "null"
	}
	return *p
}
