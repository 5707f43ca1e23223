package stack

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/prefetch"
)

// WarmStages is how many times a Warmer is told about a coming packet:
// stages 0 to WarmStages-1, one step of its caller apart, the last one
// step before the packet.
const WarmStages = 4

// Warmer is implemented by a layer (or an application) that can tell,
// before a packet reaches it, which of its memory the packet will read:
// its per-(group, sender) state, say. A caller that knows its next packets in advance (the
// simulator, stepping thousands of stacks whose memory is cold) calls
// Stack.Warm for each, a few steps ahead, and the layer asks the CPU to
// start loading that memory (internal/prefetch), so that the loads
// overlap with other work instead of stalling the step.
//
// Warm is called in stages for one packet: at stage k the layer may read
// what it asked for at stage k-1 (a table slot) and ask for what that
// points to. Warm must change nothing a run can observe: no state, no
// counters, no events; the packet may never come. It is called from the
// goroutine that steps the stack, never during a step.
type Warmer interface {
	Warm(g event.GroupID, src event.NodeID, stage int)
}

// ControlWarmer is a Warmer that reads memory for a control packet (the
// frame's control flag: a digest, say, reads the state of every member of
// its group): Stack.Warm calls WarmControl for a control packet, and tells
// the Warmers that are not ControlWarmers nothing of it (a control packet
// is a layer's own protocol and delivers nothing above it: at 1% loss a
// third of the packets, whose hints to the layers above and the
// application were loads for deliveries that never come). Its contract
// is Warm's.
type ControlWarmer interface {
	Warmer
	WarmControl(g event.GroupID, src event.NodeID, stage int)
}

// CastWarmer is a Warmer that can also tell what sending an application
// cast in group g will read (its own stream's state): a caller that knows
// a node is about to cast in g (the simulator, told by Network.AtCast)
// calls Stack.WarmCast a few steps ahead. Its contract is Warm's.
type CastWarmer interface {
	Warmer
	WarmCast(g event.GroupID, stage int)
}

// StagedWarmer is a Warmer that asks for nothing at a packet's later
// stages: Warm from stage data on, WarmControl (if it is a ControlWarmer)
// from stage control on. Stack.Warm does not call it there, which at
// thousands of simulated stacks is most of the calls it would make.
type StagedWarmer interface {
	Warmer
	WarmDepth() (data, control int)
}

// maxWarmers bounds how many of a stack's layers are warmed (4 bits of
// the masks in Stack.dataAt a stage).
const maxWarmers = 4

// setWarmers notes the layers that implement Warmer, bottom first, then
// the application if it does, and at which stages each is called.
func (s *Stack) setWarmers() {
	s.nwarm, s.dataAt, s.ctlAt, s.castWarm = 0, 0, 0, 0
	add := func(v any) {
		w, ok := v.(Warmer)
		if !ok || s.nwarm >= maxWarmers {
			return
		}
		i := int(s.nwarm)
		data, control := WarmStages, WarmStages
		if sw, ok := w.(StagedWarmer); ok {
			data, control = sw.WarmDepth()
		}
		if _, ok := w.(ControlWarmer); !ok {
			control = 0
		}
		for k := range WarmStages {
			if k < data {
				s.dataAt |= 1 << (4*k + i)
			}
			if k < control {
				s.ctlAt |= 1 << (4*k + i)
			}
		}
		if _, ok := w.(CastWarmer); ok {
			s.castWarm |= 1 << i
		}
		s.warm[i] = w
		s.nwarm++
	}
	for i := len(s.layers) - 1; i >= 0; i-- {
		add(s.layers[i].Layer)
	}
	add(s.app)
}

// Warm hints that pkt (a packet as Receive takes it) will be received soon:
// it calls Warm with the packet's group and source on every layer that is
// a Warmer, bottom first, then on the application if it is one; for a
// control packet, WarmControl on those that are ControlWarmers only; a
// StagedWarmer only at the stages it asks for something. Stages are
// as for Warmer.Warm; the caller should have called Prefetch a step before
// stage 0. It changes nothing.
func (s *Stack) Warm(pkt []byte, stage int) {
	if len(pkt) < FrameSize || uint(stage) >= WarmStages {
		return
	}
	ctl := pkt[0]&flagControl != 0
	m := s.dataAt
	if ctl {
		m = s.ctlAt
	}
	m = m >> (4 * stage) & 0xf
	if m == 0 {
		return
	}
	g := event.GroupID(binary.BigEndian.Uint32(pkt[2:]))
	src := event.NodeID(binary.BigEndian.Uint32(pkt[6:]))
	for ; m != 0; m &= m - 1 {
		w := s.warm[bits.TrailingZeros16(m)]
		if ctl {
			w.(ControlWarmer).WarmControl(g, src, stage)
		} else {
			w.Warm(g, src, stage)
		}
	}
}

// WarmCast hints that the application will soon cast in group g: it asks
// for what Cast reads of the stack beyond its hot lines (the application
// queue, and its slot the cast will take) and calls WarmCast on every
// layer that is a CastWarmer, bottom first. Stages are as for Warm; the
// caller should have called Prefetch a step before stage 0. It changes
// nothing.
func (s *Stack) WarmCast(g event.GroupID, stage int) {
	switch stage {
	case 0:
		// maxPay, apps, appFeed and held: the two lines after the hot ones
		prefetch.Lines(unsafe.Pointer(&s.maxPay), 2)
	case 1:
		if q := &s.apps; len(q.buf) > 0 {
			prefetch.Lines(unsafe.Pointer(&q.buf[(q.head+q.size)%len(q.buf)]), 1)
		}
	}
	if s.castWarm == 0 {
		return
	}
	for i, w := range s.warm[:s.nwarm] {
		if s.castWarm&(1<<i) != 0 {
			w.(CastWarmer).WarmCast(g, stage)
		}
	}
}
