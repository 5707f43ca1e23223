package pack

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The pack header, the first byte of every Cast and Send that passes the
// layer (append-only):
//
//	0x00  single: the rest is one message, as the layer above sent it
//	0x01  packed: the rest is one or more entries, each a 2-byte big-endian
//	      length followed by that many bytes of one message
const (
	kindSingle byte = 0
	kindPacked byte = 1
	// entryHead is the length field in front of each packed message.
	entryHead = 2
	// MaxEntry is the longest message a pack can carry.
	MaxEntry = 1<<16 - 1
)

// ErrMalformed is wrapped by every error about a pack that does not decode.
var ErrMalformed = errors.New("pack: malformed")

// putEntry writes one entry for msg at the front of b (len(b) >=
// entryHead+len(msg)).
func putEntry(b, msg []byte) {
	binary.BigEndian.PutUint16(b, uint16(len(msg)))
	copy(b[entryHead:], msg)
}

// Next splits the first entry off a packed body (the bytes after the 0x01
// header): the message, aliasing b, and what follows it. An entry that
// does not fit is an error wrapping ErrMalformed.
func Next(b []byte) (msg, rest []byte, err error) {
	if len(b) < entryHead {
		return nil, nil, fmt.Errorf("%w: %d bytes left, shorter than an entry's length field", ErrMalformed, len(b))
	}
	n := int(binary.BigEndian.Uint16(b))
	if len(b)-entryHead < n {
		return nil, nil, fmt.Errorf("%w: entry claims %d bytes, %d left", ErrMalformed, n, len(b)-entryHead)
	}
	return b[entryHead : entryHead+n], b[entryHead+n:], nil
}

// Unpack calls fn with every message of a packed body, in order, and
// returns the first error of Next (after fn has seen the entries before
// it); an empty body is malformed too (a pack holds at least one message).
func Unpack(b []byte, fn func(msg []byte)) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: empty pack", ErrMalformed)
	}
	for len(b) > 0 {
		msg, rest, err := Next(b)
		if err != nil {
			return err
		}
		fn(msg)
		b = rest
	}
	return nil
}
