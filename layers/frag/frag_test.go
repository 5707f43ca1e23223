package frag_test

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	_ "github.com/layercast/layercast/layers/all"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/transport/sim"
)

// content is message seq's payload: its sequence number, then bytes that
// depend on seq and position, so any byte out of place shows.
func content(seq uint32, size int) []byte {
	b := make([]byte, size)
	binary.BigEndian.PutUint32(b, seq)
	for i := 4; i < size; i++ {
		b[i] = byte(uint32(i)*131 + seq*7)
	}
	return b
}

// checker sits on top and counts delivered payloads that are not what
// content made.
type checker struct {
	stack.Base
	bad *int
}

func (c *checker) Up(ev *event.Event) {
	if ev.Kind == event.Cast && ev.Msg != nil {
		p := ev.Msg.Bytes()
		if len(p) < 4 || string(p) != string(content(binary.BigEndian.Uint32(p), len(p))) {
			*c.bad++
		}
	}
	c.Ctx.Up(ev)
}

// TestMegabyteIntact: 1 MB messages cross frag : fifo : reliable on the
// simulator at 5% loss, every byte in place at every receiver, exactly
// once and in order, beside small messages that go whole.
func TestMegabyteIntact(t *testing.T) {
	bad := 0
	layers := layertest.Registered(nil, "frag", "fifo", "reliable")
	mk := func() []stack.Entry {
		return append([]stack.Entry{{Name: "checker", Layer: &checker{bad: &bad}}}, layers()...)
	}
	lm, err := sim.ParseLoss("uniform:5%")
	if err != nil {
		t.Fatal(err)
	}
	c := layertest.New(t, sim.Config{Seed: 9, Latency: time.Millisecond, Jitter: 100 * time.Microsecond, Loss: lm}, 3, mk)
	v := &event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2, 3}}
	c.Install(v)
	sizes := []int{1000000, 100, 1000000, 300000, 1000000} // max_msg is 1MB: 1,000,000 bytes
	for i, size := range sizes {
		seq := uint32(i + 1)
		c.Net.At(event.Time(time.Duration(i)*50*time.Millisecond), func() {
			if err := c.Stacks[1].Cast(1, content(seq, size)); err != nil {
				t.Errorf("Cast %d bytes: %v", size, err)
			}
		})
	}
	c.Net.Run(20 * time.Second)
	c.CheckExactlyOnce([]*event.ViewInfo{v}, map[event.GroupID]map[event.NodeID]uint32{1: {1: uint32(len(sizes))}}, true)
	if bad != 0 {
		t.Errorf("%d deliveries with bytes out of place", bad)
	}
	if got := c.Counter("frag", "reassembled", 2, 3); got != 8 {
		t.Errorf("reassembled %d messages at n2 and n3, want 2 x 4 (the 100-byte one goes whole)", got)
	}
}

// TestMaxMsgIsTheLimit: the stack takes payloads up to max_msg and
// refuses longer ones with ErrTooLarge naming max_msg.
func TestMaxMsgIsTheLimit(t *testing.T) {
	net := sim.New(sim.Config{Seed: 1})
	st, err := stack.New(stack.Config{Self: 1, Transport: net.AddNode(1), Clock: net,
		Layers: layertest.Registered(map[string]map[string]string{"frag": {"max_msg": "200000"}}, "frag", "fifo", "reliable")()})
	if err != nil {
		t.Fatal(err)
	}
	st.InstallView(&event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1, 2}})
	if err := st.Cast(1, make([]byte, 200000)); err != nil {
		t.Errorf("Cast of max_msg bytes: %v", err)
	}
	err = st.Cast(1, make([]byte, 200001))
	if !errors.Is(err, stack.ErrTooLarge) || !strings.Contains(err.Error(), "200000") {
		t.Errorf("Cast of max_msg+1 bytes = %v, want ErrTooLarge naming 200000", err)
	}
}

// TestCountersDocumented: every counter the layer keeps is explained in
// its registration.
func TestCountersDocumented(t *testing.T) {
	net := sim.New(sim.Config{Seed: 1})
	st, err := stack.New(stack.Config{Self: 1, Transport: net.AddNode(1), Clock: net, Layers: layertest.Registered(nil, "frag")()})
	if err != nil {
		t.Fatal(err)
	}
	layertest.CountersDocumented(t, st)
}
