package stack_test

import (
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// nopTransport is a transport that drops everything.
type nopTransport struct{}

func (nopTransport) Send(event.NodeID, []byte)       {}
func (nopTransport) Multicast(event.GroupID, []byte) {}
func (nopTransport) Subscribe(event.GroupID) error   { return nil }
func (nopTransport) Unsubscribe(event.GroupID) error { return nil }

// newStopped is node 1's stack as cfg gives it (its layers, application,
// log) over nopTransport, its clock stopped at 0. It fails tb if the stack
// cannot be made.
func newStopped(tb testing.TB, cfg stack.Config) *stack.Stack {
	tb.Helper()
	cfg.Self, cfg.Transport, cfg.Clock = 1, nopTransport{}, stack.ClockFunc(func() event.Time { return 0 })
	st, err := stack.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

type passLayer struct{ stack.Base }

// BenchmarkLayerCrossing measures one event crossing one layer: a data event
// is injected at the top of a stack of pass-through layers and runs through
// every one of them to the network. ns/crossing is ns/op divided by the number
// of layers crossed.
func BenchmarkLayerCrossing(b *testing.B) {
	for _, depth := range []int{1, 4, 16} {
		b.Run(map[int]string{1: "layers=1", 4: "layers=4", 16: "layers=16"}[depth], func(b *testing.B) {
			var entries []stack.Entry
			for i := 0; i < depth; i++ {
				entries = append(entries, stack.Entry{Name: "pass", Layer: &passLayer{}})
			}
			st := newStopped(b, stack.Config{Layers: entries})
			payload := make([]byte, 64)
			m := event.NewMessage()
			m.SetPayload(payload)
			// A control event with no message (a HoldOff, meaningless
			// going down) crosses each layer once; the bottom sink drops
			// it. This isolates the crossing.
			ev := event.Event{Kind: event.HoldOff, Group: 1}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				st.Inject(0, false, ev)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(depth), "ns/crossing")
			m.Release()
		})
	}
}

// BenchmarkCastThroughStack measures an application Cast going down through
// four pass-through layers, framed and handed to the transport: the whole
// send path, including the message pool.
func BenchmarkCastThroughStack(b *testing.B) {
	var entries []stack.Entry
	for i := 0; i < 4; i++ {
		entries = append(entries, stack.Entry{Name: "pass", Layer: &passLayer{}})
	}
	st := newStopped(b, stack.Config{Layers: entries})
	payload := make([]byte, 1024)
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	for i := 0; i < b.N; i++ {
		if err := st.Cast(1, payload); err != nil {
			b.Fatal(err)
		}
	}
}
