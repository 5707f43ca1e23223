package fifo

import (
	"fmt"
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
)

// BenchmarkDrainHeld is fifo's loss path in process: a sender's stream
// in which every gap holds the next held messages (1000 bytes each) until
// its repair comes, then drain delivers them all to an application that
// reads each one's first bytes, as a receiver's does. At 1% loss over UDP
// a repair's round trip holds about a thousand messages. ns/op is per
// message, and grows with held as the held messages outgrow the CPU's
// caches (in one process they stay in its last level; among bench's four
// processes on two cores they go further, see warmHeld).
func BenchmarkDrainHeld(b *testing.B) {
	for _, held := range []int{64, 1024, 4000} {
		b.Run(fmt.Sprintf("held=%d", held), func(b *testing.B) {
			sum := 0
			l := New(held+2, 1<<40)
			st, err := stack.New(stack.Config{Self: 1, Transport: &testkit.Transport{},
				Clock:  stack.ClockFunc(func() event.Time { return 0 }),
				Layers: []stack.Entry{{Name: "fifo", Layer: l}},
				App:    stack.AppFuncs{OnDeliver: func(d stack.Delivery) { sum += int(d.Payload[0]) }}})
			if err != nil {
				b.Fatal(err)
			}
			st.InstallView(&event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}})
			payload := make([]byte, 1000)
			inject := func(seq uint32) {
				m := event.DefaultPool.FromBytes(payload)
				st.Inject(0, true, event.Event{Kind: event.Cast, Group: 1, Peer: 2, Seq: seq, Start: 1, Msg: m})
			}
			b.ReportAllocs()
			b.SetBytes(1000)
			b.ResetTimer()
			next := uint32(1)
			for i := 0; i < b.N; i += held + 1 {
				for k := range uint32(held) {
					inject(next + 1 + k) // behind the gap at next
				}
				inject(next) // the repair: drain delivers all
				next += uint32(held) + 1
			}
			b.StopTimer()
			if d := l.c.Delivered.Value(); d != int64(next-1) {
				b.Fatalf("delivered %d of %d", d, next-1)
			}
		})
	}
}
