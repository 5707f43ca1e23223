package stack_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
)

// manyTimers makes n timers at Init; each firing counts.
type manyTimers struct {
	stack.Base
	n     int
	tms   []*stack.Timer
	fired int
}

func (l *manyTimers) Init(ctx *stack.Context) error {
	for i := 0; i < l.n; i++ {
		l.tms = append(l.tms, ctx.NewTimer(func() { l.fired++ }))
	}
	return nil
}

type setClock struct{ t event.Time }

func (c *setClock) Now() event.Time { return c.t }

// Next is always the earliest pending timer (event.Never with none),
// through any sequence of sets, moves, stops and firings: the stack caches
// it between steps, and a cache that missed one change would make the
// simulator wake the stack late or early.
func TestNextIsEarliestPendingTimer(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	l := &manyTimers{n: 12}
	clk := &setClock{}
	st, err := stack.New(stack.Config{Self: 1, Transport: &testkit.Transport{}, Clock: clk,
		Layers: []stack.Entry{{Name: "timers", Layer: l}}})
	if err != nil {
		t.Fatal(err)
	}
	want := func() event.Time {
		w := event.Never
		for _, tm := range l.tms {
			if tm.Pending() && tm.When() < w {
				w = tm.When()
			}
		}
		return w
	}
	for step := 0; step < 5000; step++ {
		tm := l.tms[rng.IntN(len(l.tms))]
		var op string
		switch r := rng.IntN(10); {
		case r < 5:
			op = "reset"
			tm.Reset(time.Duration(rng.IntN(1000)) * time.Microsecond)
		case r < 7:
			op = "stop"
			tm.Stop()
		default:
			op = "tick"
			clk.t += event.Time(rng.IntN(300)) * event.Time(time.Microsecond)
			st.Tick()
		}
		if got, w := st.Next(), want(); got != w {
			t.Fatalf("step %d (%s): Next() = %v, want %v", step, op, got, w)
		}
	}
	if l.fired == 0 {
		t.Fatal("no timer fired: the test exercised nothing")
	}
}
