package reliable

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/transport/sim"
)

// lossWindows loses every packet sent to one of a window's receivers
// within [from, to) (the simulator decides a loss when a packet leaves),
// and records when the first packet after the window left for it: the gap
// is discovered when that arrives, one latency later.
type lossWindows struct {
	net *sim.Network
	ws  []*lossWindow
}

type lossWindow struct {
	rx       map[event.NodeID]bool
	from, to event.Time
	found    map[event.NodeID]event.Time
}

func (lw *lossWindows) Drop(rx event.NodeID, _ *rand.Rand) bool {
	now := lw.net.Now()
	for _, w := range lw.ws {
		if !w.rx[rx] {
			continue
		}
		if now >= w.from && now < w.to {
			return true
		}
		if now >= w.to && w.found[rx] == 0 {
			w.found[rx] = now
		}
	}
	return false
}

// nakRun is node 1 casting 100 bytes every millisecond, for 400 ms, to
// receivers 2..n over a one-way latency lat while the windows lose what
// arrives; layers are each node's reliable. It steps the network by 10 µs
// and calls each after every step.
type nakRun struct {
	c      *layertest.Cluster
	layers map[event.NodeID]*Layer
	loss   *lossWindows
	sent   map[event.GroupID]map[event.NodeID]uint32
	v      *event.ViewInfo
}

func newNakRun(t *testing.T, seed uint64, n int, lat time.Duration, given map[string]string) *nakRun {
	r := &nakRun{layers: map[event.NodeID]*Layer{}, loss: &lossWindows{}, sent: map[event.GroupID]map[event.NodeID]uint32{}}
	id := event.NodeID(0)
	mk := kept(t, given, func(l *Layer) { id++; r.layers[id] = l })
	r.c = layertest.New(t, sim.Config{Seed: seed, Latency: lat, Loss: r.loss}, n, mk)
	r.loss.net = r.c.Net
	members := []event.NodeID{}
	for i := 1; i <= n; i++ {
		members = append(members, event.NodeID(i))
	}
	r.v = &event.ViewInfo{Group: 1, ID: 1, Members: members}
	r.c.Install(r.v)
	return r
}

// lose loses, at the given receivers, the cast sent at ms milliseconds
// (what is sent to them within 150 µs of it).
func (r *nakRun) lose(ms int, rx ...event.NodeID) *lossWindow {
	at := event.Time(time.Duration(ms) * time.Millisecond)
	w := &lossWindow{rx: map[event.NodeID]bool{}, from: at - event.Time(150*time.Microsecond), to: at + event.Time(150*time.Microsecond), found: map[event.NodeID]event.Time{}}
	for _, id := range rx {
		w.rx[id] = true
	}
	r.loss.ws = append(r.loss.ws, w)
	return w
}

// run casts and steps the network to the end, calling each after every
// 10 µs step.
func (r *nakRun) run(each func()) {
	r.c.CastLoop(1, 1, 400, time.Millisecond, 100, r.sent)
	for r.c.Net.Now() < event.Time(time.Second) {
		r.c.Net.RunUntil(r.c.Net.Now() + event.Time(10*time.Microsecond))
		each()
	}
	r.c.CheckExactlyOnce([]*event.ViewInfo{r.v}, r.sent, false)
}

// nakWatch records, per receiver, when each NAK it sent went out (to the
// 10 µs step).
func (r *nakRun) nakWatch() (func(), map[event.NodeID][]event.Time) {
	seen := map[event.NodeID]int64{}
	at := map[event.NodeID][]event.Time{}
	return func() {
		for id := range r.layers {
			if n := r.c.Counter("reliable", "naks_sent", id); n != seen[id] {
				seen[id] = n
				at[id] = append(at[id], r.c.Net.Now())
			}
		}
	}, at
}

// firstNakAfterGap returns when the first NAK after t went out.
func firstNakAfterGap(naks []event.Time, t event.Time) event.Time {
	for _, n := range naks {
		if n >= t {
			return n
		}
	}
	return 0
}

// TestFirstNakScalesWithRoundTrip: before the round trip to the sender is
// measured, a gap waits nak_delay (20 ms) for its first NAK; once a NAK's
// answer measured it (400 µs here), a gap waits between nak_delay_rtts and
// twice that many smoothed round trips, not 20 ms. On a long path it
// waits no longer than nak_delay however many round trips that is.
func TestFirstNakScalesWithRoundTrip(t *testing.T) {
	const step = event.Time(10 * time.Microsecond)
	for _, tc := range []struct {
		name string
		lat  time.Duration
	}{{"short path", 200 * time.Microsecond}, {"long path", 10 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newNakRun(t, 1, 3, tc.lat, map[string]string{"nak_delay": "20ms", "nak_delay_rtts": "2", "nak_delay_min": "100us"})
			first := r.lose(30, 2)  // no round trip measured yet
			later := r.lose(150, 2) // measured by the first
			watch, naks := r.nakWatch()
			var srtt time.Duration // node 2's to node 1 when the later gap was found
			r.run(func() {
				watch()
				if srtt == 0 && later.found[2] != 0 && r.c.Net.Now() >= later.found[2].Add(tc.lat) {
					srtt = r.layers[2].paths[1].SRTT()
				}
			})
			if first.found[2] == 0 || later.found[2] == 0 {
				t.Fatal("a loss window lost nothing")
			}
			gap0, gap := first.found[2].Add(tc.lat), later.found[2].Add(tc.lat) // discovered
			w0 := time.Duration(firstNakAfterGap(naks[2], gap0) - gap0)
			if w0 < 20*time.Millisecond-time.Duration(step) || w0 > 20*time.Millisecond+time.Duration(step) {
				t.Errorf("before any round trip: first NAK %v after the gap, want nak_delay (20ms)", w0)
			}
			w := time.Duration(firstNakAfterGap(naks[2], gap) - gap)
			t.Logf("srtt %v: first NAK %v after the gap (before any sample: %v)", srtt, w, w0)
			if srtt < 2*tc.lat || srtt > 2*tc.lat+time.Millisecond {
				t.Fatalf("measured round trip %v, want about %v", srtt, 2*tc.lat)
			}
			lo, hi := min(2*srtt, 20*time.Millisecond), min(4*srtt, 20*time.Millisecond)
			if w < lo-time.Duration(step) || w > hi+time.Duration(step) {
				t.Errorf("first NAK %v after the gap, want within [%v, %v] (2 to 4 round trips, at most nak_delay)", w, lo, hi)
			}
		})
	}
}

// TestFirstNakAfterDigestAnswer: a receiver that has not measured the
// round trip to a sender asks, in its digest (Q), for an answer at once
// and times it (A), so its first gap waits 2 to 4 of those round trips for
// its first NAK rather than nak_delay (20 ms), as after a NAK's answer.
// Node 2's first digest leaves at its gossip round (stable_interval,
// 100 ms); it loses the cast sent at 150 ms, its first loss.
func TestFirstNakAfterDigestAnswer(t *testing.T) {
	const lat = 200 * time.Microsecond
	const step = event.Time(10 * time.Microsecond)
	r := newNakRun(t, 1, 3, lat, map[string]string{"nak_delay": "20ms", "nak_delay_rtts": "2", "nak_delay_min": "100us"})
	w := r.lose(150, 2)
	watch, naks := r.nakWatch()
	var srtt time.Duration // node 2's to node 1 just before the loss
	r.run(func() {
		watch()
		if srtt == 0 && r.c.Net.Now() >= event.Time(149*time.Millisecond) {
			srtt = r.layers[2].paths[1].SRTT()
		}
	})
	if w.found[2] == 0 {
		t.Fatal("the loss window lost nothing")
	}
	if srtt < 2*lat || srtt > 2*lat+time.Millisecond {
		t.Fatalf("round trip before any NAK %v, want about %v (a digest and its answer)", srtt, 2*lat)
	}
	gap := w.found[2].Add(lat)
	got := time.Duration(firstNakAfterGap(naks[2], gap) - gap)
	if got < 2*srtt-time.Duration(step) || got > 4*srtt+time.Duration(step) {
		t.Errorf("first NAK %v after the gap, want within [%v, %v] (2 to 4 round trips timed by a digest's answer, not nak_delay)", got, 2*srtt, 4*srtt)
	}
}

// TestFirstNakSuppressed: when every receiver loses the same cast, the
// random part of the first NAK's wait lets the sender's multicast repair
// (made on the second NAK) reach the later receivers before they ask, so
// fewer NAKs than receivers go out, and the sender resends each message
// at most twice (a unicast to the first asker, one multicast for the
// rest). Without the random part every receiver asked at the same instant
// (150 NAKs for 10 losses at 15 receivers; with it 110).
func TestFirstNakSuppressed(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		suppressionRun(t, seed)
	}
}

func suppressionRun(t *testing.T, seed uint64) {
	const lat = 200 * time.Microsecond
	const receivers, shared = 15, 10
	r := newNakRun(t, seed, receivers+1, lat, map[string]string{"nak_delay": "20ms", "nak_delay_rtts": "2", "nak_delay_min": "100us"})
	all := []event.NodeID{}
	for i := 2; i <= receivers+1; i++ {
		all = append(all, event.NodeID(i))
		r.lose(20+2*i, event.NodeID(i)) // each measures its round trip
	}
	for k := range shared {
		r.lose(130+20*k, all...)
	}
	var naks0, retrans0 int64
	naks := func() int64 {
		n := int64(0)
		for _, id := range all {
			n += r.c.Counter("reliable", "naks_sent", id)
		}
		return n
	}
	measured := false
	r.run(func() {
		if !measured && r.c.Net.Now() >= event.Time(125*time.Millisecond) {
			measured = true
			naks0, retrans0 = naks(), r.c.Counter("reliable", "retransmissions", 1)
			for _, id := range all {
				if r.layers[id].paths[1].SRTT() == 0 {
					t.Fatalf("n%v has not measured its round trip by 125ms", id)
				}
			}
		}
	})
	gotNaks, gotRetrans := naks()-naks0, r.c.Counter("reliable", "retransmissions", 1)-retrans0
	t.Logf("seed %d: %d shared losses at %d receivers: %d NAKs, %d retransmissions", seed, shared, receivers, gotNaks, gotRetrans)
	if gotRetrans > 2*shared {
		t.Errorf("seed %d: %d retransmissions for %d shared losses, want at most 2 each", seed, gotRetrans, shared)
	}
	if gotNaks >= receivers*shared*9/10 {
		t.Errorf("seed %d: %d NAKs for %d losses shared by %d receivers, want fewer than 9/10 of one each: the repair multicast suppresses the later askers", seed, gotNaks, shared, receivers)
	}
}

// TestHeldDigestsPacedByGroupRoundTrip: a sender held off by a full buffer
// asks for digests every nak_retry (20 ms) until a NAK states the group's
// round trip, then every two of those (at least nak_retry_min, 1 ms), so
// the stability that lets it send again comes within a round trip or two,
// not 20 ms, on a fast path. A NAK stating a huge round trip (forged, or a
// bad path) slows it no further than nak_retry.
func TestHeldDigestsPacedByGroupRoundTrip(t *testing.T) {
	digestsIn := func(p *probe, d time.Duration) int64 {
		before := p.counter("stability_msgs")
		p.c.Net.Run(d)
		return p.counter("stability_msgs") - before
	}
	// within a simulator event, so the network asks the stack for its
	// timers afterwards
	nakT := func(p *probe, us uint32) {
		p.c.Net.At(p.c.Net.Now(), func() {
			p.inject(event.Send, 2, append([]byte{tNak}, p.wc.Encode(&nakMsg{G: 1, R: []uint32{1, 1}, T: us})...))
		})
		p.c.Net.Run(20 * time.Millisecond) // the digest already due at the old pace
	}
	p := newProbe(t, 4, map[string]string{"max_buffer": "300B"}) // 3 casts of 82 bytes fit, the 4th waits
	if p.counter("held_off") == 0 {
		t.Fatal("the sender was not held off")
	}
	p.c.Net.At(p.c.Net.Now(), func() { p.c.Stacks[1].Pump() }) // its gossip timer, set by a cast outside the simulator's events
	if n := digestsIn(p, 100*time.Millisecond); n < 4 || n > 6 {
		t.Fatalf("%d digests in 100ms while held with no round trip stated, want 5 (every nak_retry)", n)
	}
	nakT(p, 300) // 300 µs: every 1 ms (2 x 300 µs is below nak_retry_min)
	if n := digestsIn(p, 100*time.Millisecond); n < 90 || n > 110 {
		t.Errorf("%d digests in 100ms after a NAK stated a 300µs round trip, want about 100 (every 1ms)", n)
	}
	nakT(p, 4000) // 4 ms: the group's round trip rises at once, every 8 ms
	if n := digestsIn(p, 100*time.Millisecond); n < 11 || n > 14 {
		t.Errorf("%d digests in 100ms after a NAK stated 4ms, want about 12 (every 8ms)", n)
	}
	nakT(p, 10_000_000) // 10 s: bounded by nak_slow, and the pace by nak_retry
	if n := digestsIn(p, 100*time.Millisecond); n < 4 || n > 6 {
		t.Errorf("%d digests in 100ms after a NAK stated 10s, want 5 (never slower than nak_retry)", n)
	}
}

// TestP2PResendAfterMeasuredRoundTrip: a point-to-point send lost on a
// 400 µs round trip is sent again within a few milliseconds once acks
// have measured that round trip, not after p2p_timeout (50 ms). Node 1
// sends node 2 one message a millisecond; the one sent at 50 ms is lost.
func TestP2PResendAfterMeasuredRoundTrip(t *testing.T) {
	const lat = 200 * time.Microsecond
	r := newNakRun(t, 1, 2, lat, nil)
	w := r.lose(50, 2)
	for i := 1; i <= 100; i++ {
		r.c.Net.At(event.Time(time.Duration(i-1)*time.Millisecond), func() {
			if err := r.c.Stacks[1].Send(2, layertest.Payload(uint32(i), 100)); err != nil {
				t.Errorf("send %d: %v", i, err)
			}
		})
	}
	var got51 event.Time // when node 2 delivered the lost message (the 51st)
	for r.c.Net.Now() < event.Time(200*time.Millisecond) {
		r.c.Net.RunUntil(r.c.Net.Now() + event.Time(10*time.Microsecond))
		if got51 == 0 && len(r.c.Got[2][event.NoGroup][1]) > 50 {
			got51 = r.c.Net.Now()
		}
	}
	if w.found[2] == 0 {
		t.Fatal("the loss window lost nothing")
	}
	seqs := r.c.Got[2][event.NoGroup][1]
	if err := layertest.CheckSeqs(seqs, 100, true); err != nil {
		t.Fatalf("node 2 got %d sends: %v", len(seqs), err)
	}
	wait := time.Duration(got51 - event.Time(50*time.Millisecond))
	t.Logf("srtt %v: the send lost at 50ms delivered %v later", r.layers[1].peers[2].SRTT(), wait)
	if wait > 5*time.Millisecond {
		t.Errorf("the lost send was delivered %v after it was sent, want within 5ms (the measured round trip's timeout, not p2p_timeout)", wait)
	}
}

// TestNakRoundBeyondMaxRanges: a NAK round that finds more due gaps than
// one NAK lists (max_nak_ranges) sends as many NAKs as they need, within
// the round's ask limit, so every gap is asked for in the round it falls
// due. Receiver 3 loses six single casts while frozen; on thawing it
// finds all six gaps at once, due together nak_delay later. With
// max_nak_ranges=2, the round used to send one NAK for the first two and
// leave the other four for later rounds (nak_retry, 20 ms, apart): the
// last repair came 40 ms after the first. At 10% loss over UDP, where
// most gaps are single messages, that held a receiver to 32 repairs per
// round trip.
func TestNakRoundBeyondMaxRanges(t *testing.T) {
	const ms = event.Time(time.Millisecond)
	r := newNakRun(t, 1, 4, time.Millisecond, map[string]string{"max_nak_ranges": "2", "nak_delay_rtts": "0", "nak_delay": "20ms"})
	var ws []*lossWindow
	for k := range 6 {
		ws = append(ws, r.lose(100+2*k, 3))
	}
	r.c.Net.At(99*ms, func() { r.c.Net.Freeze(3, 15*time.Millisecond) })
	watch, naks := r.nakWatch()
	byNak, lastRepair := 0, event.Time(0)
	r.run(func() {
		watch()
		if r.c.ByNak != byNak {
			byNak, lastRepair = r.c.ByNak, r.c.Net.Now()
		}
	})
	for _, w := range ws {
		if w.found[3] == 0 {
			t.Fatal("a loss window lost nothing")
		}
	}
	first := firstNakAfterGap(naks[3], 114*ms) // the first round after the thaw
	sent := r.c.Counter("reliable", "naks_sent", 3)
	t.Logf("node 3: %d NAKs, the first round at %v; last repair delivered at %v; %d recovered by NAK", sent, first, lastRepair, byNak)
	if byNak != 6 {
		t.Fatalf("%d recovered by NAK, want 6", byNak)
	}
	// the round's NAKs leave at one instant; all six come back within a
	// round trip or two of it
	if sent < 3 {
		t.Errorf("node 3 sent %d NAKs, want at least 3 (six single gaps, two ranges per NAK)", sent)
	}
	if first == 0 || lastRepair > first+5*ms {
		t.Errorf("last repair at %v, %v after the first round's NAKs: want within 5ms (one round)", lastRepair, time.Duration(lastRepair-first))
	}
}

// TestAskLimitJudgedAfterRoundTrip: the ask limit falls to what the last
// round brought back only once its answers have had a measured round trip
// to come. A round that falls due sooner (a newer gap) found almost
// nothing back yet and cut the limit to minAsk, round after round, at 10%
// loss over UDP.
func TestAskLimitJudgedAfterRoundTrip(t *testing.T) {
	l := New(Config{MaxNakRetrans: 256})
	rs := &recvState{path: &path{}}
	rs.path.Sample(time.Millisecond)
	t0 := event.Time(time.Second)
	rs.ask, rs.asked, rs.askedAt = 256, 40, t0
	if got := l.askLimit(rs, 0, t0+event.Time(100*time.Microsecond)); got != 256 {
		t.Errorf("100us after a round of 40, nothing back yet: ask %d, want 256 (too early to judge)", got)
	}
	if got := l.askLimit(rs, 20, t0+event.Time(2*time.Millisecond)); got != 20 {
		t.Errorf("2 round trips after a round of 40, 20 back: ask %d, want 20", got)
	}
	rs.asked, rs.askedAt = 20, t0+event.Time(2*time.Millisecond)
	if got := l.askLimit(rs, 20, t0+event.Time(4*time.Millisecond)); got != 40 {
		t.Errorf("all 20 back: ask %d, want 40 (doubled)", got)
	}
}

// rxLoss loses a fraction of the packets arriving at each listed node.
type rxLoss map[event.NodeID]float64

func (l rxLoss) Drop(rx event.NodeID, r *rand.Rand) bool { return r.Float64() < l[rx] }

// TestNakCopiesFollowLoss: a receiver that measures nak_copies_loss (5%)
// or more on a sender's stream sends its NAKs in 2 copies and asks for 2
// copies of their repairs; one that loses less, or with nak_copies_loss=0,
// sends one. Node 2 loses 10% of what arrives, node 3 1%, node 4 nothing.
func TestNakCopiesFollowLoss(t *testing.T) {
	for _, tc := range []struct {
		param string
		want  map[event.NodeID]int
	}{
		{"0.05", map[event.NodeID]int{2: 2, 3: 1, 4: 1}},
		{"0", map[event.NodeID]int{2: 1, 3: 1, 4: 1}},
	} {
		t.Run("nak_copies_loss="+tc.param, func(t *testing.T) {
			layers := map[event.NodeID]*Layer{}
			id := event.NodeID(0)
			mk := kept(t, map[string]string{"nak_copies_loss": tc.param}, func(l *Layer) { id++; layers[id] = l })
			c := layertest.New(t, sim.Config{Seed: 1, Latency: 200 * time.Microsecond, Loss: rxLoss{2: 0.10, 3: 0.01}}, 4, mk)
			v := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3, 4}}
			c.Install(v)
			sent := map[event.GroupID]map[event.NodeID]uint32{}
			c.CastLoop(1, 1, 3000, 100*time.Microsecond, 100, sent)
			c.Net.RunUntil(event.Time(2 * time.Second))
			c.CheckExactlyOnce([]*event.ViewInfo{v}, sent, false)
			for rx, want := range tc.want {
				_, mb := layers[rx].lookup(1, 1)
				if mb == nil || mb.rs == nil {
					t.Fatalf("node %v has no stream from node 1", rx)
				}
				got := layers[rx].copies(mb.rs)
				t.Logf("node %v: loss %d/1000, %d copies, %d NAKs sent", rx, mb.rs.loss, got, c.Counter("reliable", "naks_sent", rx))
				if got != want {
					t.Errorf("node %v (loss %d/1000): %d copies, want %d", rx, mb.rs.loss, got, want)
				}
			}
			if tc.param != "0" && c.Counter("reliable", "duplicates", 2) == 0 {
				t.Error("node 2 got no second copy of any repair")
			}
		})
	}
}

// TestAskedCopiesLeaveApart: the second copy of each retransmission a NAK
// asks for (C=2, a receiver that measured nak_copies_loss) leaves copyGap
// after the first, not with it: a packing layer below would otherwise put
// both in one datagram, which one loss takes whole.
func TestAskedCopiesLeaveApart(t *testing.T) {
	p := newProbe(t, 3, nil)
	before := p.counter("retransmissions")
	p.c.Net.At(p.c.Net.Now(), func() {
		p.inject(event.Send, 2, append([]byte{tNak}, p.wc.Encode(&nakMsg{G: 1, R: []uint32{1, 3}, C: 2})...))
	})
	p.c.Net.Run(copyGap / 2)
	if n := p.counter("retransmissions") - before; n != 3 {
		t.Fatalf("%d retransmissions at once, want 3 (one copy of each)", n)
	}
	p.c.Net.Run(copyGap)
	if n := p.counter("retransmissions") - before; n != 6 {
		t.Errorf("%d retransmissions after copyGap, want 6 (the second copies)", n)
	}
}
