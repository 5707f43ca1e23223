package mflow

import (
	"fmt"
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// pipe is a transport that keeps packets (copied into reused buffers) for
// the benchmark loop to hand to the other stack.
type pipe struct {
	bufs [][]byte
	n    int
}

func (p *pipe) put(pkt []byte) {
	if p.n == len(p.bufs) {
		p.bufs = append(p.bufs, make([]byte, 0, 2048))
	}
	p.bufs[p.n] = append(p.bufs[p.n][:0], pkt...)
	p.n++
}
func (p *pipe) Send(_ event.NodeID, pkt []byte)       { p.put(pkt) }
func (p *pipe) Multicast(_ event.GroupID, pkt []byte) { p.put(pkt) }
func (p *pipe) Subscribe(event.GroupID) error         { return nil }
func (p *pipe) Unsubscribe(event.GroupID) error       { return nil }
func (p *pipe) flush(to *stack.Stack) {
	for i := 0; i < p.n; i++ {
		_ = to.Receive(p.bufs[i])
	}
	p.n = 0
}

type passLayer struct{ stack.Base }

// pipePair builds stacks 1 and 2, each with the one layer newLayer makes
// (named name) over a pipe and a clock stopped at 0, both in group 1's view
// {1, 2}. step casts payload from 1 and hands on each side's packets.
func pipePair(tb testing.TB, name string, newLayer func() stack.Layer) (a, r *stack.Stack, step func(payload []byte)) {
	clock := stack.ClockFunc(func() event.Time { return 0 })
	mk := func(self event.NodeID, tr *pipe) *stack.Stack {
		st, err := stack.New(stack.Config{Self: self, Transport: tr, Clock: clock, Layers: []stack.Entry{{Name: name, Layer: newLayer()}}})
		if err != nil {
			tb.Fatal(err)
		}
		return st
	}
	ta, tr := &pipe{}, &pipe{}
	a, r = mk(1, ta), mk(2, tr)
	v := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}}
	a.InstallView(v)
	r.InstallView(v)
	return a, r, func(payload []byte) {
		if err := a.Cast(1, payload); err != nil {
			tb.Fatal(err)
		}
		ta.flush(r)
		tr.flush(a)
	}
}

// BenchmarkMflowPerMessage is one 1 KB multicast from a sender through
// mflow to a receiver, the receiver's counting, and the sender's handling
// of the bulk acknowledgements that follow (one per ack_thresh bytes), in
// steady state; "pass" is the same path with a do-nothing layer, so the
// difference is mflow's own cost.
func BenchmarkMflowPerMessage(b *testing.B) {
	for _, name := range []string{"mflow", "pass"} {
		b.Run(name, func(b *testing.B) {
			newLayer := func() stack.Layer { return New(EnsembleConfig()) }
			if name == "pass" {
				newLayer = func() stack.Layer { return &passLayer{} }
			}
			_, _, cast := pipePair(b, name, newLayer)
			payload := make([]byte, 1000)
			step := func() { cast(payload) }
			for i := 0; i < 1000; i++ {
				step() // reach steady state: pools and rings at size
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				step()
			}
		})
	}
}

// BenchmarkCreditCheck is the sender's per-message credit work for m
// receivers acknowledging every ack_thresh bytes, staggered (ack_thresh
// 25000, 1100-byte messages): the rotation against the O(n) scan it
// replaces. The receivers' acknowledgements are precomputed (the pattern
// repeats every 250 messages, 11 x ack_thresh bytes), so only the sender's
// work is timed.
func BenchmarkCreditCheck(b *testing.B) {
	for _, m := range []int{3, 31, 255} {
		for _, mode := range []string{"rotation", "scan"} {
			b.Run(fmt.Sprintf("receivers=%d/%s", m, mode), func(b *testing.B) {
				const window, thresh, cost, period = 50000, 25000, 1100, 250
				limits := make([]int64, m)
				heads := make([]int64, m)
				rcv := make([]receiver, m)
				for i := range limits {
					off := int64(i) * thresh / int64(m)
					if off > 0 {
						heads[i] = thresh // see Layer.headroom
					}
					limits[i] = window + heads[i]
					rcv[i] = receiver{off: off, c: -off, due: thresh}
				}
				type ackAt struct {
					slot   int
					amount int64
				}
				// Acks due after each message of the second period.
				sched := make([][]ackAt, period)
				for k := 0; k < 2*period; k++ {
					for r := range rcv {
						if a, ok := rcv[r].count(cost, thresh); ok && k >= period {
							sched[k-period] = append(sched[k-period], ackAt{r, a})
						}
					}
				}
				var c credits
				c.reset(limits)
				// Bring the credits to the start of the second period.
				for k := 0; k < period; k++ {
					c.sent += cost
				}
				c.slow()
				for r := range rcv {
					c.limit[r] = window + int64(period*cost) - rcv[r].c - rcv[r].off + heads[r]
				}
				c.tryFast()
				if mode == "scan" {
					c.noFast = true
					c.slow()
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if lo, _ := c.min(); lo-c.sent < cost {
						b.Fatal("out of credit")
					}
					c.sent += cost
					for _, a := range sched[i%period] {
						c.ack(a.slot, a.amount)
					}
				}
				if mode == "rotation" && !c.fast {
					b.Fatal("the rotation fell back to the scan")
				}
			})
		}
	}
}
