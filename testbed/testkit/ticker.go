package testkit

import (
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// Ticker is a layer that sets a timer every Period from Init on and
// records when each fired (the runtime tests of stack.Node and the
// simulator share it). Everything else passes through.
type Ticker struct {
	stack.Base
	Period time.Duration
	Fired  []event.Time
	tick   *stack.Timer
}

// Init implements stack.Layer.
func (l *Ticker) Init(ctx *stack.Context) error {
	l.Ctx = ctx
	l.tick = ctx.NewTimer(func() {
		l.Fired = append(l.Fired, l.Ctx.Now())
		l.tick.Reset(l.Period)
	})
	l.tick.Reset(l.Period)
	return nil
}
