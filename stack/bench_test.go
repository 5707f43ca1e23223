package stack_test

import (
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
)

// newStopped is node 1's stack as cfg gives it (its layers, application,
// log) over a testkit.Transport that drops every packet, its clock stopped
// at 0. It fails tb if the stack cannot be made.
func newStopped(tb testing.TB, cfg stack.Config) *stack.Stack {
	tb.Helper()
	cfg.Self, cfg.Transport, cfg.Clock = 1, &testkit.Transport{}, stack.ClockFunc(func() event.Time { return 0 })
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

// holdingPass is a pass-through layer that says it keeps only compacted
// messages (it keeps none), so a stack of them shares receive buffers.
type holdingPass struct{ stack.Base }

func (*holdingPass) HoldsCompact() {}

// castBatch is n framed casts of size bytes each from n2 to group 1: a
// read batch as a transport hands it to the stack.
func castBatch(n, size int) [][]byte {
	pkts := make([][]byte, n)
	for i := range pkts {
		p := make([]byte, stack.FrameSize+size)
		stack.PutFrame(p, stack.Frame{Kind: event.Cast, Group: 1, Src: 2})
		pkts[i] = p
	}
	return pkts
}

// BenchmarkReceiveBatch measures a batch of 64 1000-byte casts going up
// through four pass-through layers to the application: copied into pooled
// messages (ReceiveBatch) or sharing the batch's buffers (ReceiveShared).
// ns/op is per packet.
func BenchmarkReceiveBatch(b *testing.B) {
	pkts := castBatch(64, 1000)
	for _, shared := range []bool{false, true} {
		b.Run(map[bool]string{false: "copy", true: "shared"}[shared], func(b *testing.B) {
			var entries []stack.Entry
			for range 4 {
				entries = append(entries, stack.Entry{Name: "pass", Layer: &holdingPass{}})
			}
			delivered := 0
			st := newStopped(b, stack.Config{Layers: entries, App: stack.AppFuncs{OnDeliver: func(stack.Delivery) { delivered++ }}})
			returned := 0
			c := event.NewCarrier(func() { returned++ })
			b.ReportAllocs()
			b.SetBytes(1000)
			for i := 0; i < b.N; i += len(pkts) {
				if shared {
					c.Open()
					_ = st.ReceiveShared(pkts, c)
					c.Release()
				} else {
					_ = st.ReceiveBatch(pkts)
				}
			}
			b.StopTimer()
			if delivered < b.N || shared && returned*len(pkts) < b.N {
				b.Fatalf("delivered %d, batches returned %d, of %d", delivered, returned, b.N)
			}
		})
	}
}

// holdBatch holds every cast (as Compact's result) until n more have
// come, then delivers it: each message waits one batch, as fifo's wait
// behind a gap at 1% loss.
type holdBatch struct {
	stack.Base
	n    int
	held []*event.Message
}

func (*holdBatch) HoldsCompact() {}

func (l *holdBatch) Up(ev *event.Event) {
	if ev.Kind != event.Cast || ev.Msg == nil {
		l.Ctx.Up(ev)
		return
	}
	if len(l.held) == l.n {
		for _, m := range l.held {
			l.Ctx.Up(&event.Event{Kind: event.Cast, Group: ev.Group, Peer: ev.Peer, Msg: m})
		}
		l.held = l.held[:0]
	}
	l.held = append(l.held, ev.Msg.Compact())
}

func (l *holdBatch) Close() {
	for _, m := range l.held {
		m.Release()
	}
}

// BenchmarkReceiveHeld is BenchmarkReceiveBatch's shared case with every
// message held for one batch by the layer under the application: copied
// when the batches' carriers have no budget (event.Pins), held in the
// batch's buffer when they have one (two batches alternate, both kept
// while the next one's first message is held). ns/op is per packet.
func BenchmarkReceiveHeld(b *testing.B) {
	pkts := castBatch(64, 1000)
	for _, pinned := range []bool{false, true} {
		b.Run(map[bool]string{false: "copied", true: "in-place"}[pinned], func(b *testing.B) {
			entries := []stack.Entry{{Name: "hold", Layer: &holdBatch{n: len(pkts)}}}
			for range 3 {
				entries = append(entries, stack.Entry{Name: "pass", Layer: &holdingPass{}})
			}
			delivered := 0
			st := newStopped(b, stack.Config{Layers: entries, App: stack.AppFuncs{OnDeliver: func(stack.Delivery) { delivered++ }}})
			var (
				cs   [2]*event.Message
				pins *event.Pins
			)
			if pinned {
				pins = &event.Pins{Max: len(cs)}
			}
			for k := range cs {
				cs[k] = event.NewPinnedCarrier(func() {}, pins)
			}
			b.ReportAllocs()
			b.SetBytes(1000)
			k := 0
			for i := 0; i < b.N; i += len(pkts) {
				c := cs[k%2]
				k++
				c.Open()
				_ = st.ReceiveShared(pkts, c)
				c.Release()
			}
			b.StopTimer()
			if delivered < b.N-len(pkts) || pinned && pins.Copies() != 0 || !pinned && pins != nil {
				b.Fatalf("delivered %d of %d", delivered, b.N)
			}
		})
	}
}
