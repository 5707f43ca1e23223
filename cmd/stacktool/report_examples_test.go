package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/experiment"
	"github.com/layercast/layercast/stack"
)

// gapLayer claims reliable FIFO delivery but throws away every 5th cast
// its node makes and delivers every 7th cast it receives twice, noting
// which (gapLog), so a test knows which messages are missing and which
// were duplicated.
type gapLayer struct {
	stack.Base
	sent, got int
}

type gapKey struct {
	rx, tx event.NodeID
	g      event.GroupID
	index  uint64
}

// gapLog is what every gapLayer of a run did.
var gapLog struct {
	sync.Mutex
	dropped map[gapKey]bool // rx 0: at the sender, for every receiver
	doubled map[gapKey]bool
}

func (l *gapLayer) note(set map[gapKey]bool, rx event.NodeID, ev *event.Event) {
	st, err := experiment.ReadStamp(ev.Msg.Bytes())
	if err != nil {
		panic(err)
	}
	gapLog.Lock()
	set[gapKey{rx, st.Sender, st.Group, st.Index}] = true
	gapLog.Unlock()
}

func (l *gapLayer) Down(ev *event.Event) {
	if ev.Kind == event.Cast && !ev.Control {
		if l.sent++; l.sent%5 == 0 {
			l.note(gapLog.dropped, 0, ev)
			ev.Msg.Release()
			return
		}
	}
	l.Ctx.Down(ev)
}

func (l *gapLayer) Up(ev *event.Event) {
	if ev.Kind == event.Cast && !ev.Control {
		if l.got++; l.got%7 == 0 {
			l.note(gapLog.doubled, l.Ctx.Self(), ev)
			again := *ev
			again.Msg = ev.Msg.Clone()
			l.Ctx.Up(ev)
			l.Ctx.Up(&again)
			return
		}
	}
	l.Ctx.Up(ev)
}

var registerGap = sync.OnceFunc(func() {
	compose.Register(compose.LayerInfo{Name: "clitest_gap", Summary: "test: claims reliable FIFO delivery, drops every 5th cast, delivers every 7th twice.",
		Gives: []compose.Property{compose.Reliable, compose.FIFO},
		New:   func(compose.Params) (stack.Layer, error) { return &gapLayer{}, nil }})
})

// runGap runs clitest_gap on 6 nodes in two groups of 3, every node
// casting, and returns what stacktool printed, its error and what the
// layers dropped and doubled.
func runGap(t *testing.T, extra ...string) (string, error, map[gapKey]bool, map[gapKey]bool) {
	t.Helper()
	registerGap()
	gapLog.Lock()
	gapLog.dropped, gapLog.doubled = map[gapKey]bool{}, map[gapKey]bool{}
	gapLog.Unlock()
	out, err := runCLI(t, append(append([]string{"run", "clitest_gap", "--no-wall"}, small...), extra...)...)
	gapLog.Lock()
	defer gapLog.Unlock()
	return out, err, gapLog.dropped, gapLog.doubled
}

// A run that breaks its promises names the messages: the missing ones are
// the casts the layer threw away, at receivers of their group; the
// duplicates are the deliveries it made twice; in JSON (as many missing as
// the examples and the rest add up to) and in the text under each PROMISE
// BROKEN line, with how many more.
func TestRunNamesBrokenCases(t *testing.T) {
	out, err, dropped, doubled := runGap(t, "--json")
	if exitCode(err) != 1 {
		t.Fatalf("run clitest_gap: exit %d (%v), want 1", exitCode(err), err)
	}
	var rep struct {
		Missing            int64                        `json:"missing"`
		MissingUnexplained int64                        `json:"missing_unexplained"`
		Duplicates         int64                        `json:"duplicates"`
		MissingExamples    []experiment.MissingExample  `json:"missing_examples"`
		DuplicateExamples  []experiment.DeliveryExample `json:"duplicate_examples"`
		Broken             []string                     `json:"broken_promises"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("run --json: %v\n%s", err, out)
	}
	if len(dropped) == 0 || len(doubled) == 0 {
		t.Fatalf("the layer dropped %d casts and doubled %d deliveries: the scenario is too small", len(dropped), len(doubled))
	}
	// every dropped cast is owed to the 2 other members of its group
	if rep.MissingUnexplained != int64(2*len(dropped)) || rep.Missing != rep.MissingUnexplained || rep.Duplicates != int64(len(doubled)) {
		t.Errorf("missing %d, unexplained %d, duplicates %d; want %d, %d, %d (the layer's drops and doubles)",
			rep.Missing, rep.MissingUnexplained, rep.Duplicates, 2*len(dropped), 2*len(dropped), len(doubled))
	}
	if len(rep.MissingExamples) != experiment.MaxExamples || len(rep.DuplicateExamples) != experiment.MaxExamples {
		t.Fatalf("%d missing and %d duplicate examples, want %d each:\n%s", len(rep.MissingExamples), len(rep.DuplicateExamples), experiment.MaxExamples, out)
	}
	var shown int64
	for _, e := range rep.MissingExamples {
		// each thrown-away cast is alone: the next one got through
		if !dropped[gapKey{0, e.Sender, e.Group, e.Index}] || e.Receiver == e.Sender || e.Count != 1 || e.Dropped != 0 || e.NeverSent == nil {
			t.Errorf("missing example %+v: not one cast the layer threw away, at another member", e)
		}
		if e.NextDelivered != nil && *e.NextDelivered != e.Index+1 {
			t.Errorf("missing example %+v: the next cast got through, yet next_delivered = %d", e, *e.NextDelivered)
		}
		shown += e.Count
	}
	for _, e := range rep.DuplicateExamples {
		if !doubled[gapKey{e.Receiver, e.Sender, e.Group, e.Index}] {
			t.Errorf("duplicate example %+v: the layer did not deliver it twice", e)
		}
	}

	// The text: each PROMISE BROKEN line, then its cases indented, then
	// how many more.
	text, err, dropped2, _ := runGap(t)
	if exitCode(err) != 1 || len(dropped2) != len(dropped) {
		t.Fatalf("run clitest_gap (text): exit %d (%v), %d dropped; want 1, the same %d", exitCode(err), err, len(dropped2), len(dropped))
	}
	e := rep.MissingExamples[0]
	missing := fmt.Sprintf("PROMISE BROKEN: %d owed deliveries missing with no fault to explain them (the stack gives reliable delivery)\n"+
		"    %v never delivered %v's message #%d to %v: ", rep.MissingUnexplained, e.Receiver, e.Sender, e.Index, e.Group)
	more := fmt.Sprintf("\n    ... and %d more missing deliveries\n", rep.MissingUnexplained-shown)
	d := rep.DuplicateExamples[0]
	dup := fmt.Sprintf("PROMISE BROKEN: %d duplicate deliveries\n    %v delivered %v's message #%d to %v again at ", rep.Duplicates, d.Receiver, d.Sender, d.Index, d.Group)
	for _, want := range []string{missing, more, dup, fmt.Sprintf("\n    ... and %d more duplicate deliveries\n", rep.Duplicates-int64(len(rep.DuplicateExamples)))} {
		if !strings.Contains(text, want) {
			t.Errorf("run clitest_gap prints no %q:\n%s", want, text)
		}
	}
	if n := len(regexp.MustCompile(`(?m)^    \S.* never delivered `).FindAllString(text, -1)); n != experiment.MaxExamples {
		t.Errorf("the text names %d missing cases, want %d:\n%s", n, experiment.MaxExamples, text)
	}
	// the exit error stays one line, without the cases
	if strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "never delivered") {
		t.Errorf("exit error %q: want the one broken-promise line", err)
	}
}
