package lec

import (
	"encoding/binary"
	"slices"

	"github.com/layercast/layercast/event"
)

// onRepair takes a repair packet (its bytes after the type): if exactly one
// of its packets is missing it is recovered; if more are, the repair waits
// in the unusable buffer until data, recoveries or a second repair
// (section 4.2.8) make it usable. Only repairs from nodes that share a group
// with this node, naming packets of members of its groups, are read.
func (l *Layer) onRepair(from event.NodeID, b []byte) {
	now := l.Ctx.Now()
	l.expire(now)
	l.c.RepairsReceived.Inc()
	if _, ok := l.peers[from]; !ok {
		l.c.RepairsForeign.Inc()
		return
	}
	if len(b) < repairHeader-1 {
		l.c.Malformed.Inc()
		return
	}
	n := int(b[0])
	lenx := binary.BigEndian.Uint32(b[1:])
	body := b[repairHeader-1:]
	// lenx is not checked against the XOR's length here: the XOR of the
	// lengths may exceed the longest (1^2 = 3). Recovery checks the length
	// it rebuilds.
	if n == 0 || len(body) < n*idSize {
		l.c.Malformed.Inc()
		return
	}
	ids := slices.Grow(l.idBuf[:0], n)[:n]
	missing := l.missBuf[:0]
	defer func() { l.idBuf, l.missBuf = ids[:0], missing[:0] }()
	for i := range ids {
		p := body[i*idSize:]
		k := id{group: event.GroupID(binary.BigEndian.Uint32(p)), sender: event.NodeID(binary.BigEndian.Uint32(p[4:])), seq: binary.BigEndian.Uint32(p[8:])}
		ids[i] = k
		if !l.admits(streamKey{k.group, k.sender}) {
			// A group this node is not in, or a sender not in its view
			// (views differ for a while around a change): never recover
			// into it.
			l.c.RepairsForeign.Inc()
			return
		}
		if l.has(k) {
			if l.held[k] == nil {
				// Present but no longer kept: this repair can never be used.
				l.c.RepairsStale.Inc()
				return
			}
			continue
		}
		missing = append(missing, k)
	}
	for _, k := range missing {
		// A loss this repair cannot fix at once goes to the NAK layer
		// now, not when its own gap detection or digests find it (4.2.7).
		if l.discover(k, now) && len(missing) > 1 {
			l.hint(k)
		}
	}
	xor := body[n*idSize:]
	switch len(missing) {
	case 0:
		l.c.RepairsRedundant.Inc()
	case 1:
		l.recoverOne(ids, xor, lenx, missing[0], "lec", false)
		l.settle()
	default:
		r := &repair{ids: slices.Clone(ids), missing: slices.Clone(missing), xor: slices.Clone(xor), lenx: lenx, at: now}
		r.size = int64(len(r.xor) + (len(r.ids)+len(r.missing))*idSize)
		if r.size > l.cfg.MaxUnusableBytes {
			// Larger than the whole buffer: usable now with a buffered
			// repair, or never.
			l.c.UnusableEvicted.Inc()
		} else {
			l.bufferUnusable(r)
		}
		l.tryPair(r)
		l.settle()
	}
}

// recoverOne rebuilds packet k from a repair whose other packets are held.
func (l *Layer) recoverOne(ids []id, xor []byte, lenx uint32, k id, by string, xor2 bool) {
	out := append(l.scratch[:0], xor...)
	for _, o := range ids {
		if o == k {
			continue
		}
		h := l.held[o]
		if h == nil {
			l.c.RepairsStale.Inc()
			return
		}
		xorInto(&out, h.data)
		lenx ^= uint32(len(h.data))
	}
	l.scratch = out
	if int(lenx) > len(out) {
		l.c.Malformed.Inc()
		return
	}
	l.deliverRecovered(k, out[:lenx], by, xor2)
}

// deliverRecovered passes a recovered packet up as a data cast from its
// original sender and group, keeps it for XORing and queues the recheck of
// the repairs waiting for it.
func (l *Layer) deliverRecovered(k id, data []byte, by string, xor2 bool) {
	st := l.track(streamKey{k.group, k.sender})
	if st == nil || st.has(k.seq) {
		return
	}
	st.mark(k.seq)
	now := l.Ctx.Now()
	l.rememberRebuilt(k, now)
	disc, ok := l.lostAt[k]
	if !ok {
		disc = now
	}
	delete(l.lostAt, k)
	m := l.Ctx.NewMessage()
	m.SetPayload(data)
	m.Recovery = event.Recovery{By: by, Discovered: disc}
	l.keep(st, k, m, m.Bytes())
	l.c.Recovered.Inc()
	if xor2 {
		l.c.RecoveredXor2.Inc()
	}
	l.Ctx.Up(&event.Event{Kind: event.Cast, Group: k.group, Peer: k.sender, Msg: m})
	l.work = append(l.work, k)
}

// present queues the recheck of repairs waiting for k and runs it.
func (l *Layer) present(k id) {
	if len(l.byMissing[k]) == 0 {
		return
	}
	l.work = append(l.work, k)
	l.settle()
}

// settle runs the rechecks that newly present packets queued: at once, and
// the recoveries they yield recursively (the default), or, with
// check_every, at the next intermittent check (section 4.2.8: the paper's
// list of unusable repairs "is checked intermittently").
func (l *Layer) settle() {
	if l.cfg.CheckEvery <= 0 {
		l.drain()
		return
	}
	if len(l.work) > 0 && !l.checkTm.Pending() {
		l.checkTm.Reset(l.cfg.CheckEvery)
	}
}

// check is one intermittent check: the repairs waiting for what became
// present since the last one are rechecked; what they recover waits for
// the next.
func (l *Layer) check() {
	l.c.UnusableChecks.Inc()
	l.expire(l.Ctx.Now())
	batch := l.work
	l.work, l.batch = l.batch[:0], batch
	for _, k := range batch {
		l.recheck(k)
	}
	l.batch = batch[:0]
	l.settle()
}

// drain rechecks the unusable repairs that waited for newly present packets;
// recoveries they yield queue further rechecks.
func (l *Layer) drain() {
	for len(l.work) > 0 {
		k := l.work[len(l.work)-1]
		l.work = l.work[:len(l.work)-1]
		l.recheck(k)
	}
}

// recheck takes k off the missing lists of the repairs that waited for it:
// one missing nothing more is dropped, one missing one packet rebuilds it.
func (l *Layer) recheck(k id) {
	rs := l.byMissing[k]
	delete(l.byMissing, k)
	for _, r := range rs {
		if r.dead {
			continue
		}
		if i := slices.Index(r.missing, k); i >= 0 {
			r.missing = slices.Delete(r.missing, i, i+1)
		}
		switch len(r.missing) {
		case 0:
			l.killUnusable(r)
		case 1:
			last, ids, xor, lenx := r.missing[0], r.ids, r.xor, r.lenx
			l.killUnusable(r)
			l.recoverOne(ids, xor, lenx, last, "lec", false)
		default:
			l.tryPair(r)
		}
	}
}

// tryPair looks for a buffered repair whose missing set differs from r's by
// exactly one packet (one contains the other); XORing the two repairs then
// leaves that packet (section 4.2.8).
func (l *Layer) tryPair(r *repair) {
	for _, m := range r.missing {
		for _, o := range l.byMissing[m] {
			if o == r || o.dead {
				continue
			}
			big, small := r, o
			if len(o.missing) > len(r.missing) {
				big, small = o, r
			}
			if len(big.missing) != len(small.missing)+1 || !subset(small.missing, big.missing) {
				continue
			}
			var extra id
			for _, k := range big.missing {
				if !slices.Contains(small.missing, k) {
					extra = k
				}
			}
			if l.recoverPair(big, small, extra) {
				return
			}
		}
	}
}

// recoverPair XORs two repairs and the held packets in only one of them.
func (l *Layer) recoverPair(big, small *repair, k id) bool {
	out := append(l.scratch[:0], big.xor...)
	xorInto(&out, small.xor)
	lenx := big.lenx ^ small.lenx
	for _, side := range [2]struct{ a, b *repair }{{big, small}, {small, big}} {
		for _, o := range side.a.ids {
			if o == k || slices.Contains(side.b.ids, o) {
				continue
			}
			h := l.held[o]
			if h == nil {
				return false
			}
			xorInto(&out, h.data)
			lenx ^= uint32(len(h.data))
		}
	}
	l.scratch = out
	if int(lenx) > len(out) {
		return false
	}
	l.deliverRecovered(k, out[:lenx], "lec", true)
	return true
}

func subset(a, b []id) bool {
	for _, k := range a {
		if !slices.Contains(b, k) {
			return false
		}
	}
	return true
}

// bufferUnusable keeps r, evicting the oldest beyond MaxUnusable repairs or
// MaxUnusableBytes bytes.
func (l *Layer) bufferUnusable(r *repair) {
	l.unusable = append(l.unusable, r)
	l.unCount++
	l.unBytes += r.size
	for _, k := range r.missing {
		l.byMissing[k] = append(l.byMissing[k], r)
	}
	l.c.UnusableBuffered.Inc()
	for l.unCount > l.cfg.MaxUnusable || l.unBytes > l.cfg.MaxUnusableBytes {
		l.evictUnusable()
	}
	if len(l.unusable)-l.unHead > maxUnusableQueue(l.cfg.MaxUnusable) {
		l.compactUnusable()
	}
	l.notePeak()
}

// evictUnusable drops the oldest buffered repair.
func (l *Layer) evictUnusable() {
	r := l.unusable[l.unHead]
	l.unusable[l.unHead] = nil
	l.unHead++
	if !r.dead {
		l.c.UnusableEvicted.Inc()
		l.killUnusable(r)
	}
	if l.unHead > 256 && l.unHead*2 > len(l.unusable) {
		n := copy(l.unusable, l.unusable[l.unHead:])
		clear(l.unusable[n:])
		l.unusable = l.unusable[:n]
		l.unHead = 0
	}
}

// maxUnusableQueue bounds the queue of unusable repairs, live and dead: a
// repair made usable leaves a dead slot behind until the slot reaches the
// head, so without compaction the queue would grow with the rate of
// repairs times the window.
func maxUnusableQueue(maxLive int) int { return 2*maxLive + 64 }

// compactUnusable drops the dead slots of the queue, keeping the order.
func (l *Layer) compactUnusable() {
	n := 0
	for _, r := range l.unusable[l.unHead:] {
		if !r.dead {
			l.unusable[n] = r
			n++
		}
	}
	clear(l.unusable[n:])
	l.unusable = l.unusable[:n]
	l.unHead = 0
}

// killUnusable takes r out of the index and drops its bytes (its queue slot
// goes lazily).
func (l *Layer) killUnusable(r *repair) {
	if r.dead {
		return
	}
	r.dead = true
	l.unCount--
	l.unBytes -= r.size
	for _, k := range r.missing {
		rs := l.byMissing[k]
		if i := slices.Index(rs, r); i >= 0 {
			rs = slices.Delete(rs, i, i+1)
		}
		if len(rs) == 0 {
			delete(l.byMissing, k)
		} else {
			l.byMissing[k] = rs
		}
	}
	r.ids, r.missing, r.xor = nil, nil, nil
}
