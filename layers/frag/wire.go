package frag

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The frag header, in front of every fragment (append-only flags):
//
//	byte 0     flags: bit 0 first fragment, bit 1 last fragment
//	bytes 1-4  the whole message's length, big endian (in every fragment)
const (
	flagFirst = 1
	flagLast  = 2
	// HeaderLen is the header's size.
	HeaderLen = 5
)

// ErrMalformed is wrapped by every error about a fragment that does not
// decode or does not fit the message it belongs to.
var ErrMalformed = errors.New("frag: malformed")

// Header is a decoded fragment header.
type Header struct {
	First, Last bool
	// Total is the whole message's length.
	Total int
}

func putHeader(b []byte, h Header) {
	b[0] = 0
	if h.First {
		b[0] |= flagFirst
	}
	if h.Last {
		b[0] |= flagLast
	}
	binary.BigEndian.PutUint32(b[1:], uint32(h.Total))
}

// ParseHeader decodes a fragment header.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderLen {
		return Header{}, fmt.Errorf("%w: %d bytes, shorter than the header", ErrMalformed, len(b))
	}
	if b[0]&^(flagFirst|flagLast) != 0 {
		return Header{}, fmt.Errorf("%w: unknown flags %#x", ErrMalformed, b[0])
	}
	t := binary.BigEndian.Uint32(b[1:])
	if t > 1<<31 {
		return Header{}, fmt.Errorf("%w: length %d", ErrMalformed, t)
	}
	return Header{First: b[0]&flagFirst != 0, Last: b[0]&flagLast != 0, Total: int(t)}, nil
}

// Reassembly is one stream's message being put back together. Fragments
// arrive in order and without loss (frag stands above FIFO reliable
// delivery), so a message is its fragments' bytes in arrival order.
type Reassembly struct {
	buf   []byte
	total int
	open  bool
}

// Add takes one fragment (its header and body) and returns the whole
// message once its last fragment is in (valid until the next Add). A
// fragment that does not fit (a middle without a first, a message longer
// than max or than its header said) is an error wrapping ErrMalformed and
// drops what was gathered.
func (r *Reassembly) Add(h Header, body []byte, max int) (msg []byte, done bool, err error) {
	if h.First {
		if r.open {
			r.reset()
			return nil, false, fmt.Errorf("%w: a new message began before the last one ended", ErrMalformed)
		}
		if h.Total > max {
			return nil, false, fmt.Errorf("%w: message of %d bytes, more than max_msg %d", ErrMalformed, h.Total, max)
		}
		r.open, r.total, r.buf = true, h.Total, r.buf[:0]
	} else if !r.open {
		return nil, false, fmt.Errorf("%w: a fragment without its message's first", ErrMalformed)
	}
	if h.Total != r.total || len(r.buf)+len(body) > r.total {
		r.reset()
		return nil, false, fmt.Errorf("%w: fragment does not fit its %d-byte message", ErrMalformed, h.Total)
	}
	r.buf = append(r.buf, body...)
	if !h.Last {
		return nil, false, nil
	}
	r.open = false
	if len(r.buf) != r.total {
		n := len(r.buf)
		r.reset()
		return nil, false, fmt.Errorf("%w: message ended at %d of %d bytes", ErrMalformed, n, h.Total)
	}
	return r.buf, true, nil
}

// Open reports whether a message is partly gathered.
func (r *Reassembly) Open() bool { return r.open }

// Held is the bytes gathered so far.
func (r *Reassembly) Held() int { return len(r.buf) }

func (r *Reassembly) reset() { r.open, r.total, r.buf = false, 0, r.buf[:0] }
