package tokenring

import (
	"errors"
	"fmt"

	"github.com/layercast/layercast/internal/wirecodec"
)

// Packet types: the first byte of every packet tokenring passes down. Wire
// values, append-only.
const (
	// tData is a regional data packet (the first multicast, a sender's
	// retransmission, or a peer's push or pull answer); dataHeaderSize.
	tData byte = 1
	// tPass is a control cast or a best-effort Send (event.Event.BestEffort)
	// from a layer above, passed unsequenced.
	tPass byte = 2
	// tToken is the region's token (msgpack tokenMsg).
	tToken byte = 3
	// tAck is the region leader's ACK to a sender; ackSize.
	tAck byte = 4
	// tNak is a partition leader's collective NAK to a sender (msgpack
	// rangeMsg).
	tNak byte = 5
	// tPull asks a peer for the packets it caches in the listed ranges
	// (msgpack rangeMsg).
	tPull byte = 6
	// tP2P is a reliable point-to-point message from a layer above;
	// p2pHeaderSize.
	tP2P byte = 7
	// tP2PAck acknowledges point-to-point messages cumulatively; p2pHeaderSize.
	tP2PAck byte = 8
	// tP2PCtl is tokenring's own control (a token, pull or collective NAK)
	// sent reliably in the same per-peer sequence as tP2P; p2pHeaderSize,
	// then the control packet.
	tP2PCtl byte = 9
	// tFloor is a newcomer's floor query to a sender, or the sender's
	// answer (msgpack floorMsg), sent reliably like the token.
	tFloor byte = 10
)

// dataHeaderSize is the fixed header of a regional data packet:
//
//	byte 0      tData
//	byte 1      flags (bit 0: sent again, by the sender or a peer; bit 1:
//	            fresh, the sender began its numbering for the region anew
//	            at the view base and gave up every packet below it)
//	bytes 2-5   region
//	bytes 6-9   sender: the node that cast it (not the one forwarding it)
//	bytes 10-13 sequence number (per region and sender, across groups, from 1)
//	bytes 14-17 region view: the sender's view of the region when it cast
//	bytes 18-21 view base: the sender's first sequence number in that view
//	bytes 22-25 group the packet was cast to (handed up under it)
//	bytes 26-29 group sequence number (per group and sender, from 1)
//	bytes 30-33 group view base: the sender's first group sequence number
//	            in the group since the region's view last brought members
//	bytes 34-37 group view: the id of the sender's view of the group when
//	            it numbered the cast
//	bytes 38-41 previous stretch's view: the region view in which the
//	            stretch before the view base's began (0: none)
//	bytes 42-45 previous view base: that stretch's first sequence number
//	bytes 46-49 previous group view base: its first group sequence number
//	            in the group (the group view base if it had none)
//
// A receiver that joined the region in the view the header names starts
// the sender's stream at the view base, and the group's at the group view
// base (event.Event Seq and Start: compose.Sequenced, what fifo orders by).
// If the previous stretch began in the view it joined in or later, it is
// owed that stretch too (its first packet from the sender came after
// another view brought more members): it starts at the previous bases. If
// the previous stretch began after the view it joined in, stretches
// between may be owed as well: it asks the sender (tFloor) before it takes
// the group's packets.
// The group view tells a receiver which membership the packet belongs to
// (views.go): one cast in a view it has not installed yet is not handed up
// (the layers above would take a readmitted sender's cast for the old
// membership's and drop it with that membership's state when the view
// comes), and one cast before the sender's or its own (re)admission is not
// owed to it.
const dataHeaderSize = 50

// ackSize is tAck, region, the region view the ACK was computed over, the
// stable sequence number, and the fair rate (packets/s, equation 1; 0:
// unknown).
const ackSize = 17

// p2pHeaderSize is the point-to-point header: tP2P, tP2PCtl or tP2PAck,
// a 4-byte sequence number, (for tP2P and tP2PCtl) the sender's floor: its
// lowest sequence number not yet acknowledged or given up, so that a
// receiver never waits for a message the sender gave up, and the 4-byte
// session the numbers belong to (for an ack: the session it acknowledges).
// A node numbers its messages to a peer in a new session each time it
// makes its state for the peer afresh (the peer left its groups and came
// back), so the peer, which may have kept its own state, starts again at
// the floor instead of taking the new numbers for old ones.
const p2pHeaderSize = 13

const (
	flagAgain = 1
	flagFresh = 2
)

// errMalformed is wrapped by every decoding error.
var errMalformed = errors.New("tokenring: malformed packet")

// dataHeader is a decoded data header.
type dataHeader struct {
	flags  byte
	region uint32
	sender uint32
	seq    uint32
	view   uint32
	vbase  uint32
	group  uint32
	// gseq numbers the sender's casts in group (from 1), gvbase is gseq's
	// counterpart of vbase: what the layers above order by
	// (compose.Sequenced; the region's numbers span every group).
	gseq, gvbase uint32
	// gview is the sender's view of group when it numbered the cast.
	gview uint32
	// pview, pvbase and pgvbase are the previous stretch's: the region
	// view it began in (0: none), its view base and group view base.
	pview, pvbase, pgvbase uint32
}

func putData(b []byte, h dataHeader) {
	b[0] = tData
	b[1] = h.flags
	wirecodec.PutUint32s(b[2:], h.region, h.sender, h.seq, h.view, h.vbase, h.group, h.gseq, h.gvbase, h.gview,
		h.pview, h.pvbase, h.pgvbase)
}

// parseData decodes a whole data header (type byte included).
func parseData(b []byte) (dataHeader, error) {
	if len(b) < dataHeaderSize || b[0] != tData {
		return dataHeader{}, fmt.Errorf("%w: data header of %d bytes", errMalformed, len(b))
	}
	h := dataHeader{flags: b[1]}
	wirecodec.Uint32s(b[2:], &h.region, &h.sender, &h.seq, &h.view, &h.vbase, &h.group, &h.gseq, &h.gvbase, &h.gview,
		&h.pview, &h.pvbase, &h.pgvbase)
	if h.seq == 0 || h.seq > wirecodec.MaxSeq || h.vbase == 0 || h.vbase > h.seq || h.sender == 0 || h.group == 0 ||
		h.gseq == 0 || h.gseq > wirecodec.MaxSeq || h.gvbase == 0 || h.gvbase > h.gseq {
		return dataHeader{}, fmt.Errorf("%w: seq %d view base %d group seq %d group base %d sender %d",
			errMalformed, h.seq, h.vbase, h.gseq, h.gvbase, h.sender)
	}
	if h.pview == 0 && (h.pvbase != 0 || h.pgvbase != 0) ||
		h.pview != 0 && (h.pvbase == 0 || h.pvbase > h.vbase || h.pgvbase == 0 || h.pgvbase > h.gvbase) {
		return dataHeader{}, fmt.Errorf("%w: previous stretch of view %d, base %d, group base %d (view base %d, group base %d)",
			errMalformed, h.pview, h.pvbase, h.pgvbase, h.vbase, h.gvbase)
	}
	return h, nil
}

// ackMsg is the region leader's ACK: every packet of the sender's stream in
// Region up to Stable is on all the caching replicas of region view View;
// Rate is the fair share of the slowest receiver (packets/s, 0 when not
// measured yet).
type ackMsg struct {
	Region uint32
	View   uint32
	Stable uint32
	Rate   uint32
}

func putAck(b []byte, a ackMsg) {
	b[0] = tAck
	wirecodec.PutUint32s(b[1:], a.Region, a.View, a.Stable, a.Rate)
}

func parseAck(b []byte) (ackMsg, error) {
	if len(b) != ackSize || b[0] != tAck {
		return ackMsg{}, fmt.Errorf("%w: ack of %d bytes", errMalformed, len(b))
	}
	var a ackMsg
	wirecodec.Uint32s(b[1:], &a.Region, &a.View, &a.Stable, &a.Rate)
	if a.Stable > wirecodec.MaxSeq {
		return ackMsg{}, fmt.Errorf("%w: ack of %d", errMalformed, a.Stable)
	}
	return a, nil
}

// p2pHeader is a point-to-point header: a message (tP2P, tP2PCtl) or a
// cumulative ack.
type p2pHeader struct {
	typ     byte
	seq     uint32
	floor   uint32
	session uint32
}

func putP2P(b []byte, h p2pHeader) {
	b[0] = h.typ
	wirecodec.PutUint32s(b[1:], h.seq, h.floor, h.session)
}

func parseP2P(b []byte) (p2pHeader, error) {
	if len(b) < p2pHeaderSize || (b[0] != tP2P && b[0] != tP2PAck && b[0] != tP2PCtl) {
		return p2pHeader{}, fmt.Errorf("%w: point-to-point header of %d bytes", errMalformed, len(b))
	}
	h := p2pHeader{typ: b[0]}
	wirecodec.Uint32s(b[1:], &h.seq, &h.floor, &h.session)
	if h.seq > wirecodec.MaxSeq || h.session == 0 || (h.typ != tP2PAck && (h.seq == 0 || h.floor == 0 || h.floor > h.seq)) {
		return p2pHeader{}, fmt.Errorf("%w: point-to-point seq %d", errMalformed, h.seq)
	}
	return h, nil
}

// tokenMsg is one round's token of region R in region view V. H is its hop:
// the position along the round's path (see path in region.go) of the node it
// is sent to. Mu is the lowest smoothed receive rate (packets/s) of the
// nodes visited so far. S holds one record per active sender.
type tokenMsg struct {
	R  uint32   `codec:"r"`
	V  uint64   `codec:"v"`
	N  uint32   `codec:"n"`
	H  uint32   `codec:"h"`
	Mu uint32   `codec:"m"`
	S  []recMsg `codec:"s"`
}

// recMsg is a sender's record in the token. C (the cutoff), P (received
// everywhere: purge caches up to it), and AU and AL (per partition: the
// union of its members' NAK sets, complete up to AL[j], so a packet up to
// AL[j] outside AU[j] is on every member and others may pull it from the
// partition's leader) come from the previous round. M, F, K, U and UL
// accumulate this round: the highest sequence number any node received,
// the lowest prefix of all packets any node holds, per partition the
// lowest prefix of its cached packets its members hold (the ACK is the
// minimum), and per partition the union of its members' NAK sets. Z is the
// hop where the record joined the token (only a record carried from hop 0
// may ACK). N is the NAK set of the node that passed the token within its
// partition, complete up to NL; I is the intersection of the NAK sets of
// the partition so far, complete up to IL. Range lists are (from, to)
// pairs, inclusive, ascending.
type recMsg struct {
	S  uint32     `codec:"s"`
	C  uint32     `codec:"c"`
	P  uint32     `codec:"p"`
	AU [][]uint32 `codec:"au"`
	AL []uint32   `codec:"al"`
	M  uint32     `codec:"x"`
	F  uint32     `codec:"f"`
	K  []uint32   `codec:"k"`
	U  [][]uint32 `codec:"u"`
	UL []uint32   `codec:"ul"`
	Z  uint32     `codec:"z"`
	NL uint32     `codec:"nl"`
	N  []uint32   `codec:"nr"`
	IL uint32     `codec:"il"`
	I  []uint32   `codec:"ir"`
}

// rangeMsg names packets of Sender's stream in Region: those in the ranges
// whose sequence number is Part modulo Mod (every one if Mod is 0 or 1).
// It is a pull request (to a peer) or a collective NAK (to the sender).
type rangeMsg struct {
	R    uint32   `codec:"r"`
	S    uint32   `codec:"s"`
	Mod  uint32   `codec:"m"`
	Part uint32   `codec:"p"`
	G    []uint32 `codec:"g"`
}

// floorMsg asks sender S (F 0), or answers (F > 0), where a member that
// joined region R in region view J is owed S's packets from: F is the
// first sequence number of the first stretch S began in a view not before
// J (a stretch is the run of S's numbering between two views that brought
// members), and GF the first group sequence number of group G from F on.
// The data header names one stretch back only; a newcomer whose first
// packet from S comes two or more stretches after the one it joined in
// asks (region.go, dataUp).
type floorMsg struct {
	R  uint32 `codec:"r"`
	S  uint32 `codec:"s"`
	G  uint32 `codec:"g"`
	J  uint32 `codec:"j"`
	F  uint32 `codec:"f"`
	GF uint32 `codec:"gf"`
}

// check validates a decoded floor query or answer.
func (m *floorMsg) check() error {
	if m.S == 0 || m.G == 0 || m.F > wirecodec.MaxSeq || m.GF > wirecodec.MaxSeq || (m.F == 0) != (m.GF == 0) {
		return fmt.Errorf("%w: floor of sender %d group %d: %d, %d", errMalformed, m.S, m.G, m.F, m.GF)
	}
	return nil
}

// checkRanges reports a range list that is not ascending, disjoint pairs
// within (0, wirecodec.MaxSeq], or longer than max ranges.
func checkRanges(r []uint32, maxRanges int) error {
	if len(r)%2 != 0 || len(r) > 2*maxRanges {
		return fmt.Errorf("%w: range list of %d numbers", errMalformed, len(r))
	}
	var last uint32
	for i := 0; i < len(r); i += 2 {
		if r[i] == 0 || r[i] > r[i+1] || r[i+1] > wirecodec.MaxSeq || (i > 0 && r[i] <= last) {
			return fmt.Errorf("%w: range [%d, %d]", errMalformed, r[i], r[i+1])
		}
		last = r[i+1]
	}
	return nil
}

// check validates a decoded token against the layer's bounds.
func (t *tokenMsg) check(maxSenders, maxRanges, maxParts int) error {
	if len(t.S) > maxSenders {
		return fmt.Errorf("%w: token with %d senders", errMalformed, len(t.S))
	}
	for i := range t.S {
		r := &t.S[i]
		if r.S == 0 || r.C > wirecodec.MaxSeq || r.P > wirecodec.MaxSeq || r.M > wirecodec.MaxSeq || r.F > wirecodec.MaxSeq || r.NL > wirecodec.MaxSeq || r.IL > wirecodec.MaxSeq ||
			len(r.K) > maxParts || len(r.U) != len(r.UL) || len(r.U) > maxParts || len(r.AU) != len(r.AL) || len(r.AU) > maxParts {
			return fmt.Errorf("%w: token record of sender %d", errMalformed, r.S)
		}
		for j := range r.U {
			if err := checkRanges(r.U[j], maxRanges); err != nil {
				return err
			}
		}
		for j := range r.AU {
			if err := checkRanges(r.AU[j], maxRanges); err != nil {
				return err
			}
		}
		if err := checkRanges(r.N, maxRanges); err != nil {
			return err
		}
		if err := checkRanges(r.I, maxRanges); err != nil {
			return err
		}
		if i > 0 && t.S[i-1].S >= r.S {
			return fmt.Errorf("%w: token records out of order", errMalformed)
		}
	}
	return nil
}

// check validates a decoded pull or NAK.
func (m *rangeMsg) check(maxRanges int) error {
	if m.S == 0 || (m.Mod > 1 && m.Part >= m.Mod) {
		return fmt.Errorf("%w: ranges of sender %d part %d/%d", errMalformed, m.S, m.Part, m.Mod)
	}
	return checkRanges(m.G, maxRanges)
}

// newWireCodec returns the layer's msgpack codec (tokens, pulls, NAKs).
func newWireCodec() *wirecodec.Codec {
	return wirecodec.New(wirecodec.Options{Name: "tokenring", Malformed: errMalformed, MaxInitLen: 1024})
}
