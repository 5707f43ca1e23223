// Package auth authenticates every packet of a stack under a group key: a
// 16-byte GMAC tag (AES-256-GCM over the packet as additional data, nothing
// encrypted), an HMAC-SHA256 tag truncated to 16 bytes (mac=hmac), or
// AES-GCM encryption when crypt is on. GMAC is the default because it is an
// order of magnitude cheaper than HMAC-SHA256 where the CPU has AES and
// carry-less multiply instructions (8 GB/s against 0.2 GB/s for 1 KB
// packets here), which keeps the cost on throughput under 15%. It
// stands at the bottom of the stack (compose refuses it anywhere else), so
// the tag covers what the stack writes in the frame (group, source node,
// kind, control flag) and every byte the layers above put in the packet.
// Replays are refused by a per-sender sliding window over a 64-bit sequence
// number, and keys rotate with the views the layer sees: views a static
// source installs from below, and views gms installs above it, which gms
// hands down as well.
//
// The membership service's packets (event.Membership: requests, heartbeats,
// probes, view updates) are authenticated too, under a key of their own
// derived from the same master key that does not rotate (they belong to no
// group and no view). The service's stack runs the same layer under the name
// auth_service: compose adds it to the service's spec when a member's spec
// holds auth (LayerInfo.ServiceToo), and `stacktool gms --key-file` adds it
// over UDP.
//
// The GCM nonce is the sender's node id and its sequence number, so it is
// unique under one key only while node ids are: two processes running with
// the same id and key would reuse nonces, which breaks GCM. A process that
// restarts under its old id is safe, because its sequence numbers start from
// the clock (nanoseconds), above what it sent before; so is a replicated
// membership service (`stacktool gms --etcd --key-file`), whose instances
// send one at a time, each new leader from the clock. That holds where the
// stack clock reads wall time from a fixed epoch, as in `stacktool node`
// and `stacktool gms` (stack.NodeConfig.Epoch, the Unix epoch); a program
// that runs a stack.Node itself and restarts it under an old id sets Epoch
// the same way.
package auth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// Wire format of the auth header, in front of what the layers above wrote.
// HMAC and AES-GCM (crypt):
//
//	byte 0      version (high 4 bits) | flags (bit 0: AEAD, bit 1: GMAC)
//	bytes 1-8   key epoch: the view id the sender's key was derived for
//	bytes 9-16  sender's sequence number (one counter per sender)
//	bytes 17-32 tag (HMAC only; AES-GCM appends its tag to the payload)
//
// GMAC puts the tag first, so that what it covers is one run of bytes:
//
//	bytes 0-15  tag
//	bytes 16-32 as bytes 0-16 above
//	byte 33     the frame's kind << 1 | control flag
//
// HMAC covers the frame's group, source, kind and control flag by hashing
// them first; AES-GCM passes them as additional data; GMAC covers the group
// through the key (one per group), the source through the nonce (source,
// sequence number) and kind and control through byte 33, checked against
// the frame. (A membership packet's group is not covered by GMAC's key: it
// must be NoGroup, which nothing else sends.)
const (
	baseSize  = 17
	version   = 1
	flagAEAD  = 1
	flagGMAC  = 2
	macSize   = baseSize + TagSize
	gmacSize  = TagSize + baseSize + 1
	prefixLen = 4 + 4 + 1 + 1 // group, source, kind, control
	maxAhead  = 64            // most views a sender may be ahead of us
)

// TagSize is the length of a tag, in both modes.
const TagSize = 16

// Config is the layer's settings.
type Config struct {
	// Key is the master group key (at least 16 bytes).
	Key []byte
	// Crypt selects AES-GCM (payload encrypted) instead of a tag.
	Crypt bool
	// HMAC selects HMAC-SHA256 tags instead of GMAC (without Crypt).
	HMAC bool
	// Window is the replay window in sequence numbers (a multiple of 64).
	Window int
	// Grace is how long a view's key is still accepted once the next
	// view is installed.
	Grace time.Duration
	// MaxSenders bounds the senders a replay window is kept for.
	MaxSenders int
}

// Errors of Verify, one per drop cause.
var (
	ErrMalformed = errors.New("auth: malformed header")
	ErrNoKey     = errors.New("auth: no key for the packet's epoch")
	ErrBadTag    = errors.New("auth: bad tag")
	ErrReplayed  = errors.New("auth: replayed or too old")
	ErrFull      = errors.New("auth: too many senders")
)

// key is one derived key with its primitives, reused for every packet.
type key struct {
	epoch uint64
	mac   hash.Hash
	aead  cipher.AEAD
	until event.Time // for a previous key: accepted until then
}

// keys is what one group holds: the current key, the previous ones during
// their grace period (newest first, at most maxPrev: under gms, views
// follow each other quickly while members join, and a member that has not
// caught up may still send under any of them), and one newer epoch seen
// from a sender ahead of us.
type keys struct {
	cur, next *key
	prev      []*key
}

// maxPrev bounds the previous keys a group keeps in their grace period.
const maxPrev = 8

// window is a sender's replay window: the highest sequence number accepted
// and a bitmap of the last len(bits)*64 numbers.
type window struct {
	top  uint64
	bits []uint64
}

// Layer is the auth layer.
type Layer struct {
	stack.Base
	cfg    Config
	master []byte
	groups map[event.GroupID]*keys
	svc    *key // the membership service's packets: epoch 0, never rotated
	wins   map[event.NodeID]*window
	seq    uint64

	// scratch, kept in the layer so that hashing allocates nothing
	prefix [prefixLen]byte
	sum    [sha256.Size * 2]byte
	nonce  [12]byte

	c counters
}

// New makes a layer. The key must be at least 16 bytes.
func New(cfg Config) (*Layer, error) {
	if len(cfg.Key) < 16 {
		return nil, fmt.Errorf("auth: the key has %d bytes, at least 16 are needed", len(cfg.Key))
	}
	if cfg.Window < 64 {
		cfg.Window = 64
	}
	cfg.Window = (cfg.Window + 63) / 64 * 64
	if cfg.MaxSenders < 1 {
		cfg.MaxSenders = 1
	}
	l := &Layer{cfg: cfg, master: append([]byte(nil), cfg.Key...), groups: map[event.GroupID]*keys{}, wins: map[event.NodeID]*window{}}
	l.svc = l.derive(labelService, 0, 0)
	return l, nil
}

// Labels of the key derivation: one for the groups' keys, one for the
// membership service's (both 17 bytes).
const (
	labelGroup   = "layercast-auth v1"
	labelService = "layercast-svc  v1"
)

// HeaderSize is the room the layer prepends (and, with AES-GCM, appends).
func (l *Layer) HeaderSize() int {
	switch {
	case l.cfg.Crypt:
		return baseSize + TagSize
	case l.cfg.HMAC:
		return macSize
	}
	return gmacSize
}

// flags are the header's flags in the layer's mode.
func (l *Layer) flags() byte {
	switch {
	case l.cfg.Crypt:
		return flagAEAD
	case l.cfg.HMAC:
		return 0
	}
	return flagGMAC
}

// Init keeps the context and makes the counters.
func (l *Layer) Init(ctx *stack.Context) error {
	l.Ctx = ctx
	ctx.BindCounters(&l.c)
	// A node that restarts starts its counter above the one it had, as long
	// as the clock moves on (over UDP it is the real clock): receivers would
	// otherwise refuse its packets as replays, and AES-GCM would reuse nonces.
	if now := ctx.Now(); now > 0 {
		l.seq = uint64(now)
	}
	return nil
}

// derive makes the key of a group for a view epoch: HMAC-SHA256 of the
// master key over a label, the group and the epoch (HKDF-Expand with one
// block).
func (l *Layer) derive(label string, g event.GroupID, epoch uint64) *key {
	var info [17 + 4 + 8 + 1]byte
	copy(info[:17], label)
	binary.BigEndian.PutUint32(info[17:], uint32(g))
	binary.BigEndian.PutUint64(info[21:], epoch)
	info[29] = 1
	h := hmac.New(sha256.New, l.master)
	h.Write(info[:])
	k := h.Sum(nil)
	out := &key{epoch: epoch}
	if l.cfg.HMAC && !l.cfg.Crypt {
		out.mac = hmac.New(sha256.New, k)
	} else {
		b, _ := aes.NewCipher(k) // a 32-byte key never fails
		out.aead, _ = cipher.NewGCM(b)
	}
	return out
}

// group returns a group's keys, making the epoch-0 key on first use.
func (l *Layer) group(g event.GroupID) *keys {
	ks := l.groups[g]
	if ks == nil {
		ks = &keys{cur: l.derive(labelGroup, g, 0)}
		l.groups[g] = ks
	}
	return ks
}

// rotate installs the key of a new view; the old one stays valid for Grace,
// and so do the views between them that this node never installed (a
// member that joins in view 5 hears members still in view 4).
func (l *Layer) rotate(v *event.ViewInfo) {
	if v == nil {
		return
	}
	ks := l.group(v.Group)
	if v.ID <= ks.cur.epoch {
		return // not newer
	}
	until := l.Ctx.Now().Add(l.cfg.Grace)
	old := ks.cur
	old.until = until
	ks.retire(old)
	for e := max(old.epoch+1, v.ID-min(v.ID, maxPrev)); e < v.ID; e++ {
		k := l.derive(labelGroup, v.Group, e)
		k.until = until
		ks.retire(k)
	}
	if ks.next != nil && ks.next.epoch == v.ID {
		ks.cur = ks.next
	} else {
		ks.cur = l.derive(labelGroup, v.Group, v.ID)
	}
	ks.next = nil
	l.c.Rotations.Inc()
}

// retire puts k in front of the previous keys, forgetting the oldest past
// maxPrev.
func (ks *keys) retire(k *key) {
	if len(ks.prev) == maxPrev {
		ks.prev = ks.prev[:maxPrev-1]
	}
	ks.prev = append(ks.prev, nil)
	copy(ks.prev[1:], ks.prev)
	ks.prev[0] = k
}

// lookup finds the key for a received epoch.
func (l *Layer) lookup(g event.GroupID, epoch uint64) *key {
	ks := l.group(g)
	switch {
	case epoch == ks.cur.epoch:
		return ks.cur
	case epoch < ks.cur.epoch:
		for _, k := range ks.prev {
			if k.epoch == epoch && l.Ctx.Now() <= k.until {
				return k
			}
		}
		return nil
	case epoch > ks.cur.epoch && epoch-ks.cur.epoch <= maxAhead:
		// The sender installed a newer view before us. Derive it once and
		// keep it for when our view arrives. (Bounded, so that forged
		// epochs cannot make us derive a key per packet from far ahead.)
		if ks.next == nil || ks.next.epoch != epoch {
			ks.next = l.derive(labelGroup, g, epoch)
		}
		return ks.next
	}
	return nil
}

// putPrefix writes what the frame carries, as the tag covers it.
func (l *Layer) putPrefix(g event.GroupID, src event.NodeID, k event.Kind, control bool) {
	binary.BigEndian.PutUint32(l.prefix[0:], uint32(g))
	binary.BigEndian.PutUint32(l.prefix[4:], uint32(src))
	l.prefix[8] = byte(k)
	l.prefix[9] = 0
	if control {
		l.prefix[9] = 1
	}
}

// mac computes the tag of hdr[:baseSize] and body under k into l.sum.
func (l *Layer) mac(k *key, hdr, body []byte) []byte {
	k.mac.Reset()
	k.mac.Write(l.prefix[:])
	k.mac.Write(hdr[:baseSize])
	k.mac.Write(body)
	return k.mac.Sum(l.sum[:0])[:TagSize]
}

// Down tags outgoing packets, the membership service's too; View events
// (handed down by gms) rotate the group's key.
func (l *Layer) Down(ev *event.Event) {
	switch ev.Kind {
	case event.Cast, event.Send, event.Membership:
		l.seal(ev)
	case event.View:
		l.rotate(ev.View)
	}
	l.Ctx.Down(ev)
}

// seal prepends the header and tag (or encrypts) in place of ev.Msg.
func (l *Layer) seal(ev *event.Event) {
	k := l.svc
	if ev.Kind != event.Membership {
		k = l.group(ev.Group).cur
	}
	l.seq++
	l.putPrefix(ev.Group, l.Ctx.Self(), ev.Kind, ev.IsControl())
	m := ev.Msg
	if l.cfg.Crypt {
		// Encrypt into a fresh message: layers above may keep the plaintext
		// for retransmission.
		body := m.Bytes()
		nm := l.Ctx.NewMessage()
		nm.Recovery, nm.Stamp = m.Recovery, m.Stamp
		nm.Append(len(body) + TagSize)
		h := nm.Prepend(baseSize)
		out := nm.Bytes()[baseSize:]
		putHeader(h, flagAEAD, k.epoch, l.seq)
		l.putNonce(l.Ctx.Self(), l.seq)
		k.aead.Seal(out[:0], l.nonce[:], body, l.aad(h))
		m.Release()
		ev.Msg = nm
		return
	}
	if l.cfg.HMAC {
		body := m.Bytes()
		h := m.Prepend(macSize)
		putHeader(h, 0, k.epoch, l.seq)
		copy(h[baseSize:], l.mac(k, h, body))
		return
	}
	h := m.Prepend(gmacSize)
	putHeader(h[TagSize:], flagGMAC, k.epoch, l.seq)
	h[gmacSize-1] = kindByte(ev.Kind, ev.IsControl())
	l.putNonce(l.Ctx.Self(), l.seq)
	copy(h, k.aead.Seal(l.sum[:0], l.nonce[:], nil, m.Bytes()[TagSize:]))
}

// kindByte is GMAC's byte 33: the frame's kind and control flag.
func kindByte(k event.Kind, control bool) byte {
	return byte(k)<<1 | byte(boolInt(control))
}

// aad is the additional data AES-GCM authenticates: frame fields and header.
func (l *Layer) aad(h []byte) []byte {
	copy(l.sum[:prefixLen], l.prefix[:])
	copy(l.sum[prefixLen:], h[:baseSize])
	return l.sum[:prefixLen+baseSize]
}

func (l *Layer) putNonce(src event.NodeID, seq uint64) {
	binary.BigEndian.PutUint32(l.nonce[0:], uint32(src))
	binary.BigEndian.PutUint64(l.nonce[4:], seq)
}

func putHeader(h []byte, flags byte, epoch, seq uint64) {
	h[0] = version<<4 | flags
	binary.BigEndian.PutUint64(h[1:], epoch)
	binary.BigEndian.PutUint64(h[9:], seq)
}

// Up verifies incoming packets and drops those that fail, counting why.
func (l *Layer) Up(ev *event.Event) {
	switch ev.Kind {
	case event.Cast, event.Send, event.Membership:
		if err := l.Open(ev); err != nil {
			// Logged at the 1st, 2nd, 4th, 8th... drop of a cause: a flood
			// of forgeries must not become a flood of log lines.
			if n := l.count(err); l.Ctx.Logging() && n&(n-1) == 0 {
				l.Ctx.Logf("drop %v packet from %v: %v (%d dropped for this cause)", ev.Kind, ev.Peer, err, n)
			}
			ev.Msg.Release()
			return
		}
		if ev.Kind == event.Membership {
			l.c.Membership.Inc()
		}
	case event.View:
		l.rotate(ev.View)
	}
	l.Ctx.Up(ev)
}

// count counts a drop by its cause and returns the cause's count.
func (l *Layer) count(err error) int64 {
	c := l.c.SendersFull
	switch err {
	case ErrMalformed:
		c = l.c.Malformed
	case ErrNoKey:
		c = l.c.NoKey
	case ErrBadTag:
		c = l.c.BadTag
	case ErrReplayed:
		c = l.c.Replayed
	}
	c.Inc()
	return c.Value()
}

// Open checks ev.Msg's header, tag and sequence number, and on success
// leaves the message holding what the layers above wrote (decrypted with
// AES-GCM). On failure it returns the cause and the message is unusable.
func (l *Layer) Open(ev *event.Event) error {
	m := ev.Msg
	gmac := !l.cfg.Crypt && !l.cfg.HMAC
	pkt := m.Bytes() // GMAC covers pkt[TagSize:]
	hs := l.HeaderSize() - boolInt(l.cfg.Crypt)*TagSize
	h, err := m.Consume(hs)
	if err != nil {
		return ErrMalformed
	}
	tag := h
	if gmac {
		tag, h = h[:TagSize], h[TagSize:]
		if h[baseSize] != kindByte(ev.Kind, ev.IsControl()) || ev.Kind == event.Membership && ev.Group != event.NoGroup {
			return ErrMalformed
		}
	}
	if h[0] != version<<4|l.flags() {
		return ErrMalformed
	}
	epoch := binary.BigEndian.Uint64(h[1:])
	seq := binary.BigEndian.Uint64(h[9:])
	w := l.wins[ev.Peer]
	if w != nil && w.seen(seq) {
		return ErrReplayed // checked first: cheaper than the tag
	}
	if w == nil && len(l.wins) >= l.cfg.MaxSenders {
		return ErrFull
	}
	k := l.svc
	switch {
	case ev.Kind != event.Membership:
		k = l.lookup(ev.Group, epoch)
	case epoch != 0:
		k = nil
	}
	if k == nil {
		return ErrNoKey
	}
	body := m.Bytes()
	switch {
	case gmac: // the frame's fields are covered by key, nonce and byte 33
		l.putNonce(ev.Peer, seq)
		if _, err := k.aead.Open(l.sum[:0], l.nonce[:], tag, pkt[TagSize:]); err != nil {
			return ErrBadTag
		}
	case l.cfg.Crypt:
		if len(body) < TagSize {
			return ErrMalformed
		}
		l.putPrefix(ev.Group, ev.Peer, ev.Kind, ev.IsControl())
		l.putNonce(ev.Peer, seq)
		if _, err := k.aead.Open(body[:0], l.nonce[:], body, l.aad(h)); err != nil {
			return ErrBadTag
		}
		m.Truncate(len(body) - TagSize)
	default:
		l.putPrefix(ev.Group, ev.Peer, ev.Kind, ev.IsControl())
		if subtle.ConstantTimeCompare(l.mac(k, h, body), h[baseSize:macSize]) != 1 {
			return ErrBadTag
		}
	}
	// Only a sender whose tag verified gets a window.
	if w == nil {
		w = &window{bits: make([]uint64, l.cfg.Window/64)}
		l.wins[ev.Peer] = w
	}
	w.mark(seq)
	l.c.Verified.Inc()
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// seen reports whether seq was accepted already or is too old to tell (its
// word of the bitmap has been reused).
func (w *window) seen(seq uint64) bool {
	if seq > w.top {
		return false
	}
	n := uint64(len(w.bits))
	if w.top/64-seq/64 >= n {
		return true
	}
	return w.bits[(seq/64)%n]&(1<<(seq%64)) != 0
}

// mark records seq as accepted, sliding the window forward if it is newer.
func (w *window) mark(seq uint64) {
	n := uint64(len(w.bits))
	if seq > w.top {
		if seq/64-w.top/64 >= n {
			clear(w.bits)
		} else {
			for i := w.top/64 + 1; i <= seq/64; i++ {
				w.bits[i%n] = 0
			}
		}
		w.top = seq
	}
	w.bits[(seq/64)%n] |= 1 << (seq % 64)
}

// Close drops per-sender state.
func (l *Layer) Close() { clear(l.wins) }
