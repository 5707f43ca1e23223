package mflow

import (
	"encoding/binary"
	"errors"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/wirecodec"
)

// Header tags: the first byte of every message mflow passes down. Wire
// values, append-only.
const (
	// tagData is a flow-controlled multicast; 4 bytes of epoch follow.
	tagData byte = 1
	// tagPass is a message mflow does not account (control casts from
	// above, point-to-point sends).
	tagPass byte = 2
	// tagAck is an mflow acknowledgement (a point-to-point control send).
	tagAck byte = 3
)

// dataHeaderSize is tag + epoch.
const dataHeaderSize = 5

// ackSize is the acknowledgement payload:
//
//	byte 0      tagAck
//	byte 1      flags (bit 0: switch: amount closes the counts of earlier epochs)
//	bytes 2-5   group
//	bytes 6-9   epoch the receiver now counts in
//	bytes 10-13 the receiver's stagger offset in that epoch (bytes it keeps back)
//	bytes 14-21 amount returned, signed (bytes counted since the last ack)
const ackSize = 22

const flagSwitch = 1

var errHeader = errors.New("mflow: malformed header")

// ack is a decoded acknowledgement.
type ack struct {
	group  event.GroupID
	epoch  uint32
	off    int64
	amount int64
	sw     bool
}

func putAck(b []byte, a ack) {
	b[0] = tagAck
	b[1] = 0
	if a.sw {
		b[1] = flagSwitch
	}
	wirecodec.PutUint32s(b[2:], uint32(a.group), a.epoch, uint32(a.off))
	binary.BigEndian.PutUint64(b[14:], uint64(a.amount))
}

// parseAck decodes the bytes after the tag.
func parseAck(b []byte) (ack, error) {
	if len(b) != ackSize-1 {
		return ack{}, errHeader
	}
	return ack{
		sw:     b[0]&flagSwitch != 0,
		group:  event.GroupID(binary.BigEndian.Uint32(b[1:])),
		epoch:  binary.BigEndian.Uint32(b[5:]),
		off:    int64(binary.BigEndian.Uint32(b[9:])),
		amount: int64(binary.BigEndian.Uint64(b[13:])),
	}, nil
}
