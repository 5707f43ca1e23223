package experiment

import (
	"strings"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// With a warm-up, throughput is the deliveries from the warm-up's end to
// the end of sending, per second of that window; without, it is every
// delivery over the time to the last one. Here n2 and n3 get 100 messages
// in the first second (a climb), 1,000 in the next two and the last 10 in
// the drain: 503.3 messages/s over the run, 500 in the steady window.
func TestWarmupThroughputIsSteadyState(t *testing.T) {
	for _, warm := range []time.Duration{0, time.Second} {
		sc := Default()
		sc.Nodes, sc.GroupsPerNode, sc.GroupSize = 3, 1, 3
		sc.Duration, sc.Warmup = 3*time.Second, warm
		a, err := Assign(sc)
		if err != nil {
			t.Fatal(err)
		}
		c := NewCollector(sc, a)
		buf := make([]byte, PayloadHeader)
		idx := uint64(0)
		deliver := func(at event.Time) {
			c.Sent(1, 1, idx)
			PutStamp(buf, Stamp{Sender: 1, Group: 1, Index: idx})
			for _, rx := range []event.NodeID{2, 3} {
				c.Delivered(rx, &stack.Delivery{Group: 1, From: 1, Payload: buf}, at)
			}
			idx++
		}
		for i := 0; i < 100; i++ {
			deliver(event.Time(time.Duration(i) * 10 * time.Millisecond))
		}
		for i := 0; i < 1000; i++ {
			deliver(event.Time(time.Second + time.Duration(i+1)*2*time.Millisecond))
		}
		for i := 0; i < 10; i++ {
			deliver(event.Time(3*time.Second + time.Duration(i+1)*10*time.Millisecond))
		}
		rep := c.Finish(Outcome{Spec: "x", Network: "sim", End: event.Time(4 * time.Second)})
		want := 1110 / 3.1
		if warm > 0 {
			want = 500
		}
		if d := rep.ThroughputMsgsPerS - want; d < -0.01 || d > 0.01 {
			t.Errorf("warmup %v: throughput %.3f msgs/s, want %.3f", warm, rep.ThroughputMsgsPerS, want)
		}
		if got := strings.Contains(sc.Describe(), "warmup="); got != (warm > 0) {
			t.Errorf("warmup %v: Describe() = %q: warmup named %v, want %v (only when set)", warm, sc.Describe(), got, warm > 0)
		}
	}
	sc := Default()
	sc.Duration, sc.Warmup = time.Second, time.Second
	if err := sc.Check(); err == nil {
		t.Error("warmup as long as the sending time: Check passed, want an error")
	}
}

// The scenario's capacity syntax turns on the unicast-first receive path
// (QSM's second socket and priority queues) and nothing else does.
func TestCapacityUnicastFirst(t *testing.T) {
	c, err := ParseCapacity("20000pps,buf=1024,unicast-first")
	if err != nil || !c.UnicastFirst || c.RecvPPS != 20000 || c.RecvBuffer != 1024 {
		t.Errorf("ParseCapacity(...,unicast-first) = %+v, %v", c, err)
	}
	if c, _ := ParseCapacity("20000pps,buf=1024"); c.UnicastFirst {
		t.Error("ParseCapacity without unicast-first turned it on")
	}
}
