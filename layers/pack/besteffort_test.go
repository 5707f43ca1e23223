package pack_test

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/layertest"
	"github.com/layercast/layercast/internal/testkit"
	"github.com/layercast/layercast/stack"
)

// sendProbe sits below pack and records whether each Send going down is
// best effort.
type sendProbe struct {
	stack.Base
	best []bool
}

func (p *sendProbe) HeaderSize() int { return 0 }
func (p *sendProbe) Close()          {}
func (p *sendProbe) Down(ev *event.Event) {
	if ev.Kind == event.Send {
		p.best = append(p.best, ev.BestEffort)
	}
	p.Ctx.Down(ev)
}

// TestBestEffortKeptApart: a best-effort Send (lec's repairs) and an
// ordinary one to the same node leave in separate datagrams, each as it
// came: bundled, the repair would go down as an ordinary Send, which a
// layer below such as tokenring makes reliable (numbered, sent again until
// acknowledged), and the ordinary one could be sent best effort.
func TestBestEffortKeptApart(t *testing.T) {
	var now event.Time
	probe := &sendProbe{}
	layers := append(layertest.Registered(map[string]map[string]string{"pack": {"delay": "1ms"}}, "pack")(), stack.Entry{Name: "probe", Layer: probe})
	st, err := stack.New(stack.Config{Self: 1, Transport: &testkit.Transport{}, Clock: stack.ClockFunc(func() event.Time { return now }), Layers: layers})
	if err != nil {
		t.Fatal(err)
	}
	for _, best := range []bool{true, false, true} {
		m := event.NewMessage()
		m.SetPayload(make([]byte, 100))
		st.Inject(0, false, event.Event{Kind: event.Send, Peer: 2, BestEffort: best, Msg: m})
	}
	now += event.Time(time.Millisecond)
	st.Tick()
	var best, plain int
	for _, b := range probe.best {
		if b {
			best++
		} else {
			plain++
		}
	}
	if best != 1 || plain != 1 {
		t.Errorf("sends below pack: %d best effort, %d not (%v); want 1 and 1: the two best-effort messages together, the other apart", best, plain, probe.best)
	}
}
