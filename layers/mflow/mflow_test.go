package mflow

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
)

// TestEfficiencyMatchesEquation3 checks the acknowledgements against
// equation 2 and the efficiency against equation 3 (within 2%), for three
// group sizes and three thresholds, staggered and not.
//
// Equation 2's tolerance, stated: each receiver acknowledges at the first
// message at or past offset + k*ack_thresh of the R bytes sent, so it sends
// floor((R - offset)/ack_thresh) acknowledgements: never more than R /
// ack_thresh (equation 2 per receiver), and less by under one for the
// unfinished last cycle plus offset/ack_thresh (under (n-2)/2 in all with
// stagger). A receiver that acknowledged every ack_thresh/2, or restarted
// its count after each acknowledgement (dropping the overshoot, so one
// every ack_thresh + size/2 or so), falls outside.
func TestEfficiencyMatchesEquation3(t *testing.T) {
	const size, msgs = 1000, 3000
	var table []string
	for _, stagger := range []bool{true, false} {
		for _, n := range []int{4, 10, 32} {
			for _, thresh := range []int64{5000, 12500, 25000} {
				cfg := EnsembleConfig()
				cfg.AckThresh = thresh
				cfg.Stagger = stagger
				c := newCluster(t, n, cfg, time.Millisecond)
				c.castEvery(1, size, msgs, time.Millisecond, 0)
				c.net.Run(msgs*time.Millisecond + 100*time.Millisecond)
				casts, acks := c.counter(1, "casts"), c.total("acks_sent")
				if casts != msgs || c.got != msgs*(n-1) {
					t.Fatalf("n=%d thresh=%d: casts %d, deliveries %d; want %d, %d", n, thresh, casts, c.got, msgs, msgs*(n-1))
				}
				weight := float64(size + cfg.Overhead)
				eq2 := AcksPerMsg(n, weight, float64(thresh)) * msgs
				lo := eq2 - float64(n-1) // the unfinished last cycles
				if stagger {
					lo -= float64(n-2) / 2 // the offsets: sum of r/(n-1), r < n-1
				}
				eff := float64(casts) / float64(casts+acks)
				want := Efficiency(n, weight, float64(thresh))
				table = append(table, fmt.Sprintf("stagger=%-5v n=%-2d ack_thresh=%-5d acks %5d (eq.2 %7.1f, allowed (%.1f, %.1f])  efficiency %.4f (eq.3 %.4f, %+.2f%%)",
					stagger, n, thresh, acks, eq2, lo, eq2, eff, want, 100*(eff-want)/want))
				if float64(acks) > eq2+1e-6 || float64(acks) <= lo {
					t.Errorf("stagger=%v n=%d ack_thresh=%d: %d acknowledgements for %d messages of %v weighted bytes; equation 2 gives %.1f, allowed (%.1f, %.1f]",
						stagger, n, thresh, acks, msgs, weight, eq2, lo, eq2)
				}
				if math.Abs(eff-want)/want > 0.02 {
					t.Errorf("n=%d ack_thresh=%d: efficiency %.4f, equation 3 gives %.4f (more than 2%% apart)", n, thresh, eff, want)
				}
				if w := c.counter(1, "credit_waits"); w != 0 {
					t.Errorf("n=%d ack_thresh=%d: %d casts waited for credit below capacity", n, thresh, w)
				}
			}
		}
	}
	t.Log("\n" + strings.Join(table, "\n"))
}

// maxIn sorts times and returns the most that fall in any window of d.
func maxIn(times []event.Time, d time.Duration) int {
	ts := slices.Clone(times)
	slices.Sort(ts)
	best, j := 0, 0
	for i := range ts {
		for ts[i]-ts[j] >= event.Time(d) {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}

// gapHistogram prints the distribution of gaps between consecutive times
// in 1 ms buckets.
func gapHistogram(times []event.Time) string {
	ts := slices.Clone(times)
	slices.Sort(ts)
	counts := map[int]int{}
	top := 0
	for i := 1; i < len(ts); i++ {
		b := int(time.Duration(ts[i]-ts[i-1]) / time.Millisecond)
		counts[b]++
		top = max(top, b)
	}
	var sb strings.Builder
	for b := 0; b <= top; b++ {
		if counts[b] > 0 {
			fmt.Fprintf(&sb, "  [%2d,%2d) ms: %d\n", b, b+1, counts[b])
		}
	}
	return sb.String()
}

// staggerRun is node 1 of four casting 2000 messages of 1000 bytes, one a
// millisecond, on a 1 ms link under a 30,000-byte window and ackThresh,
// run for d; the cluster's latencies come back sorted.
func staggerRun(t *testing.T, ackThresh int64, stagger bool, d time.Duration) *cluster {
	cfg := Config{Window: 30000, AckThresh: ackThresh, Overhead: 100, HiWmark: 100, Stagger: stagger}
	c := newCluster(t, 4, cfg, time.Millisecond)
	c.castEvery(1, 1000, 2000, time.Millisecond, 0)
	c.net.Run(d)
	slices.Sort(c.lat)
	return c
}

// TestStaggerSpreadsAcks is the paper's Figure 3 setting: 4 processes,
// ack_thresh 15 KB, window 30 KB, one sender multicasting 1 KB every
// millisecond. Without staggering the n-1 acknowledgements arrive together;
// with it they arrive one at a time, ack_thresh/(n-1) bytes apart, and the
// layer's own ack_burst_max and acks_crowded counters say so. Staggering
// costs no latency: with it every message is delivered as fast as without
// (p50 and max), and the sender never waits for credit.
func TestStaggerSpreadsAcks(t *testing.T) {
	type result struct {
		p50, max time.Duration
	}
	var res [2]result
	for k, stagger := range []bool{false, true} {
		c := staggerRun(t, 15000, stagger, 2100*time.Millisecond)
		acks := c.probes[1].ackTimes
		got := maxIn(acks, time.Millisecond)
		res[k] = result{c.lat[len(c.lat)/2], c.lat[len(c.lat)-1]}
		burst, crowded, recv := c.counter(1, "ack_burst_max"), c.counter(1, "acks_crowded"), c.counter(1, "acks_recv")
		t.Logf("stagger=%v: %d acks at the sender (acks_recv %d), at most %d within 1 ms (ack_burst_max %d), %d within 1 ms of another; latency p50 %v max %v; inter-ack gaps:\n%s",
			stagger, len(acks), recv, got, burst, crowded, res[k].p50, res[k].max, gapHistogram(acks))
		want := 1
		if !stagger {
			want = 3
		}
		if got != want || burst != int64(want) || recv != int64(len(acks)) {
			t.Errorf("stagger=%v: at most %d acks within 1 ms (ack_burst_max %d, acks_recv %d of %d), want %d", stagger, got, burst, recv, len(acks), want)
		}
		// Without stagger two of every three arrive with another.
		if wantCrowded := recv * int64(want-1) / int64(want); crowded < wantCrowded-1 || crowded > wantCrowded+1 {
			t.Errorf("stagger=%v: acks_crowded %d of %d, want %d", stagger, crowded, recv, wantCrowded)
		}
		if c.got != 3*2000 || len(c.lat) != 3*2000 {
			t.Errorf("stagger=%v: %d deliveries (%d timed), want %d", stagger, c.got, len(c.lat), 3*2000)
		}
		if w := c.counter(1, "credit_waits"); w != 0 {
			t.Errorf("stagger=%v: %d credit waits below equation 6's bound", stagger, w)
		}
	}
	if res[1].p50 > res[0].p50 || res[1].max > res[0].max {
		t.Errorf("staggering added latency: p50 %v, max %v with it; %v, %v without", res[1].p50, res[1].max, res[0].p50, res[0].max)
	}
	if res[1].max > 2*time.Millisecond {
		t.Errorf("stagger: max latency %v on a 1 ms link below equation 6's bound", res[1].max)
	}

	// Past equation 6's bound (ack_thresh 29,000 > 30,000 - 2 x 1 ms x
	// 1100 B x 1000/s = 27,800) the sender has to wait; staggering must
	// not make it wait more or deliver later (issue 13 item 7).
	var waits [2]int64
	for k, stagger := range []bool{false, true} {
		c := staggerRun(t, 29000, stagger, 2500*time.Millisecond)
		res[k] = result{c.lat[len(c.lat)/2], c.lat[len(c.lat)-1]}
		waits[k] = c.counter(1, "credit_waits")
		if c.got != 3*2000 {
			t.Errorf("ack_thresh 29000, stagger=%v: %d deliveries, want %d", stagger, c.got, 3*2000)
		}
	}
	t.Logf("ack_thresh 29000: stagger off: %d credit waits, latency p50 %v max %v; on: %d, p50 %v max %v",
		waits[0], res[0].p50, res[0].max, waits[1], res[1].p50, res[1].max)
	if waits[0] == 0 {
		t.Errorf("ack_thresh 29000: no credit waits without stagger: not past equation 6's bound")
	}
	if waits[1] > waits[0] || res[1].p50 > res[0].p50 || res[1].max > res[0].max {
		t.Errorf("ack_thresh 29000: staggering made it worse: %d credit waits, latency p50 %v max %v; without: %d, %v, %v",
			waits[1], res[1].p50, res[1].max, waits[0], res[0].p50, res[0].max)
	}
}

// TestBackpressureAndViewChanges: a receiver that stops (crashes) holds the
// sender back; its queue stays bounded and the application is held off;
// removing the receiver from the view drops its credit and lets the queue
// drain (Resume); a new receiver gets a full window; nothing deadlocks, and
// the O(1) rotation is back once everyone counts in the new view.
func TestBackpressureAndViewChanges(t *testing.T) {
	cfg := Config{Window: 30000, AckThresh: 15000, Overhead: 100, HiWmark: 10, Stagger: true}
	c := newCluster(t, 4, cfg, time.Millisecond)
	c.net.Crash(4)
	sent := c.castEvery(1, 1000, 3000, 200*time.Microsecond, 0)
	c.net.Run(200 * time.Millisecond)
	if c.holdOffs != 1 || c.flow[1] {
		t.Fatalf("a stopped receiver: %d hold-offs, flow ok=%v; want the application held off once", c.holdOffs, c.flow[1])
	}
	s := c.layers[1].send[c.g]
	if q := s.q.len(); q != cfg.HiWmark {
		t.Errorf("queue holds %d messages while held off, want hi_wmark %d", q, cfg.HiWmark)
	}
	stuck := *sent
	c.install([]event.NodeID{1, 2, 3}) // node 4 leaves
	c.net.Run(100 * time.Millisecond)
	if c.resumes != 1 || !c.flow[1] || *sent <= stuck {
		t.Fatalf("after the slow receiver left: %d resumes, flow ok=%v, sent %d (was %d)", c.resumes, c.flow[1], *sent, stuck)
	}
	if by := c.counter(1, "blocked_by:n4"); by < int64(150*time.Millisecond) {
		t.Errorf("blocked_by:n4 = %v, want the ~200ms the sender waited for it", time.Duration(by))
	}
	if b := c.counter(1, "blocks:n4"); b < 1 {
		t.Errorf("blocks:n4 = %d, want at least 1", b)
	}
	c.addNode(5, cfg)
	c.install([]event.NodeID{1, 2, 3, 5}) // node 5 joins mid-stream
	c.net.Run(2 * time.Second)
	if *sent != 3000 {
		t.Fatalf("sent %d of 3000 messages: deadlock after view changes", *sent)
	}
	for _, id := range []event.NodeID{2, 3, 5} {
		if c.delivered[id][1] != 3000 {
			t.Errorf("node %v delivered up to %d, want 3000", id, c.delivered[id][1])
		}
	}
	if !s.cr.fast || s.nTransit != 0 {
		t.Errorf("after the view changes settled: fast=%v, %d receivers in transit; want the O(1) rotation back", s.cr.fast, s.nTransit)
	}
	// Exact accounting across three views: for every receiver the sender's
	// limit is window plus what the receiver has taken in minus what it
	// counted and not yet returned; no credit leaked or was created.
	for i, n := range s.nodes {
		r := c.layers[n].recv[rkey{c.g, 1}]
		if want := exactLimit(c.layers[1], s.cr.sent, r); s.cr.limit[i] != want {
			t.Errorf("receiver %v: sender's limit %d, want window+sent-count-offset+headroom = %d", n, s.cr.limit[i], want)
		}
	}
	if n := c.total("bad_acks"); n != 0 {
		t.Errorf("%d genuine acknowledgements refused as implausible", n)
	}
	if q := c.counter(1, "queue_peak"); q > int64(cfg.HiWmark)+1 {
		t.Errorf("queue_peak = %d, want at most hi_wmark+1 = %d", q, cfg.HiWmark+1)
	}
}

// TestManyViewChanges: two senders keep multicasting while members leave
// (one in the middle of the rotation, so everyone's offset moves), join,
// and leave and come back. Nothing deadlocks, every member delivers in
// order, and each sender's credit for each receiver is exact at the end.
func TestManyViewChanges(t *testing.T) {
	cfg := EnsembleConfig()
	c := newCluster(t, 5, cfg, time.Millisecond)
	c.addNode(6, cfg)
	const msgs = 2500
	s1 := c.castEvery(1, 1000, msgs, 300*time.Microsecond, 0)
	s3 := c.castEvery(3, 1000, msgs, 400*time.Microsecond, event.Time(50*time.Microsecond))
	views := [][]event.NodeID{
		{1, 3, 4, 5},       // 2 leaves
		{1, 3, 4, 5, 6},    // 6 joins
		{1, 3, 5, 6},       // 4 leaves
		{1, 2, 3, 5, 6},    // 2 comes back
		{1, 2, 3, 4, 5, 6}, // 4 comes back
	}
	for i, v := range views {
		v := v
		c.net.At(event.Time(time.Duration(i+1)*90*time.Millisecond+time.Duration(i)*130*time.Microsecond), func() { c.install(v) })
	}
	c.net.Run(3 * time.Second)
	if *s1 != msgs || *s3 != msgs {
		t.Fatalf("sent %d and %d of %d: deadlock across view changes", *s1, *s3, msgs)
	}
	if n := c.total("bad_acks"); n != 0 {
		t.Errorf("%d genuine acknowledgements refused as implausible", n)
	}
	final := views[len(views)-1]
	for _, sid := range []event.NodeID{1, 3} {
		s := c.layers[sid].send[c.g]
		if !s.cr.fast || s.nTransit != 0 {
			t.Errorf("sender %v: fast=%v, %d in transit after the views settled", sid, s.cr.fast, s.nTransit)
		}
		for i, n := range s.nodes {
			r := c.layers[n].recv[rkey{c.g, sid}]
			if want := exactLimit(c.layers[1], s.cr.sent, r); s.cr.limit[i] != want {
				t.Errorf("sender %v receiver %v: limit %d, want window+sent-count-offset+headroom = %d", sid, n, s.cr.limit[i], want)
			}
		}
		for _, id := range final {
			if id != sid && c.delivered[id][sid] != msgs {
				t.Errorf("node %v delivered up to %d from %v, want %d", id, c.delivered[id][sid], sid, msgs)
			}
		}
	}
}

// TestLargeMessages: messages larger than window - ack_thresh could never
// fit in the credit left once the least-credited receiver stops
// acknowledging; each leaves as soon as that receiver has less than
// ack_thresh outstanding, so nothing deadlocks.
func TestLargeMessages(t *testing.T) {
	cfg := EnsembleConfig()
	c := newCluster(t, 4, cfg, time.Millisecond)
	sent := c.castEvery(1, 40000, 200, time.Millisecond, 0)
	c.net.Run(2 * time.Second)
	if *sent != 200 || c.got != 3*200 {
		t.Fatalf("sent %d, delivered %d of 40 KB messages; want 200, 600", *sent, c.got)
	}
}

// TestMalformedInput feeds random and truncated mflow headers from below:
// each is dropped and counted, nothing panics, and the layer keeps working.
func TestMalformedInput(t *testing.T) {
	c := newCluster(t, 3, EnsembleConfig(), time.Millisecond)
	st := c.stacks[1]
	inputs := [][]byte{nil, {}, {tagData}, {tagData, 0, 0}, {tagAck}, {tagAck, 1, 2, 3}, {0}, {99, 1, 2}, make([]byte, ackSize+3)}
	inputs[len(inputs)-1][0] = tagAck
	for i := 0; i < 200; i++ {
		b := make([]byte, 1+i%30)
		for j := range b {
			b[j] = byte(i*31 + j*7)
		}
		// Keep them malformed: a bad tag, an ack of the wrong length, or
		// a data header cut short (a valid header is not malformed).
		switch i % 3 {
		case 0:
			b[0] = byte(4 + i%250)
		case 1:
			b[0] = tagAck
			if len(b) == ackSize {
				b = b[:5]
			}
		case 2:
			b[0] = tagData
			b = b[:min(len(b), dataHeaderSize-1)]
		}
		inputs = append(inputs, b)
	}
	for _, in := range inputs {
		for _, k := range []event.Kind{event.Cast, event.Send} {
			st.Inject(st.NumLayers()-1, true, event.Event{Kind: k, Group: c.g, Peer: 2, Msg: st.Layer(0).(*Layer).Ctx.Pool().FromBytes(in)})
		}
	}
	if c.counter(1, "malformed") == 0 {
		t.Fatal("no malformed input counted")
	}
	c.castEvery(1, 100, 10, time.Millisecond, c.net.Now())
	c.net.Run(100 * time.Millisecond)
	if c.delivered[2][1] != 10 || c.delivered[3][1] != 10 {
		t.Fatalf("after malformed input: delivered %d and %d of 10", c.delivered[2][1], c.delivered[3][1])
	}
}

// TestBackpressureFromBelow: a layer below (reliable, when its
// retransmission buffer is full) holds the group off. mflow then sends
// nothing down and queues; the application hears one HoldOff and one
// Resume for mflow's and the lower layer's holds together.
func TestBackpressureFromBelow(t *testing.T) {
	cfg := EnsembleConfig()
	cfg.HiWmark = 5
	c := newCluster(t, 3, cfg, time.Millisecond)
	st := c.stacks[1]
	c.net.At(0, func() { st.Inject(st.NumLayers()-1, true, event.Event{Kind: event.HoldOff, Group: c.g}) })
	sent := c.castEvery(1, 100, 50, 100*time.Microsecond, event.Time(time.Microsecond))
	c.net.Run(20 * time.Millisecond)
	if c.got != 0 || c.counter(1, "casts") != 0 {
		t.Fatalf("held off from below, mflow sent %d casts (%d delivered)", c.counter(1, "casts"), c.got)
	}
	if c.holdOffs != 1 || *sent != 0 {
		t.Fatalf("held off from below: app saw %d hold-offs and cast %d; want 1 and 0", c.holdOffs, *sent)
	}
	c.net.At(c.net.Now(), func() { st.Inject(st.NumLayers()-1, true, event.Event{Kind: event.Resume, Group: c.g}) })
	c.net.Run(10 * time.Millisecond)
	c.net.Run(100 * time.Millisecond)
	if *sent != 50 || c.delivered[2][1] != 50 || c.delivered[3][1] != 50 {
		t.Fatalf("after Resume from below: cast %d, delivered %d/%d of 50", *sent, c.delivered[2][1], c.delivered[3][1])
	}
	if c.resumes != 1 || c.holdOffs != 1 {
		t.Fatalf("app saw %d hold-offs and %d resumes, want 1 and 1", c.holdOffs, c.resumes)
	}
	// Both hold: mflow's queue past hi_wmark (node 3 stops) and the layer
	// below; the app is released only when both let go.
	c.net.Crash(3)
	c.castEvery(1, 1000, 200, 100*time.Microsecond, c.net.Now())
	c.net.Run(50 * time.Millisecond)
	if c.holdOffs != 2 || c.flow[1] {
		t.Fatalf("node 3 stopped: %d hold-offs, flow %v; want mflow to hold the app off", c.holdOffs, c.flow[1])
	}
	c.net.At(c.net.Now(), func() { st.Inject(st.NumLayers()-1, true, event.Event{Kind: event.HoldOff, Group: c.g}) })
	c.net.Run(time.Millisecond)
	c.install([]event.NodeID{1, 2}) // mflow's hold ends; the lower one stays
	c.net.Run(10 * time.Millisecond)
	if c.flow[1] || c.resumes != 1 {
		t.Fatalf("mflow let go while the layer below holds: flow %v, %d resumes", c.flow[1], c.resumes)
	}
	c.net.At(c.net.Now(), func() { st.Inject(st.NumLayers()-1, true, event.Event{Kind: event.Resume, Group: c.g}) })
	c.net.Run(time.Second)
	if !c.flow[1] || c.resumes != 2 || c.delivered[2][1] != 250 {
		t.Fatalf("both let go: flow %v, %d resumes, node 2 delivered %d of 250", c.flow[1], c.resumes, c.delivered[2][1])
	}
}

// TestIdleSendsNothing: mflow is event driven. It sets no timers, and once
// the application stops casting (and the last acknowledgements are in) not
// one packet more is sent.
func TestIdleSendsNothing(t *testing.T) {
	c := newCluster(t, 5, EnsembleConfig(), time.Millisecond)
	c.castEvery(1, 1000, 500, time.Millisecond, 0)
	c.net.Run(600 * time.Millisecond)
	before := c.net.Stats().Sent
	c.net.Run(10 * time.Second)
	if after := c.net.Stats().Sent; after != before {
		t.Errorf("%d packets sent while no application sent", after-before)
	}
	for _, id := range c.ids {
		if next := c.stacks[id].Next(); next != event.Never {
			t.Errorf("node %v has a timer set for %v", id, next)
		}
	}
}
