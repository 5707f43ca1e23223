package vsync_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/transport/sim"
)

var (
	v1 = &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3}, Joined: []event.NodeID{1, 2, 3}}
	v2 = &event.ViewInfo{Group: 1, ID: 2, Members: []event.NodeID{1, 2}, Left: []event.NodeID{3}}
)

func vsyncStack() func() []stack.Entry {
	return layertest.Registered(nil, "vsync", "fifo", "reliable")
}

// A sender's casts that reached one survivor and not another before the
// sender crashed are sent again by the survivor that has them: both move
// to the next view having delivered all of them (over fifo : reliable
// alone, n2 never gets them: reliable asks only the sender).
func TestFlushResendsFromSurvivor(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mk    func() []stack.Entry
		want2 int
	}{{"vsync", vsyncStack(), 10}, {"without vsync", layertest.Registered(nil, "fifo", "reliable"), 0}} {
		t.Run(tc.name, func(t *testing.T) {
			c := onlyN1Gets(t, tc.mk, 10)
			c.Install(v2)
			c.Net.Run(time.Second)
			if got := len(c.Got[1][1][3]); got != 10 {
				t.Fatalf("n1 delivered %d of n3's casts, want 10", got)
			}
			if got := len(c.Got[2][1][3]); got != tc.want2 {
				t.Errorf("n2 delivered %d of n3's casts, want %d", got, tc.want2)
			}
			if tc.want2 == 0 {
				return
			}
			if r := c.Counter("vsync", "resent", 1); r != 10 {
				t.Errorf("n1 re-sent %d, want 10", r)
			}
			if f := c.Counter("vsync", "flushes", 1, 2); f != 2 {
				t.Errorf("%d flushes, want 2 (one per survivor)", f)
			}
		})
	}
}

// While a view is being flushed the application is held off (casts get
// back-pressure, never dropped); once every survivor has reported, the view
// is installed and casting resumes.
func TestFlushBlocksCasts(t *testing.T) {
	c := layertest.New(t, sim.Config{Seed: 1, Latency: time.Millisecond}, 3, vsyncStack())
	c.Install(v1)
	c.Net.Run(10 * time.Millisecond)
	c.Net.Crash(3)
	c.Stacks[1].InstallView(v2) // n2 has not heard of it yet: n1 waits for its report
	c.Net.Run(100 * time.Millisecond)
	if !c.Held[1] {
		t.Fatalf("n1 is not held off during the flush")
	}
	if err := c.Stacks[1].Cast(1, layertest.Payload(1, 32)); !errors.Is(err, stack.ErrBackpressure) {
		t.Errorf("Cast during the flush = %v, want ErrBackpressure", err)
	}
	c.Stacks[2].InstallView(v2)
	c.Net.Run(time.Second)
	if c.Held[1] || c.Held[2] {
		t.Fatalf("held off after the flush: n1 %v, n2 %v", c.Held[1], c.Held[2])
	}
	if err := c.Stacks[1].Cast(1, layertest.Payload(1, 32)); err != nil {
		t.Fatalf("Cast after the flush = %v", err)
	}
	c.Net.Run(100 * time.Millisecond)
	if got := c.Got[2][1][1]; len(got) != 1 {
		t.Errorf("n2 delivered %v from n1, want [1]", got)
	}
}

// A survivor that re-sends a crashed sender's casts does not install the
// view before the others have them: should it be removed meanwhile, no
// member moves to the view having delivered more than another (soak seed
// 16: the re-sender froze, was removed, and came back to install the view
// with 6 casts its partner never got). n2 has all 10 of n3's casts, n1 the
// first 5; n2's re-sends never reach n1 and n2 crashes. n1 installs v2
// once v3 removes n2, without waiting for flush_timeout, and n2, which
// never heard that n1 had them, never installs v2.
func TestFlushResenderLostBeforeOthersHaveThem(t *testing.T) {
	dropping := false
	c := layertest.New(t, sim.Config{Seed: 1, Latency: time.Millisecond,
		Loss: layertest.DropWhen{Rx: map[event.NodeID]bool{1: true}, On: func() bool { return dropping }}}, 3, vsyncStack())
	c.Install(v1)
	c.Net.Run(10 * time.Millisecond)
	cast := c.Caster(3, 1)
	cast(5)
	c.Net.Run(10 * time.Millisecond)
	dropping = true
	cast(5)
	c.Net.Run(2 * time.Millisecond) // n2 has 10, n1 has 5
	c.Net.Crash(3)
	dropping = false
	c.Install(v2)
	// the reports cross (1 ms); n2 re-sends n3's last 5 to n1, which loses
	// them, and n2 crashes before recovering them for n1
	c.Net.Run(500 * time.Microsecond)
	dropping = true
	c.Net.Run(time.Millisecond)
	c.Net.Crash(2)
	c.Net.Run(100 * time.Millisecond)
	dropping = false
	c.Stacks[1].InstallView(&event.ViewInfo{Group: 1, ID: 3, Members: []event.NodeID{1}, Left: []event.NodeID{2}})
	c.Net.Run(time.Second)

	if got := len(c.Got[1][1][3]); got != 5 {
		t.Fatalf("n1 delivered %d of n3's casts, want 5", got)
	}
	if got := len(c.Got[2][1][3]); got != 10 {
		t.Fatalf("n2 delivered %d of n3's casts, want 10", got)
	}
	installed := func(id event.NodeID, v uint64) bool {
		return slices.ContainsFunc(c.Views[id], func(w *event.ViewInfo) bool { return w.ID == v })
	}
	if !installed(1, 2) || !installed(1, 3) {
		t.Fatalf("n1 saw views %v, want 2 and 3", c.Views[1])
	}
	if installed(2, 2) {
		t.Errorf("n2 installed view 2 having delivered 10 of n3's casts, n1 5: view synchrony broken")
	}
	if n := c.Counter("vsync", "flush_timeouts", 1); n != 0 {
		t.Errorf("n1 gave %d flushes up after flush_timeout, want 0 (the re-sender is gone, nobody has more)", n)
	}
}

// One survivor re-sends what others lack, however they report again: n1
// and n4 lack the last 5 of n5's casts, n2 (the lowest-numbered that has
// them) re-sends them; n1, once it has them, reports again, and does not
// re-send them to n4 as well (every member picks the re-sender from the
// first reports).
func TestFlushOneResender(t *testing.T) {
	c, all := lastCastsMissed(t, sim.Config{Seed: 1, Latency: time.Millisecond}, 5, map[event.NodeID]bool{1: true, 4: true})
	c.Install(&event.ViewInfo{Group: 1, ID: 2, Members: all[:4], Left: []event.NodeID{5}})
	c.Net.Run(time.Second)
	for _, id := range all[:4] {
		if got := len(c.Got[id][1][5]); got != 10 {
			t.Errorf("n%d delivered %d of n5's casts, want 10", id, got)
		}
		if !slices.ContainsFunc(c.Views[id], func(v *event.ViewInfo) bool { return v.ID == 2 }) {
			t.Errorf("n%d did not install view 2 (views %v)", id, c.Views[id])
		}
	}
	if r := c.Counter("vsync", "resent", 2); r != 5 {
		t.Errorf("n2 re-sent %d, want 5", r)
	}
	if r := c.Counter("vsync", "resent", 1, 3, 4); r != 0 {
		t.Errorf("n1, n3, n4 re-sent %d, want 0 (n2 does)", r)
	}
}

// A node the service removed and readmitted in one view gets that view
// under the number gms gave the view it handed up on learning of the
// removal (one past the view it held): n3 sees view 2 without itself,
// then view 2 with itself (Joined and Left), as n1 and n2 see it. It takes
// the second as its new view, and its casts go out and are delivered
// (soak seed 488: the second was dropped as no newer than the first, and
// the node's casts waited in the layer for good).
func TestReadmittedUnderTheNumberOfItsRemoval(t *testing.T) {
	c := layertest.New(t, sim.Config{Seed: 1, Latency: time.Millisecond}, 3, vsyncStack())
	c.Install(v1)
	c.Net.Run(10 * time.Millisecond)
	c.Stacks[3].InstallView(&event.ViewInfo{Group: 1, ID: 2, Members: []event.NodeID{1, 2}, Left: []event.NodeID{3}})
	c.Net.Run(10 * time.Millisecond)
	c.Install(&event.ViewInfo{Group: 1, ID: 2, Members: []event.NodeID{1, 2, 3}, Joined: []event.NodeID{3}, Left: []event.NodeID{3}})
	c.Net.Run(100 * time.Millisecond)
	if vs := c.Views[3]; len(vs) == 0 || !vs[len(vs)-1].Has(3) {
		t.Fatalf("n3's last view is not the one that readmits it (views %v)", vs)
	}
	c.Caster(3, 1)(5)
	c.Caster(1, 1)(5)
	c.Net.Run(time.Second)
	for _, id := range []event.NodeID{1, 2} {
		if got := len(c.Got[id][1][3]); got != 5 {
			t.Errorf("n%d delivered %d of n3's 5 casts after its readmission, want 5", id, got)
		}
	}
	if got := len(c.Got[3][1][1]); got != 5 {
		t.Errorf("n3 delivered %d of n1's 5 casts after its readmission, want 5", got)
	}
}

// Members that learn of a survivor's removal at different times still
// move to the next view having delivered the same. n1..n4 are in v1; the
// last 5 of n4's 10 casts reach only n3, and n4 crashes. v2 drops n4; v3,
// which drops n3, reaches n1 together with v2, and n2 only after n3
// crashed. n1 leaves n3 out of its cut at once and takes n2's first
// report (5 of n4's, like its own) as agreement; n2, not yet told, takes
// n3's report (10) and n3's re-sends of the last 5. Both install v2 after v1, so they
// must have delivered the same of n4's casts, and without flush_timeout
// (before the fix, n1 installed v2 with 5 and n2, after flush_timeout,
// with 10).
func TestFlushRemovalLearnedAtDifferentTimes(t *testing.T) {
	// n3 has 10 of n4's casts, n1 and n2 have 5.
	c, all := lastCastsMissed(t, sim.Config{Seed: 1, Latency: time.Millisecond}, 4, map[event.NodeID]bool{1: true, 2: true})
	w2 := &event.ViewInfo{Group: 1, ID: 2, Members: all[:3], Left: []event.NodeID{4}}
	w3 := &event.ViewInfo{Group: 1, ID: 3, Members: all[:2], Left: []event.NodeID{3}}
	c.Stacks[1].InstallView(w2)
	c.Stacks[1].InstallView(w3)
	c.Stacks[2].InstallView(w2)
	c.Stacks[3].InstallView(w2)
	// n1 has n2's report (5) after 1 ms; n3 has n1's and n2's, re-sends
	// n4's last 5 and n2 delivers them; n3 waits for n1 to have them
	c.Net.Run(100 * time.Millisecond)
	c.Net.Crash(3)
	c.Net.Run(50 * time.Millisecond)
	c.Stacks[2].InstallView(w3)
	c.Net.Run(10 * time.Second)

	for _, id := range all[:2] {
		vs := c.Views[id]
		i := slices.IndexFunc(vs, func(v *event.ViewInfo) bool { return v.ID == 2 })
		if i < 1 || vs[i-1].ID != 1 {
			t.Fatalf("n%d did not install view 2 right after view 1 (views %v)", id, vs)
		}
	}
	if got1, got2 := len(c.Got[1][1][4]), len(c.Got[2][1][4]); got1 != got2 {
		t.Errorf("n1 and n2 installed views 1 then 2 having delivered %d and %d of n4's casts: view synchrony broken", got1, got2)
	}
	if n := c.Counter("vsync", "flush_timeouts", 1, 2); n != 0 {
		t.Errorf("%d flushes given up after flush_timeout, want 0", n)
	}
}

// A member that learns of a survivor's removal after its partner
// installed the view does not wait for flush_timeout: the partner's last
// report for the view (sent before it counted the survivor as gone) says
// what it delivered for good, which its report for the next view shows.
// n1, n2, n3 flush to v2 (n4 crashed); n2 installs v2 on n1's and n3's
// first reports; v3, dropping n3, reaches n1 before n2's report, and n2
// only 100 ms later.
func TestFlushRemovalLearnedAfterPartnerInstalled(t *testing.T) {
	c := layertest.New(t, sim.Config{Seed: 1, Latency: time.Millisecond}, 4, vsyncStack())
	all := []event.NodeID{1, 2, 3, 4}
	c.Install(&event.ViewInfo{Group: 1, ID: 1, Members: all, Joined: all})
	c.Net.Run(10 * time.Millisecond)
	c.Caster(4, 1)(5)
	c.Caster(1, 1)(5)
	c.Net.Run(10 * time.Millisecond)
	c.Net.Crash(4)
	w2 := &event.ViewInfo{Group: 1, ID: 2, Members: all[:3], Left: []event.NodeID{4}}
	w3 := &event.ViewInfo{Group: 1, ID: 3, Members: all[:2], Left: []event.NodeID{3}}
	c.Install(w2)
	c.Net.Run(500 * time.Microsecond)
	c.Stacks[1].InstallView(w3)
	c.Net.Run(100 * time.Millisecond)
	c.Stacks[2].InstallView(w3)
	c.Net.Run(time.Second)
	for _, id := range all[:2] {
		vs := c.Views[id]
		if len(vs) != 3 || vs[1].ID != 2 || vs[2].ID != 3 {
			t.Fatalf("n%d installed views %v, want 1, 2, 3", id, vs)
		}
		if got := len(c.Got[id][1][4]); got != 5 {
			t.Errorf("n%d delivered %d of n4's casts, want 5", id, got)
		}
	}
	if n := c.Counter("vsync", "flush_timeouts", 1, 2); n != 0 {
		t.Errorf("%d flushes given up after flush_timeout, want 0", n)
	}
}

// The same race on random schedules: n5's last casts reach a random few
// of n1..n4 before n5 crashes; v2 (without n5) reaches each of them at a
// random time, and v3, which removes a random survivor r (crashed at a
// random time), reaches the others at random times after v2; in half the
// runs v4 removes a second survivor r2 the same way. Every two
// members that install v1 then v2 delivered the same of n5's casts, and
// no flush is given up after flush_timeout (before the fix, seeds 92 and
// 195 broke both; 16 of 1500 seeds did).
func TestFlushRemovalsLearnedAtRandomTimes(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 15))
		drop := map[event.NodeID]bool{}
		for id := event.NodeID(1); id <= 4; id++ {
			drop[id] = rng.IntN(2) == 0
		}
		c, all := lastCastsMissed(t, sim.Config{Seed: seed, Latency: time.Millisecond, Jitter: 500 * time.Microsecond}, 5, drop)
		// r is removed in v3, r2 (when not 0) in v4
		perm := rng.Perm(4)
		r, r2 := event.NodeID(1+perm[0]), event.NodeID(0)
		if rng.IntN(2) == 0 {
			r2 = event.NodeID(1 + perm[1])
		}
		w2 := &event.ViewInfo{Group: 1, ID: 2, Members: all[:4], Left: []event.NodeID{5}}
		w3 := &event.ViewInfo{Group: 1, ID: 3, Members: slices.DeleteFunc(slices.Clone(all[:4]), func(id event.NodeID) bool { return id == r }), Left: []event.NodeID{r}}
		w4 := &event.ViewInfo{Group: 1, ID: 4, Members: slices.DeleteFunc(slices.Clone(w3.Members), func(id event.NodeID) bool { return id == r2 }), Left: []event.NodeID{r2}}
		now := c.Net.Now()
		for _, id := range all[:4] {
			st := c.Stacks[id]
			at := now.Add(time.Duration(rng.IntN(3000)) * time.Microsecond)
			c.Net.At(at, func() { st.InstallView(w2) })
			if id == r {
				continue
			}
			at = at.Add(time.Duration(rng.IntN(150)) * time.Millisecond)
			c.Net.At(at, func() { st.InstallView(w3) })
			if r2 != 0 && id != r2 {
				c.Net.At(at.Add(time.Duration(rng.IntN(150))*time.Millisecond), func() { st.InstallView(w4) })
			}
		}
		removed := []event.NodeID{r}
		c.Net.At(now.Add(time.Duration(rng.IntN(100))*time.Millisecond), func() { c.Net.Crash(r) })
		if r2 != 0 {
			removed = append(removed, r2)
			c.Net.At(now.Add(time.Duration(rng.IntN(200))*time.Millisecond), func() { c.Net.Crash(r2) })
		}
		c.Net.Run(10 * time.Second)

		var movers []event.NodeID // installed v1 then v2
		for _, id := range all[:4] {
			vs := c.Views[id]
			if i := slices.IndexFunc(vs, func(v *event.ViewInfo) bool { return v.ID == 2 }); i >= 1 && vs[i-1].ID == 1 {
				movers = append(movers, id)
			}
		}
		for _, id := range movers[1:] {
			if a, b := len(c.Got[movers[0]][1][5]), len(c.Got[id][1][5]); a != b {
				t.Errorf("seed %d (%v removed later): n%d and n%d installed v1 then v2 having delivered %d and %d of n5's casts", seed, removed, movers[0], id, a, b)
			}
		}
		if n := c.Counter("vsync", "flush_timeouts", all[:4]...); n != 0 {
			t.Errorf("seed %d (%v removed later): %d flushes given up after flush_timeout, want 0", seed, removed, n)
		}
	}
}

// lastCastsMissed runs n vsync nodes under cfg (its Loss replaced) in group
// 1's first view: node n casts 5 that every member gets and 5 more that the
// nodes in missed do not, and crashes. It returns the cluster and the
// members of the view.
func lastCastsMissed(t *testing.T, cfg sim.Config, n int, missed map[event.NodeID]bool) (*layertest.Cluster, []event.NodeID) {
	t.Helper()
	dropping := false
	cfg.Loss = layertest.DropWhen{Rx: missed, On: func() bool { return dropping }}
	c := layertest.New(t, cfg, n, vsyncStack())
	var all []event.NodeID
	for id := 1; id <= n; id++ {
		all = append(all, event.NodeID(id))
	}
	c.Install(&event.ViewInfo{Group: 1, ID: 1, Members: all, Joined: all})
	c.Net.Run(10 * time.Millisecond)
	cast := c.Caster(event.NodeID(n), 1)
	cast(5)
	c.Net.Run(10 * time.Millisecond)
	dropping = true
	cast(5)
	c.Net.Run(2 * time.Millisecond)
	c.Net.Crash(event.NodeID(n))
	dropping = false
	return c, all
}

// flush_timeout gives up a flush that stopped moving, timed from its last
// progress: while old-view casts still arrive (a survivor catching up on a
// stream under overload) the flush is not given up. n2 never hears of v2
// and never reports; its casts reach n1 600 ms into n1's flush, so n1
// gives up 1 s after them, not 1 s after the flush began.
func TestFlushTimeoutFromLastProgress(t *testing.T) {
	mk := layertest.Registered(map[string]map[string]string{"vsync": {"flush_timeout": "1s"}}, "vsync", "fifo", "reliable")
	c := layertest.New(t, sim.Config{Seed: 1, Latency: time.Millisecond}, 3, mk)
	c.Install(v1)
	c.Net.Run(10 * time.Millisecond)
	c.Net.Crash(3)
	c.Stacks[1].InstallView(v2) // n2 never gets it: n1 waits for its report
	c.Net.Run(600 * time.Millisecond)
	c.Caster(2, 1)(3) // old-view casts: the flush moves
	installed := func() bool {
		return slices.ContainsFunc(c.Views[1], func(w *event.ViewInfo) bool { return w.ID == v2.ID })
	}
	c.Net.Run(500 * time.Millisecond) // 1.1 s into the flush, 0.5 s after its last progress
	if installed() || c.Counter("vsync", "flush_timeouts", 1) != 0 {
		t.Fatalf("n1 gave the flush up 0.5 s after old-view casts arrived (flush_timeouts %d), want it waiting 1 s", c.Counter("vsync", "flush_timeouts", 1))
	}
	c.Net.Run(600 * time.Millisecond) // 1.1 s after its last progress
	if !installed() {
		t.Fatalf("n1 saw views %v: a flush that stopped moving was not given up after flush_timeout", c.Views[1])
	}
	if n := c.Counter("vsync", "flush_timeouts", 1); n != 1 {
		t.Errorf("n1 gave %d flushes up, want 1", n)
	}
}

// A survivor still catching up on the old view for longer than
// flush_timeout keeps the members that agreed waiting for it: while
// old-view casts arrive to it, it reports again, which is their progress.
// n3 crashes after casting 30 that only n1 got; n2 takes packets in at 10
// a second, so n1's re-sends reach it over about 3 s, while n1 (flush_timeout
// 1 s) hears nothing else from it. Both must flush to v2 with every cast,
// none giving the flush up.
func TestFlushWaitsForSurvivorCatchingUp(t *testing.T) {
	mk := layertest.Registered(map[string]map[string]string{"vsync": {"flush_timeout": "1s"}}, "vsync", "fifo", "reliable")
	c := onlyN1Gets(t, mk, 30)
	c.Net.SetCapacity(2, sim.Capacity{RecvPPS: 10})
	c.Install(v2)
	c.Net.Run(20 * time.Second)
	for _, id := range []event.NodeID{1, 2} {
		if got := len(c.Got[id][1][3]); got != 30 {
			t.Errorf("n%v delivered %d of n3's casts, want 30", id, got)
		}
		if !slices.ContainsFunc(c.Views[id], func(w *event.ViewInfo) bool { return w.ID == v2.ID }) {
			t.Errorf("n%v did not install v2: views %v", id, c.Views[id])
		}
	}
	if n := c.Counter("vsync", "flush_timeouts", 1, 2); n != 0 {
		t.Errorf("%d flushes given up, want 0: n2 was still catching up", n)
	}
	if f := c.Counter("vsync", "flushes", 1, 2); f != 2 {
		t.Errorf("%d flushes, want 2 (one per survivor)", f)
	}
	if n := c.Counter("vsync", "catching_up_reports", 2); n == 0 {
		t.Errorf("n2 never reported again while catching up")
	}
	if ns := c.Counter("vsync", "flush_ns", 2); ns <= int64(time.Second) {
		t.Errorf("n2's flush took %v, want longer than flush_timeout (the case under test)", time.Duration(ns))
	}
}

// onlyN1Gets makes n1-n3 in view v1, has n3 cast n casts to group 1 that
// reach n1 and not n2, and crashes n3: the start of every test of a
// survivor's resend.
func onlyN1Gets(t *testing.T, mk func() []stack.Entry, n int) *layertest.Cluster {
	t.Helper()
	dropping := false
	c := layertest.New(t, sim.Config{Seed: 1, Latency: time.Millisecond,
		Loss: layertest.DropWhen{Rx: map[event.NodeID]bool{2: true}, On: func() bool { return dropping }}}, 3, mk)
	c.Install(v1)
	c.Net.Run(10 * time.Millisecond)
	dropping = true
	c.Caster(3, 1)(n)
	c.Net.Run(2 * time.Millisecond) // n1 has them, n2 lost them
	c.Net.Crash(3)
	dropping = false
	return c
}

// A member readmitted into a view that the others reach only after a long
// flush of their own waits for them in its next flush: their reports in
// that older flush, which it takes no part in, are its flush's progress
// too (soak replay seed 41: the readmitted member gave its flush up after
// flush_timeout while the others were still catching up, and installed
// the next view without agreement). n4 casts 30 that only n1 gets and
// crashes; v2 removes n3 and n4, and n2, taking 10 packets a second, gets
// n4's casts from n1 over about 3 s. v3 readmits n3, which installs it at
// once and casts 5 in it; v4 adds n5. n3's flush from v3 to v4 has n1 and
// n2 as survivors, which report for v4 only once done with v2 and v3:
// n3 (flush_timeout 1 s) must wait for them, and all three move from v3 to
// v4 having delivered n3's 5.
func TestReadmittedWaitsForOthersOlderFlush(t *testing.T) {
	mk := layertest.Registered(map[string]map[string]string{"vsync": {"flush_timeout": "1s"}}, "vsync", "fifo", "reliable")
	dropping := false
	c := layertest.New(t, sim.Config{Seed: 1, Latency: time.Millisecond,
		Loss: layertest.DropWhen{Rx: map[event.NodeID]bool{2: true, 3: true}, On: func() bool { return dropping }}}, 5, mk)
	w1 := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3, 4}, Joined: []event.NodeID{1, 2, 3, 4}}
	w2 := &event.ViewInfo{Group: 1, ID: 2, Members: []event.NodeID{1, 2}, Left: []event.NodeID{3, 4}}
	w3 := &event.ViewInfo{Group: 1, ID: 3, Members: []event.NodeID{1, 2, 3}, Joined: []event.NodeID{3}}
	w4 := &event.ViewInfo{Group: 1, ID: 4, Members: []event.NodeID{1, 2, 3, 5}, Joined: []event.NodeID{5}}
	c.Install(w1)
	c.Net.Run(10 * time.Millisecond)
	dropping = true
	c.Caster(4, 1)(30)
	c.Net.Run(2 * time.Millisecond) // n1 has them, n2 and n3 lost them
	c.Net.Crash(4)
	dropping = false
	c.Net.SetCapacity(2, sim.Capacity{RecvPPS: 10})
	c.Stacks[1].InstallView(w2)
	c.Stacks[2].InstallView(w2)
	c.Stacks[3].InstallView(w2) // n3 is told it was removed
	c.Net.Run(100 * time.Millisecond)
	c.Install(w3)
	c.Net.Run(100 * time.Millisecond)
	if vs := c.Views[3]; len(vs) == 0 || vs[len(vs)-1].ID != 3 {
		t.Fatalf("n3 did not install v3 on its readmission (views %v)", vs)
	}
	c.Caster(3, 1)(5)
	c.Net.Run(100 * time.Millisecond)
	c.Install(w4)
	// n2's link is slow until it has n4's casts (about 3 s)
	for i := 0; i < 100 && len(c.Got[2][1][4]) < 30; i++ {
		c.Net.Run(100 * time.Millisecond)
	}
	c.Net.SetCapacity(2, sim.Capacity{})
	c.Net.Run(10 * time.Second)

	for _, id := range []event.NodeID{1, 2, 3} {
		vs := c.Views[id]
		i := slices.IndexFunc(vs, func(v *event.ViewInfo) bool { return v.ID == 4 })
		if i < 1 || vs[i-1].ID != 3 {
			t.Fatalf("n%d did not install v4 right after v3 (views %v)", id, vs)
		}
		if got := len(c.Got[id][1][3]); id != 3 && got != 5 {
			t.Errorf("n%d delivered %d of n3's casts in v3, want 5", id, got)
		}
	}
	for _, id := range []event.NodeID{1, 2} {
		if got := len(c.Got[id][1][4]); got != 30 {
			t.Errorf("n%d delivered %d of n4's casts, want 30", id, got)
		}
	}
	if n := c.Counter("vsync", "flush_timeouts", 1, 2, 3); n != 0 {
		t.Errorf("%d flushes given up after flush_timeout, want 0 (n3 gave its up while n1 and n2 were still flushing to v2)", n)
	}
	if ns := c.Counter("vsync", "flush_ns", 3); ns <= int64(time.Second) {
		t.Errorf("n3's flush to v4 took %v, want longer than flush_timeout (the case under test)", time.Duration(ns))
	}
}
