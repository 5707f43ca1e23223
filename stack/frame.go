package stack

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/layercast/layercast/event"
)

// FrameSize is the size of the stack's own frame header, the outermost header
// of every packet: version and flags, kind, group, source node.
//
//	byte 0     version (high 4 bits) | flags (bit 0: control)
//	byte 1     event kind (Cast, Send or Membership)
//	bytes 2-5  group, big endian
//	bytes 6-9  source node, big endian
const FrameSize = 10

const (
	frameVersion = 1
	flagControl  = 1
)

// ErrFrame is wrapped by every error about a malformed packet.
var ErrFrame = errors.New("malformed packet")

// Frame is a decoded frame header.
type Frame struct {
	Kind    event.Kind
	Control bool
	Group   event.GroupID
	Src     event.NodeID
}

// PutFrame writes a frame header into b[:FrameSize].
func PutFrame(b []byte, f Frame) {
	b[0] = frameVersion << 4
	if f.Control {
		b[0] |= flagControl
	}
	b[1] = byte(f.Kind)
	binary.BigEndian.PutUint32(b[2:], uint32(f.Group))
	binary.BigEndian.PutUint32(b[6:], uint32(f.Src))
}

// ParseFrame decodes the frame header at the front of pkt.
func ParseFrame(pkt []byte) (Frame, error) {
	if len(pkt) < FrameSize {
		return Frame{}, fmt.Errorf("%w: %d bytes, shorter than the %d-byte frame", ErrFrame, len(pkt), FrameSize)
	}
	if v := pkt[0] >> 4; v != frameVersion {
		return Frame{}, fmt.Errorf("%w: version %d, want %d", ErrFrame, v, frameVersion)
	}
	k := event.Kind(pkt[1])
	if k != event.Cast && k != event.Send && k != event.Membership {
		return Frame{}, fmt.Errorf("%w: kind %d is not a packet kind", ErrFrame, k)
	}
	f := Frame{
		Kind:    k,
		Control: pkt[0]&flagControl != 0,
		Group:   event.GroupID(binary.BigEndian.Uint32(pkt[2:])),
		Src:     event.NodeID(binary.BigEndian.Uint32(pkt[6:])),
	}
	if f.Src == event.NoNode {
		return Frame{}, fmt.Errorf("%w: no source node", ErrFrame)
	}
	return f, nil
}
