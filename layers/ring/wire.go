package ring

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/wirecodec"
)

// Packet types: the first byte of every packet ring passes down. Wire
// values, append-only.
const (
	// tPass is a packet the ring does not order (a Send, a control or
	// one-member Cast from above), passed through unchanged.
	tPass byte = 1
	// tData is a message ordered by the ring (or its retransmission).
	tData byte = 2
	// tToken is the rotating token (msgpack body, see token).
	tToken byte = 3
	// tTokenAck tells the token's sender it arrived (ring id, token seq,
	// the copy's transmission number); until then the sender sends it
	// again after its retransmission timeout.
	tTokenAck byte = 4
)

// tokenHdrSize is what precedes a token's msgpack body: tToken and the
// copy's transmission number (0 for the first, saturating at 255), which
// the acknowledgement echoes.
const tokenHdrSize = 2

// tokenAckSize is tTokenAck, the ring id, the token's sequence and the
// transmission number of the copy acknowledged.
const tokenAckSize = 14

func putTokenAck(b []byte, ring uint32, seq uint64, tx byte) {
	b[0] = tTokenAck
	binary.BigEndian.PutUint32(b[1:], ring)
	binary.BigEndian.PutUint64(b[5:], seq)
	b[13] = tx
}

// parseTokenAck decodes a token acknowledgement (type byte included).
func parseTokenAck(b []byte) (ring uint32, seq uint64, tx byte, err error) {
	if len(b) != tokenAckSize || b[0] != tTokenAck {
		return 0, 0, 0, fmt.Errorf("%w: token acknowledgement of %d bytes", errMalformed, len(b))
	}
	return binary.BigEndian.Uint32(b[1:]), binary.BigEndian.Uint64(b[5:]), b[13], nil
}

// Data header flags.
const (
	// flagRetrans marks a retransmission answered from the token's list.
	flagRetrans byte = 1
	// flagRecovery marks a retransmission of an old ring's message during
	// a membership change: the only packets of an old ring a member takes
	// once it has moved to the new ring.
	flagRecovery byte = 2
	// flagSite marks a cast made on the site's channel rather than to a
	// group (a routing layer above, such as hop, addressing the whole
	// site): every member hands it up, whatever its groups.
	flagSite byte = 4
)

// dataHeaderSize is the fixed header of an ordered message:
//
//	byte 0      tData
//	byte 1      flags
//	bytes 2-5   ring id (hash of the ring's members)
//	bytes 6-9   link_seq: the packet's place in the ring's order (from 1)
//	bytes 10-13 site_seq: the message's sequence number in the site
//	bytes 14-17 lts: its Lamport time stamp (site_lts when it was sent)
//	bytes 18-21 origin: the node that cast it into the ring
const dataHeaderSize = 22

// errMalformed is wrapped by every decoding error.
var errMalformed = errors.New("ring: malformed packet")

// dataHeader is a decoded data header.
type dataHeader struct {
	flags   byte
	ring    uint32
	seq     uint32
	siteSeq uint32
	lts     uint32
	origin  event.NodeID
}

func putData(b []byte, h dataHeader) {
	b[0] = tData
	b[1] = h.flags
	wirecodec.PutUint32s(b[2:], h.ring, h.seq, h.siteSeq, h.lts, uint32(h.origin))
}

// parseData decodes a whole data header (type byte included).
func parseData(b []byte) (dataHeader, error) {
	if len(b) < dataHeaderSize || b[0] != tData {
		return dataHeader{}, fmt.Errorf("%w: data header of %d bytes", errMalformed, len(b))
	}
	h := dataHeader{flags: b[1]}
	var origin uint32
	wirecodec.Uint32s(b[2:], &h.ring, &h.seq, &h.siteSeq, &h.lts, &origin)
	h.origin = event.NodeID(origin)
	switch {
	case h.flags&^(flagRetrans|flagRecovery|flagSite) != 0:
		return dataHeader{}, fmt.Errorf("%w: unknown flags %#x", errMalformed, h.flags)
	case h.seq == 0 || h.seq > wirecodec.MaxSeq || h.siteSeq == 0 || h.siteSeq > wirecodec.MaxSeq || h.lts == 0 || h.lts > wirecodec.MaxSeq:
		return dataHeader{}, fmt.Errorf("%w: link_seq %d site_seq %d lts %d", errMalformed, h.seq, h.siteSeq, h.lts)
	case h.origin == event.NoNode:
		return dataHeader{}, fmt.Errorf("%w: no origin", errMalformed)
	}
	return h, nil
}

// Token types (token.Type). Wire values, append-only.
const (
	// tokRegular is the ring at work: members send up to their limits.
	tokRegular uint8 = 0
	// tokRecovery is a new ring's token while the messages of the old
	// ring(s) are recovered: nobody sends new messages.
	tokRecovery uint8 = 1
	// tokQuiet is a regenerated token's first rotation: members raise the
	// sequence fields to what they have sent or seen, and send nothing new,
	// so no sequence number is handed out twice.
	tokQuiet uint8 = 2
)

// token is the rotating token of Figure 3.3, plus what regeneration and
// membership changes need (ring id, token sequence, the old rings being
// recovered). Field names are kept short on the wire.
type token struct {
	// Ring is the ring id; a token of another ring is dropped.
	Ring uint32 `codec:"r"`
	// Type is tokRegular, tokRecovery or tokQuiet.
	Type uint8 `codec:"t"`
	// Seq increases with every pass; a token not newer than the last one
	// a member handled is a duplicate or stale (a lost token's
	// regeneration jumps it ahead).
	Seq uint64 `codec:"s"`
	// LinkSeq is the highest link_seq handed out on the ring.
	LinkSeq uint32 `codec:"ls"`
	// LinkAru is the link_seq every member has received all packets up to
	// (as far as this rotation knows).
	LinkAru uint32 `codec:"la"`
	// FlowControl counts the packets sent in the last rotation,
	// retransmissions included.
	FlowControl uint32 `codec:"fc"`
	// Backlog is the casts waiting at the members, each as it counted them
	// on its last visit (Totem's backlog): a member's share of a full
	// rotation follows its share of the backlog, so none is starved.
	Backlog uint32 `codec:"bl"`
	// RotSent and RotBacklog count this rotation so far: the packets sent
	// and the casts waiting at each member visited since the leader's last
	// visit, the leader's own included. At the end of each rotation the
	// leader makes them the FlowControl and Backlog (their true value
	// then) and starts them again from zero. FlowControl and Backlog are
	// running sums that each member corrects only by its own share, so
	// without this an excess no member put in (a corrupt or forged token)
	// never drained: FlowControl at ring_limit stopped every member
	// sending for good. An excess now lasts at most two rotations.
	RotSent    uint32 `codec:"fr"`
	RotBacklog uint32 `codec:"br"`
	// Rtr lists the link_seq values members ask to be retransmitted.
	Rtr []uint32 `codec:"rtr"`
	// Age counts, for each request in Rtr, the members in a row that
	// lacked the packet, the asker included (a member that holds it but
	// has no budget left sets it to 0): when every member lacked it, no
	// member holds it (never sent), and it moves to Lost.
	Age []uint32 `codec:"a"`
	// Lost are link_seq values no member holds: every member skips them.
	Lost []uint32 `codec:"x"`
	// SiteSeq is the highest site_seq handed out.
	SiteSeq uint32 `codec:"ss"`
	// SiteLTS is the highest Lamport time stamp seen on the ring.
	SiteLTS uint32 `codec:"sl"`
	// SiteAru is the LTS below which every member has every message.
	SiteAru uint32 `codec:"sa"`
	// Modifier is the member that last lowered the aru fields (0: none
	// during the last round): the site_aru_modifier of Figure 3.3.
	Modifier uint32 `codec:"m"`
	// Busy is set by a member during a recovery rotation while it still
	// misses old messages; Changed when it changed the recovery state.
	// The leader starts the ring after a rotation with neither.
	Busy    bool `codec:"b"`
	Changed bool `codec:"c"`
	// Old is the recovery state of each old ring members come from.
	Old []oldRing `codec:"o"`
}

// oldRing is the recovery state of one old ring on a recovery token.
type oldRing struct {
	// Ring is the old ring's id.
	Ring uint32 `codec:"r"`
	// High is the highest link_seq of the old ring any member has seen.
	High uint32 `codec:"h"`
	// Rtr are the old ring's link_seq values members miss, each with the
	// number of other members it passed unanswered.
	Rtr []rtrReq `codec:"q"`
	// Lost are link_seq values no member of the new ring has: every member
	// skips them.
	Lost []uint32 `codec:"l"`
}

// rtrReq is one request for an old ring's packet.
type rtrReq struct {
	Seq uint32 `codec:"s"`
	// Passed counts the members in a row that lacked it, the asker
	// included (0 after one that holds it deferred it).
	Passed uint32 `codec:"p"`
}

// Bounds a token must keep (a hostile or corrupt one is dropped).
const (
	// maxOldRings bounds the old rings one recovery merges.
	maxOldRings = 16
	// maxMembers bounds a ring's members (Passed counts cannot exceed it).
	maxMembers = 1 << 16
)

// newWireCodec returns the layer's msgpack codec (tokens); its decoding
// errors wrap errMalformed.
func newWireCodec() *wirecodec.Codec {
	return wirecodec.New(wirecodec.Options{Name: "ring", Malformed: errMalformed, MaxInitLen: 4096})
}

// decodeToken parses a token body into t and checks its bounds: at most
// maxRtr retransmission requests (in each list), maxOldRings old rings,
// sequence numbers and flow-control counts within wirecodec.MaxSeq and an aru not
// above its sequence.
func decodeToken(wc *wirecodec.Codec, b []byte, t *token, maxRtr int) error {
	*t = token{Rtr: t.Rtr[:0], Age: t.Age[:0], Lost: t.Lost[:0], Old: t.Old[:0]}
	if err := wc.Decode(b, t); err != nil {
		return err
	}
	return t.check(maxRtr)
}

// check reports a token whose fields cannot be.
func (t *token) check(maxRtr int) error {
	switch {
	case t.Type > tokQuiet:
		return fmt.Errorf("%w: token type %d", errMalformed, t.Type)
	case t.Seq == 0:
		return fmt.Errorf("%w: token sequence 0", errMalformed)
	case t.LinkSeq > wirecodec.MaxSeq || t.SiteSeq > wirecodec.MaxSeq || t.SiteLTS > wirecodec.MaxSeq:
		return fmt.Errorf("%w: token sequence fields beyond %d", errMalformed, wirecodec.MaxSeq)
	case t.FlowControl > wirecodec.MaxSeq || t.Backlog > wirecodec.MaxSeq || t.RotSent > wirecodec.MaxSeq || t.RotBacklog > wirecodec.MaxSeq:
		// (so that adding a member's count to any of them never wraps)
		return fmt.Errorf("%w: token flow-control counts beyond %d", errMalformed, wirecodec.MaxSeq)
	case t.LinkAru > t.LinkSeq || t.SiteAru > t.SiteLTS:
		return fmt.Errorf("%w: token aru %d/%d above its sequence %d/%d", errMalformed, t.LinkAru, t.SiteAru, t.LinkSeq, t.SiteLTS)
	case len(t.Rtr) > maxRtr || len(t.Lost) > maxRtr:
		return fmt.Errorf("%w: %d retransmission requests and %d lost, at most %d each", errMalformed, len(t.Rtr), len(t.Lost), maxRtr)
	case len(t.Age) != len(t.Rtr):
		return fmt.Errorf("%w: %d ages for %d requests", errMalformed, len(t.Age), len(t.Rtr))
	case len(t.Old) > maxOldRings:
		return fmt.Errorf("%w: %d old rings, at most %d", errMalformed, len(t.Old), maxOldRings)
	case t.Type != tokRecovery && len(t.Old) > 0:
		return fmt.Errorf("%w: old rings on a token that is not recovering", errMalformed)
	}
	for i, s := range t.Rtr {
		if s == 0 || s > t.LinkSeq || t.Age[i] > maxMembers {
			return fmt.Errorf("%w: request for %d (age %d) beyond link_seq %d", errMalformed, s, t.Age[i], t.LinkSeq)
		}
	}
	for _, s := range t.Lost {
		if s == 0 || s > t.LinkSeq {
			return fmt.Errorf("%w: lost %d beyond link_seq %d", errMalformed, s, t.LinkSeq)
		}
	}
	for i := range t.Old {
		o := &t.Old[i]
		if o.High > wirecodec.MaxSeq || len(o.Rtr) > maxRtr || len(o.Lost) > maxRtr {
			return fmt.Errorf("%w: old ring %d: high %d, %d requests, %d lost", errMalformed, o.Ring, o.High, len(o.Rtr), len(o.Lost))
		}
		for _, r := range o.Rtr {
			if r.Seq == 0 || r.Seq > o.High || r.Passed > 2*maxMembers { // a lost one goes round twice
				return fmt.Errorf("%w: old ring %d: request %d (passed %d) beyond high %d", errMalformed, o.Ring, r.Seq, r.Passed, o.High)
			}
		}
		for _, s := range o.Lost {
			if s == 0 || s > o.High {
				return fmt.Errorf("%w: old ring %d: lost %d beyond high %d", errMalformed, o.Ring, s, o.High)
			}
		}
		for j := range i {
			if t.Old[j].Ring == o.Ring {
				return fmt.Errorf("%w: old ring %d listed twice", errMalformed, o.Ring)
			}
		}
	}
	return nil
}

// copyTo copies t into d, reusing d's slices.
func (t *token) copyTo(d *token) {
	rtr, age, lost, old := d.Rtr[:0], d.Age[:0], d.Lost[:0], d.Old
	*d = *t
	d.Rtr = append(rtr, t.Rtr...)
	d.Age = append(age, t.Age...)
	d.Lost = append(lost, t.Lost...)
	old = old[:cap(old)]
	n := len(t.Old)
	if len(old) < n {
		old = append(old, make([]oldRing, n-len(old))...)
	}
	for i := range n {
		o := &old[i]
		o.Ring, o.High = t.Old[i].Ring, t.Old[i].High
		o.Rtr = append(o.Rtr[:0], t.Old[i].Rtr...)
		o.Lost = append(o.Lost[:0], t.Old[i].Lost...)
	}
	d.Old = old[:n]
}
