// Package lec is Ricochet's Lateral Error Correction (Balakrishnan, Birman,
// Phanishayee, Pleisch, NSDI 2007, section 4): receivers of multicast data
// XOR what they receive into per-region repair bins and send the repairs to
// randomly chosen members of the regions that share those groups, so a node
// that lost a packet usually gets it back from its neighbours within tens of
// milliseconds, whatever the number of groups. It sits below a reactive NAK
// layer (reliable) that fetches the rest.
//
// Regions and group sizes come from the Regions event's Neighbourhood (the
// node itself excluded, section 4.2.3); Algorithm 1 (planBins) turns them
// into repair bins. Repairs travel point-to-point as Control sends: QSM's
// control-before-data lets them overtake queued data, which is what keeps
// recovery in milliseconds, and a repair is never wrong to process early (a
// packet it rebuilds that then arrives is dropped as a duplicate).
//
// Counters: data_in, data_sent, xors (two-input XORs into bins; XORs per
// data packet, Figure 11, is xors/data_in), repairs_built, repairs_sent,
// repairs_received, recovered (all LEC recoveries, tagged Recovery.By "lec"),
// recovered_xor2 (those from two repairs, section 4.2.8), loss_discovered,
// unusable_buffered, unusable_evicted, repairs_stale (a packet in it is no
// longer held), repairs_redundant, repairs_foreign, duplicates, malformed,
// peak_buffer_bytes (held data plus unusable repairs).
package lec

import (
	"crypto/subtle"
	"encoding/binary"
	"math"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// Wire format. Every Cast and Send through lec carries a 1-byte type.
// Data casts add a 4-byte per-(group, sender) sequence number: the id
// (sender, group, seq) repairs refer to, since a layer cannot read another
// layer's header. Repairs are point-to-point Sends:
//
//	type(1) n(1) lenxor(4) n*(group(4) sender(4) seq(4)) xor(...)
//
// lenxor is the XOR of the n payload lengths and xor the XOR of the payloads,
// each zero-padded to the longest, so payloads of different lengths recover
// exactly.
const (
	typePass   = 0 // not lec's: control casts, point-to-point, retransmissions
	typeData   = 1
	typeRepair = 2

	dataHeader   = 5
	repairHeader = 6
	idSize       = 12
)

// id names one data packet.
type id struct {
	group  event.GroupID
	sender event.NodeID
	seq    uint32
}

type streamKey struct {
	group  event.GroupID
	sender event.NodeID
}

// Config is lec's parameters.
type Config struct {
	// R is the number of data packets XORed into one repair.
	R int
	// C is the average number of repairs, per received data packet, that
	// include it and go to members of its group.
	C float64
	// Stagger is the number of instances of each repair bin, filled round
	// robin (section 4.2.2).
	Stagger int
	// Window is how long received data is kept for XORing repairs, and how
	// long unusable repairs and discovered losses are remembered.
	Window time.Duration
	// MaxHeld bounds the data packets kept.
	MaxHeld int
	// MaxUnusable bounds the unusable repairs kept.
	MaxUnusable int
}

// Layer is one node's LEC engine.
type Layer struct {
	stack.Base
	cfg  Config
	self event.NodeID

	sendSeq map[event.GroupID]uint32
	streams map[streamKey]*stream

	// Regions (members without the node itself) and the repair bins of
	// Algorithm 1, indexed by the groups whose data they collect.
	regions   [][]event.NodeID
	member    map[event.GroupID]bool // the node's groups, once a neighbourhood is in
	bins      []*bin
	groupBins map[event.GroupID][]*bin

	// Recent data, for XORing repairs: a FIFO bounded by Window and MaxHeld.
	held      map[id]*heldPkt
	heldQ     []*heldPkt
	heldHead  int
	heldFree  []*heldPkt
	heldBytes int64

	// Unusable repairs (two or more packets missing), indexed by missing id.
	unusable  []*repair
	unHead    int
	byMissing map[id][]*repair
	unBytes   int64
	unCount   int

	// Losses discovered from repair ids and not yet recovered.
	lostAt map[id]event.Time
	lostQ  []lostEntry
	lostHd int

	work    []id // newly present ids whose waiting repairs must be rechecked
	idBuf   []id // a repair's ids while it is parsed
	missBuf []id
	scratch []byte
	dests   []event.NodeID

	c counters
}

type counters struct {
	dataIn, dataSent, repairsSent, repairsReceived, xors, recovered, recoveredXor2,
	unusableBuffered, unusableEvicted, lossDiscovered, peakBuffer, repairsStale,
	repairsRedundant, repairsForeign, duplicates, malformed, repairsBuilt *stack.Counter
}

type heldPkt struct {
	id   id
	msg  *event.Message
	data []byte
	at   event.Time
}

type lostEntry struct {
	id id
	at event.Time
}

// repair is a received repair packet that cannot be used yet.
type repair struct {
	ids     []id
	missing []id
	xor     []byte
	lenx    uint32
	at      event.Time
	dead    bool
}

// New makes a layer.
func New(cfg Config) *Layer {
	return &Layer{cfg: cfg}
}

// HeaderSize is the largest header lec puts on a data packet.
func (l *Layer) HeaderSize() int { return dataHeader }

// Init sets up state and counters.
func (l *Layer) Init(ctx *stack.Context) error {
	l.Ctx = ctx
	l.self = ctx.Self()
	l.sendSeq = map[event.GroupID]uint32{}
	l.streams = map[streamKey]*stream{}
	l.groupBins = map[event.GroupID][]*bin{}
	l.held = map[id]*heldPkt{}
	l.byMissing = map[id][]*repair{}
	l.lostAt = map[id]event.Time{}
	l.c = counters{
		dataIn: ctx.Counter("data_in"), dataSent: ctx.Counter("data_sent"),
		repairsSent: ctx.Counter("repairs_sent"), repairsBuilt: ctx.Counter("repairs_built"),
		repairsReceived: ctx.Counter("repairs_received"),
		xors:            ctx.Counter("xors"), recovered: ctx.Counter("recovered"),
		recoveredXor2: ctx.Counter("recovered_xor2"), unusableBuffered: ctx.Counter("unusable_buffered"),
		unusableEvicted: ctx.Counter("unusable_evicted"), lossDiscovered: ctx.Counter("loss_discovered"),
		peakBuffer: ctx.Counter("peak_buffer_bytes"), repairsStale: ctx.Counter("repairs_stale"),
		repairsRedundant: ctx.Counter("repairs_redundant"), repairsForeign: ctx.Counter("repairs_foreign"), duplicates: ctx.Counter("duplicates"),
		malformed: ctx.Counter("malformed"),
	}
	return nil
}

// Down stamps data casts with lec's id and keeps them (a node's own packets
// appear in repairs it receives); other casts and sends get the pass type.
func (l *Layer) Down(ev *event.Event) {
	if ev.Kind != event.Cast && ev.Kind != event.Send {
		l.Ctx.Down(ev)
		return
	}
	if ev.Kind == event.Send || ev.Control || ev.Peer != event.NoNode {
		ev.Msg.Prepend(1)[0] = typePass
		l.Ctx.Down(ev)
		return
	}
	seq := l.sendSeq[ev.Group] + 1
	l.sendSeq[ev.Group] = seq
	h := ev.Msg.Prepend(dataHeader)
	h[0] = typeData
	binary.BigEndian.PutUint32(h[1:], seq)
	k := id{group: ev.Group, sender: l.self, seq: seq}
	l.stream(streamKey{ev.Group, l.self}).mark(seq)
	l.hold(k, ev.Msg, ev.Msg.Bytes()[dataHeader:])
	l.c.dataSent.Inc()
	l.Ctx.Down(ev)
}

// Up handles data, repairs and the neighbourhood.
func (l *Layer) Up(ev *event.Event) {
	switch ev.Kind {
	case event.Cast, event.Send:
	case event.Regions:
		if nb, ok := ev.Aux.(*event.Neighbourhood); ok && nb != nil {
			l.setNeighbourhood(nb)
		}
		l.Ctx.Up(ev)
		return
	default:
		l.Ctx.Up(ev)
		return
	}
	h, err := ev.Msg.Consume(1)
	if err != nil {
		l.drop(ev)
		return
	}
	switch {
	case h[0] == typePass:
		l.Ctx.Up(ev)
	case h[0] == typeData && ev.Kind == event.Cast:
		sh, err := ev.Msg.Consume(4)
		if err != nil {
			l.drop(ev)
			return
		}
		l.onData(ev, binary.BigEndian.Uint32(sh))
	case h[0] == typeRepair && ev.Kind == event.Send:
		l.onRepair(ev.Msg.Bytes())
		ev.Msg.Release()
	default:
		l.drop(ev)
	}
}

func (l *Layer) drop(ev *event.Event) {
	l.c.malformed.Inc()
	ev.Msg.Release()
}

// Close releases what the layer holds.
func (l *Layer) Close() {
	for _, h := range l.heldQ[l.heldHead:] {
		if h != nil {
			h.msg.Release()
		}
	}
	l.heldQ, l.heldHead = nil, 0
	clear(l.held)
}

// onData takes a data packet from the network: deduplicates it, keeps it
// for XORing, passes it up and adds it to the repair bins of its group.
func (l *Layer) onData(ev *event.Event, seq uint32) {
	now := l.Ctx.Now()
	l.expire(now)
	k := id{group: ev.Group, sender: ev.Peer, seq: seq}
	st := l.stream(streamKey{ev.Group, ev.Peer})
	if st.has(seq) {
		// Already recovered (or a network duplicate).
		l.c.duplicates.Inc()
		ev.Msg.Release()
		return
	}
	st.mark(seq)
	delete(l.lostAt, k)
	l.c.dataIn.Inc()
	msg := ev.Msg
	data := msg.Bytes()
	l.hold(k, msg, data)
	l.Ctx.Up(ev)
	for _, b := range l.groupBins[ev.Group] {
		l.addToBin(b, k, data)
	}
	l.present(k)
}

// stream returns the receive window of one (group, sender).
func (l *Layer) stream(k streamKey) *stream {
	s := l.streams[k]
	if s == nil {
		s = &stream{}
		l.streams[k] = s
	}
	return s
}

// hold keeps a data packet for XORing: the message is retained and data
// (its bytes above lec's header) stays valid until eviction.
func (l *Layer) hold(k id, msg *event.Message, data []byte) {
	var h *heldPkt
	if n := len(l.heldFree); n > 0 {
		h = l.heldFree[n-1]
		l.heldFree = l.heldFree[:n-1]
	} else {
		h = &heldPkt{}
	}
	msg.Retain()
	*h = heldPkt{id: k, msg: msg, data: data, at: l.Ctx.Now()}
	l.held[k] = h
	l.heldQ = append(l.heldQ, h)
	l.heldBytes += int64(len(data))
	for l.heldCount() > l.cfg.MaxHeld {
		l.evictHeld()
	}
	l.notePeak()
}

func (l *Layer) heldCount() int { return len(l.heldQ) - l.heldHead }

func (l *Layer) evictHeld() {
	h := l.heldQ[l.heldHead]
	l.heldQ[l.heldHead] = nil
	l.heldHead++
	if l.heldHead > 1024 && l.heldHead*2 > len(l.heldQ) {
		n := copy(l.heldQ, l.heldQ[l.heldHead:])
		clear(l.heldQ[n:])
		l.heldQ = l.heldQ[:n]
		l.heldHead = 0
	}
	if l.held[h.id] == h {
		delete(l.held, h.id)
	}
	l.heldBytes -= int64(len(h.data))
	h.msg.Release()
	*h = heldPkt{}
	l.heldFree = append(l.heldFree, h)
}

// expire drops data, unusable repairs and discovered losses older than the
// window.
func (l *Layer) expire(now event.Time) {
	limit := now - event.Time(l.cfg.Window)
	for l.heldCount() > 0 && l.heldQ[l.heldHead].at < limit {
		l.evictHeld()
	}
	for l.unHead < len(l.unusable) && (l.unusable[l.unHead].dead || l.unusable[l.unHead].at < limit) {
		l.evictUnusable()
	}
	for l.lostHd < len(l.lostQ) && l.lostQ[l.lostHd].at < limit {
		e := l.lostQ[l.lostHd]
		if t, ok := l.lostAt[e.id]; ok && t == e.at {
			delete(l.lostAt, e.id)
		}
		l.lostHd++
	}
	if l.lostHd > 1024 && l.lostHd*2 > len(l.lostQ) {
		n := copy(l.lostQ, l.lostQ[l.lostHd:])
		l.lostQ = l.lostQ[:n]
		l.lostHd = 0
	}
}

func (l *Layer) notePeak() {
	l.c.peakBuffer.Max(l.heldBytes + l.unBytes)
}

// discover notes the loss of k, first seen in a repair now.
func (l *Layer) discover(k id, now event.Time) {
	if _, ok := l.lostAt[k]; ok {
		return
	}
	l.lostAt[k] = now
	l.lostQ = append(l.lostQ, lostEntry{k, now})
	l.c.lossDiscovered.Inc()
}

// stream is the receive window of one (group, sender): which sequence
// numbers are present. Numbers below base are taken as present (too old to
// matter); the window slides forward as higher numbers arrive.
type stream struct {
	base uint32
	bits []uint64
}

// maxWords bounds a stream's window (64 bits each).
const maxWords = 32

func (s *stream) has(seq uint32) bool {
	if seq < s.base {
		return true
	}
	off := seq - s.base
	w := int(off / 64)
	if w >= len(s.bits) {
		return false
	}
	return s.bits[w]&(1<<(off%64)) != 0
}

func (s *stream) mark(seq uint32) {
	if seq < s.base {
		return
	}
	off := seq - s.base
	w := int(off / 64)
	if w >= len(s.bits) {
		if w < maxWords {
			s.bits = append(s.bits, make([]uint64, w+1-len(s.bits))...)
		} else {
			shift := w - maxWords + 1
			if shift >= len(s.bits) {
				clear(s.bits)
			} else {
				n := copy(s.bits, s.bits[shift:])
				clear(s.bits[n:])
			}
			s.base += uint32(shift * 64)
			off = seq - s.base
			w = int(off / 64)
		}
	}
	s.bits[w] |= 1 << (off % 64)
}

// xorInto XORs p into *dst, growing it with zeros to len(p).
func xorInto(dst *[]byte, p []byte) {
	d := *dst
	if len(d) < len(p) {
		n := len(d)
		if cap(d) >= len(p) {
			d = d[:len(p)]
			clear(d[n:])
		} else {
			nd := make([]byte, len(p), max(len(p), 2*cap(d)))
			copy(nd, d)
			d = nd
		}
		*dst = d
	}
	subtle.XORBytes(d[:len(p)], d[:len(p)], p)
}

// round draws floor(x) or ceil(x) so that the mean is x (section 4.2.1).
func (l *Layer) round(x float64) int {
	f := math.Floor(x)
	n := int(f)
	if l.Ctx.Rand().Float64() < x-f {
		n++
	}
	return n
}
