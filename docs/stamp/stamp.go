// Package stamp is the minimal layer of docs/writing-a-layer.md: it stamps
// every application message with its send time on the way down and, on
// the way up, takes the stamp off and counts the one-way latency.
package stamp

import (
	"encoding/binary"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

func init() {
	compose.Register(compose.LayerInfo{
		Name:     "stamp",
		Summary:  "Stamps every application message with its send time and reports the mean one-way latency.",
		Counters: compose.CountersOf(counters{}),
		Summarize: func(c compose.Counters) compose.Summary {
			var s compose.Summary
			if n := c.Total["received"]; n > 0 {
				s.Ratio("latency_us_mean", float64(c.Total["latency_us"])/float64(n))
			}
			return s
		},
		New: func(compose.Params) (stack.Layer, error) { return &Layer{}, nil },
	})
}

// size is the stamp's length: the send time in nanoseconds.
const size = 8

// Layer is one node's stamp layer.
type Layer struct {
	stack.Base // passes every other event through
	c          counters
}

// counters are what stamp counts, each named and explained once: the
// registration documents them (compose.CountersOf), Init binds them.
type counters struct {
	Stamped   *stack.Counter `counter:"stamped" doc:"messages stamped on the way down"`
	Received  *stack.Counter `counter:"received" doc:"stamped messages received"`
	Latency   *stack.Counter `counter:"latency_us" doc:"sum of their one-way latencies (microseconds)"`
	Malformed *stack.Counter `counter:"malformed" doc:"messages too short to hold a stamp (dropped)"`
}

var _ stack.HeaderSizer = (*Layer)(nil)

// Init takes the counters.
func (l *Layer) Init(ctx *stack.Context) error {
	l.Ctx = ctx
	ctx.BindCounters(&l.c)
	return nil
}

// HeaderSize tells the stack how much headroom to reserve.
func (l *Layer) HeaderSize() int { return size }

// Down stamps application data.
func (l *Layer) Down(ev *event.Event) {
	if ev.Kind.IsData() && !ev.Control && ev.Msg != nil {
		binary.BigEndian.PutUint64(ev.Msg.Prepend(size), uint64(l.Ctx.Now()))
		l.c.Stamped.Inc()
	}
	l.Ctx.Down(ev)
}

// Up takes the stamp off application data and counts the latency.
func (l *Layer) Up(ev *event.Event) {
	if ev.Kind.IsData() && !ev.Control && ev.Msg != nil {
		b, err := ev.Msg.Consume(size)
		if err != nil { // a packet from the network is never trusted
			l.c.Malformed.Inc()
			if l.Ctx.Logging() {
				l.Ctx.Logf("stamp: dropping %v from %v: %v", ev.Kind, ev.Peer, err)
			}
			ev.Msg.Release()
			return
		}
		l.c.Received.Inc()
		l.c.Latency.Add(int64(l.Ctx.Now()-event.Time(binary.BigEndian.Uint64(b))) / 1000)
	}
	l.Ctx.Up(ev)
}
