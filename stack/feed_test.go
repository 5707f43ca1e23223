package stack_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
)

// stepTransport takes one packet per step: after a packet it is full until
// the test opens it again (and pumps the stack).
type stepTransport struct {
	testkit.Transport
	open bool
	sent []string
}

func (t *stepTransport) Writable() bool { return t.open }

func (t *stepTransport) Multicast(_ event.GroupID, pkt []byte) {
	if !t.open {
		t.sent = append(t.sent, "OVERRUN")
	}
	t.sent = append(t.sent, string(pkt[stack.FrameSize:]))
	t.open = false
}

// feedLayer has a control feed and a data feed; each packet is built only
// when its feed is pulled.
type feedLayer struct {
	stack.Base
	tr         *stepTransport
	ctrl, data *stack.Feed
	ctrlLeft   int // control packets still to send
	dataLeft   int
	n          int
	badPulls   int // pulls while the transport had no room
}

func (l *feedLayer) Init(ctx *stack.Context) error {
	l.Ctx = ctx
	l.ctrl = ctx.NewFeed(true, func() bool {
		return l.pull(&l.ctrlLeft, "ctrl", true)
	})
	l.data = ctx.NewFeed(false, func() bool {
		return l.pull(&l.dataLeft, "feed", false)
	})
	return nil
}

func (l *feedLayer) pull(left *int, tag string, control bool) bool {
	if !l.tr.open {
		l.badPulls++
	}
	l.n++
	*left--
	m := l.Ctx.MessageFrom(fmt.Appendf(nil, "%s%d", tag, l.n))
	l.Ctx.Down(&event.Event{Kind: event.Cast, Group: 1, Control: control, Msg: m})
	return *left > 0
}

// With a transport that takes one packet per step, control feeds go first
// whatever data was queued before them, data feeds and the application's
// queue take turns, and no feed is asked while the transport is full.
func TestFeedsControlFirstOnlyWithRoom(t *testing.T) {
	tr := &stepTransport{}
	fl := &feedLayer{tr: tr}
	st, err := stack.New(stack.Config{Self: 1, Transport: tr, Clock: stack.ClockFunc(func() event.Time { return 0 }),
		Layers: []stack.Entry{{Name: "feed", Layer: fl}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := st.Cast(1, fmt.Appendf(nil, "app%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	fl.dataLeft = 2
	fl.data.Ready()
	st.Pump()
	if len(tr.sent) != 0 || fl.n != 0 {
		t.Fatalf("sent %v with the transport full, %d packets built", tr.sent, fl.n)
	}
	step := func() {
		tr.open = true
		st.Pump()
	}
	step() // the oldest ready data feed: the application's queue
	fl.ctrlLeft = 2
	fl.ctrl.Ready()
	fl.ctrl.Ready() // twice: still one registration
	for range 7 {
		step()
	}
	want := "app0 ctrl1 ctrl2 feed3 app1 feed4 app2"
	if got := strings.Join(tr.sent, " "); got != want {
		t.Fatalf("sent %q, want %q", got, want)
	}
	if fl.badPulls != 0 {
		t.Fatalf("%d feed pulls while the transport was full", fl.badPulls)
	}
	if fl.ctrl.Waiting() || fl.data.Waiting() || st.Backlog() != 0 {
		t.Fatalf("feeds still waiting after everything was sent")
	}
	// Control readied while data waits is still served first.
	fl.dataLeft, fl.ctrlLeft = 1, 1
	fl.data.Ready()
	fl.ctrl.Ready()
	step()
	if last := tr.sent[len(tr.sent)-1]; !strings.HasPrefix(last, "ctrl") {
		t.Fatalf("after data and control were readied, %q went first", last)
	}
}

// Readying a feed and pulling it allocate nothing.
func TestFeedAllocatesNothing(t *testing.T) {
	var f *stack.Feed
	l := &passLayer{}
	st := newStopped(t, stack.Config{Layers: []stack.Entry{{Name: "p", Layer: l}}})
	pulls := 0
	f = l.Ctx.NewFeed(true, func() bool { pulls++; return false })
	allocs := testing.AllocsPerRun(1000, func() {
		f.Ready()
		st.Pump()
	})
	if allocs != 0 || pulls == 0 {
		t.Fatalf("%v allocations per Ready and pull, %d pulls", allocs, pulls)
	}
}
