package gms

import (
	"errors"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/membership"
	"github.com/layercast/layercast/membership/removal"
	"github.com/layercast/layercast/stack"
)

// ServiceLayer runs a Service as the only layer of the membership server's
// stack (the service node of the simulator, or `stacktool gms` over UDP):
// membership packets come up from the network, updates go down to their
// nodes, and one timer wakes the service at its next deadline.
type ServiceLayer struct {
	stack.Base
	// Config is used at Init; Send is filled in by the layer.
	Config ServiceConfig
	svc    *Service

	timer *stack.Timer // follows the service's next deadline

	restore *membership.ServiceState // the state Init starts from (UseStore)

	c serviceCounters
}

// NewServiceLayer makes a service layer; Init builds the Service.
func NewServiceLayer(cfg ServiceConfig) *ServiceLayer {
	return &ServiceLayer{Config: cfg}
}

// Service is the state machine inside (nil before Init).
func (l *ServiceLayer) Service() *Service { return l.svc }

// Init builds the service on the layer's context.
func (l *ServiceLayer) Init(ctx *stack.Context) error {
	l.Ctx = ctx
	l.timer = ctx.NewTimer(l.wake)
	cfg := l.Config
	cfg.Send = func(to event.NodeID, payload []byte) {
		ev := event.Event{Kind: event.Membership, Peer: to, Msg: ctx.Pool().FromBytes(payload)}
		ctx.Down(&ev)
	}
	if cfg.Log == nil && ctx.Logging() {
		cfg.Log = ctx.Logf
	}
	svc, err := NewService(cfg)
	if err != nil {
		return err
	}
	l.svc = svc
	if l.restore != nil {
		if err := svc.Restore(ctx.Now(), l.restore); err != nil {
			return err
		}
		l.timer.Follow(svc.Next()) // the full updates go out at once
	}
	ctx.BindCounters(&l.c)
	return nil
}

// Up takes membership packets; anything else is dropped (a service node
// joins no group).
func (l *ServiceLayer) Up(ev *event.Event) {
	if ev.Kind == event.Membership {
		err := l.svc.Receive(l.Ctx.Now(), ev.Peer, ev.Msg.Bytes())
		if err != nil && l.Ctx.Logging() && errors.Is(err, ErrMalformed) {
			l.Ctx.Logf("%v", err)
		}
		// A packet may make a change due now (the first in a while).
		l.svc.Tick(l.Ctx.Now())
		l.after()
	}
	if ev.Msg != nil {
		ev.Msg.Release()
	}
}

// wake runs the failure detector and pending installations.
func (l *ServiceLayer) wake() {
	l.svc.Tick(l.Ctx.Now())
	l.after()
}

// Record sets a counter of the service layer from outside the stack: the
// simulator's harness records what it observed of the service (for
// example how long removing a crashed node took) so that it appears in the
// run's report with the layer's other counters.
func (l *ServiceLayer) Record(name string, v int64) { l.Ctx.Counter(name).Set(v) }

// after refreshes the counters and the wake-up timer.
func (l *ServiceLayer) after() {
	st := l.svc.Stats()
	l.c.Views.Set(st.Views)
	l.c.Updates.Set(st.NodeUpdates)
	l.c.Failed.Set(st.Failed)
	l.c.Malformed.Set(st.Malformed + st.Unexpected)
	l.c.Packets.Set(st.Packets)
	l.c.Suspected.Set(st.Suspected)
	l.c.Cleared.Set(st.Cleared)
	l.c.Probes.Set(st.Probes)
	l.c.Resets.Set(st.Resets)
	l.c.Refused.Set(st.Refused)
	l.c.Clamped.Set(st.Clamped)
	l.c.Late.Set(st.Late)
	l.c.PingReqs.Set(st.PingReqs)
	l.c.Vouched.Set(st.Vouched)
	l.c.Parted.Set(st.Partitioned)
	l.c.Left.Set(st.Left)
	l.c.Restarted.Set(st.Restarted)
	l.c.CutOff.Set(st.CutOff)
	l.c.CutKept.Set(st.CutIgnored)
	l.timer.Follow(l.svc.Next())
}

// Removals is what the service says about every node it removed, and why
// (removal.Reporter: a run's report lists them).
func (l *ServiceLayer) Removals() ([]removal.Record, int64) {
	if l.svc == nil {
		return nil, 0
	}
	return l.svc.Removals()
}

var (
	_ stack.Layer      = (*ServiceLayer)(nil)
	_ removal.Reporter = (*ServiceLayer)(nil)
)

// Defaults for the service.
const (
	DefaultViewInterval = 100 * time.Millisecond
	DefaultFDTimeout    = time.Second
	DefaultHeartbeat    = 100 * time.Millisecond
	DefaultRetry        = 200 * time.Millisecond
)
