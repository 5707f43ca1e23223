package reliable

import (
	"errors"
	"fmt"

	"github.com/layercast/layercast/internal/wirecodec"
)

// Header types: the first byte of every message reliable passes down. Wire
// values, append-only.
const (
	// tData is a sequenced multicast (or its retransmission).
	tData byte = 1
	// tPass is a control multicast from a layer above, passed unsequenced.
	tPass byte = 2
	// tDigest is a stability digest (control multicast, body in digest.go).
	tDigest byte = 3
	// tNak asks a sender for missing messages (control send, msgpack body).
	tNak byte = 4
	// tP2P is a reliable point-to-point message.
	tP2P byte = 5
	// tP2PAck acknowledges point-to-point messages cumulatively.
	tP2PAck byte = 6
)

// dataHeaderSize is the fixed header of a sequenced multicast:
//
//	byte 0      tData
//	byte 1      flags (bit 0: retransmission; bit 1: resent unasked, so no round-trip sample;
//	            bit 2: an echo follows; bit 3: sent with the sender's buffer over half full)
//	bytes 2-5   view tag: the sender's view of the group when it sent
//	bytes 6-9   base view: the view since which the sender had sent nothing before base
//	bytes 10-13 base: the sender's first sequence number in that stretch of views
//	bytes 14-17 sequence number (per group and sender, from 1)
//
// A receiver that first hears from a sender uses base as where the sender's
// stream starts for it when it joined the group at or after the base view
// (it is owed everything from base on); otherwise it learns its start from
// the sender's stability digest.
//
// A retransmission answering a NAK that carried a time stamp (nakMsg S)
// has flagEcho set and the stamp, 4 bytes, after the header (echoSize):
// the asker takes the time since it stamped that NAK as a round-trip
// sample however many NAKs asked for the message (TCP's timestamps, RFC
// 7323 section 4), where Karn's rule would take none.
const dataHeaderSize = 18

// echoSize is the echoed NAK stamp after the data header (flagEcho).
const echoSize = 4

// p2pHeaderSize is the point-to-point header (see p2pFullHeader).
const p2pHeaderSize = p2pFullHeader

// p2pAckSize is tP2PAck and the 4-byte cumulative sequence number.
const p2pAckSize = 5

// Data header flags. Wire values, append-only.
const (
	flagRetrans = 1 // a retransmission
	// flagUnasked marks a retransmission no NAK asked for (repairLagging):
	// the time since the receiver's last NAK is no round trip.
	flagUnasked = 2
	// flagEcho: echoSize bytes after the header echo the S of the NAK
	// this retransmission answers (to its asker alone).
	flagEcho = 4
	// flagPressed: the sender's buffer was over half full when it first
	// sent this (its rate waits for stability): the gaps it reveals are
	// NAKed as soon as they are certain (firstNakAfter). Kept by its
	// retransmissions, which copy the header, and ignored on them.
	flagPressed = 8
)

// errMalformed is wrapped by every decoding error.
var errMalformed = errors.New("reliable: malformed header")

// dataHeader is a decoded data header.
type dataHeader struct {
	flags    byte
	view     uint32
	baseView uint32
	base     uint32
	seq      uint32
}

func putData(b []byte, h dataHeader) {
	b[0], b[1] = tData, h.flags
	wirecodec.PutUint32s(b[2:], h.view, h.baseView, h.base, h.seq)
}

// parseData decodes a whole data header (type byte included).
func parseData(b []byte) (dataHeader, error) {
	if len(b) < dataHeaderSize || b[0] != tData {
		return dataHeader{}, fmt.Errorf("%w: data header of %d bytes", errMalformed, len(b))
	}
	h := dataHeader{flags: b[1]}
	wirecodec.Uint32s(b[2:], &h.view, &h.baseView, &h.base, &h.seq)
	if h.seq == 0 || h.seq > wirecodec.MaxSeq || h.base == 0 || h.base > h.seq || h.baseView > h.view {
		return dataHeader{}, fmt.Errorf("%w: seq %d base %d view %d base view %d", errMalformed, h.seq, h.base, h.view, h.baseView)
	}
	return h, nil
}

// parseEcho decodes the echoed stamp that follows a data header with
// flagEcho (a stamp is never 0).
func parseEcho(b []byte) (uint32, error) {
	if len(b) < echoSize {
		return 0, fmt.Errorf("%w: echo of %d bytes", errMalformed, len(b))
	}
	var v uint32
	wirecodec.Uint32s(b, &v)
	if v == 0 {
		return 0, fmt.Errorf("%w: echo 0", errMalformed)
	}
	return v, nil
}

func putEcho(b []byte, v uint32) { wirecodec.PutUint32s(b, v) }

// nakMsg asks the sender of group G's stream for the listed sequence
// ranges, as (from, to) pairs, inclusive. T is the asking receiver's
// smoothed round trip to the sender in microseconds (0: not measured yet):
// the sender does not resend a message to that receiver within about one
// round trip of the last resend (the NAK crossed the answer). C asks for
// that many copies of each retransmission (0: the sender's nak_copies; the
// sender grants at most 2, or its own nak_copies if more): a receiver
// losing more than nak_copies_loss of the stream asks for 2. S is the
// asker's clock when it sent the NAK, in microseconds modulo 2^32 (never 0;
// 0: no stamp), which the retransmissions answering it by unicast echo
// (flagEcho), as TCP's TSval and TSecr (RFC 7323).
type nakMsg struct {
	G uint32   `codec:"g"`
	R []uint32 `codec:"r"`
	T uint32   `codec:"t"`
	C uint32   `codec:"c,omitempty"`
	S uint32   `codec:"s,omitempty"`
}

// digestMsg is a member's stability digest for group G in its view V: for
// every member N of the view, E holds the triple (N, C, F). For the digest's
// own sender, C is the highest sequence number it has sent; for another
// member, C is how far the digest's sender has received N's stream without a
// gap and F is where its own stream starts for N (its floor). U says the
// sender still holds unstable messages (receivers then keep answering); H
// says its buffer is full and the application held off (receivers answer at
// once). Q asks the members for an answer at once too: its sender has not
// measured the round trip to a member whose stream it receives, and times
// the answer (A: this digest answers an H or Q one) to learn it before its
// first NAK (see askRTT).
type digestMsg struct {
	G uint32   `codec:"g"`
	V uint32   `codec:"v"`
	U bool     `codec:"u"`
	H bool     `codec:"h"`
	Q bool     `codec:"q"`
	A bool     `codec:"a"`
	E []uint32 `codec:"e"`
}

// newWireCodec returns the layer's msgpack codec (digests and NAKs); its
// decoding errors wrap errMalformed.
func newWireCodec() *wirecodec.Codec {
	return wirecodec.New(wirecodec.Options{Name: "reliable", Malformed: errMalformed, MaxInitLen: 4096})
}
