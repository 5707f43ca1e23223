// Package wirecodec wraps hashicorp/go-msgpack/v2 for the layers that carry
// msgpack bodies (reliable's digests and NAKs, the membership protocol): one
// encoder, one decoder and one output buffer, reused from call to call, so a
// steady stream of control messages allocates nothing for the codec itself.
//
// A Codec is not safe for concurrent use; a layer runs on one goroutine, so
// one per layer (or per service) is enough.
package wirecodec

import (
	"errors"
	"fmt"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// Options configure a Codec.
type Options struct {
	// Name prefixes the panic message of an encoding failure (a bug: the
	// values encoded are the program's own).
	Name string
	// Malformed is wrapped by every decoding error, so callers can test
	// for it with errors.Is. Nil: ErrMalformed.
	Malformed error
	// MaxInitLen bounds what a decoder allocates up front for a container
	// whose length the input claims (a hostile length cannot make it
	// allocate more than this many elements before the data runs out).
	// Zero: 1024.
	MaxInitLen int
	// WriteExt selects the newer msgpack spec (binary and str8 types,
	// extensions); false keeps the old spec's raw bytes.
	WriteExt bool
}

// ErrMalformed is the default error wrapped by Decode's errors.
var ErrMalformed = errors.New("wirecodec: malformed body")

// Codec is a reusable msgpack encoder and decoder.
type Codec struct {
	h         codec.MsgpackHandle
	enc       *codec.Encoder
	dec       *codec.Decoder
	buf       []byte
	name      string
	malformed error
}

// New returns a Codec configured by o.
func New(o Options) *Codec {
	c := &Codec{name: o.Name, malformed: o.Malformed}
	if c.malformed == nil {
		c.malformed = ErrMalformed
	}
	if c.name == "" {
		c.name = "wirecodec"
	}
	c.h.MaxInitLen = o.MaxInitLen
	if c.h.MaxInitLen <= 0 {
		c.h.MaxInitLen = 1024
	}
	c.h.WriteExt = o.WriteExt
	c.enc = codec.NewEncoderBytes(&c.buf, &c.h)
	c.dec = codec.NewDecoderBytes(nil, &c.h)
	return c
}

// Encode returns v's encoding in a buffer that the next call to Encode
// reuses: copy it (or send it) before encoding again. It panics if v cannot
// be encoded: v is the program's own value, so that is a bug.
func (c *Codec) Encode(v any) []byte {
	c.buf = c.buf[:0]
	c.enc.ResetBytes(&c.buf)
	if err := c.enc.Encode(v); err != nil {
		panic(fmt.Sprintf("%s: encoding %T: %v", c.name, v, err))
	}
	return c.buf
}

// Decode parses b into v (a pointer). Bad input yields an error wrapping
// the configured Malformed error, never a panic: the decoder's own panics on
// hostile input are recovered.
func (c *Codec) Decode(b []byte, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", c.malformed, r)
		}
	}()
	c.dec.ResetBytes(b)
	if err := c.dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %d-byte body: %v", c.malformed, len(b), err)
	}
	return nil
}
