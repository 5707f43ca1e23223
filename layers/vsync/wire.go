package vsync

import (
	"errors"
	"fmt"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/wirecodec"
)

// Header types: the first byte of every message vsync passes down. Wire
// values, append-only.
const (
	// tData is an application cast: view tag and sequence number follow.
	tData byte = 1
	// tResend is another member's old-view cast sent again during a flush.
	tResend byte = 2
	// tReport is a flush report (msgpack body, report).
	tReport byte = 3
	// tStable is a stability gossip (control cast, msgpack body, stable).
	tStable byte = 4
	// tPass is a control cast from a layer above, passed through.
	tPass byte = 5
)

// dataHeaderSize is the header of an application cast:
//
//	byte 0     tData
//	bytes 1-4  view tag: the view the sender's application had when it cast
//	bytes 5-8  sequence number in the sender's stream for the group (from 1)
const dataHeaderSize = 9

// resendHeaderSize is the header of a message sent again for its sender:
//
//	byte 0     tResend
//	bytes 1-4  the original sender
//	bytes 5-8  view tag of the original cast
//	bytes 9-12 its sequence number in the original sender's stream
const resendHeaderSize = 13

// maxHeader is the most vsync prepends to one message.
const maxHeader = resendHeaderSize

// maxEntries bounds the per-sender entries a report or a gossip may carry
// (a group larger than this cannot be flushed: its reports are refused).
const maxEntries = 4096

// errMalformed is wrapped by every decoding error.
var errMalformed = errors.New("vsync: malformed message")

// dataHeader is a decoded tData or tResend header (From is the original
// sender, NoNode for tData).
type dataHeader struct {
	from     event.NodeID
	tag, seq uint32
}

func putData(b []byte, tag, seq uint32) {
	b[0] = tData
	wirecodec.PutUint32s(b[1:], tag, seq)
}

func putResend(b []byte, from event.NodeID, tag, seq uint32) {
	b[0] = tResend
	wirecodec.PutUint32s(b[1:], uint32(from), tag, seq)
}

// readHeader decodes a tData or tResend header from the front of b and
// returns it with its size. A sequence number of 0 or a resend naming no
// sender is malformed.
func readHeader(b []byte) (dataHeader, int, error) {
	var h dataHeader
	if len(b) < 1 {
		return h, 0, fmt.Errorf("%w: empty", errMalformed)
	}
	switch b[0] {
	case tData:
		if len(b) < dataHeaderSize {
			return h, 0, fmt.Errorf("%w: %d-byte data header", errMalformed, len(b))
		}
		wirecodec.Uint32s(b[1:], &h.tag, &h.seq)
		if h.seq == 0 {
			return h, 0, fmt.Errorf("%w: sequence number 0", errMalformed)
		}
		return h, dataHeaderSize, nil
	case tResend:
		if len(b) < resendHeaderSize {
			return h, 0, fmt.Errorf("%w: %d-byte resend header", errMalformed, len(b))
		}
		var from uint32
		wirecodec.Uint32s(b[1:], &from, &h.tag, &h.seq)
		h.from = event.NodeID(from)
		if h.seq == 0 || h.from == event.NoNode {
			return h, 0, fmt.Errorf("%w: resend of sequence %d from %v", errMalformed, h.seq, h.from)
		}
		return h, resendHeaderSize, nil
	}
	return h, 0, fmt.Errorf("%w: type %d is not data", errMalformed, b[0])
}

// entry is one sender's line in a report or a gossip: the highest sequence
// number of its stream the reporter delivered (in the old view, for a
// report; ever, for a gossip).
type entry struct {
	Node uint32 `codec:"n"`
	Hi   uint32 `codec:"h"`
}

// report is a member's flush report for the change of its group from view
// Old (the view its application has, 0 if none) to view Target: for every
// member of Old, the highest sequence number of that member's casts it
// delivered in Old (0: none). Sent as a sequenced cast, so it reaches
// every member after the reporter's own casts in Old (FIFO). Gone lists,
// in increasing order, the survivors the reporter no longer counts in its
// cut (a newer view removes them): a member installs Target only once
// every survivor it counts reports the same delivery and the same Gone.
type report struct {
	Old     uint64   `codec:"o"`
	Target  uint64   `codec:"t"`
	Entries []entry  `codec:"e"`
	Gone    []uint32 `codec:"g"`

	// first is, at the receiver, the member's first report for Target
	// when this one replaced it (not on the wire).
	first *report
}

// stable is a stability gossip: in view View, how far the member has
// delivered each sender's stream. Messages every member of the view has
// delivered are released.
type stable struct {
	View    uint64  `codec:"v"`
	Entries []entry `codec:"e"`
}

func newCodec() *wirecodec.Codec {
	return wirecodec.New(wirecodec.Options{Name: "vsync", Malformed: errMalformed, MaxInitLen: maxEntries})
}

// decodeReport parses a tReport body (after the type byte).
func decodeReport(wc *wirecodec.Codec, b []byte) (report, error) { return decodeBody[report](wc, b) }

// decodeStable parses a tStable body (after the type byte).
func decodeStable(wc *wirecodec.Codec, b []byte) (stable, error) { return decodeBody[stable](wc, b) }

// decodeBody decodes a msgpack body into a T and refuses it (the zero T and
// an error wrapping errMalformed) unless its check accepts it.
func decodeBody[T any, P interface {
	*T
	check() error
}](wc *wirecodec.Codec, b []byte) (T, error) {
	var v, zero T
	if err := wc.Decode(b, &v); err != nil {
		return zero, err
	}
	if err := P(&v).check(); err != nil {
		return zero, err
	}
	return v, nil
}

// check refuses a report with bad entries or views that do not move on.
func (r *report) check() error {
	if err := checkEntries(r.Entries); err != nil {
		return err
	}
	if r.Target == 0 || r.Old >= r.Target {
		return fmt.Errorf("%w: report from view %d to view %d", errMalformed, r.Old, r.Target)
	}
	if len(r.Gone) > maxEntries {
		return fmt.Errorf("%w: %d gone survivors, at most %d", errMalformed, len(r.Gone), maxEntries)
	}
	for i, n := range r.Gone {
		if n == 0 || i > 0 && n <= r.Gone[i-1] {
			return fmt.Errorf("%w: gone survivors %v not increasing node ids", errMalformed, r.Gone)
		}
	}
	return nil
}

// check refuses a gossip with bad entries or for view 0.
func (s *stable) check() error {
	if err := checkEntries(s.Entries); err != nil {
		return err
	}
	if s.View == 0 {
		return fmt.Errorf("%w: gossip for view 0", errMalformed)
	}
	return nil
}

// checkEntries refuses too many entries and entries naming no node.
func checkEntries(es []entry) error {
	if len(es) > maxEntries {
		return fmt.Errorf("%w: %d entries, at most %d", errMalformed, len(es), maxEntries)
	}
	for _, e := range es {
		if e.Node == 0 {
			return fmt.Errorf("%w: entry for no node", errMalformed)
		}
	}
	return nil
}
