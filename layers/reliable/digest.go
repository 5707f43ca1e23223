package reliable

import (
	"encoding/binary"
	"fmt"
)

// A digest's body (after the tDigest byte) is a run of unsigned varints
// rather than msgpack: digests are a fifth of the packets a receiver takes,
// and decoding them by reflection was a tenth of a large simulation's CPU
// (issue 9 item 11). It is smaller, too: no field names.
//
//	G      group (uvarint)
//	V      view tag (uvarint)
//	flags  one byte: bit 0 U (unstable), bit 1 H (held), bit 2 Q (answer
//	       at once: a round trip is wanted), bit 3 A (an answer); others zero
//	n      number of entries (uvarint)
//	then n entries N, C, F (three uvarints each)
//
// Every varint is in its shortest form, values fit in 32 bits and nothing
// follows the last entry: each digest has exactly one encoding.
const (
	digestU = 1
	digestH = 2
	digestQ = 4
	digestA = 8
)

// appendDigest appends d's body (len(d.E) a multiple of 3) to b.
func appendDigest(b []byte, d *digestMsg) []byte {
	b = binary.AppendUvarint(b, uint64(d.G))
	b = binary.AppendUvarint(b, uint64(d.V))
	var fl byte
	if d.U {
		fl |= digestU
	}
	if d.H {
		fl |= digestH
	}
	if d.Q {
		fl |= digestQ
	}
	if d.A {
		fl |= digestA
	}
	b = append(b, fl)
	b = binary.AppendUvarint(b, uint64(len(d.E)/3))
	for _, v := range d.E {
		b = binary.AppendUvarint(b, uint64(v))
	}
	return b
}

// digestSize is the length of d's body.
func digestSize(d *digestMsg) int {
	n := 1 + uvarintLen(uint32(d.G)) + uvarintLen(d.V) + uvarintLen(uint32(len(d.E)/3))
	for _, v := range d.E {
		n += uvarintLen(v)
	}
	return n
}

func uvarintLen(v uint32) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// digestReader reads a body's varints, remembering the first error.
type digestReader struct {
	b   []byte
	err error
}

func (r *digestReader) u32() uint32 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	switch {
	case n <= 0:
		r.err = fmt.Errorf("%w: digest: bad varint", errMalformed)
	case v > 1<<32-1:
		r.err = fmt.Errorf("%w: digest: value %d", errMalformed, v)
	case n > 1 && r.b[n-1] == 0:
		r.err = fmt.Errorf("%w: digest: varint not in shortest form", errMalformed)
	default:
		r.b = r.b[n:]
		return uint32(v)
	}
	return 0
}

// parseDigest decodes a digest's body into d, reusing d.E (which grows to
// at most a third of the body's length).
func parseDigest(b []byte, d *digestMsg) error {
	r := digestReader{b: b}
	d.G = r.u32()
	d.V = r.u32()
	if r.err != nil {
		return r.err
	}
	if len(r.b) == 0 {
		return fmt.Errorf("%w: digest of %d bytes", errMalformed, len(b))
	}
	fl := r.b[0]
	r.b = r.b[1:]
	if fl&^(digestU|digestH|digestQ|digestA) != 0 {
		return fmt.Errorf("%w: digest flags %#x", errMalformed, fl)
	}
	d.U, d.H, d.Q, d.A = fl&digestU != 0, fl&digestH != 0, fl&digestQ != 0, fl&digestA != 0
	n := int(r.u32())
	if r.err == nil && n > len(r.b)/3 {
		// each entry takes at least three bytes
		return fmt.Errorf("%w: digest of %d entries in %d bytes", errMalformed, n, len(r.b))
	}
	d.E = d.E[:0]
	for i := 0; i < 3*n && r.err == nil; i++ {
		d.E = append(d.E, r.u32())
	}
	if r.err != nil {
		return r.err
	}
	if len(r.b) != 0 {
		return fmt.Errorf("%w: digest: %d bytes after the entries", errMalformed, len(r.b))
	}
	return nil
}
