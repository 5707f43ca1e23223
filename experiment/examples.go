package experiment

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/units"
)

// MaxExamples is how many cases of each kind of broken promise a report
// names (Report.MissingExamples and the other *Examples fields): the first
// ones, in a fixed order, so that the same seed names the same cases. The
// collector keeps no more than these, whatever the run.
const MaxExamples = 5

// MessageID names one experiment message: the Index-th cast (from 0) of
// Sender to a group (Stamp.Index).
type MessageID struct {
	Sender event.NodeID `json:"sender"`
	Index  uint64       `json:"index"`
}

// String is "n3#17": the 17th cast of n3 (from 0).
func (m MessageID) String() string { return fmt.Sprintf("%v#%d", m.Sender, m.Index) }

// MissingExample is a run of owed deliveries missing with no fault to
// explain them (counted in Report.MissingUnexplained): Receiver never
// delivered Sender's casts to Group from Index to Index+Count-1, each owed
// to it (Receiver was in Sender's view of the group when Sender cast it,
// and neither had crashed by the end) and cast in the same view.
type MissingExample struct {
	Receiver event.NodeID  `json:"receiver"`
	Group    event.GroupID `json:"group"`
	Sender   event.NodeID  `json:"sender"`
	// Index is the first missing message's index, Count how many
	// consecutive ones are missing from it (at least 1).
	Index uint64 `json:"index"`
	Count int64  `json:"count"`
	// CastView is the ID of Sender's view of the group, with Receiver in
	// it, when Sender cast them: why they were owed. Absent: Sender had
	// seen no view yet and Receiver is an intended member of the group.
	CastView *uint64 `json:"cast_view,omitempty"`
	// Dropped is how many of them the network dropped a data packet of
	// on the way to Receiver (and no copy got through).
	Dropped int64 `json:"dropped"`
	// NeverSent is how many of them never left Sender's stack (still
	// queued at the end); absent when the network does not watch what
	// leaves a node (over UDP).
	NeverSent *int64 `json:"never_sent,omitempty"`
	// StreamDelivered is how many of Sender's casts to the group Receiver
	// delivered; NextDelivered the lowest index above the run it
	// delivered, absent when none (the stream's tail is missing).
	StreamDelivered int64   `json:"stream_delivered"`
	NextDelivered   *uint64 `json:"next_delivered,omitempty"`
	// ReceiverView and SenderView are the IDs of the last view of the
	// group each one's application saw (0: none).
	ReceiverView uint64 `json:"receiver_view"`
	SenderView   uint64 `json:"sender_view"`
}

// DeliveryExample is one delivery that broke a promise: a duplicate
// (Report.DuplicateExamples: Receiver had delivered the message before) or
// a FIFO violation (Report.FIFOViolationExamples: Receiver had delivered
// Sender's message After to the group first, since it last joined).
type DeliveryExample struct {
	Receiver event.NodeID  `json:"receiver"`
	Group    event.GroupID `json:"group"`
	Sender   event.NodeID  `json:"sender"`
	Index    uint64        `json:"index"`
	// After is set for a FIFO violation: the highest index of the stream
	// Receiver had delivered before this one.
	After *uint64 `json:"after,omitempty"`
	// AtMs is when the delivery was made (ms of the run's virtual time;
	// over UDP, of wall-clock time since the run's epoch).
	AtMs float64 `json:"at_ms"`
}

// AgreedExample is one member whose deliveries in a group are out of
// agreed order (Report.AgreedViolationExamples): Member's order against
// the yardstick Reference's (see orderLog.violations). Over the messages
// both delivered, each member's order, the two first differ at Position
// (from 0): Member delivered Message there, Reference delivered
// ReferenceMessage. MemberDelivery and ReferenceDelivery are where those
// are in each one's whole delivery order in the group (from 0), messages
// the other did not deliver included.
type AgreedExample struct {
	Group             event.GroupID `json:"group"`
	Member            event.NodeID  `json:"member"`
	Reference         event.NodeID  `json:"reference"`
	Position          int           `json:"position"`
	Message           MessageID     `json:"message"`
	ReferenceMessage  MessageID     `json:"reference_message"`
	MemberDelivery    int           `json:"member_delivery"`
	ReferenceDelivery int           `json:"reference_delivery"`
	// Violations is how many of Member's deliveries in the group count in
	// Report.AgreedViolations.
	Violations int64 `json:"violations"`
}

// VsyncExample is one view-synchrony violation
// (Report.VsyncViolationExamples): Member and Other both installed view
// FromView then ToView of Group, yet in FromView delivered different
// messages of Sender (the first sender, by rank, they differ on): counts,
// and the index of the last one each delivered in that view (absent: none;
// its low 32 bits, which is all the checker keeps per view).
type VsyncExample struct {
	Group           event.GroupID `json:"group"`
	Member          event.NodeID  `json:"member"`
	Other           event.NodeID  `json:"other"`
	FromView        uint64        `json:"from_view"`
	ToView          uint64        `json:"to_view"`
	Sender          event.NodeID  `json:"sender"`
	MemberDelivered int64         `json:"member_delivered"`
	OtherDelivered  int64         `json:"other_delivered"`
	MemberLast      *uint64       `json:"member_last,omitempty"`
	OtherLast       *uint64       `json:"other_last,omitempty"`
}

// deliveryExamples keeps the first MaxExamples duplicate and FIFO
// violation deliveries. Only a delivery that breaks a promise reaches it,
// never the steady state.
type deliveryExamples struct {
	dup, fifo []DeliveryExample
}

func (d *deliveryExamples) duplicate(rx event.NodeID, g event.GroupID, tx event.NodeID, index uint64, now event.Time) {
	if len(d.dup) < MaxExamples {
		d.dup = append(d.dup, DeliveryExample{Receiver: rx, Group: g, Sender: tx, Index: index, AtMs: units.Ms(float64(now))})
	}
}

func (d *deliveryExamples) late(rx event.NodeID, g event.GroupID, tx event.NodeID, index, after uint64, now event.Time) {
	if len(d.fifo) < MaxExamples {
		d.fifo = append(d.fifo, DeliveryExample{Receiver: rx, Group: g, Sender: tx, Index: index, After: &after, AtMs: units.Ms(float64(now))})
	}
}

// missingExamples gathers MissingExamples while Finish walks the owed
// deliveries, stream by stream in index order: a missing index right after
// the last example's run, in the same stream and view, extends it.
type missingExamples struct {
	c    *Collector
	list []MissingExample
}

// add records that owed message i of sender ti's stream to group gi is
// missing at receiver ri, unexplained; a is the start of the stretch of
// casts under one view of the sender that holds i (owedRanges).
func (m *missingExamples) add(gi, ti, ri int, i, a uint64, dropped, neverSent bool) {
	c := m.c
	ms := c.groups[gi]
	rx, tx, g := ms[ri], ms[ti], event.GroupID(gi+1)
	var e *MissingExample
	if n := len(m.list); n > 0 {
		l := &m.list[n-1]
		if l.Receiver == rx && l.Sender == tx && l.Group == g && l.Index >= a && l.Index+uint64(l.Count) == i {
			e = l
		}
	}
	if e == nil {
		if len(m.list) >= MaxExamples {
			return
		}
		tk := c.moff[gi] + ti
		ex := MissingExample{Receiver: rx, Group: g, Sender: tx, Index: i,
			StreamDelivered: c.streams[c.off[gi]+ri*len(ms)+ti].n}
		es := c.epochs[tk]
		if j, _ := slices.BinarySearchFunc(es, i+1, func(ep epoch, t uint64) int { return cmp.Compare(ep.start, t) }); j > 0 && es[j-1].view != nil {
			id := es[j-1].view.ID
			ex.CastView = &id
		}
		if c.trackOut {
			ex.NeverSent = new(int64)
		}
		if v := c.lastView(c.moff[gi] + ri); v != nil {
			ex.ReceiverView = v.ID
		}
		if v := c.lastView(tk); v != nil {
			ex.SenderView = v.ID
		}
		m.list = append(m.list, ex)
		e = &m.list[len(m.list)-1]
	}
	e.Count++
	if dropped {
		e.Dropped++
	}
	if neverSent && e.NeverSent != nil {
		*e.NeverSent++
	}
}

// finish sets each example's NextDelivered.
func (m *missingExamples) finish() []MissingExample {
	c := m.c
	for k := range m.list {
		e := &m.list[k]
		gi := int(e.Group) - 1
		ti, ri := c.rank(e.Group, e.Sender), c.rank(e.Group, e.Receiver)
		s := &c.streams[c.off[gi]+ri*len(c.groups[gi])+ti]
		for i := e.Index + uint64(e.Count); i < c.sent[c.moff[gi]+ti]; i++ {
			if s.got.has(i) {
				e.NextDelivered = &i
				break
			}
		}
	}
	return m.list
}

// exampleKind says which examples go with a broken promise.
type exampleKind int

const (
	noExamples exampleKind = iota
	duplicateExamples
	fifoExamples
	missingExamplesKind
	agreedExamples
	vsyncExamples
)

// brokenPromise is one line of Report.Broken and the kind of examples that
// name its cases.
type brokenPromise struct {
	line string
	kind exampleKind
}

// exampleLines are the lines naming the cases of a broken promise, from
// the report's examples, ending with how many more there are ("" lines
// none).
func exampleLines(r *Report, kind exampleKind) []string {
	var out []string
	var shown, total int64
	var unit string
	switch kind {
	case duplicateExamples:
		for _, e := range r.DuplicateExamples {
			out = append(out, fmt.Sprintf("%v delivered %v's message #%d to %v again at %v",
				e.Receiver, e.Sender, e.Index, e.Group, msTime(e.AtMs)))
		}
		shown, total, unit = int64(len(r.DuplicateExamples)), r.Duplicates, "duplicate deliveries"
	case fifoExamples:
		for _, e := range r.FIFOViolationExamples {
			after := "a later one"
			if e.After != nil {
				after = fmt.Sprintf("#%d", *e.After)
			}
			out = append(out, fmt.Sprintf("%v delivered %v's message #%d to %v after %s, at %v",
				e.Receiver, e.Sender, e.Index, e.Group, after, msTime(e.AtMs)))
		}
		shown, total, unit = int64(len(r.FIFOViolationExamples)), r.FIFOViolations, "FIFO violations"
	case missingExamplesKind:
		for _, e := range r.MissingExamples {
			out = append(out, missingLine(&e))
			shown += e.Count
		}
		total, unit = r.MissingUnexplained, "missing deliveries"
	case agreedExamples:
		for _, e := range r.AgreedViolationExamples {
			out = append(out, fmt.Sprintf("%v: %v and %v first differ at position %d (from 0) of the messages both delivered: %v delivered %v (its delivery %d), %v delivered %v (its delivery %d); %d of %v's deliveries out of %v's order",
				e.Group, e.Member, e.Reference, e.Position, e.Member, e.Message, e.MemberDelivery,
				e.Reference, e.ReferenceMessage, e.ReferenceDelivery, e.Violations, e.Member, e.Reference))
			shown += e.Violations
		}
		total, unit = r.AgreedViolations, "deliveries out of agreed order"
	case vsyncExamples:
		for _, e := range r.VsyncViolationExamples {
			out = append(out, fmt.Sprintf("%v: %v and %v moved from view %d to %d; in view %d %v delivered %s of %v's messages, %v %s",
				e.Group, e.Member, e.Other, e.FromView, e.ToView, e.FromView,
				e.Member, countLast(e.MemberDelivered, e.MemberLast), e.Sender, e.Other, countLast(e.OtherDelivered, e.OtherLast)))
		}
		shown, total, unit = int64(len(r.VsyncViolationExamples)), r.VsyncViolations, "violations"
	}
	if more := total - shown; more > 0 && len(out) > 0 {
		out = append(out, fmt.Sprintf("... and %d more %s", more, unit))
	}
	return out
}

// firstCase is " (first: CASE)" naming the first example of a kind, or ""
// when the report has none.
func firstCase(r *Report, kind exampleKind) string {
	if l := exampleLines(r, kind); len(l) > 0 {
		return " (first: " + l[0] + ")"
	}
	return ""
}

func missingLine(e *MissingExample) string {
	what := fmt.Sprintf("%v never delivered %v's message #%d to %v", e.Receiver, e.Sender, e.Index, e.Group)
	if e.Count > 1 {
		what = fmt.Sprintf("%v never delivered %v's messages #%d-#%d to %v (%d)", e.Receiver, e.Sender, e.Index, e.Index+uint64(e.Count)-1, e.Group, e.Count)
	}
	owed := fmt.Sprintf("cast before %v saw a view of %v (%v an intended member)", e.Sender, e.Group, e.Receiver)
	if e.CastView != nil {
		owed = fmt.Sprintf("%v was in %v's view %d when cast", e.Receiver, e.Sender, *e.CastView)
	}
	line := what + ": " + owed + fmt.Sprintf("; %d dropped on the way", e.Dropped)
	if e.NeverSent != nil && *e.NeverSent > 0 {
		line += fmt.Sprintf(", %d never sent", *e.NeverSent)
	}
	line += fmt.Sprintf("; %v delivered %d of the stream", e.Receiver, e.StreamDelivered)
	if e.NextDelivered != nil {
		line += fmt.Sprintf(", next #%d", *e.NextDelivered)
	} else {
		line += ", none after"
	}
	if e.ReceiverView != 0 || e.SenderView != 0 {
		line += fmt.Sprintf("; last views %v %d, %v %d", e.Receiver, e.ReceiverView, e.Sender, e.SenderView)
	}
	return line
}

func countLast(n int64, last *uint64) string {
	if last == nil {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%d (the last #%d)", n, *last)
}

// msTime prints a time in milliseconds as the notes print times.
func msTime(ms float64) string { return units.MsDuration(ms).String() }
