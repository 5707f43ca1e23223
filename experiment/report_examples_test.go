package experiment

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

func u64(v uint64) *uint64 { return &v }
func i64p(v int64) *int64  { return &v }

// examplesRig is a run of g1 = {n1, n2, n3}, n1 casting 0..9 in view 1,
// where n2 misses 3 and 4, delivers 6 before 5 and 7 twice, and n3
// delivers 0..5 only: 6 was dropped on its way to n3, and 8 and 9 never
// left n1's stack.
func examplesRig(t *testing.T) *owedRig {
	r := newOwedRig(t)
	r.c.TrackSends()
	for _, n := range all {
		r.view(n, 1, all, all, nil)
	}
	r.cast(0, 10)
	r.c.LeftStack(1, 1, 7)
	r.c.Dropped(DropModel, 3, &Stamp{Sender: 1, Group: 1, Index: 6})
	r.deliver(2, 0, 1, 2, 6, 5, 7, 7, 8, 9)
	r.deliver(3, span(0, 6)...)
	return r
}

// A report names the cases behind each broken promise: which deliveries
// are missing (receiver, group, sender, indexes, the sender's view when it
// cast them, what the network and the sender did with them, what the
// receiver delivered of the stream), which were duplicates, which broke
// FIFO order; in JSON and under the PROMISE BROKEN lines of the text.
func TestReportExamples(t *testing.T) {
	rep := examplesRig(t).c.Finish(Outcome{Spec: "fifo : reliable"})
	if rep.MissingUnexplained != 6 || rep.Duplicates != 1 || rep.FIFOViolations != 1 {
		t.Fatalf("missing unexplained %d, duplicates %d, fifo %d; want 6, 1, 1 (notes %q)", rep.MissingUnexplained, rep.Duplicates, rep.FIFOViolations, rep.Notes)
	}
	wantMissing := []MissingExample{
		{Receiver: 2, Group: 1, Sender: 1, Index: 3, Count: 2, CastView: u64(1), Dropped: 0, NeverSent: i64p(0),
			StreamDelivered: 8, NextDelivered: u64(5), ReceiverView: 1, SenderView: 1},
		{Receiver: 3, Group: 1, Sender: 1, Index: 6, Count: 4, CastView: u64(1), Dropped: 1, NeverSent: i64p(2),
			StreamDelivered: 6, ReceiverView: 1, SenderView: 1},
	}
	if !reflect.DeepEqual(rep.MissingExamples, wantMissing) {
		t.Errorf("missing examples:\n%s\nwant\n%s", js(t, rep.MissingExamples), js(t, wantMissing))
	}
	// n2's 7 again at its 7th delivery, 5 after 6 at its 5th (the rig's
	// clock ticks 1ms an event: 3 views, then n2's deliveries)
	wantDup := []DeliveryExample{{Receiver: 2, Group: 1, Sender: 1, Index: 7, AtMs: 10}}
	wantFIFO := []DeliveryExample{{Receiver: 2, Group: 1, Sender: 1, Index: 5, After: u64(6), AtMs: 8}}
	if !reflect.DeepEqual(rep.DuplicateExamples, wantDup) || !reflect.DeepEqual(rep.FIFOViolationExamples, wantFIFO) {
		t.Errorf("duplicate examples %s, fifo %s; want %s, %s", js(t, rep.DuplicateExamples), js(t, rep.FIFOViolationExamples), js(t, wantDup), js(t, wantFIFO))
	}

	// JSON: the new fields beside the old, by these names.
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"missing_examples", "duplicate_examples", "fifo_violation_examples", "missing_unexplained", "duplicates"} {
		if _, ok := m[f]; !ok {
			t.Errorf("JSON lacks %q", f)
		}
	}
	for _, f := range []string{"agreed_violation_examples", "vsync_violation_examples"} {
		if _, ok := m[f]; ok {
			t.Errorf("JSON has %q with nothing to show", f)
		}
	}
	first := m["missing_examples"].([]any)[0].(map[string]any)
	for k, v := range map[string]float64{"receiver": 2, "group": 1, "sender": 1, "index": 3, "count": 2, "cast_view": 1, "next_delivered": 5} {
		if first[k] != v {
			t.Errorf("missing_examples[0].%s = %v, want %v", k, first[k], v)
		}
	}

	// Text: under each PROMISE BROKEN line, its cases.
	var sb strings.Builder
	if err := WriteTable(&sb, []*Report{rep}, false); err != nil {
		t.Fatal(err)
	}
	text := sb.String()
	for _, want := range []string{
		"PROMISE BROKEN: 1 duplicate deliveries\n    n2 delivered n1's message #7 to g1 again at 10ms\n",
		"PROMISE BROKEN: 1 FIFO violations (the stack gives FIFO order)\n    n2 delivered n1's message #5 to g1 after #6, at 8ms\n",
		"PROMISE BROKEN: 6 owed deliveries missing with no fault to explain them (the stack gives reliable delivery)\n" +
			"    n2 never delivered n1's messages #3-#4 to g1 (2): n2 was in n1's view 1 when cast; 0 dropped on the way; n2 delivered 8 of the stream, next #5; last views n2 1, n1 1\n" +
			"    n3 never delivered n1's messages #6-#9 to g1 (4): n3 was in n1's view 1 when cast; 1 dropped on the way, 2 never sent; n3 delivered 6 of the stream, none after; last views n3 1, n1 1\n" +
			"note: ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks\n%s\nin\n%s", want, text)
		}
	}
	// A soak's failure line names the first case of each.
	if _, d := SoakCheck(rep); !strings.Contains(d, "6 of 20 owed deliveries missing unexplained (first: n2 never delivered n1's messages #3-#4 to g1 (2): ") ||
		!strings.Contains(d, "1 duplicates (first: n2 delivered n1's message #7 to g1 again at 10ms)") {
		t.Errorf("soak detail %q names no first cases", d)
	}
	// A report read back from JSON prints the same.
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	var sb2 strings.Builder
	WriteTable(&sb2, []*Report{&back}, false)
	if sb2.String() != text {
		t.Errorf("the report read back from JSON prints\n%s\nwant\n%s", sb2.String(), text)
	}
}

// Only the first MaxExamples cases are kept, and the text says how many
// more there are; what the examples and the rest count adds up to the
// count they stand for.
func TestReportExamplesBounded(t *testing.T) {
	sc := Default()
	sc.Nodes, sc.GroupsPerNode, sc.GroupSize = 8, 1, 8
	a, err := Assign(sc)
	if err != nil {
		t.Fatal(err)
	}
	c := NewCollector(sc, a)
	buf := make([]byte, PayloadHeader)
	for i := uint64(0); i < 20; i++ {
		c.Sent(1, 1, i)
	}
	// every receiver delivers the even indexes, twice
	for rx := event.NodeID(2); rx <= 8; rx++ {
		for i := uint64(0); i < 20; i += 2 {
			for range 2 {
				PutStamp(buf, Stamp{Sender: 1, Group: 1, Index: i})
				c.Delivered(rx, deliveryOf(buf), 0)
			}
		}
	}
	rep := c.Finish(Outcome{Spec: "fifo : reliable"})
	if len(rep.MissingExamples) != MaxExamples || len(rep.DuplicateExamples) != MaxExamples {
		t.Fatalf("%d missing and %d duplicate examples, want %d each", len(rep.MissingExamples), len(rep.DuplicateExamples), MaxExamples)
	}
	var shown int64
	for k, e := range rep.MissingExamples {
		// n2's 1, 3, 5, 7, 9: each alone between two delivered
		if e.Receiver != 2 || e.Index != uint64(2*k+1) || e.Count != 1 || e.NextDelivered == nil || *e.NextDelivered != e.Index+1 {
			t.Errorf("missing example %d: %+v, want n2's #%d alone", k, e, 2*k+1)
		}
		shown += e.Count
	}
	if rep.MissingUnexplained != 7*10 {
		t.Fatalf("missing unexplained %d, want 70", rep.MissingUnexplained)
	}
	var sb strings.Builder
	WriteTable(&sb, []*Report{rep}, false)
	for _, want := range []string{
		fmt.Sprintf("    ... and %d more missing deliveries\n", rep.MissingUnexplained-shown),
		fmt.Sprintf("    ... and %d more duplicate deliveries\n", rep.Duplicates-MaxExamples),
	} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, sb.String())
		}
	}
}

// A collector that tracks delivery order names, per member out of agreed
// order, where its order first differs from the reference's; the text
// prints it under the agreed-order PROMISE BROKEN line.
func TestReportAgreedExamples(t *testing.T) {
	r := newOwedRig(t)
	r.c.TrackOrder()
	r.cast(0, 4)
	r.deliver(2, 0, 1, 2, 3)
	r.deliver(3, 0, 2, 1, 3)
	rep := r.c.Finish(Outcome{Spec: "ring"})
	want := []AgreedExample{{Group: 1, Member: 3, Reference: 2, Position: 1, Message: MessageID{1, 2}, ReferenceMessage: MessageID{1, 1},
		MemberDelivery: 1, ReferenceDelivery: 1, Violations: 1}}
	if rep.AgreedViolations != 1 || !reflect.DeepEqual(rep.AgreedViolationExamples, want) {
		t.Fatalf("agreed violations %d, examples %s; want 1, %s", rep.AgreedViolations, js(t, rep.AgreedViolationExamples), js(t, want))
	}
	var sb strings.Builder
	WriteTable(&sb, []*Report{rep}, false)
	line := "PROMISE BROKEN: 1 deliveries out of agreed order (the stack gives agreed order)\n" +
		"    g1: n3 and n2 first differ at position 1 (from 0) of the messages both delivered: n3 delivered n1#2 (its delivery 1), n2 delivered n1#1 (its delivery 1); 1 of n3's deliveries out of n2's order\n"
	if !strings.Contains(sb.String(), line) {
		t.Errorf("text lacks\n%s\nin\n%s", line, sb.String())
	}
}

// deliveryOf is a delivery of the experiment message in buf.
func deliveryOf(buf []byte) *stack.Delivery {
	st, _ := ReadStamp(buf)
	return &stack.Delivery{Group: st.Group, From: st.Sender, Payload: buf}
}

func js(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Naming cases costs a delivery nothing: an in-order delivery allocates
// nothing (only a duplicate or a FIFO violation, up to MaxExamples, is
// kept). AllocsPerRun's integer mean leaves out the stream's set of
// delivered indexes growing now and then (amortised).
func TestDeliveredAllocatesNothing(t *testing.T) {
	r := newOwedRig(t)
	for _, n := range all {
		r.view(n, 1, all, all, nil)
	}
	r.cast(0, 5000)
	i := uint64(0)
	buf := make([]byte, PayloadHeader)
	d := &stack.Delivery{Group: 1, From: 1, Payload: buf}
	allocs := testing.AllocsPerRun(2000, func() {
		PutStamp(buf, Stamp{Sender: 1, Group: 1, Index: i})
		r.c.Delivered(3, d, r.now)
		i++
	})
	if allocs != 0 {
		t.Errorf("a delivery allocates %v times, want 0", allocs)
	}
	if r.c.fifo != 0 || r.c.duplicates != 0 || r.c.deliveries != 2001 {
		t.Errorf("%d deliveries, %d FIFO violations, %d duplicates; want 2001 in order", r.c.deliveries, r.c.fifo, r.c.duplicates)
	}
}
