package experiment

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// owedRig is a collector for 3 nodes in one group g1 = {n1, n2, n3}, fed by
// hand.
type owedRig struct {
	t   *testing.T
	c   *Collector
	buf []byte
	now event.Time
}

func newOwedRig(t *testing.T) *owedRig {
	sc := Default()
	sc.Nodes, sc.GroupsPerNode, sc.GroupSize = 3, 1, 3
	a, err := Assign(sc)
	if err != nil {
		t.Fatal(err)
	}
	return &owedRig{t: t, c: NewCollector(sc, a), buf: make([]byte, PayloadHeader)}
}

// start has every node install view 1 of g1, with every node joined.
func (r *owedRig) start() {
	for _, n := range all {
		r.view(n, 1, all, all, nil)
	}
}

// finish is the collector's report, the run ending now.
func (r *owedRig) finish() *Report { return r.c.Finish(Outcome{End: r.tick()}) }

// wantNote fails the test unless one of rep's notes holds note; what says
// what the note should name.
func (r *owedRig) wantNote(rep *Report, note, what string) {
	r.t.Helper()
	if !hasNote(rep, note) {
		r.t.Errorf("notes %q do not name %s", rep.Notes, what)
	}
}

// wantMissing fails the test unless rep counts missing deliveries owed,
// explained of them and unexplained.
func (r *owedRig) wantMissing(rep *Report, missing, explained, unexplained int64) {
	r.t.Helper()
	if rep.Missing != missing || rep.MissingExplained != explained || rep.MissingUnexplained != unexplained {
		r.t.Errorf("missing %d explained %d unexplained %d, want %d %d %d (%q)", rep.Missing, rep.MissingExplained, rep.MissingUnexplained, missing, explained, unexplained, rep.Notes)
	}
}

func (r *owedRig) tick() event.Time { r.now += event.Time(time.Millisecond); return r.now }

func (r *owedRig) view(n event.NodeID, id uint64, members, joined, left []event.NodeID) {
	r.c.View(n, &event.ViewInfo{Group: 1, ID: id, Members: members, Joined: joined, Left: left}, r.tick())
}

func (r *owedRig) cast(from, to uint64) {
	for i := from; i < to; i++ {
		r.c.Sent(1, 1, i)
	}
}

func (r *owedRig) deliver(rx event.NodeID, idx ...uint64) {
	for _, i := range idx {
		PutStamp(r.buf, Stamp{Sender: 1, Group: 1, Index: i})
		r.c.Delivered(rx, &stack.Delivery{Group: 1, From: 1, Payload: r.buf}, r.tick())
	}
}

func span(a, b uint64) []uint64 {
	var out []uint64
	for i := a; i < b; i++ {
		out = append(out, i)
	}
	return out
}

var (
	all  = []event.NodeID{1, 2, 3}
	no2  = []event.NodeID{1, 3}
	only = func(n ...event.NodeID) []event.NodeID { return n }
)

// TestCollectorRejoin is issue 8 item 6: n2 is removed from g1 and
// readmitted. What n1 cast while n2 was out of its view is not owed to n2;
// what n2 had not delivered when it was removed is explained by the
// removal, not counted as unexplained; n2's deliveries after its rejoin
// start a new FIFO sequence (the skip over the removal is no violation); a
// message delivered again after the rejoin is still a duplicate.
func TestCollectorRejoin(t *testing.T) {
	r := newOwedRig(t)
	r.start()
	r.cast(0, 5)
	r.deliver(2, 0, 1)
	r.view(2, 2, no2, nil, only(2)) // n2 learns it was removed (R1)
	r.view(1, 2, no2, nil, only(2))
	r.view(3, 2, no2, nil, only(2))
	r.cast(5, 7) // n2 is out of n1's view: not owed to n2
	r.view(1, 3, all, only(2), nil)
	r.view(3, 3, all, only(2), nil)
	r.view(2, 3, all, only(2), nil) // n2 readmitted
	r.cast(7, 10)
	r.deliver(2, 7, 8, 9)
	r.deliver(3, span(0, 10)...)
	rep := r.finish()
	if rep.FIFOViolations != 0 || rep.Duplicates != 0 {
		t.Errorf("fifo %d, duplicates %d, want 0 and 0: a rejoin restarts the sequence", rep.FIFOViolations, rep.Duplicates)
	}
	// Owed: n2 0-4 and 7-9 (8), n3 0-9 (10).
	if rep.DeliveriesExpected != 18 || rep.DeliveriesOfExpected != 15 || rep.Missing != 3 || rep.Deliveries != 15 {
		t.Errorf("owed %d made %d missing %d deliveries %d, want 18 15 3 15", rep.DeliveriesExpected, rep.DeliveriesOfExpected, rep.Missing, rep.Deliveries)
	}
	if rep.MissingExplained != 3 || rep.MissingUnexplained != 0 || !hasNote(rep, "removal from g1") {
		t.Errorf("explained %d unexplained %d, want 3 and 0 (notes %q)", rep.MissingExplained, rep.MissingUnexplained, rep.Notes)
	}
	if len(rep.Broken) != 0 {
		t.Errorf("broken %q, want none", rep.Broken)
	}
	// Not owed but delivered (late): fine, counted apart, no violation.
	r.deliver(2, 5)
	// Delivered before the removal and again after the rejoin: duplicate.
	r.deliver(2, 1)
	// An owed message from before the removal after the rejoin's: below
	// one delivered since the rejoin, a FIFO violation.
	r.deliver(2, 4)
	rep = r.finish()
	if rep.NotOwed != 1 || rep.Duplicates != 1 || rep.FIFOViolations != 1 || rep.Missing != 2 {
		t.Errorf("not owed %d, duplicates %d, fifo %d, missing %d, want 1 1 1 2", rep.NotOwed, rep.Duplicates, rep.FIFOViolations, rep.Missing)
	}
}

// TestCollectorRejoinUnexplained: after the rejoin, a message n1 cast under
// the readmitting view that n2 never gets is unexplained.
func TestCollectorRejoinUnexplained(t *testing.T) {
	r := newOwedRig(t)
	r.start()
	r.cast(0, 3)
	r.deliver(2, 0, 1, 2)
	r.view(2, 2, all, only(2), only(2)) // removal and rejoin in one batch (R2)
	r.view(1, 2, all, only(2), only(2))
	r.view(3, 2, all, only(2), only(2))
	r.cast(3, 6)
	r.deliver(2, 3, 5)
	r.deliver(3, span(0, 6)...)
	rep := r.finish()
	if rep.Missing != 1 || rep.MissingUnexplained != 1 || rep.FIFOViolations != 0 {
		t.Errorf("missing %d unexplained %d fifo %d, want 1 1 0 (%q)", rep.Missing, rep.MissingUnexplained, rep.FIFOViolations, rep.Notes)
	}
	r.wantNote(rep, "most at n2 from n1 in g1 (1)", "the receiver, sender and group")
	rep.Promises = []string{"reliable"}
	if b := brokenPromises(rep); len(b) != 1 || !strings.Contains(b[0], "1 owed deliveries missing") {
		t.Errorf("broken %q, want the missing delivery", b)
	}
}

// TestCollectorNeverSent: casts a stack accepted but never handed to the
// network are counted apart; with static membership and a crashed member
// the report says why the sender held them.
func TestCollectorNeverSent(t *testing.T) {
	for _, crash := range []bool{true, false} {
		r := newOwedRig(t)
		r.c.TrackSends()
		r.start()
		r.cast(0, 10)
		r.c.LeftStack(1, 1, 5) // 0-5 left n1's stack; 6-9 still queued
		r.deliver(2, span(0, 6)...)
		r.deliver(3, span(0, 4)...)
		o := Outcome{End: r.tick(), StaticMembership: true, Faults: []Fault{{Kind: FaultCrash, Node: 3, At: 2}}}
		if crash {
			o.Alive = func(n event.NodeID) bool { return n != 3 }
		} else {
			o.Faults = nil
		}
		rep := r.c.Finish(o)
		if rep.NeverSent == nil || *rep.NeverSent != 4 {
			t.Fatalf("never sent %v, want 4", rep.NeverSent)
		}
		if crash {
			if rep.Missing != 4 || rep.MissingNeverSent != 4 || rep.MissingExplained != 4 || rep.MissingUnexplained != 0 {
				t.Errorf("crash: missing %d never sent %d explained %d unexplained %d, want 4 4 4 0", rep.Missing, rep.MissingNeverSent, rep.MissingExplained, rep.MissingUnexplained)
			}
			if !hasNote(rep, "n3 crashed and static membership keeps it: senders held off") {
				t.Errorf("notes %q do not say why", rep.Notes)
			}
			continue
		}
		// n3 is alive and was owed 4-9 as well: 4 sent and lost, 6 never sent.
		if rep.Missing != 10 || rep.MissingNeverSent != 8 || rep.MissingUnexplained != 10 {
			t.Errorf("no crash: missing %d never sent %d unexplained %d, want 10 8 10", rep.Missing, rep.MissingNeverSent, rep.MissingUnexplained)
		}
	}
}

// TestCollectorFaultsInForce: a partition not healed and a freeze past the
// end explain what they kept from the receivers; a healed partition does
// not.
func TestCollectorFaultsInForce(t *testing.T) {
	for _, c := range []struct {
		name   string
		faults []Fault
		frozen event.NodeID
		want   string
	}{
		{"partition", []Fault{{Kind: FaultPartition, At: 1, Sets: [][]event.NodeID{{2}}}}, 0, "partition at"},
		{"healed", []Fault{{Kind: FaultPartition, At: 1, Sets: [][]event.NodeID{{2}}}, {Kind: FaultHeal, At: 2}}, 0, ""},
		{"freeze", nil, 2, "n2 frozen past the end"},
	} {
		r := newOwedRig(t)
		r.cast(0, 4)
		r.deliver(3, span(0, 4)...)
		r.deliver(2, 0)
		o := Outcome{End: r.tick(), Faults: c.faults}
		if c.frozen != 0 {
			o.Frozen = func(n event.NodeID) bool { return n == c.frozen }
			o.Alive = func(n event.NodeID) bool { return n != c.frozen }
		}
		rep := r.c.Finish(o)
		if rep.Missing != 3 {
			t.Fatalf("%s: missing %d, want 3", c.name, rep.Missing)
		}
		if c.want == "" {
			if rep.MissingUnexplained != 3 {
				t.Errorf("%s: unexplained %d, want 3", c.name, rep.MissingUnexplained)
			}
			continue
		}
		if rep.MissingExplained != 3 || !hasNote(rep, c.want) {
			t.Errorf("%s: explained %d, want 3 with a note %q (%q)", c.name, rep.MissingExplained, c.want, rep.Notes)
		}
	}
}

// TestScenarioFlagsRoundTrip: the replay command's flags give back the
// scenario.
func TestScenarioFlagsRoundTrip(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		sc := SoakScenario(seed, seed%2 == 0)
		back := Default()
		for _, kv := range sc.Flags() {
			if err := back.Set(strings.TrimPrefix(kv[0], "--"), kv[1]); err != nil {
				t.Fatalf("seed %d: %s %s: %v", seed, kv[0], kv[1], err)
			}
		}
		if back.Describe() != sc.Describe() || !slices.Equal(back.Faults, sc.Faults) {
			t.Errorf("seed %d: flags give %q, want %q", seed, back.Describe(), sc.Describe())
		}
		if err := sc.Check(); err != nil {
			t.Errorf("seed %d: soak scenario invalid: %v", seed, err)
		}
	}
	if got := shellQuote("partition:1,2|3@1s"); got != "'partition:1,2|3@1s'" {
		t.Errorf("shellQuote = %s", got)
	}
}

func hasNote(r *Report, s string) bool {
	return slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, s) })
}

// TestCollectorSenderRemoved: the sender n1 learns it was removed (R1)
// after casting 0-4 while n3, which never saw n1 leave (it missed the views
// that removed and readmitted it), had 0-2: n1 dropped its own stream, so 3
// and 4 are explained by n1's removal. A cast after n1's readmission that
// n3 lacks stays unexplained.
func TestCollectorSenderRemoved(t *testing.T) {
	r := newOwedRig(t)
	r.start()
	r.cast(0, 5)
	r.deliver(2, span(0, 5)...)
	r.deliver(3, 0, 1, 2)
	r.view(1, 2, only(2, 3), nil, only(1)) // n1 learns it was removed (R1)
	r.view(2, 2, only(2, 3), nil, only(1))
	r.view(1, 3, all, only(1), nil)
	r.view(2, 3, all, only(1), nil)
	r.view(3, 3, all, nil, nil) // n3 skipped view 2
	r.cast(5, 7)
	r.deliver(2, 5, 6)
	r.deliver(3, 5)
	rep := r.finish()
	r.wantMissing(rep, 3, 2, 1)
	r.wantNote(rep, "cast before n1 learned of its removal from g1: its own stream was dropped (2)", "the sender's removal")
}

// TestCollectorCollapsedViews: n2 is removed and readmitted (its own views)
// while n1, cut off, still casts 0-3 under view 1; n1 then installs views 2
// (n2 out), 3 (n2 back) and 4 before casting again. n2 takes n1's view-1
// casts as not owed (R3), so their absence is explained by n1's removal of
// n2, though the view right after the casts (4) no longer names n2.
func TestCollectorCollapsedViews(t *testing.T) {
	r := newOwedRig(t)
	r.start()
	r.view(2, 2, no2, nil, only(2))     // n2 learns it was removed (R1)
	r.view(2, 3, all, only(2), nil)     // and is readmitted
	r.view(3, 4, all, only(3), only(3)) // n3's views go on
	r.cast(0, 4)
	r.deliver(3, span(0, 4)...)
	r.view(1, 2, no2, nil, only(2))
	r.view(1, 3, all, only(2), nil)
	r.view(1, 4, all, only(3), only(3))
	r.cast(4, 6)
	r.deliver(2, 4, 5)
	r.deliver(3, 4, 5)
	rep := r.finish()
	r.wantMissing(rep, 4, 4, 0)
	r.wantNote(rep, "cast just before n1 removed n2 from g1", "n1's removal of n2")
}

// TestCollectorNeverSentSenderRemoved: n1 casts 0-4, of which 3 and 4 never
// leave its stack, and then learns it was removed (and is readmitted): its
// stack dropped its own stream, unsent casts with it, so they are
// explained as casts sent and lost are (TestCollectorSenderRemoved). A cast
// after the readmission that never left the stack stays unexplained.
func TestCollectorNeverSentSenderRemoved(t *testing.T) {
	r := newOwedRig(t)
	r.c.TrackSends()
	r.start()
	r.cast(0, 5)
	r.c.LeftStack(1, 1, 2)
	r.deliver(2, 0, 1, 2)
	r.deliver(3, 0, 1, 2)
	r.view(1, 2, only(2, 3), nil, only(1)) // n1 learns it was removed (R1)
	r.view(2, 2, only(2, 3), nil, only(1))
	r.view(3, 2, only(2, 3), nil, only(1))
	r.view(1, 3, all, only(1), nil)
	r.view(2, 3, all, only(1), nil)
	r.view(3, 3, all, only(1), nil)
	r.cast(5, 6)
	rep := r.finish()
	if rep.MissingNeverSent != 6 || rep.MissingExplained != 4 || rep.MissingUnexplained != 2 {
		t.Errorf("never sent %d explained %d unexplained %d, want 6 4 2 (%q)", rep.MissingNeverSent, rep.MissingExplained, rep.MissingUnexplained, rep.Notes)
	}
	r.wantNote(rep, "cast before n1 learned of its removal from g1: its own stream was dropped (4)", "the sender's removal")
}

// TestCollectorStaleSenderView is soak seed 474 of specs/gms.stack: the
// service removes n3 (view 2), then n2 (view 3), and readmits both (view
// 4), which n2 and n3 install, while n1, slow to get views, still casts 3-7
// under view 1 after their readmission. n1 then installs view 2 (n3 out),
// casts 8, and installs views 3 and 4. n2 and n3 take n1's casts of views
// older than the one that readmitted them as not owed (R3): their absence
// is explained though the view right after 3-7 (2) leaves n2 in, and a
// cast after the readmission under the readmitting view (9) that n2 lacks
// stays unexplained.
func TestCollectorStaleSenderView(t *testing.T) {
	r := newOwedRig(t)
	r.start()
	r.cast(0, 3)
	r.deliver(2, 0, 1, 2)
	r.deliver(3, 0, 1, 2)
	r.view(3, 2, only(1, 2), nil, only(3)) // n3 learns it was removed (R1)
	r.view(2, 2, only(1, 2), nil, only(3))
	r.view(2, 3, only(1), nil, only(2)) // n2 learns it was removed (R1)
	r.view(2, 4, all, only(2, 3), nil)  // both readmitted
	r.view(3, 4, all, only(2, 3), nil)
	r.cast(3, 8) // under n1's view 1, after the readmission
	r.view(1, 2, only(1, 2), nil, only(3))
	r.cast(8, 9) // view 2: owed to n2, which n1 then removes (just before)
	r.view(1, 3, only(1), nil, only(2))
	r.view(1, 4, all, only(2, 3), nil)
	r.cast(9, 11)
	r.deliver(2, 10)
	r.deliver(3, 9, 10)
	rep := r.finish()
	// Missing: n2 3-8 (6) and 9, n3 3-7 (5).
	r.wantMissing(rep, 12, 11, 1)
	r.wantNote(rep, "most at n2 from n1 in g1 (1)", "the cast under the readmitting view")
}

// TestCollectorReadmittedSenderCastsBeforeReceiverInstalls: n1 is removed
// and readmitted (view 3), installs view 3 and casts 3-5 under it before n2
// installs it. What n1 cast under view 3 is owed to n2, a member of view 3,
// however late n2 installs it: n2's lack of 3 and 5 stays unexplained, not
// taken as state n2 dropped when it saw n1 readmitted (which holds only for
// what n1 cast before it installed view 3).
func TestCollectorReadmittedSenderCastsBeforeReceiverInstalls(t *testing.T) {
	r := newOwedRig(t)
	r.start()
	r.cast(0, 3)
	r.deliver(2, 0, 1)
	r.deliver(3, 0, 1, 2)
	for _, n := range all {
		r.view(n, 2, only(2, 3), nil, only(1)) // n1 removed (R1 at n1)
	}
	r.view(1, 3, all, only(1), nil) // n1 readmitted, first to know
	r.cast(3, 6)
	r.view(2, 3, all, only(1), nil)
	r.view(3, 3, all, only(1), nil)
	r.deliver(2, 4)
	r.deliver(3, 3, 4, 5)
	rep := r.finish()
	// Missing at n2: 2 (cast before n1's removal; n1 dropped its stream),
	// 3 and 5 (owed under view 3).
	r.wantMissing(rep, 3, 1, 2)
	r.wantNote(rep, "most at n2 from n1 in g1 (2)", "the casts under the readmitting view")
}
