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
// packet it rebuilds that then arrives is dropped as a duplicate). They go
// best effort (event.Event.BestEffort), as Ricochet's UDP repairs do: a
// layer below that makes Sends reliable (tokenring) sends each once, since
// a repair sent again is late and its flood would hold that layer's own
// control back.
//
// Counters: data_in, data_sent, xors (two-input XORs into bins; XORs per
// data packet, Figure 11, is xors/data_in), repairs_built, repairs_sent,
// repairs_received, recovered (all LEC recoveries, tagged Recovery.By "lec"),
// recovered_xor2 (those from two repairs, section 4.2.8), loss_discovered,
// unusable_buffered, unusable_evicted, repairs_stale (a packet in it is no
// longer held), repairs_redundant, repairs_foreign (from a node that shares
// no group with this one, or naming a packet of a group or sender outside its
// views), duplicates, malformed, peak_buffer_bytes (held data plus unusable
// repairs), data_untracked (data from a sender outside the node's views, or
// beyond max_streams, passed up without LEC state), data_late (data the
// layer below recovered after its number left the receive window, passed
// up without LEC state unless lec rebuilt it), streams_pruned (windows
// of senders that left the views), streams_full (windows refused at
// max_streams: counted per packet), lost_evicted (discovered losses
// forgotten at max_held), loss_hints (losses told to the layer above when
// a repair showed them and could not rebuild them) and found_above (packets
// the layer above got by other means and handed back: NAK retransmissions).
//
// The NAK layer above (section 4.2.7) hears of a loss from lec at once
// (event.LossHint up, anchored on the stream's newest packet so it can map
// lec's numbers to its own), and hands its retransmissions back
// (event.LossHint down): they decode the repairs waiting for them, and no
// repair rebuilds them a second time. Retransmissions going down (a
// message with a Recovery) pass unnumbered, so lec's numbers and the NAK
// layer's advance together.
//
// Only members of the views the node holds get state: a receive window per
// (group, sender), held data, read repairs. What the layer keeps is bounded
// by configuration, in count and in bytes.
package lec

import (
	"crypto/subtle"
	"encoding/binary"
	"math"
	"slices"
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
	// MaxHeld bounds the data packets kept, the discovered losses
	// remembered, and the rebuilt packets remembered.
	MaxHeld int
	// MaxUnusable bounds the unusable repairs kept.
	MaxUnusable int
	// MaxUnusableBytes bounds the bytes of the unusable repairs kept.
	MaxUnusableBytes int64
	// MaxHeldBytes bounds the bytes of the data packets kept.
	MaxHeldBytes int64
	// MaxStreams bounds the receive windows kept for other senders (one
	// per group and sender this node receives from).
	MaxStreams int
	// Flush, if positive, sends the repair of a bin instance partly
	// filled for this long (0: a bin waits for r packets however long).
	Flush time.Duration
	// CGroup overrides C for the groups it names (Algorithm 1 takes a c
	// per group).
	CGroup map[event.GroupID]float64
	// CheckEvery, if positive, rechecks unusable repairs intermittently,
	// this often, rather than at once and recursively whenever a packet
	// they wait for arrives or is rebuilt (the paper's behaviour, 4.2.8).
	CheckEvery time.Duration
}

// Layer is one node's LEC engine.
type Layer struct {
	stack.Base
	cfg  Config
	self event.NodeID

	sendSeq map[event.GroupID]uint32
	// streams are the receive windows: the node's own (one per group it
	// casts in) and those of other members of its groups, at most
	// MaxStreams of the latter (remote counts them).
	streams map[streamKey]*stream
	remote  int

	// members are the (group, sender) pairs of the views the node holds
	// (itself included), and peers the nodes that share a group with it:
	// only they get stream state or have their repairs read. Nil until the
	// first neighbourhood.
	members map[streamKey]struct{}
	peers   map[event.NodeID]struct{}

	// Regions (members without the node itself) and the repair bins of
	// Algorithm 1, indexed by the groups whose data they collect.
	regions   [][]event.NodeID
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

	// Packets lec rebuilt whose copy has not come from below yet: a layer
	// below that recovers losses itself (tokenring) hands every one up
	// again, possibly seconds later, when its number is before the receive
	// window and the window cannot tell it from a packet never passed up.
	// At most MaxHeld, the oldest go first.
	rebuilt   map[id]event.Time
	rebuiltQ  []lostEntry
	rebuiltHd int

	work    []id // newly present ids whose waiting repairs must be rechecked
	batch   []id // the ids one intermittent check works through
	checkTm *stack.Timer
	flushTm *stack.Timer
	idBuf   []id // a repair's ids while it is parsed
	missBuf []id
	scratch []byte
	dests   []event.NodeID

	c counters
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
	size    int64 // bytes counted against MaxUnusableBytes
	dead    bool
}

// Defaults of the bounds added for hostile input (also the registration's
// defaults); New puts them in place of zero.
const (
	// DefaultMaxStreams is the default of Config.MaxStreams.
	DefaultMaxStreams = 1 << 16
	// DefaultMaxUnusableBytes is the default of Config.MaxUnusableBytes.
	DefaultMaxUnusableBytes = 8 << 20
	// DefaultMaxHeldBytes is the default of Config.MaxHeldBytes.
	DefaultMaxHeldBytes = 64 << 20
)

// New makes a layer. Zero MaxStreams, MaxUnusableBytes and MaxHeldBytes take
// their defaults.
func New(cfg Config) *Layer {
	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = DefaultMaxStreams
	}
	if cfg.MaxUnusableBytes <= 0 {
		cfg.MaxUnusableBytes = DefaultMaxUnusableBytes
	}
	if cfg.MaxHeldBytes <= 0 {
		cfg.MaxHeldBytes = DefaultMaxHeldBytes
	}
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
	l.rebuilt = map[id]event.Time{}
	ctx.BindCounters(&l.c)
	l.checkTm = ctx.NewTimer(l.check)
	l.flushTm = ctx.NewTimer(l.flush)
	return nil
}

// Down stamps data casts with lec's id and keeps them (a node's own packets
// appear in repairs it receives); other casts and sends get the pass type,
// and so do retransmissions (a message going down with a Recovery: the NAK
// layer's answer to a NAK), which must not take a number of their own.
// A LossHint from above is a lost packet got by other means (onFound).
func (l *Layer) Down(ev *event.Event) {
	switch ev.Kind {
	case event.Cast, event.Send:
	case event.LossHint:
		l.onFound(ev)
		return
	default:
		l.Ctx.Down(ev)
		return
	}
	if ev.Kind == event.Send || ev.Control || ev.OneMember || ev.Msg.Recovery.By != "" {
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
	l.ownStream(ev.Group).mark(seq)
	l.hold(k, ev.Msg, ev.Msg.Bytes()[dataHeader:])
	l.c.DataSent.Inc()
	if l.members == nil {
		l.c.NoNeighbourhood.Inc() // no regions: nothing will repair it (said in the report)
	}
	l.Ctx.Down(ev)
}

// Up handles data, repairs and the neighbourhood.
func (l *Layer) Up(ev *event.Event) {
	switch ev.Kind {
	case event.Cast, event.Send:
	case event.Regions:
		if ev.Regions != nil {
			l.setNeighbourhood(ev.Regions)
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
		l.onRepair(ev.Peer, ev.Msg.Bytes())
		ev.Msg.Release()
	default:
		l.drop(ev)
	}
}

// drop discards a malformed packet.
func (l *Layer) drop(ev *event.Event) { l.Ctx.DropMalformed(ev, l.c.Malformed) }

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
	st := l.track(streamKey{ev.Group, ev.Peer})
	if st == nil {
		// Not a member of a view this node holds (or too many streams):
		// passed up without LEC state; the layers above decide.
		l.c.DataUntracked.Inc()
		l.Ctx.Up(ev)
		return
	}
	if st.before(seq) && !l.forgetRebuilt(k) {
		// Older than the receive window, and not one lec rebuilt: the
		// layer below recovered it late (tokenring, seconds after the
		// loss, while the sender went on). Taken as a duplicate, it was
		// lost for good (qsm-lec soak seed 591). Passed up without LEC
		// state.
		l.c.DataLate.Inc()
		l.Ctx.Up(ev)
		return
	}
	if st.has(seq) {
		// Already recovered (or a network duplicate).
		l.forgetRebuilt(k)
		l.c.Duplicates.Inc()
		ev.Msg.Release()
		return
	}
	st.mark(seq)
	delete(l.lostAt, k)
	l.c.DataIn.Inc()
	msg := ev.Msg
	data := msg.Bytes()
	l.keep(st, k, msg, data)
	l.Ctx.Up(ev)
	bs := l.groupBins[ev.Group]
	l.c.BinAdds.Add(int64(len(bs)))
	for _, b := range bs {
		l.addToBin(b, k, data)
	}
	l.present(k)
}

// ownStream returns the receive window of the node's own casts to g: a
// repair that names one of them finds it present. The application casts
// only in its groups, so these are as many as its groups.
func (l *Layer) ownStream(g event.GroupID) *stream {
	k := streamKey{g, l.self}
	s := l.streams[k]
	if s == nil {
		s = &stream{}
		l.streams[k] = s
	}
	return s
}

// admits reports whether k is a (group, sender) of the views the node holds.
func (l *Layer) admits(k streamKey) bool {
	_, ok := l.members[k]
	return ok
}

// track returns the receive window of k, making it if k is a member and
// fewer than MaxStreams windows of other senders exist; nil otherwise.
func (l *Layer) track(k streamKey) *stream {
	if s := l.streams[k]; s != nil {
		return s
	}
	if !l.admits(k) {
		return nil
	}
	if k.sender == l.self {
		return l.ownStream(k.group)
	}
	if l.remote >= l.cfg.MaxStreams {
		l.c.StreamsFull.Inc()
		return nil
	}
	s := &stream{}
	l.streams[k] = s
	l.remote++
	return s
}

// present reports whether k's packet is present (or too old to matter); an
// untracked stream holds nothing.
func (l *Layer) has(k id) bool {
	s := l.streams[streamKey{k.group, k.sender}]
	return s != nil && s.has(k.seq)
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
	if event.Oversized(len(data), cap(data)) {
		// a pooled buffer keeps the capacity of the largest packet it
		// ever carried: after a flood of large forged packets, small
		// held packets each pinned 16 KB while counting their few
		// bytes (tests/fuzz's flood probe); keep a copy instead
		data, msg = slices.Clone(data), nil
	} else {
		msg.Retain()
	}
	*h = heldPkt{id: k, msg: msg, data: data, at: l.Ctx.Now()}
	l.held[k] = h
	l.heldQ = append(l.heldQ, h)
	l.heldBytes += heldCharge(data)
	for l.heldCount() > l.cfg.MaxHeld || l.heldBytes > l.cfg.MaxHeldBytes {
		l.evictHeld()
	}
	l.notePeak()
}

// What a held data packet counts against max_held_bytes: event.HeldCost of
// its length plus its entries in held and heldQ. hold copies a packet out
// of a buffer larger than that (event.Oversized).
func heldCharge(data []byte) int64 { return event.HeldCost(len(data)) + heldEntry }

// heldEntry is a held packet's bookkeeping: its heldPkt and its places in
// held and heldQ.
const heldEntry = 256

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
	l.heldBytes -= heldCharge(h.data)
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
	l.compactLost()
}

func (l *Layer) notePeak() {
	l.c.PeakBuffer.Max(l.heldBytes + l.unBytes)
}

// discover notes the loss of k, first seen in a repair now, and reports
// whether it is new.
func (l *Layer) discover(k id, now event.Time) bool {
	if _, ok := l.lostAt[k]; ok {
		return false
	}
	l.lostAt[k] = now
	l.lostQ = append(l.lostQ, lostEntry{k, now})
	l.c.LossDiscovered.Inc()
	// Remembered losses are bounded like held packets: the oldest go first.
	for len(l.lostQ)-l.lostHd > l.cfg.MaxHeld {
		e := l.lostQ[l.lostHd]
		if t, ok := l.lostAt[e.id]; ok && t == e.at {
			delete(l.lostAt, e.id)
			l.c.LostEvicted.Inc()
		}
		l.lostHd++
	}
	l.compactLost()
	return true
}

// rememberRebuilt notes that lec rebuilt k, so that its copy from below is
// dropped however late it comes.
func (l *Layer) rememberRebuilt(k id, now event.Time) {
	l.rebuilt[k] = now
	l.rebuiltQ = append(l.rebuiltQ, lostEntry{k, now})
	for len(l.rebuiltQ)-l.rebuiltHd > l.cfg.MaxHeld {
		e := l.rebuiltQ[l.rebuiltHd]
		if t, ok := l.rebuilt[e.id]; ok && t == e.at {
			delete(l.rebuilt, e.id)
		}
		l.rebuiltHd++
	}
	if l.rebuiltHd > 1024 && l.rebuiltHd*2 > len(l.rebuiltQ) {
		n := copy(l.rebuiltQ, l.rebuiltQ[l.rebuiltHd:])
		l.rebuiltQ = l.rebuiltQ[:n]
		l.rebuiltHd = 0
	}
}

// forgetRebuilt reports whether lec rebuilt k (and its copy had not come
// yet), forgetting it: this is the copy.
func (l *Layer) forgetRebuilt(k id) bool {
	if _, ok := l.rebuilt[k]; !ok {
		return false
	}
	delete(l.rebuilt, k)
	return true
}

func (l *Layer) compactLost() {
	if l.lostHd > 1024 && l.lostHd*2 > len(l.lostQ) {
		n := copy(l.lostQ, l.lostQ[l.lostHd:])
		l.lostQ = l.lostQ[:n]
		l.lostHd = 0
	}
}

// stream is the receive window of one (group, sender): which of the last
// window sequence numbers are present. Numbers before base (in serial number
// arithmetic, RFC 1982, so a sender's numbers may wrap past 2^32) are taken
// as present: too old to matter. The window slides forward as higher
// numbers arrive; a jump of more than a window clears it. Its memory is at
// most maxWords words, whatever the numbers a packet names.
type stream struct {
	base    uint32 // the sequence number of bit 0 of bits[0]
	bits    []uint64
	started bool // a number has been marked (base is anchored)
	// head is the first bytes of the packet numbered top, the highest
	// received (or rebuilt) of the stream: the anchor of loss hints after
	// it (hint.go), kept beyond the window since a group's sender may cast
	// to it only every second or so.
	top  uint32
	head []byte
}

// maxWords bounds a stream's window (64 bits each).
const maxWords = 32

// window is the number of sequence numbers a stream tracks.
const window = maxWords * 64

// offset is seq's distance from base, or -1 if seq is before base.
func (s *stream) offset(seq uint32) int {
	d := int32(seq - s.base)
	if d < 0 {
		return -1
	}
	return int(d)
}

// before reports whether seq is before the window (has takes it as present
// without knowing).
func (s *stream) before(seq uint32) bool { return s.started && s.offset(seq) < 0 }

func (s *stream) has(seq uint32) bool {
	if !s.started {
		return false
	}
	off := s.offset(seq)
	if off < 0 {
		return true
	}
	w := off / 64
	if w >= len(s.bits) {
		return false
	}
	return s.bits[w]&(1<<(off%64)) != 0
}

func (s *stream) mark(seq uint32) {
	if !s.started {
		// Anchor the window so that seq is in its last word: numbers just
		// below it (reordered, or sent before this node saw the sender)
		// stay in the window. A sender's first numbers keep base 0.
		s.started = true
		if seq >= window {
			s.base = seq&^63 - (maxWords-1)*64
		}
	}
	off := s.offset(seq)
	if off < 0 {
		return
	}
	w := off / 64
	if w >= maxWords {
		// Slide so that seq lands in the last word; beyond a whole window
		// nothing is kept.
		shift := w - (maxWords - 1)
		if shift >= len(s.bits) {
			clear(s.bits)
		} else {
			n := copy(s.bits, s.bits[shift:])
			clear(s.bits[n:])
		}
		s.base += uint32(shift) * 64
		w = maxWords - 1
	}
	if w >= len(s.bits) {
		// Grow (at most to maxWords) after any slide, so w is in range.
		if w < cap(s.bits) {
			n := len(s.bits)
			s.bits = s.bits[:w+1]
			clear(s.bits[n:])
		} else {
			s.bits = append(s.bits, make([]uint64, w+1-len(s.bits))...)
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
