package tokenring

import (
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/seqwin"
)

// stream is what a node knows of one sender's packets in its region: which
// arrived (a bitmap over next .. next+window), the packets its partition
// caches for peers (until the token says every node has them), and when
// each known loss was discovered.
type stream struct {
	sender event.NodeID
	// next: every packet below it arrived (or is below the floor); high:
	// the highest that arrived.
	next, high uint32
	win        seqwin.Bitmap
	size       uint32
	// cache holds packets from cacheBase on (offset seq-cacheBase).
	cache     seqwin.Slots[*event.Message]
	cacheBase uint32
	// lastP is the purge point of the last token seen: every node of the
	// region had every packet up to it.
	lastP uint32
	// lost maps a missing packet to when its loss was discovered (bounded
	// by maxLost; losses beyond it are recovered but not timed).
	lost    map[uint32]event.Time
	lastGap int
	// asked holds, per other partition, the first packet this node last
	// pulled from it and for how many visits in a row (pullOthers).
	asked map[uint32]pullAsk
	// gfloor holds, per group, the group sequence number the layers above
	// began the sender's group stream at (the Start of the first packet
	// handed up, or a floor answer): at most one per group of the region.
	gfloor map[event.GroupID]uint32
}

// pullAsk is the first packet of the last pull to a partition, and how
// many visits running it was asked for again.
type pullAsk struct {
	first  uint32
	misses int
}

// maxLost bounds the losses a stream times.
const maxLost = 4096

type rxResult int

const (
	rxNew rxResult = iota
	rxGap          // new, and it revealed lastGap missing packets
	rxDup
	rxOut // beyond the window: dropped, recovered later
)

func newStream(sender event.NodeID, floor uint32, window int) *stream {
	s := &stream{sender: sender, next: floor, high: floor - 1, cacheBase: floor, lost: map[uint32]event.Time{}, asked: map[uint32]pullAsk{}, gfloor: map[event.GroupID]uint32{}}
	s.win = seqwin.NewBitmap(window)
	s.size = uint32(s.win.Size())
	s.cache.Max = 2 * int(s.size)
	return s
}

// has reports whether seq arrived.
func (s *stream) has(seq uint32) bool {
	if seq < s.next {
		return true
	}
	return seq-s.next < s.size && s.win.Has(seq)
}

// receive records seq.
func (s *stream) receive(seq uint32, now event.Time) rxResult {
	if s.has(seq) {
		return rxDup
	}
	if seq-s.next >= s.size {
		return rxOut
	}
	s.win.Set(seq)
	res := rxNew
	if seq > s.high {
		if gap := seq - s.high - 1; gap > 0 {
			s.discover(s.high+1, seq-1, now)
			s.lastGap = int(gap)
			res = rxGap
		}
		s.high = seq
	}
	for s.next <= s.high && s.win.Has(s.next) {
		s.win.Clear(s.next)
		s.next++
	}
	return res
}

// discover notes that lo..hi are missing, as of now.
func (s *stream) discover(lo, hi uint32, now event.Time) {
	for x := lo; x <= hi && len(s.lost) < maxLost; x++ {
		if _, ok := s.lost[x]; !ok && !s.has(x) {
			s.lost[x] = now
		}
	}
}

// Caching is tracked apart from receiving: the token's NAK sets, push,
// pull, the collective NAK and the ACK are about the packets a node holds
// in its cache for its partition, not the ones it received. The two agree
// until partitions are rebuilt (a new region view): packets received
// before then under another partitioning are not in the cache, so the
// partition lists them as lacking and gets them again (from a neighbour
// or, if the whole partition lacks one, from the sender, which still has
// it since the ACK counts caches too).

// lacksCached reports whether the node should cache seq and does not.
func (s *stream) lacksCached(seq uint32) bool {
	return seq >= s.cacheBase && s.cached(seq) == nil
}

// cachedPrefix is the highest h such that the node caches every packet up
// to h that partition part of p caches (at most high).
func (s *stream) cachedPrefix(p, part uint32) uint32 {
	for x := firstFrom(s.cacheBase, p, part); x <= s.high && x != 0; x += max1(p) {
		if s.lacksCached(x) {
			return x - 1
		}
	}
	return s.high
}

// nakSet lists, into b, the packets up to hi that partition part of p
// caches and this node does not hold in its cache.
func (s *stream) nakSet(b *rangeBuilder, p, part, hi uint32) {
	for x := firstFrom(s.cacheBase, p, part); x <= hi && x != 0; x += max1(p) {
		if s.lacksCached(x) {
			b.add(x)
			if b.full {
				return
			}
		}
	}
}

// lowerCache moves the start of the cache down to base (as far as the
// cache's bound allows): the region purged only up to base-1, so the node
// caches for its partition every packet from base on, those it received
// before it (re)joined the region included. A stream made from a packet of
// a view the node was not in starts its cache there; the node then
// reported none of the earlier packets missing, could neither get them
// pushed nor serve them, and broke its partition's chain of pushes: the
// members on either side of it that lacked one never recovered it, and the
// partition's collective NAK, which it cut short, never asked the sender
// (qsm-gms soak seed 11).
func (s *stream) lowerCache(l *Layer, base uint32) {
	if lim := uint32(s.cache.Max); s.high >= lim {
		base = max(base, s.high-lim+1) // the cache holds base .. high
	}
	if base == 0 || base >= s.cacheBase {
		return
	}
	shift := int(s.cacheBase - base)
	c := seqwin.Slots[*event.Message]{Max: s.cache.Max}
	for off, left := 0, s.cache.Len(); left > 0; off++ {
		m := s.cache.Get(off)
		if m == nil {
			continue
		}
		left--
		if !c.Put(off+shift, m) {
			l.setCache(-int64(m.Len()))
			m.Release()
		}
	}
	s.cache.Clear(nil)
	s.cache, s.cacheBase = c, base
}

// put caches m (owned) as packet seq.
func (s *stream) put(l *Layer, seq uint32, m *event.Message) {
	if seq < s.cacheBase || s.cached(seq) != nil || !s.cache.Put(int(seq-s.cacheBase), m) {
		m.Release()
		return
	}
	l.setCache(int64(m.Len()))
}

// cached returns the cached packet seq, or nil.
func (s *stream) cached(seq uint32) *event.Message {
	if seq < s.cacheBase {
		return nil
	}
	return s.cache.Get(int(seq - s.cacheBase))
}

// purge drops cached packets up to p and, if this node lacks some of them
// (it joined after they were sent), gives them up: nobody caches them any
// more. It returns how many it gave up.
func (s *stream) purge(l *Layer, p uint32) int {
	if p > s.lastP {
		s.lastP = p
	}
	for s.cacheBase <= p {
		if s.cache.Len() == 0 {
			s.cache.Skip(0)
			s.cacheBase = p + 1
			break
		}
		if m := s.cache.Advance(); m != nil {
			l.setCache(-int64(m.Len()))
			m.Release()
		}
		s.cacheBase++
	}
	skipped := 0
	if s.next <= p {
		// Give up next..p: count what is missing among them, forget it.
		end := min(p, s.next+s.size-1)
		for x := s.next; x <= end; x++ {
			if !s.win.Has(x) {
				skipped++
				delete(s.lost, x)
			}
			s.win.Clear(x)
		}
		skipped += int(p - end)
		s.next = p + 1
	}
	if s.high < s.next-1 {
		s.high = s.next - 1
	}
	for s.next <= s.high && s.win.Has(s.next) {
		s.win.Clear(s.next)
		s.next++
	}
	return skipped
}

// release frees the cache.
func (s *stream) release(l *Layer) {
	s.cache.Clear(func(m *event.Message) {
		l.setCache(-int64(m.Len()))
		m.Release()
	})
}
