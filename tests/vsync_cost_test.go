package tests

import (
	"fmt"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
)

// crashToView runs n members casting every period, crashes the last one
// one second in, and returns, per survivor, the time from the crash to the
// first view without it at the application.
func crashToView(t *testing.T, spec string, seed uint64, n int, period time.Duration) []time.Duration {
	h := newVsyncNet(t, spec, seed, n)
	start, end := h.castAll(period, 4*time.Second)
	crashed := event.NodeID(n)
	crashAt := start.Add(time.Second)
	h.net.At(crashAt, func() { h.net.Crash(crashed) })
	h.net.RunUntil(end)
	var out []time.Duration
	for id := event.NodeID(1); id < crashed; id++ {
		at := event.Time(-1)
		for _, v := range h.views[id] {
			if v.Group == vsyncGroup && !v.Has(crashed) {
				at = h.viewAt[id][v]
				break
			}
		}
		if at < 0 {
			t.Fatalf("%s seed %d: %v never installed a view without %v", spec, seed, id, crashed)
		}
		out = append(out, at.Sub(crashAt))
	}
	return out
}

// The cost of flush on a crash (issue 15): time from the crash to the new
// view at the application, with flush (specs/vsync.stack) and without (the
// same stack without vsync, specs/gms.stack), same seeds, six members each
// casting 100 messages a second. The failure detector dominates (about
// 0.57 s here); the flush adds a round of reports and the re-sends, about
// a millisecond on this 1 ms network (go test -v prints the figures).
func TestVsyncFlushCost(t *testing.T) {
	var on, off, worst time.Duration
	var k int
	for seed := uint64(1); seed <= 5; seed++ {
		a := crashToView(t, "../specs/vsync.stack", seed, 6, 10*time.Millisecond)
		b := crashToView(t, "../specs/gms.stack", seed, 6, 10*time.Millisecond)
		for i := range a {
			on += a[i]
			off += b[i]
			worst = max(worst, a[i]-b[i])
			k++
		}
	}
	on, off = on/time.Duration(k), off/time.Duration(k)
	msg := fmt.Sprintf("crash to new view at the application, mean over %d survivors: flush on %v, off %v (flush adds %v; worst survivor +%v)", k, on, off, on-off, worst)
	t.Log(msg)
	if on < off {
		t.Errorf("%s: the flush cannot make the view come sooner", msg)
	}
	if on-off > 200*time.Millisecond {
		t.Errorf("%s: the flush should add a round of messages, not %v", msg, on-off)
	}
}
