package lec

import (
	"encoding/binary"

	"github.com/layercast/layercast/event"
)

// bin is one logical repair bin (section 4.2.1) with its stagger instances.
type bin struct {
	groups  []event.GroupID
	targets []target
	inst    []instance
	next    int
}

// instance is one physical repair bin: it counts the data added since it was
// last cleared and, when its next repair has destinations, XORs them.
type instance struct {
	n     int
	dests []event.NodeID // drawn when the bin was last cleared
	ids   []id
	xor   []byte
	lenx  uint32
	since event.Time // when its first packet since the last clear came
}

// setNeighbourhood rebuilds the regions and repair bins (Algorithm 1). It
// runs on every membership change; partly filled bins are dropped.
func (l *Layer) setNeighbourhood(nb *event.Neighbourhood) {
	l.regions = l.regions[:0]
	l.setMembers(nb)
	groups := make([][]event.GroupID, 0, len(nb.Local))
	sizes := make([]int, 0, len(nb.Local))
	for _, r := range nb.Local {
		ms := make([]event.NodeID, 0, len(r.Members))
		for _, m := range r.Members {
			if m != l.self {
				ms = append(ms, m)
			}
		}
		l.regions = append(l.regions, ms)
		groups = append(groups, r.Groups)
		sizes = append(sizes, len(ms))
	}
	plans := planBins(groups, sizes, l.cOf)
	l.bins = l.bins[:0]
	clear(l.groupBins)
	for _, p := range plans {
		b := &bin{groups: p.groups, targets: p.targets, inst: make([]instance, l.cfg.Stagger)}
		for i := range b.inst {
			b.inst[i].ids = make([]id, 0, l.cfg.R)
			l.draw(b, &b.inst[i])
		}
		l.bins = append(l.bins, b)
		for _, g := range p.groups {
			l.groupBins[g] = append(l.groupBins[g], b)
		}
	}
}

// setMembers records the (group, sender) pairs of the node's views and the
// nodes it shares a group with, and prunes the receive windows of senders
// no longer in them (the node's own windows stay: its sequence numbers go
// on).
func (l *Layer) setMembers(nb *event.Neighbourhood) {
	n := 0
	for _, r := range nb.Local {
		n += len(r.Groups) * len(r.Members)
	}
	l.members = make(map[streamKey]struct{}, n)
	l.peers = make(map[event.NodeID]struct{})
	add := func(g event.GroupID, m event.NodeID) {
		l.members[streamKey{g, m}] = struct{}{}
		if m != l.self {
			l.peers[m] = struct{}{}
		}
	}
	for _, g := range nb.Groups {
		add(g, l.self)
		if v := nb.Views[g]; v != nil {
			for _, m := range v.Members {
				add(g, m)
			}
		}
	}
	for _, r := range nb.Local {
		for _, g := range r.Groups {
			for _, m := range r.Members {
				add(g, m)
			}
		}
	}
	for k := range l.streams {
		if k.sender != l.self && !l.admits(k) {
			delete(l.streams, k)
			l.remote--
			l.c.StreamsPruned.Inc()
		}
	}
}

// draw picks the destinations of an instance's next repair: from each target
// region floor or ceil of its average, at random (section 4.2.5: the number
// is fixed when the bin is cleared, and a repair is built only if it is >0).
func (l *Layer) draw(b *bin, in *instance) {
	in.dests = in.dests[:0]
	rng := l.Ctx.Rand()
	for _, t := range b.targets {
		ms := l.regions[t.region]
		k := l.round(t.avg)
		if k > len(ms) {
			// c asks for more of the region than there is (a group
			// smaller than c+1): said, not silently capped
			l.c.TargetsCapped.Add(int64(k - len(ms)))
			k = len(ms)
		}
		// Partial Fisher-Yates over the region's members: k distinct.
		for i := 0; i < k; i++ {
			j := i + rng.IntN(len(ms)-i)
			ms[i], ms[j] = ms[j], ms[i]
			in.dests = append(in.dests, ms[i])
		}
	}
}

// addToBin adds a received data packet to the next instance of a bin and
// sends a repair when the instance has r packets.
func (l *Layer) addToBin(b *bin, k id, data []byte) {
	in := &b.inst[b.next]
	b.next++
	if b.next == len(b.inst) {
		b.next = 0
	}
	in.n++
	if in.n == 1 && l.cfg.Flush > 0 {
		in.since = l.Ctx.Now()
		if !l.flushTm.Pending() {
			l.flushTm.Reset(l.cfg.Flush)
		}
	}
	if len(in.dests) > 0 {
		xorInto(&in.xor, data)
		in.lenx ^= uint32(len(data))
		in.ids = append(in.ids, k)
		l.c.Xors.Inc()
	}
	if in.n < l.cfg.R {
		return
	}
	l.clearInstance(b, in)
}

// clearInstance sends an instance's repair, if it has destinations, and
// starts its next one.
func (l *Layer) clearInstance(b *bin, in *instance) {
	if len(in.dests) > 0 && len(in.ids) > 0 {
		l.sendRepair(in)
	}
	in.n = 0
	in.ids = in.ids[:0]
	in.xor = in.xor[:0]
	in.lenx = 0
	l.draw(b, in)
}

// flush sends the repairs of instances partly filled for the flush time
// (their groups went quiet: the end of a run, or a slow group), so the last
// packets before a pause are covered too, and sets the timer for the next.
func (l *Layer) flush() {
	now := l.Ctx.Now()
	next := event.Never
	for _, b := range l.bins {
		for i := range b.inst {
			in := &b.inst[i]
			if in.n == 0 {
				continue
			}
			if due := in.since.Add(l.cfg.Flush); due > now {
				next = min(next, due)
				continue
			}
			if len(in.dests) > 0 && len(in.ids) > 0 {
				l.c.BinsFlushed.Inc()
			}
			l.clearInstance(b, in)
		}
	}
	if next != event.Never {
		l.flushTm.ResetAt(next)
	}
}

// cOf is group g's c: its own from c_group, else c.
func (l *Layer) cOf(g event.GroupID) float64 {
	if c, ok := l.cfg.CGroup[g]; ok {
		return c
	}
	return l.cfg.C
}

// sendRepair encodes an instance's repair and sends it to its destinations
// point-to-point. Repairs are marked Control: like QSM's control-before-data
// they overtake queued data, because a repair is worth most while the loss
// it fixes is fresh (and it only ever adds packets the receiver lacks).
func (l *Layer) sendRepair(in *instance) {
	l.c.RepairsBuilt.Inc()
	m := l.Ctx.NewMessage()
	n := len(in.ids)
	buf := m.Append(repairHeader + n*idSize + len(in.xor))
	buf[0] = typeRepair
	buf[1] = byte(n)
	binary.BigEndian.PutUint32(buf[2:], in.lenx)
	p := buf[repairHeader:]
	for _, k := range in.ids {
		binary.BigEndian.PutUint32(p, uint32(k.group))
		binary.BigEndian.PutUint32(p[4:], uint32(k.sender))
		binary.BigEndian.PutUint32(p[8:], k.seq)
		p = p[idSize:]
	}
	copy(p, in.xor)
	for i, d := range in.dests {
		msg := m
		if i < len(in.dests)-1 {
			msg = m.Clone()
		}
		l.c.RepairsSent.Inc()
		l.Ctx.Down(&event.Event{Kind: event.Send, Peer: d, Control: true, BestEffort: true, Msg: msg})
	}
}
