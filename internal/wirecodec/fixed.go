package wirecodec

import "encoding/binary"

// Fixed-width header fields: the hot headers (sequence numbers, view tags,
// ids) are big-endian uint32s side by side. PutUint32s and Uint32s write
// and read a run of them in order, so a layer's header codec says which
// fields it carries, once, rather than spelling out every offset. Both
// allocate nothing.

// PutUint32s writes vs big-endian, 4 bytes each, from the front of b, which
// must hold them all.
func PutUint32s(b []byte, vs ...uint32) {
	_ = b[4*len(vs)-1] // one bounds check
	for i, v := range vs {
		binary.BigEndian.PutUint32(b[4*i:], v)
	}
}

// Uint32s reads len(ps) big-endian uint32s from the front of b, which must
// hold them all, into *ps[0], *ps[1], ... in order.
func Uint32s(b []byte, ps ...*uint32) {
	_ = b[4*len(ps)-1]
	for i, p := range ps {
		*p = binary.BigEndian.Uint32(b[4*i:])
	}
}

// MaxSeq bounds every sequence number a layer puts on the wire (reliable's
// per-sender numbers, ring's link_seq and site_seq, tokenring's region and
// group numbers): a decoder refuses a larger one. Below 2^31, window
// arithmetic (next + window) never wraps; a sender would need two billion
// casts to one stream to reach it.
const MaxSeq = 1 << 31
