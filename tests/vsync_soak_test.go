package tests

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/experiment"
	_ "github.com/layercast/layercast/layers/all"
)

// vsyncSoak runs soak seeds on specs/vsync.stack and fails on every broken
// invariant (experiment.SoakCheck: duplicates, FIFO, unexplained missing
// deliveries, view-synchrony violations).
func vsyncSoak(t *testing.T, seeds []uint64) {
	t.Helper()
	sp, err := compose.Load("../specs/vsync.stack")
	if err != nil {
		t.Fatal(err)
	}
	// The drain these seeds broke under, so each still fails without its fix.
	res := experiment.Soak(context.Background(), experiment.SoakOptions{Seeds: seeds, Drain: 6 * time.Second,
		Specs: []experiment.SoakSpec{{Name: "specs/vsync.stack", Spec: sp}}})
	for _, f := range res.Failures {
		t.Errorf("seed %d: %v: %s\nreplay: %s", f.Seed, f.Kinds, f.Detail, f.Replay)
	}
}

// Soak seeds that broke specs/vsync.stack while it was built, each a run
// with crashes, freezes past the failure detector's timeout or partitions:
//   - 16: a flush waiting for a frozen survivor was abandoned for a newer
//     view, skipping the view in which a readmitted member had cast
//     (missing deliveries): views are now installed in order, and a
//     survivor that will never report is no longer waited for;
//   - 5, 10 (experiment's TestVsyncCheckerOnSoakSeeds): the stack hands a
//     View to the application before data queued earlier, so old-view
//     deliveries landed in the new view: the view goes up once they have;
//   - 105, 180: a survivor that installed the view and reported for the
//     next one had its first report replaced by the second, so the cut
//     missed what it had delivered (view-synchrony violations);
//   - 16 again, after the failure detector's probes (issue 15 item 4)
//     changed the run: the survivor that re-sent a crashed sender's last
//     casts installed the view at once, froze, and was removed before its
//     partner got them (1 view-synchrony violation): a survivor now
//     installs a view only once every survivor not removed since reports
//     having delivered exactly what it did, and the cut leaves out what
//     only removed survivors had;
//   - 219, 369 (seeds past 200, failing on main too): a re-sender removed
//     before the others had its casts, as 16;
//   - 345, 799: broke while that fix was built, when a member held a
//     sender's casts that followed a gap (what it missed while out of the
//     group) during a flush, waiting for the gap to fill: only a gap after
//     a first delivery in the view is filled;
//   - 488 (seen only in an 800-seed run): a node removed and readmitted in
//     one view of the service got that view under the number gms gave its
//     own "removed" view, took it for an old one, and its casts waited in
//     the layer for good (21 missing, all never sent): a view that
//     readmits the node under its removal view's number is taken.
//
// stacktool soak --spec specs/vsync.stack --seeds 200 runs the lot;
// VSYNC_SOAK_SEEDS=200 runs it here.
func TestVsyncSoakSeeds(t *testing.T) {
	seeds := []uint64{16, 105, 180, 219, 345, 369, 488, 799}
	if n, err := strconv.Atoi(os.Getenv("VSYNC_SOAK_SEEDS")); err == nil && n > 0 {
		seeds = seeds[:0]
		for s := 1; s <= n; s++ {
			seeds = append(seeds, uint64(s))
		}
	}
	vsyncSoak(t, seeds)
}

// TestVsyncFlushCatchingUpUnderOverload replays a run that broke both
// promises of specs/vsync.stack (977 owed deliveries missing unexplained, 5
// view-synchrony violations, the same under a 30 s drain): 8 nodes driven
// past a 5,000 packets/s capacity under 9.4% loss, one crash, one node cut
// off for 825 ms. After the heal, survivor n2 lagged several seconds behind
// n5's stream (recovered by NAK at the capacity left), so n5's flush report,
// cast behind those casts, reached it only after flush_timeout: every
// member gave the flush up, n2 discarded the old-view casts it held and the
// others installed the view with more than n2 had delivered. flush_timeout
// now runs from the flush's last progress (a report, an old-view cast
// arriving), so a survivor that is catching up is waited for.
func TestVsyncFlushCatchingUpUnderOverload(t *testing.T) {
	rep, sc := vsyncOverloadReplay(t, 2)
	if rep.MessagesSent == 0 || rep.DeliveriesExpected == 0 {
		t.Fatalf("nothing sent: %d sent, %d deliveries expected", rep.MessagesSent, rep.DeliveriesExpected)
	}
	if kinds, detail := experiment.SoakCheck(rep); len(kinds) > 0 {
		t.Errorf("%v: %s\nreplay: %s", kinds, detail, experiment.ReplayCommand("sim", "specs/vsync.stack", sc))
	}
	if rep.MissingUnexplained != 0 || rep.VsyncViolations != 0 {
		t.Errorf("%d owed deliveries missing unexplained, %d view-synchrony violations; want none", rep.MissingUnexplained, rep.VsyncViolations)
	}
}

// TestVsyncReadmittedWaitsUnderOverload replays the same run under seed 41,
// where n8 gave two flushes up after flush_timeout (nine flushes over seeds
// 1-60 were given up): n8, removed in the partition and readmitted into view 7 of
// g1 (view 6 of g2), installed it at once and began its flush to the next
// view, whose other survivors were still flushing the views n8 had been
// out for, catching up at the capacity left for more than flush_timeout.
// They report for n8's target only once past those views, and n8 heard
// nothing it counted as progress meanwhile: their reports in that older
// flush now are. No flush is given up, and the promises hold.
func TestVsyncReadmittedWaitsUnderOverload(t *testing.T) {
	rep, sc := vsyncOverloadReplay(t, 41)
	if kinds, detail := experiment.SoakCheck(rep); len(kinds) > 0 {
		t.Errorf("%v: %s\nreplay: %s", kinds, detail, experiment.ReplayCommand("sim", "specs/vsync.stack", sc))
	}
	if f := rep.Layers["vsync"]["flushes"]; f == 0 {
		t.Fatalf("no flush in the run: it no longer tests a readmission")
	}
	if n := rep.Layers["vsync"]["flush_timeouts"]; n != 0 {
		t.Errorf("%d flushes given up after flush_timeout (views installed without agreement), want 0\nreplay: %s --log-level debug",
			n, experiment.ReplayCommand("sim", "specs/vsync.stack", sc))
	}
}

// vsyncOverloadReplay runs specs/vsync.stack under the scenario of the
// overload replays (8 nodes driven past a 5,000 packets/s capacity under
// 9.4% loss, one crash, one node cut off for 825 ms) with the given seed.
func vsyncOverloadReplay(t *testing.T, seed uint64) (*experiment.Report, experiment.Scenario) {
	t.Helper()
	return simRun(t, "../specs/vsync.stack", "",
		"nodes", "8", "groups-per-node", "2", "group-size", "8", "senders", "all",
		"rate", "800", "msg-size", "64", "duration", "2s", "drain", "10s",
		"loss", "uniform:9.4%", "latency", "1ms", "jitter", "100µs",
		"capacity", "5000pps,buf=1024", "seed", strconv.FormatUint(seed, 10), "max-burst", "64",
		"fault", "partition:1,2,3,4,6,7,8@1320ms", "fault", "heal@2145ms", "fault", "crash:3@1049ms")
}
