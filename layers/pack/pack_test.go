package pack_test

import (
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	_ "github.com/layercast/layercast/layers/all"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/testbed/testkit"
	"github.com/layercast/layercast/transport/sim"
)

func group(n int) *event.ViewInfo {
	v := &event.ViewInfo{Group: 1, ID: 1}
	for i := 1; i <= n; i++ {
		v.Members = append(v.Members, event.NodeID(i))
	}
	return v
}

// TestPackedReliableFIFO: fifo : reliable : pack delivers a fast sender's
// stream exactly once and in order at every receiver, at 5% loss too,
// with most messages sharing datagrams.
func TestPackedReliableFIFO(t *testing.T) {
	for _, loss := range []string{"none", "uniform:5%"} {
		t.Run(loss, func(t *testing.T) {
			var lm sim.LossModel
			if loss != "none" {
				var err error
				if lm, err = sim.ParseLoss(loss); err != nil {
					t.Fatal(err)
				}
			}
			c := layertest.New(t, sim.Config{Seed: 3, Latency: time.Millisecond, Jitter: 100 * time.Microsecond, Loss: lm}, 4,
				// the simulator spends no time in a stack, so casts 20us
				// apart never queue: only a delay packs them
				layertest.Registered(map[string]map[string]string{"pack": {"delay": "300us"}}, "fifo", "reliable", "pack"))
			v := group(4)
			c.Install(v)
			sent := map[event.GroupID]map[event.NodeID]uint32{}
			c.CastLoop(1, 1, 2000, 20*time.Microsecond, 200, sent)
			c.Net.Run(5 * time.Second)
			c.CheckExactlyOnce([]*event.ViewInfo{v}, sent, true)
			packs, packed := c.Counter("pack", "packs_sent", 1), c.Counter("pack", "packed_msgs", 1)
			if packs == 0 || packed < 1000 {
				t.Errorf("sender sent %d packs holding %d messages, want most of 2000 messages packed", packs, packed)
			}
			if got := c.Counter("pack", "unpacked_msgs", 2); loss == "none" && got != packed {
				t.Errorf("receiver n2 unpacked %d messages of %d packed", got, packed)
			}
		})
	}
}

// recorder is one stack with the pack layer alone over a recording
// transport, on a clock the test moves.
type recorder struct {
	st  *stack.Stack
	tr  *testkit.Transport
	now event.Time
}

func newRecorder(t *testing.T, params map[string]string) *recorder {
	r := &recorder{tr: &testkit.Transport{Record: true}}
	st, err := stack.New(stack.Config{Self: 1, Transport: r.tr, Clock: stack.ClockFunc(func() event.Time { return r.now }),
		Layers: layertest.Registered(map[string]map[string]string{"pack": params}, "pack")()})
	if err != nil {
		t.Fatal(err)
	}
	r.st = st
	return r
}

// advance moves the clock and fires what is due.
func (r *recorder) advance(d time.Duration) {
	r.now += event.Time(d)
	r.st.Tick()
}

// TestFlushBySizeAndDelay: no datagram carries more than size bytes of
// pack; a full pack leaves as soon as the next message does not fit, the
// rest once the first held message has waited delay, not before.
func TestFlushBySizeAndDelay(t *testing.T) {
	r := newRecorder(t, map[string]string{"size": "1000", "delay": "1ms"})
	for range 10 {
		if err := r.st.Cast(1, make([]byte, 300)); err != nil {
			t.Fatal(err)
		}
	}
	// 3 entries of 302 bytes fit 1000 with the header; 3 packs are full.
	if n := len(r.tr.Packets()); n != 3 {
		t.Fatalf("before the delay: %d datagrams, want 3 full packs", n)
	}
	for _, p := range r.tr.Packets() {
		if len(p.Data) > stack.FrameSize+1000 {
			t.Errorf("datagram of %d bytes, more than the frame and size 1000", len(p.Data))
		}
	}
	r.advance(999 * time.Microsecond)
	if n := len(r.tr.Packets()); n != 3 {
		t.Fatalf("before the delay passed: %d datagrams, want 3", n)
	}
	r.advance(time.Microsecond)
	if n := len(r.tr.Packets()); n != 4 {
		t.Fatalf("at the delay: %d datagrams, want 4 (the 10th message alone)", n)
	}
	last := r.tr.Packets()[3].Data
	if len(last) != stack.FrameSize+1+300 {
		t.Errorf("the lone message left in %d bytes, want frame + 1-byte header + 300", len(last))
	}
}

// TestDelayLatency: at 1,000 messages a second (one per millisecond, well
// below what fills a pack) every message reaches the receivers within the
// delay plus the link's latency and jitter: the deadline is what keeps low
// rates fast.
func TestDelayLatency(t *testing.T) {
	c := layertest.New(t, sim.Config{Seed: 5, Latency: time.Millisecond, Jitter: 100 * time.Microsecond}, 3,
		layertest.Registered(map[string]map[string]string{"pack": {"delay": "300us"}}, "fifo", "reliable", "pack"))
	v := group(3)
	c.Install(v)
	var worst event.Time
	sentAt := map[uint32]event.Time{}
	var seq uint32
	var step func()
	step = func() {
		seq++
		sentAt[seq] = c.Net.Now()
		if err := c.Stacks[1].Cast(1, layertest.Payload(seq, 100)); err != nil {
			t.Fatal(err)
		}
		if seq < 500 {
			c.Net.After(time.Millisecond, step)
		}
	}
	c.Net.At(c.Net.Now(), step)
	seen := 0
	for c.Net.Now() < event.Time(2*time.Second) {
		c.Net.Run(100 * time.Microsecond)
		for _, s := range c.Got[2][1][1][seen:] {
			worst = max(worst, c.Net.Now()-sentAt[s])
		}
		seen = len(c.Got[2][1][1])
	}
	c.CheckExactlyOnce([]*event.ViewInfo{v}, map[event.GroupID]map[event.NodeID]uint32{1: {1: 500}}, true)
	if limit := event.Time(300*time.Microsecond + 1100*time.Microsecond + 100*time.Microsecond); worst > limit {
		t.Errorf("worst latency %v, want at most delay + latency + jitter + one polling step (%v)", worst, limit)
	}
}

// TestControlNeverWaits: a control message (an acknowledgement, a NAK)
// leaves at once, alone, while data to the same place is held.
func TestControlNeverWaits(t *testing.T) {
	r := newRecorder(t, map[string]string{"delay": "1ms"})
	if err := r.st.Cast(1, make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	r.st.Inject(0, false, event.Event{Kind: event.Cast, Group: 1, Control: true, Msg: event.NewMessage()})
	if n := len(r.tr.Packets()); n != 1 {
		t.Fatalf("%d datagrams after a control message, want 1: the control message at once, the data held", n)
	}
	if p := r.tr.Packets()[0].Data; p[0]&1 == 0 {
		t.Errorf("the datagram that left is not the control message (frame %x)", p[:2])
	}
}

// TestCountersDocumented: every counter the layer keeps is explained in
// its registration (stacktool layers, stat and reports print the text).
func TestCountersDocumented(t *testing.T) {
	layertest.CountersDocumented(t, newRecorder(t, nil).st)
}

// TestDefaultHoldsOnlyWhileBusy: by default (delay 0) a pack leaves as soon
// as the stack is done: casts made together share one datagram, and a lone
// cast is not held for a later one. Before, the default held every lone
// message 300us, which over UDP (a Go timer under a millisecond fires after
// about one) cost each message of a 1,000 msgs/s sender 1.1 ms.
func TestDefaultHoldsOnlyWhileBusy(t *testing.T) {
	r := newRecorder(t, nil)
	for range 10 {
		if err := r.st.Cast(1, make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
	}
	r.advance(0) // the stack's next step, at the same instant
	if n := len(r.tr.Packets()); n != 1 {
		t.Fatalf("10 casts at one instant left in %d datagrams, want 1 pack", n)
	}
	r.advance(time.Millisecond)
	if err := r.st.Cast(1, make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	r.advance(0)
	if n := len(r.tr.Packets()); n != 2 {
		t.Fatalf("a lone cast: %d datagrams in all, want 2 (it left at its own instant)", n)
	}
}

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
