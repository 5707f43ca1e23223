package tests

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/layercast/layercast/experiment"
	_ "github.com/layercast/layercast/layers/all"
	"github.com/layercast/layercast/membership/removal"
)

// jitterRun runs four members of one group, n1 alone in site 1 behind a
// link whose jitter reaches 400ms (the membership service and the others in
// site 0), with gms's accrual threshold phi.
func jitterRun(t *testing.T, phi string, seed int) *experiment.Report {
	t.Helper()
	rep, _ := simRun(t, fmt.Sprintf("fifo : reliable : gms(heartbeat=100ms, fd_timeout=300ms, suspect_timeout=100ms, phi=%s)", phi), "",
		"nodes", "4", "groups-per-node", "1", "group-size", "4", "rate", "10", "duration", "20s", "seed", fmt.Sprint(seed),
		"site", "1=1", "wan", "0-1 latency=1ms jitter=400ms")
	return rep
}

// Issue 15 item 4: n1's heartbeats cross a link with up to 400ms of
// jitter. The static detector (phi=0: suspected after 300ms of silence,
// removed 100ms later) removes this live node in some seeds; the accrual
// detector (phi=8, the default) learns the jitter and removes it in none.
// Every removal is in the report with its reason. Sixteen seeds: the static
// detector removes n1 in about one seed in four, so four seeds showed
// none whenever a change elsewhere moved the random sequence (reliable's
// round-trip asks: 2 of seeds 1-12 against 4 before), and so did eight
// (reliable's NAKs at rate max, its loss estimate: seeds 10 and 14 of
// 1-16, 11 of 40 against 15 before).
func TestFDJitteryLinkKeptByPhi(t *testing.T) {
	static := 0
	for seed := 1; seed <= 16; seed++ {
		rep := jitterRun(t, "8", seed)
		if n := rep.Layers["gms_service"]["nodes_failed"]; n != 0 || len(rep.Removals) != 0 || len(rep.Broken) != 0 {
			t.Errorf("seed %d, phi 8: %d nodes failed, removals %+v, broken %q: want none", seed, n, rep.Removals, rep.Broken)
		}
		if rep.Layers["gms_service"]["nodes_late"] == 0 {
			t.Errorf("seed %d, phi 8: nodes_late = 0: the jitter never took n1 past fd_timeout", seed)
		}
		rep = jitterRun(t, "0", seed)
		failed := rep.Layers["gms_service"]["nodes_failed"]
		// A node removed as silent comes back and is told to join again:
		// that second record (cause reset) is not a failure.
		var silent []removal.Record
		for _, r := range rep.Removals {
			if r.Cause != removal.Reset {
				silent = append(silent, r)
			}
		}
		if int64(len(silent)) != failed {
			t.Errorf("seed %d, phi 0: %d nodes failed but %d removals listed: %+v", seed, failed, len(silent), rep.Removals)
		}
		for _, r := range silent {
			static++
			if r.Node != 1 || r.Cause != removal.Silent || !strings.Contains(r.Reason, "silent for") {
				t.Errorf("seed %d, phi 0: removal %+v, want n1 silent", seed, r)
			}
		}
	}
	if static == 0 {
		t.Errorf("the static detector removed n1 in none of 16 seeds: the link's jitter shows nothing")
	}
}

// A crash is still removed within the bound the service states (gms.stack:
// fd_max 1s + suspect_timeout 500ms + view_interval 100ms; the crashed
// node's heartbeats were regular, so in fact within fd_timeout +
// suspect_timeout + view_interval), and the report lists the removal with
// its reason in JSON (removals) and in a note.
func TestFDCrashRemovalReported(t *testing.T) {
	rep, _ := simRun(t, "../specs/gms.stack", "gms-crash.scenario")
	if len(rep.Removals) != 1 {
		t.Fatalf("removals = %+v, want one", rep.Removals)
	}
	r := rep.Removals[0]
	if r.Node != 3 || r.Cause != removal.Silent || r.Groups != 3 || r.Phi < 8 || r.SilentMs < 1000 || r.SilentMs > 1001 {
		t.Errorf("removal %+v: want n3 silent for 1s (fd_timeout + suspect_timeout) from 3 groups, phi >= 8", r)
	}
	if got := rep.Layers["gms_service"]["crash_removal_max_us"]; got > 1_100_000+2_000 {
		t.Errorf("crash removed at every survivor after %dus, want within 1.102s", got)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Removals []map[string]any `json:"removals"`
		Notes    []string         `json:"notes"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Removals) != 1 || back.Removals[0]["cause"] != "silent" || back.Removals[0]["node"] != float64(3) || back.Removals[0]["reason"] == "" {
		t.Errorf("JSON removals = %v, want n3 silent with a reason", back.Removals)
	}
	noted := false
	for _, n := range back.Notes {
		noted = noted || strings.HasPrefix(n, "removed n3 ") && strings.Contains(n, r.Reason)
	}
	if !noted {
		t.Errorf("no note says why n3 was removed: %q", back.Notes)
	}
}

// Issue 15 item 5, QSM: the region leader (n1, the smallest member of the
// one region of qsm-crash.scenario) crashes, as well as n7. Membership removes it and
// sends the region's view without it, so n2 leads the region from then on:
// the token goes round again, the sender's packets are acknowledged, and
// every survivor delivers every message.
func TestFDRegionLeaderCrashQSM(t *testing.T) {
	rep, _ := simRun(t, "../specs/qsm-gms.stack", "qsm-crash.scenario", "fault", "crash:1@1s")
	if !rep.DeliveredAll || len(rep.Broken) != 0 {
		t.Errorf("delivered_all %v, missing %d, broken %q", rep.DeliveredAll, rep.Missing, rep.Broken)
	}
	// The scenario crashes n7 too.
	leader := false
	for _, r := range rep.Removals {
		leader = leader || r.Node == 1 && r.Cause == removal.Silent && r.Groups == 4
	}
	if len(rep.Removals) != 2 || !leader {
		t.Errorf("removals %+v, want n1 (and n7) silent", rep.Removals)
	}
	if p := rep.Layers["tokenring"]["pending"]; p != 0 {
		t.Errorf("tokenring pending = %d at the end: the region's ACK never came back after its leader crashed", p)
	}
}
