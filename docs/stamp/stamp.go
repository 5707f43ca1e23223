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
		Name:    "stamp",
		Summary: "Stamps every application message with its send time and reports the mean one-way latency.",
		Counters: []compose.CounterDoc{
			{Name: "stamped", Doc: "messages stamped on the way down"},
			{Name: "received", Doc: "stamped messages received"},
			{Name: "latency_us", Doc: "sum of their one-way latencies (microseconds)"},
			{Name: "malformed", Doc: "messages too short to hold a stamp (dropped)"},
		},
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
	stack.Base                            // passes every other event through
	stamped, received, latency, malformed *stack.Counter
}

var _ stack.HeaderSizer = (*Layer)(nil)

// Init registers the counters.
func (l *Layer) Init(ctx *stack.Context) error {
	l.Ctx = ctx
	l.stamped, l.received = ctx.Counter("stamped"), ctx.Counter("received")
	l.latency, l.malformed = ctx.Counter("latency_us"), ctx.Counter("malformed")
	return nil
}

// HeaderSize tells the stack how much headroom to reserve.
func (l *Layer) HeaderSize() int { return size }

// Down stamps application data.
func (l *Layer) Down(ev *event.Event) {
	if ev.Kind.IsData() && !ev.Control && ev.Msg != nil {
		binary.BigEndian.PutUint64(ev.Msg.Prepend(size), uint64(l.Ctx.Now()))
		l.stamped.Inc()
	}
	l.Ctx.Down(ev)
}

// Up takes the stamp off application data and counts the latency.
func (l *Layer) Up(ev *event.Event) {
	if ev.Kind.IsData() && !ev.Control && ev.Msg != nil {
		b, err := ev.Msg.Consume(size)
		if err != nil { // a packet from the network is never trusted
			l.malformed.Inc()
			if l.Ctx.Logging() {
				l.Ctx.Logf("stamp: dropping %v from %v: %v", ev.Kind, ev.Peer, err)
			}
			ev.Msg.Release()
			return
		}
		l.received.Inc()
		l.latency.Add(int64(l.Ctx.Now()-event.Time(binary.BigEndian.Uint64(b))) / 1000)
	}
	l.Ctx.Up(ev)
}
