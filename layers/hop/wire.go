package hop

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/layercast/layercast/event"
)

// Packet types: the first byte of every hop header. Append-only: values are
// part of the wire format.
const (
	// tPass is an application Send passing through hop untouched.
	tPass byte = 0
	// tData is a site-stream message: on a WAN link (link seq set) or on
	// the site channel (link seq 0).
	tData byte = 1
	// tSkip says, in a link's sequence, that a run of a site's stream was
	// pruned below this link (Spread 3.1: aggregated control instead of the
	// data), so the stream stays contiguous everywhere.
	tSkip byte = 2
	// tAck carries the receiver's link_aru and the sender's highest seq.
	tAck byte = 3
	// tNack lists link seqs to resend (msgpack body).
	tNack byte = 4
	// tBeat is a site's timestamp heartbeat (idle sites still let agreed
	// order advance).
	tBeat byte = 5
	// tProbe asks, answers or confirms across a link declared down
	// whether it carries traffic again (probeHdr).
	tProbe byte = 6
	// tStart is a stream's state transfer (a dataHdr): for source site
	// Site, its sender sends everything from site sequence Seq on; what
	// comes before Seq it cannot give (Spread 3.3: the messages a
	// configuration change leaves a newcomer or a readmitted site). A
	// stream that does not know where it stands (a new member, a site
	// readmitted) waits for one; one that stands below Seq skips to it
	// and tells the application what it will not get (event.Lost).
	// Origin, in a member's replay to a representative new to its site
	// (rejoined), is the representative it is addressed to. On the site
	// channel with Seq 0 and View set, it says the representative opened
	// Site's stream in its view View of the cast's group (castOpened).
	tStart byte = 7
	// tHolds is a member's word to its site's representative (cast on the
	// site channel, the tBeat layout with Seq, LTS and Down zero): its
	// Aru says, for each source site in Has, up to which site sequence
	// this member holds that source's stream. The representative's
	// heartbeats give, for a far source, the least of its members' and
	// its own (holdsFloor): far sites free what every site's ARU covers.
	tHolds byte = 8
	// tSeen: a member tells its site's representative up to which of its
	// own casts (origin number, OSeq) it has seen numbered (seenSize);
	// the representative delivers a member's cast it numbered only then
	// (seen.go).
	tSeen byte = 9
)

// seenSize is tSeen: type, three pad bytes, the origin number.
const seenSize = 8

func putSeen(b []byte, oseq uint32) {
	_ = b[seenSize-1]
	b[0], b[1], b[2], b[3] = tSeen, 0, 0, 0
	binary.BigEndian.PutUint32(b[4:], oseq)
}

func parseSeen(b []byte) (uint32, error) {
	if len(b) != seenSize || b[0] != tSeen || b[1]|b[2]|b[3] != 0 {
		return 0, fmt.Errorf("%w: seen of %d bytes", errMalformed, len(b))
	}
	return binary.BigEndian.Uint32(b[4:]), nil
}

// Probe stages: a representative that declared its link to a far site down
// probes it (probeAsk); the far representative answers (probeAnswer); the
// asker, now knowing both directions carry, brings the link up and
// confirms (probeConfirm), and the far one brings it up too.
const (
	probeAsk byte = iota
	probeAnswer
	probeConfirm
)

// probeSize is tProbe: type, the sender's site, stage, pad, then the mask
// of the links the sender's site has declared down.
const probeSize = 12

// probeHdr is a decoded tProbe.
type probeHdr struct {
	Site  event.SiteID
	Stage byte
	Down  uint64
}

func (p *probeHdr) put(b []byte) {
	_ = b[probeSize-1]
	b[0], b[1], b[2], b[3] = tProbe, byte(p.Site), p.Stage, 0
	binary.BigEndian.PutUint64(b[4:], p.Down)
}

func parseProbe(b []byte) (probeHdr, error) {
	var p probeHdr
	if len(b) != probeSize || b[0] != tProbe {
		return p, fmt.Errorf("%w: probe of %d bytes", errMalformed, len(b))
	}
	p.Site, p.Stage, p.Down = event.SiteID(b[1]), b[2], binary.BigEndian.Uint64(b[4:])
	if p.Site > maxSite || p.Stage > probeConfirm || b[3] != 0 || p.Down&(1<<p.Site) != 0 {
		return p, fmt.Errorf("%w: probe of site %d, stage %d", errMalformed, p.Site, p.Stage)
	}
	return p, nil
}

// Header flags. Append-only: values are part of the wire format.
const (
	// flagRetx marks a retransmitted data packet.
	flagRetx = 1
	// flagRecast marks a member's unnumbered cast sent again to a new
	// representative (failover.go).
	flagRecast = 2
	// flagReplay marks what a representative casts into its site again
	// for a newcomer (state transfer): not to be sent on again.
	flagReplay = 4
)

// errMalformed is wrapped by every decoding error.
var errMalformed = errors.New("hop: malformed header")

// dataHdr is the header of a site-stream message (tData) and of a pruned
// run (tSkip, where Seq..Last are skipped and LTS is the last one's). In a
// tData, Last is the origin's own number for the cast (OSeq): the site's
// representative numbers each (origin, OSeq) once, and a member casts
// again, to a new representative, what it has not seen numbered.
type dataHdr struct {
	Type    byte
	Flags   byte
	LinkSeq uint32
	Site    event.SiteID
	Origin  event.NodeID
	Seq     uint32 // site sequence
	Last    uint32 // tSkip: last site sequence of the run; tData: OSeq
	LTS     uint64
	Mask    uint64 // interested sites (bit per SiteID)
	// View, of a tData: the ID (low 32 bits) of the caster's view of its
	// group when it cast (0: none); a node whose view is older holds
	// agreed order at it (viewBehind).
	View uint32
	// Epoch, on a link, is the life of the sending end's link that
	// LinkSeq numbers (link.epoch): a far end takes link numbers only
	// of the newest life it has seen.
	Epoch uint16
}

// dataHdrSize is the encoded size of dataHdr.
const dataHdrSize = 1 + 1 + 4 + 1 + 4 + 4 + 4 + 8 + 8 + 4 + 2

func (h *dataHdr) put(b []byte) {
	_ = b[dataHdrSize-1]
	b[0], b[1] = h.Type, h.Flags
	binary.BigEndian.PutUint32(b[2:], h.LinkSeq)
	b[6] = byte(h.Site)
	binary.BigEndian.PutUint32(b[7:], uint32(h.Origin))
	binary.BigEndian.PutUint32(b[11:], h.Seq)
	binary.BigEndian.PutUint32(b[15:], h.Last)
	binary.BigEndian.PutUint64(b[19:], h.LTS)
	binary.BigEndian.PutUint64(b[27:], h.Mask)
	binary.BigEndian.PutUint32(b[35:], h.View)
	binary.BigEndian.PutUint16(b[39:], h.Epoch)
}

// parseData decodes a tData or tSkip header and checks its fields.
func parseData(b []byte) (dataHdr, error) {
	var h dataHdr
	if len(b) < dataHdrSize {
		return h, fmt.Errorf("%w: %d bytes, want %d", errMalformed, len(b), dataHdrSize)
	}
	h.Type, h.Flags = b[0], b[1]
	h.LinkSeq = binary.BigEndian.Uint32(b[2:])
	h.Site = event.SiteID(b[6])
	h.Origin = event.NodeID(binary.BigEndian.Uint32(b[7:]))
	h.Seq = binary.BigEndian.Uint32(b[11:])
	h.Last = binary.BigEndian.Uint32(b[15:])
	h.LTS = binary.BigEndian.Uint64(b[19:])
	h.Mask = binary.BigEndian.Uint64(b[27:])
	h.View = binary.BigEndian.Uint32(b[35:])
	h.Epoch = binary.BigEndian.Uint16(b[39:])
	switch {
	case h.Type != tData && h.Type != tSkip && h.Type != tStart:
		return h, fmt.Errorf("%w: type %d is not data", errMalformed, h.Type)
	case h.Site > maxSite:
		return h, fmt.Errorf("%w: site %d above %d", errMalformed, h.Site, maxSite)
	case h.Type == tData && h.Seq == 0 && h.LinkSeq == 0:
		// unnumbered: a member's cast to its site's representative
	case h.Type == tStart && h.Seq == 0 && h.LinkSeq == 0 && h.View != 0:
		// a representative opened Site's stream (castOpened)
	case h.Seq == 0:
		return h, fmt.Errorf("%w: site sequence 0", errMalformed)
	case h.Type == tData, h.Type == tStart:
	case h.Last < h.Seq:
		return h, fmt.Errorf("%w: skip run %d..%d", errMalformed, h.Seq, h.Last)
	case h.Last-h.Seq > maxSkipRun:
		return h, fmt.Errorf("%w: skip run of %d", errMalformed, h.Last-h.Seq+1)
	}
	return h, nil
}

// end is the last site sequence the header covers.
func (h *dataHdr) end() uint32 {
	if h.Type == tSkip {
		return h.Last
	}
	return h.Seq
}

// maxSkipRun bounds one tSkip's run (a sender flushes long before).
const maxSkipRun = 1 << 20

// ackHdrSize is tAck: type, pad, link_aru, highest sent, and the two
// links' lives those numbers are of.
const ackHdrSize = 14

// ackHdr is tAck: Aru is what the far end received of this end's packets
// of life AruEpoch; Highest is what it sent this end, in its life Epoch.
// Two directions, no relation between them.
type ackHdr struct {
	Aru, Highest    uint32
	AruEpoch, Epoch uint16
}

func (a *ackHdr) put(b []byte) {
	b[0], b[1] = tAck, 0
	binary.BigEndian.PutUint32(b[2:], a.Aru)
	binary.BigEndian.PutUint32(b[6:], a.Highest)
	binary.BigEndian.PutUint16(b[10:], a.AruEpoch)
	binary.BigEndian.PutUint16(b[12:], a.Epoch)
}

func parseAck(b []byte) (ackHdr, error) {
	if len(b) != ackHdrSize || b[0] != tAck {
		return ackHdr{}, fmt.Errorf("%w: ack of %d bytes", errMalformed, len(b))
	}
	return ackHdr{Aru: binary.BigEndian.Uint32(b[2:]), Highest: binary.BigEndian.Uint32(b[6:]),
		AruEpoch: binary.BigEndian.Uint16(b[10:]), Epoch: binary.BigEndian.Uint16(b[12:])}, nil
}

// beatSize is the fixed part of tBeat: type, site, count of aru entries,
// pad, site seq, LTS, the mask of links declared down; then each aru entry:
// site, seq (beatEntry bytes).
const (
	beatSize  = 1 + 1 + 1 + 1 + 4 + 8 + 8
	beatEntry = 1 + 4
)

// beat is a site's heartbeat: every message of Site up to Seq has been
// sent, and none it sends later has a timestamp at or below LTS. Aru says,
// for each source site in Has, the site sequence up to which Site (its
// representative, and by their word its members) holds that source's
// stream (Spread 3.3's site ARU, for safe delivery and freeing).
type beat struct {
	Site event.SiteID
	Seq  uint32
	LTS  uint64
	Has  uint64
	Aru  [maxSite + 1]uint32
	// Down is the mask of far sites whose link from Site its
	// representative declared down (link state: every site routes
	// around them).
	Down uint64
	// Wait, in a tHolds (where it takes Down's place on the wire), is
	// the mask of far streams the member has open and waits on a tStart
	// for: its representative casts them again (answerWait).
	Wait uint64
}

// size is the encoded size.
func (bt *beat) size() int { return beatSize + beatEntry*bits.OnesCount64(bt.Has) }

func (bt *beat) put(b []byte) { bt.putAs(b, tBeat) }

// putAs encodes the beat as packet type typ (tBeat or tHolds).
func (bt *beat) putAs(b []byte, typ byte) {
	b[0], b[1], b[2], b[3] = typ, byte(bt.Site), byte(bits.OnesCount64(bt.Has)), 0
	binary.BigEndian.PutUint32(b[4:], bt.Seq)
	binary.BigEndian.PutUint64(b[8:], bt.LTS)
	if typ == tHolds {
		binary.BigEndian.PutUint64(b[16:], bt.Wait)
	} else {
		binary.BigEndian.PutUint64(b[16:], bt.Down)
	}
	i := beatSize
	for s := 0; s <= maxSite; s++ {
		if bt.Has&(1<<s) != 0 {
			b[i] = byte(s)
			binary.BigEndian.PutUint32(b[i+1:], bt.Aru[s])
			i += beatEntry
		}
	}
}

func parseBeat(b []byte) (beat, error) { return parseBeatAs(b, tBeat) }

// parseBeatAs decodes a beat of packet type typ (tBeat or tHolds).
func parseBeatAs(b []byte, typ byte) (beat, error) {
	var bt beat
	if len(b) < beatSize || b[0] != typ || len(b) != beatSize+beatEntry*int(b[2]) {
		return bt, fmt.Errorf("%w: heartbeat of %d bytes", errMalformed, len(b))
	}
	bt.Site, bt.Seq, bt.LTS = event.SiteID(b[1]), binary.BigEndian.Uint32(b[4:]), binary.BigEndian.Uint64(b[8:])
	mask := &bt.Down
	if typ == tHolds {
		mask = &bt.Wait
	}
	*mask = binary.BigEndian.Uint64(b[16:])
	if bt.Site > maxSite || *mask&(1<<bt.Site) != 0 {
		return bt, fmt.Errorf("%w: heartbeat of site %d", errMalformed, bt.Site)
	}
	for i := beatSize; i < len(b); i += beatEntry {
		s := b[i]
		if s > maxSite || bt.Has&(1<<s) != 0 {
			return bt, fmt.Errorf("%w: heartbeat aru of site %d (twice, or above %d)", errMalformed, s, maxSite)
		}
		bt.Has |= 1 << s
		bt.Aru[s] = binary.BigEndian.Uint32(b[i+1:])
	}
	return bt, nil
}

// nackBody is tNack's msgpack body: the link seqs to resend.
type nackBody struct {
	Seqs []uint32 `codec:"s"`
	// Epoch is the life of the far end's link the seqs are of.
	Epoch uint16 `codec:"e"`
}
