package stack_test

import (
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
)

type boundCounters struct {
	Sent  *stack.Counter `counter:"sent"`
	Peak  *stack.Counter `counter:"peak_buffer_bytes" doc:"ignored here"`
	Spare *stack.Counter // untagged: left alone
}

type bindLayer struct {
	stack.Base
	c boundCounters
}

func (l *bindLayer) Init(ctx *stack.Context) error {
	l.Ctx = ctx
	ctx.BindCounters(&l.c)
	return nil
}

// BindCounters gives each tagged field the layer's counter of its tag's
// name: what the field counts is what the stack reports under that name.
func TestBindCountersNamesFields(t *testing.T) {
	l := &bindLayer{}
	st := newStopped(t, stack.Config{Layers: []stack.Entry{{Name: "bind", Layer: l}}})
	if l.c.Spare != nil {
		t.Errorf("untagged field bound to %v, want nil", l.c.Spare)
	}
	l.c.Sent.Add(3)
	l.c.Peak.Max(7)
	lc := st.Counters()[0]
	got := map[string]int64{}
	for i, n := range lc.Names {
		got[n] = lc.Values[i]
	}
	if len(lc.Names) != 2 || got["sent"] != 3 || got["peak_buffer_bytes"] != 7 {
		t.Fatalf("counters %v = %v, want sent 3 and peak_buffer_bytes 7 only", lc.Names, lc.Values)
	}
}

// A tag on a field that cannot hold a counter is a programming error, said
// at once.
func TestBindCountersRefusesBadField(t *testing.T) {
	for name, ptr := range map[string]any{
		"not a pointer": boundCounters{},
		"wrong type": &struct {
			N int `counter:"n"`
		}{},
		"unexported": &struct {
			n *stack.Counter `counter:"n"`
		}{},
		"empty name": &struct {
			N *stack.Counter `counter:""`
		}{},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("BindCounters(%s) did not panic", name)
				}
			}()
			if _, err := stack.New(stack.Config{Self: 1, Transport: &testkit.Transport{}, Clock: stack.ClockFunc(func() event.Time { return 0 }),
				Layers: []stack.Entry{{Name: "bind", Layer: &initFunc{f: func(ctx *stack.Context) { ctx.BindCounters(ptr) }}}}}); err != nil {
				t.Fatal(err)
			}
		}()
	}
}

// initFunc runs f in Init.
type initFunc struct {
	stack.Base
	f func(*stack.Context)
}

func (l *initFunc) Init(ctx *stack.Context) error { l.Ctx = ctx; l.f(ctx); return nil }
