package experiment

import (
	"cmp"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/prefetch"
	"github.com/layercast/layercast/internal/units"
	"github.com/layercast/layercast/stack"
)

// Collector checks and measures deliveries: duplicates, FIFO order per
// (sender, group), latency, recovery, and what each receiver was owed.
// Runners call Sent for every cast the stack accepted, Delivered for every
// delivery, View for every view a node's application sees, and, when they
// can watch packets leave a node, LeftStack; then Finish. It is not safe for
// concurrent use.
//
// A message cast by s to g is owed to r when r was in s's view of g when s
// cast it (before s's first view, or with no views at all: when r is an
// intended member of g), and both r and s are not crashed at the end (a
// crashed sender's last casts carry no promise without view-synchronous
// flush). Deliveries of messages not owed are counted apart and are neither
// duplicates nor violations. FIFO order is checked per (receiver, sender,
// group) over the receiver's deliveries since it last (re)joined the group:
// a delivery below one already made since then is a violation. A message
// delivered twice at a receiver, ever, is a duplicate.
//
// Streams are indexed densely: group g (1..G) owns s*s slots from off[g-1],
// the receiver's rank in the group times s plus the sender's rank. A
// member's own records are denser still: s slots from moff[g-1], one per
// rank, so that a group's senders share a cache line or two of each array
// (a delivery reads the sender's and the receiver's, cold at thousands of
// groups).
type Collector struct {
	sc    Scenario
	asg   *Assignment
	start event.Time
	now   event.Time // time of the latest event seen

	groups  [][]event.NodeID // by group id - 1
	off     []int
	moff    []int
	streams []stream
	sent    []uint64    // by moff[g-1] + sender rank: casts accepted
	out     []uint64    // by moff[g-1] + sender rank: highest index seen leaving + 1
	epochs  [][]epoch   // by moff[g-1] + sender rank: the sender's views while casting
	views   [][]viewRec // by moff[g-1] + node rank: every view the node's application saw
	resets  [][]uint64  // by moff[g-1] + node rank: senders' cast counts at the node's last removal or rejoin
	givenUp int64       // messages layers told the application they gave up (GaveUp)
	drops   [][]uint64  // by moff[g-1] + node rank: each sender's cast count when the node last saw it removed or readmitted
	// readmitted is, by moff[g-1] + node rank, the ID of the view that
	// last readmitted the node (0: never readmitted). A cast tagged
	// with an older view belongs to the node's previous life in the
	// group, whenever the sender made it (a sender slow to install views
	// casts under its old one after the readmission): the stack takes
	// it as not owed (R3: reliable ignores casts of a view before the
	// one that readmitted it).
	readmitted []uint64
	rx         []rxStat                // by node id - 1
	memo       [rankMemoSize]pairRanks // ranks' answers
	warmed     bool                    // warm was called: Delivered asks ranks

	trackOut bool     // LeftStack is called: never-sent casts can be told apart
	order    orderLog // delivery orders, for agreed_violations (agreed.go)
	vsync    vsyncLog // what each node delivered in each view, for vsync_violations (vsync.go)
	ex       deliveryExamples

	messagesSent, deliveries, duplicates, fifo, recovered int64
	foreign, self, nonMember                              int64
	outstanding                                           int64
	recoveredBy                                           map[string]int64
	recBy                                                 map[string]*hist // recovery latency by mechanism
	dropBy                                                DropCauses
	dropAgain, dropLoose, markedNoDrop                    int64
	lat, disc, rec                                        hist
	backpressure                                          int64
}

// stream is one receiver's view of one (sender, group) stream.
type stream struct {
	StreamCheck        // what was delivered, and whether in order
	lost        bitset // indexes a data packet of which to this receiver was dropped before they were delivered
	n           int64  // distinct deliveries
}

// epoch is a stretch of a sender's casts to a group under one view: from
// index start until the next epoch's start.
type epoch struct {
	start uint64
	view  *event.ViewInfo // nil: the sender was not in the group
	// in has bit r set when the group's member of rank r (below 64) is in
	// view: a delivery checks it without reading the view.
	in uint64
	// The views the sender installed from the previous epoch's end to
	// this one's start (several when it cast nothing in between): whether
	// one removed or readmitted the sender itself, and the members one
	// removed or readmitted (listed in Left or Joined, or gone).
	selfOut bool
	changed []event.NodeID
}

// viewRec is one view a node's application saw.
type viewRec struct {
	at event.Time
	v  *event.ViewInfo
}

type rxStat struct {
	n    int64
	last event.Time
	// steady counts the deliveries in the steady-state window
	// (Scenario.Warmup).
	steady int64
}

// bitset is a growable set of message indexes.
type bitset []uint64

func (b bitset) has(i uint64) bool {
	w := i / 64
	return w < uint64(len(b)) && b[w]&(1<<(i%64)) != 0
}

func (b *bitset) set(i uint64) {
	w := int(i / 64)
	if w >= len(*b) {
		*b = append(*b, make([]uint64, w+1-len(*b)+len(*b)/2)...) // amortised growth
	}
	(*b)[w] |= 1 << (i % 64)
}

// NewCollector makes a collector for a scenario and its assignment.
func NewCollector(sc Scenario, asg *Assignment) *Collector {
	c := &Collector{sc: sc, asg: asg, recoveredBy: map[string]int64{}, recBy: map[string]*hist{}}
	G := len(asg.Groups)
	c.groups = make([][]event.NodeID, G)
	c.off = make([]int, G)
	c.moff = make([]int, G)
	total, slots := 0, 0
	// Every group's members in one array: a delivery looks two of them
	// up, and with thousands of groups separate arrays would be cold.
	n := 0
	for _, ms := range asg.Groups {
		n += len(ms)
	}
	flat := make([]event.NodeID, 0, n)
	for g := 1; g <= G; g++ {
		a := len(flat)
		flat = append(flat, asg.Groups[event.GroupID(g)]...)
		c.groups[g-1] = flat[a:len(flat):len(flat)]
		ms := c.groups[g-1]
		c.off[g-1] = total
		total += len(ms) * len(ms)
		c.moff[g-1] = slots
		slots += len(ms)
	}
	c.streams = make([]stream, total)
	c.sent = make([]uint64, slots)
	c.out = make([]uint64, slots)
	c.epochs = make([][]epoch, slots)
	c.views = make([][]viewRec, slots)
	c.resets = make([][]uint64, slots)
	c.drops = make([][]uint64, slots)
	c.readmitted = make([]uint64, slots)
	c.vsync.sets = make([][]*vset, slots)
	c.vsync.cur = make([][]vcount, slots)
	c.rx = make([]rxStat, len(asg.Nodes))
	return c
}

// rank is n's position in group g, or -1 if g is not a group of the run or n
// is not a member.
func (c *Collector) rank(g event.GroupID, n event.NodeID) int {
	if g == event.NoGroup || int(g) > len(c.groups) {
		return -1
	}
	ms := c.groups[g-1] // sorted, no repeats
	if len(ms) <= rankScan {
		// a delivery asks about six times: a scan that stops at n
		// mispredicts where it stops, at a different place each time;
		// counting the members below n has no branch but the loop's,
		// which a group's size decides
		i := 0
		for _, m := range ms {
			i += int((uint64(m) - uint64(n)) >> 63) // 1 when m < n
		}
		if i < len(ms) && ms[i] == n {
			return i
		}
		return -1
	}
	i, ok := slices.BinarySearch(ms, n)
	if !ok {
		return -1
	}
	return i
}

// rankScan is the group size up to which rank counts rather than bisects.
const rankScan = 16

// pairRanks is a remembered answer of ranks: the ranks of tx and rx in g.
type pairRanks struct {
	g      event.GroupID
	tx, rx event.NodeID
	tr, rr int32
}

// rankMemoSize is how many answers of ranks the collector keeps (a power
// of two): a packet's ranks are asked for by warm a few steps before its
// delivery, a few other packets' between.
const rankMemoSize = 16

// ranks is (rank(g, tx), rank(g, rx)). A delivery asks for the same pair
// up to three times (warm's stages 1 and 2, then Delivered), a few steps
// apart: the answers are kept in a small direct-mapped memo, which stays
// in the caches, so that only the first asking counts the members. Groups
// never change after NewCollector, so an answer stays right. Delivered
// asks it only once warm has been called (without warm, in a network too
// small to warm, it would only store answers no one asks for again).
func (c *Collector) ranks(g event.GroupID, tx, rx event.NodeID) (tr, rr int) {
	h := (uint32(g)*0x85EBCA6B ^ uint32(tx)*0x9E3779B1 ^ uint32(rx)*0xC2B2AE35) >> (32 - bits.Len(rankMemoSize-1))
	m := &c.memo[h]
	if m.g == g && m.tx == tx && m.rx == rx && g != event.NoGroup {
		return int(m.tr), int(m.rr)
	}
	tr, rr = c.rank(g, tx), c.rank(g, rx)
	*m = pairRanks{g: g, tx: tx, rx: rx, tr: int32(tr), rr: int32(rr)}
	return tr, rr
}

// SetStart sets when sending starts (default 0); throughput counts from it.
func (c *Collector) SetStart(t event.Time) { c.start = t }

// NextIndex is the index the next message from tx to g gets (tx must be a
// member of g).
func (c *Collector) NextIndex(tx event.NodeID, g event.GroupID) uint64 {
	r := c.rank(g, tx)
	if r < 0 {
		return 0
	}
	return c.sent[c.moff[g-1]+r]
}

// Sent records that tx's stack accepted message index of group g.
func (c *Collector) Sent(tx event.NodeID, g event.GroupID, index uint64) {
	r := c.rank(g, tx)
	if r < 0 {
		return
	}
	k := c.moff[g-1] + r
	c.sent[k] = max(c.sent[k], index+1)
	c.messagesSent++
	c.outstanding += int64(len(c.groups[g-1]) - 1)
}

// TrackSends says the runner calls LeftStack for every data packet that
// leaves a node, so that casts a stack accepted but never sent can be
// counted apart from what the network lost.
func (c *Collector) TrackSends() { c.trackOut = true }

// LeftStack records that message index of tx's stream to g left tx's stack
// (was handed to the network). Stacks send a stream in order, so every
// lower index is taken as sent too.
func (c *Collector) LeftStack(tx event.NodeID, g event.GroupID, index uint64) {
	r := c.rank(g, tx)
	if r < 0 {
		return
	}
	k := c.moff[g-1] + r
	// index == sent: the cast in progress (a stack may send it before
	// Cast returns, and so before Sent).
	if index <= c.sent[k] {
		c.out[k] = max(c.out[k], index+1)
	}
}

// View records a view node n's application saw at time now. A view that
// removes n, or readmits it (n in Joined, or n back after a view without
// it), restarts FIFO checking of n's streams in the group: the stack starts
// them afresh.
func (c *Collector) View(n event.NodeID, v *event.ViewInfo, now event.Time) {
	if v == nil {
		return
	}
	r := c.rank(v.Group, n)
	if r < 0 {
		return
	}
	c.now = max(c.now, now)
	gi := int(v.Group) - 1
	k := c.moff[gi] + r
	hist := c.views[k]
	in := v.Has(n)
	var prevIn bool
	if len(hist) > 0 {
		prevIn = hist[len(hist)-1].v.Has(n)
	}
	c.views[k] = append(hist, viewRec{at: now, v: v})
	c.vsync.viewSeen(k, len(c.groups[gi]), in)
	// The node's casts from now on are under this view.
	var ev *event.ViewInfo
	if in {
		ev = v
	}
	selfOut := !in || slices.Contains(v.Joined, n)
	changed := append(slices.Clone(v.Joined), v.Left...)
	if len(hist) > 0 {
		for _, m := range hist[len(hist)-1].v.Members {
			if !in || !v.Has(m) {
				changed = append(changed, m)
			}
		}
	}
	es := c.epochs[k]
	if m := len(es); m > 0 && es[m-1].start == c.sent[k] {
		// nothing cast under the previous one: this epoch carries the
		// changes of both
		es[m-1].view, es[m-1].in = ev, c.inMask(gi, ev)
		es[m-1].selfOut = es[m-1].selfOut || selfOut
		es[m-1].changed = append(es[m-1].changed, changed...)
	} else {
		c.epochs[k] = append(es, epoch{start: c.sent[k], view: ev, in: c.inMask(gi, ev), selfOut: selfOut, changed: changed})
	}
	size := len(c.groups[gi])
	if len(hist) > 0 {
		// A sender this view removes or readmits: the node's stack drops
		// what it held of it, so what it had cast by now is not coming.
		for ti, tx := range c.groups[gi] {
			if tx == n || (v.Has(tx) && !slices.Contains(v.Joined, tx)) {
				continue
			}
			if c.drops[k] == nil {
				c.drops[k] = make([]uint64, size)
			}
			c.drops[k][ti] = c.castBefore(c.moff[gi]+ti, v)
		}
	}
	rejoin := in && len(hist) > 0 && (!prevIn || slices.Contains(v.Joined, n))
	removed := !in && prevIn
	if !rejoin && !removed {
		return
	}
	if rejoin {
		c.readmitted[k] = v.ID
	}
	snap := c.resets[k]
	if snap == nil {
		snap = make([]uint64, size)
		c.resets[k] = snap
	}
	for ti := 0; ti < size; ti++ {
		snap[ti] = c.sent[c.moff[gi]+ti]
		c.streams[c.off[gi]+r*size+ti].Restart()
	}
}

// castBefore is how many casts sender slot tk made before it installed
// view v (or one after it) itself: what it cast under v is owed to v's
// members, even to one that installs v later than the sender did.
func (c *Collector) castBefore(tk int, v *event.ViewInfo) uint64 {
	for _, ep := range c.epochs[tk] {
		if ep.view != nil && ep.view.ID >= v.ID {
			return min(ep.start, c.sent[tk])
		}
	}
	return c.sent[tk]
}

// Backpressure records a cast the stack refused.
func (c *Collector) Backpressure() { c.backpressure++ }

// Outstanding is how many intended deliveries have not happened yet
// (counting every member, alive or not).
func (c *Collector) Outstanding() int64 { return c.outstanding }

// Delivered records a delivery at node rx at time now.
func (c *Collector) Delivered(rx event.NodeID, d *stack.Delivery, now event.Time) {
	st, err := ReadStamp(d.Payload)
	if err != nil || d.Group == event.NoGroup || st.Group != d.Group || st.Sender != d.From {
		c.foreign++
		return
	}
	if rx == st.Sender {
		c.self++
		return
	}
	var tr, rr int
	if c.warmed {
		tr, rr = c.ranks(st.Group, st.Sender, rx)
	} else {
		tr, rr = c.rank(st.Group, st.Sender), c.rank(st.Group, rx)
	}
	if tr < 0 || rr < 0 || rx < 1 || int(rx) > len(c.rx) {
		c.nonMember++
		return
	}
	if st.Index >= c.sent[c.moff[st.Group-1]+tr] {
		c.foreign++ // no cast the stack accepted
		return
	}
	c.now = max(c.now, now)
	size := len(c.groups[st.Group-1])
	s := &c.streams[c.off[st.Group-1]+rr*size+tr]
	dup, late := s.Deliver(st.Index, c.inViewAtCast(c.moff[st.Group-1]+tr, rr, rx, st.Index))
	if dup {
		c.duplicates++
		c.ex.duplicate(rx, st.Group, st.Sender, st.Index, now)
		return
	}
	s.n++
	c.vsync.delivered(c.moff[st.Group-1]+rr, tr, st.Index)
	if late {
		c.fifo++
		c.ex.late(rx, st.Group, st.Sender, st.Index, s.hi-1, now)
	}
	c.deliveries++
	c.outstanding--
	c.order.record(st.Group, rx, st.Sender, st.Index)
	r := &c.rx[rx-1]
	r.n++
	r.last = now
	if c.sc.Warmup > 0 && now >= c.start.Add(c.sc.Warmup) && now <= c.start.Add(c.sc.Duration) {
		r.steady++
	}
	c.lat.add(now.Sub(st.Sent))
	// Recovered is counted over the same set as dropped: a delivery of a
	// message whose packet to this receiver was dropped, whatever a layer
	// says. A layer's mark without a recorded drop (the packet was late,
	// or its drop could not be tied to a message) is counted apart.
	if s.lost.has(st.Index) {
		by := d.Recovery.By
		if by == "" {
			by = "unmarked"
		}
		c.recovered++
		c.recoveredBy[by]++
		arrive := st.Sent.Add(c.sc.Latency)
		if d.Recovery.Discovered != 0 {
			c.disc.add(d.Recovery.Discovered.Sub(arrive))
		}
		c.rec.add(now.Sub(arrive))
		h := c.recBy[by]
		if h == nil {
			h = &hist{}
			c.recBy[by] = h
		}
		h.add(now.Sub(arrive))
	} else if d.Recovery.By != "" {
		c.markedNoDrop++
	}
}

// warm asks the CPU to start loading what Delivered will read for a
// delivery at rx of a cast of g from tx, one link a stage (stack.Warmer):
// the group's members, then the stream, the sender's slots, the
// receiver's view counts and its totals, then the stream's word of delivered indexes, the
// sender's epochs and the receiver's count of the sender. It changes
// nothing.
func (c *Collector) warm(rx event.NodeID, g event.GroupID, tx event.NodeID, stage int) {
	if g == event.NoGroup || int(g) > len(c.groups) {
		return
	}
	switch stage {
	case 0:
		prefetch.Lines(unsafe.Pointer(unsafe.SliceData(c.groups[g-1])), 1)
		return
	case 1, 2:
	default:
		return // nothing left to ask for: no ranks to look up
	}
	c.warmed = true
	tr, rr := c.ranks(g, tx, rx)
	if tr < 0 || rr < 0 {
		return
	}
	k := c.moff[g-1] + tr
	s := &c.streams[c.off[g-1]+rr*len(c.groups[g-1])+tr]
	switch stage {
	case 1:
		prefetch.Lines(unsafe.Pointer(s), 1)
		prefetch.Lines(unsafe.Pointer(&c.sent[k]), 1)
		prefetch.Lines(unsafe.Pointer(&c.epochs[k]), 1)
		prefetch.Lines(unsafe.Pointer(&c.vsync.cur[c.moff[g-1]+rr]), 1)
		if int(rx) >= 1 && int(rx) <= len(c.rx) {
			prefetch.Lines(unsafe.Pointer(&c.rx[rx-1]), 1)
		}
	case 2:
		if w := s.hi / 64; w < uint64(len(s.got)) {
			prefetch.Lines(unsafe.Pointer(&s.got[w]), 1)
		}
		prefetch.Lines(unsafe.Pointer(unsafe.SliceData(c.epochs[k])), 1)
		if e := c.vsync.cur[c.moff[g-1]+rr]; tr < len(e) {
			prefetch.Lines(unsafe.Pointer(&e[tr]), 1)
		}
	}
}

// warmCast asks the CPU to start loading what a cast of tx in g will read
// (NextIndex, Sent and LeftStack): the group's members at stage 0, then
// the sender's slots. It changes nothing.
func (c *Collector) warmCast(tx event.NodeID, g event.GroupID, stage int) {
	if g == event.NoGroup || int(g) > len(c.groups) {
		return
	}
	switch stage {
	case 0:
		prefetch.Lines(unsafe.Pointer(unsafe.SliceData(c.groups[g-1])), 1)
	case 1:
		if r := c.rank(g, tx); r >= 0 {
			k := c.moff[g-1] + r
			prefetch.Lines(unsafe.Pointer(&c.sent[k]), 1)
			prefetch.Lines(unsafe.Pointer(&c.out[k]), 1)
		}
	}
}

// Drop causes: the keys of LossReport.DroppedBy.
const (
	DropModel     = "model"     // the scenario's loss model
	DropPartition = "partition" // sender and receiver on two sides of a partition or a cut
	DropOverflow  = "overflow"  // a receive buffer full (the simulator's)
	DropKernel    = "kernel"    // the kernel's socket receive queue full (UDP, SO_RXQ_OVFL)
	DropQueue     = "queue"     // a send queue full (the simulator's NIC queue, the kernel's at the send)
	DropWAN       = "wan"       // a WAN link's queue full
	DropDown      = "down"      // the receiver had crashed
	DropMalformed = "malformed" // a stack could not parse it
)

// DropCauses counts dropped data packets by where they were dropped.
type DropCauses struct {
	Model     int64 `json:"model"`
	Partition int64 `json:"partition"`
	Overflow  int64 `json:"overflow"`
	Kernel    int64 `json:"kernel"`
	Queue     int64 `json:"queue"`
	WAN       int64 `json:"wan"`
	Down      int64 `json:"down"`
	Malformed int64 `json:"malformed"`
}

// Add counts n drops of a cause (one of the Drop* names). It reports
// false, counting nothing, for a cause it does not know.
func (d *DropCauses) Add(cause string, n int64) bool {
	p := d.count(cause)
	if p == nil {
		return false
	}
	*p += n
	return true
}

// Of is one cause's count (0 for a cause it does not know).
func (d *DropCauses) Of(cause string) int64 {
	if p := d.count(cause); p != nil {
		return *p
	}
	return 0
}

// dropCauseNames are the causes in the order of DropCauses's fields, which
// is the order of the JSON.
var dropCauseNames = [...]string{DropModel, DropPartition, DropOverflow, DropKernel, DropQueue, DropWAN, DropDown, DropMalformed}

// fields are d's counters in the order of dropCauseNames.
func (d *DropCauses) fields() [len(dropCauseNames)]*int64 {
	return [...]*int64{&d.Model, &d.Partition, &d.Overflow, &d.Kernel, &d.Queue, &d.WAN, &d.Down, &d.Malformed}
}

// count is the counter of a cause, nil for a cause it does not know.
func (d *DropCauses) count(cause string) *int64 {
	if i := slices.Index(dropCauseNames[:], cause); i >= 0 {
		return d.fields()[i]
	}
	return nil
}

// Total is the sum over causes.
func (d *DropCauses) Total() int64 {
	var n int64
	for _, p := range d.fields() {
		n += *p
	}
	return n
}

// Dropped records that one data packet to rx was dropped, for a cause (one
// of the Drop* names; an unknown one counts as malformed). st is the
// experiment message the packet carried, nil when it carried none that can
// be told (a coded repair, a packet the network could not read): the drop
// is then counted but tied to no message. A drop of a message the receiver
// already lost once or has already delivered (a retransmission, a repair,
// a late copy) counts as a drop again, not as a new message lost.
func (c *Collector) Dropped(cause string, rx event.NodeID, st *Stamp) {
	if !c.dropBy.Add(cause, 1) {
		c.dropBy.Malformed++
	}
	if st == nil {
		c.dropLoose++
		return
	}
	tr, rr := c.rank(st.Group, st.Sender), c.rank(st.Group, rx)
	// index == sent: the cast in progress (a packet can be dropped while
	// the stack sends it, before Cast returns).
	if tr < 0 || rr < 0 || rx == st.Sender || st.Index > c.sent[c.moff[st.Group-1]+tr] {
		c.dropLoose++
		return
	}
	s := &c.streams[c.off[st.Group-1]+rr*len(c.groups[st.Group-1])+tr]
	if s.lost.has(st.Index) || s.got.has(st.Index) {
		c.dropAgain++
		return
	}
	s.lost.set(st.Index)
}

// DroppedUntied records n data packets dropped for a cause that the
// network can count but not tie to a message or a receiver (the kernel's
// receive queue over UDP).
func (c *Collector) DroppedUntied(cause string, n int64) {
	if n <= 0 {
		return
	}
	if !c.dropBy.Add(cause, n) {
		c.dropBy.Malformed += n
	}
	c.dropLoose += n
}

// Outcome is what a runner knows at the end of a run besides deliveries.
type Outcome struct {
	Spec, Network string
	// End is the virtual (or elapsed) time the run ended.
	End  event.Time
	Wall time.Duration
	// Alive says which nodes were up at the end (nil: all). A node that is
	// not alive and not Frozen is taken as crashed.
	Alive func(event.NodeID) bool
	// Frozen says which nodes were frozen at the end (nil: none).
	Frozen func(event.NodeID) bool
	// Faults are the scenario's faults at the times they were scheduled
	// (virtual time of the run), to explain missing deliveries.
	Faults []Fault
	// StaticMembership: views were installed once and never change (no
	// membership service), so a crashed member is never removed.
	StaticMembership bool
	// SiteOf gives each node's Spread site (nil: every node in site 0).
	SiteOf func(event.NodeID) event.SiteID
	// Nodes are every node's counters.
	Nodes []NodeCounters
	// Dropped data packets by the loss model and by receive-buffer
	// overflow, and dropped control packets.
	DroppedByModel, DroppedOverflow, DroppedControl int64
	// DroppedOther is packets lost otherwise: full send queues,
	// partitions, WAN queues, crashed receivers.
	DroppedOther int64
	// Notes from the runner.
	Notes []string
}

// endState is what was in force when the run ended.
type endState struct {
	crashed, frozen func(event.NodeID) bool
	part            map[event.NodeID]int // partition set at the end (nil: none in force)
	partAt          event.Time
	cut             map[event.NodeID]int // cut set at the end (nil: none in force)
	cutAt           event.Time
	crashAt         map[event.NodeID]event.Time
}

// separated says whether a and b could not reach each other directly at
// the end, and by what ("partition at 2s", "cut at 2s"): a cut's sides may
// still reach each other through a node in neither, so only the pairs
// across it are explained, never what a stalled third node lacks.
func (e *endState) separated(a, b event.NodeID) string {
	switch {
	case e.part != nil && e.part[a] != e.part[b]:
		return fmt.Sprintf("partition at %v", e.partAt)
	case e.cut != nil && e.cut[a] != 0 && e.cut[b] != 0 && e.cut[a] != e.cut[b]:
		return fmt.Sprintf("cut at %v", e.cutAt)
	}
	return ""
}

// setsOf maps each node of a partition's or cut's sets to its set's number
// (from 1).
func setsOf(f *Fault) map[event.NodeID]int {
	m := map[event.NodeID]int{}
	for i, set := range f.Sets {
		for _, n := range set {
			m[n] = i + 1
		}
	}
	return m
}

func newEndState(o Outcome) *endState {
	alive := o.Alive
	if alive == nil {
		alive = func(event.NodeID) bool { return true }
	}
	frozen := o.Frozen
	if frozen == nil {
		frozen = func(event.NodeID) bool { return false }
	}
	e := &endState{frozen: frozen, crashAt: map[event.NodeID]event.Time{}}
	e.crashed = func(n event.NodeID) bool { return !alive(n) && !frozen(n) }
	// The partition in force at the end is the last partition or heal
	// scheduled by then, the cut the last cut or heal (faults at the same
	// time apply in order).
	var last, lastCut *Fault
	for i := range o.Faults {
		f := &o.Faults[i]
		switch f.Kind {
		case FaultPartition, FaultHeal, FaultCut:
			if f.At > o.End {
				break
			}
			if f.Kind != FaultCut && (last == nil || f.At >= last.At) {
				last = f
			}
			if f.Kind != FaultPartition && (lastCut == nil || f.At >= lastCut.At) {
				lastCut = f
			}
		case FaultCrash:
			if f.At <= o.End {
				if t, ok := e.crashAt[f.Node]; !ok || f.At < t {
					e.crashAt[f.Node] = f.At
				}
			}
		}
	}
	if last != nil && last.Kind == FaultPartition {
		e.part, e.partAt = setsOf(last), last.At
	}
	if lastCut != nil && lastCut.Kind == FaultCut {
		e.cut, e.cutAt = setsOf(lastCut), lastCut.At
	}
	return e
}

// lastView is node k's latest view of its group (nil if it saw none).
func (c *Collector) lastView(k int) *event.ViewInfo {
	if h := c.views[k]; len(h) > 0 {
		return h[len(h)-1].v
	}
	return nil
}

// heldBy names a member of sender k's view of group gi that was gone at the
// end (crashed, frozen or cut off by a partition), which is why the
// sender's stack may have held casts back; "" if none.
func (c *Collector) heldBy(gi, k int, tx event.NodeID, e *endState, static bool) string {
	members := c.groups[gi]
	if v := c.lastView(k); v != nil {
		members = v.Members
	}
	for _, m := range members {
		switch {
		case m == tx:
		case e.crashed(m) && static:
			return fmt.Sprintf("%v crashed and static membership keeps it: senders held off", m)
		case e.crashed(m):
			return fmt.Sprintf("%v crashed and was still in %v's view of g%d at the end: senders held off", m, tx, gi+1)
		case e.frozen(m):
			return fmt.Sprintf("%v frozen past the end: senders held off", m)
		case e.separated(m, tx) != "":
			return fmt.Sprintf("%s not healed: %v cut off from %v, senders held off", e.separated(m, tx), m, tx)
		}
	}
	if e.frozen(tx) {
		return fmt.Sprintf("sender %v frozen past the end", tx)
	}
	return ""
}

// siteStall names a crashed node of tx's site when static membership
// keeps it and the stack orders the site's casts as one stream (agreed
// order, such as ring's: one token over every member of the site, whatever
// their groups): the stream stalls at it for good, so even groups it is
// not in lose what was cast (or queued) after; "" if none.
func siteStall(tx event.NodeID, e *endState, o *Outcome, agreed bool) string {
	if !o.StaticMembership || !agreed || len(e.crashAt) == 0 {
		return ""
	}
	site := func(n event.NodeID) event.SiteID {
		if o.SiteOf == nil {
			return 0
		}
		return o.SiteOf(n)
	}
	for _, n := range slices.Sorted(maps.Keys(e.crashAt)) {
		if n != tx && e.crashed(n) && site(n) == site(tx) {
			return fmt.Sprintf("%v crashed and static membership keeps it: the agreed order of its site stalls there", n)
		}
	}
	return ""
}

// explain says why owed message idx of sender ti's stream to group gi was
// not delivered at receiver ri, or "" if nothing explains it.
func (c *Collector) explain(gi, ti, ri int, idx uint64, e *endState) string {
	ms := c.groups[gi]
	tx, rx := ms[ti], ms[ri]
	g := event.GroupID(gi + 1)
	switch {
	case e.frozen(rx):
		return fmt.Sprintf("%v frozen past the end", rx)
	case e.frozen(tx):
		return fmt.Sprintf("sender %v frozen past the end", tx)
	case e.separated(rx, tx) != "":
		return e.separated(rx, tx) + " not healed by the end"
	}
	rk, tk := c.moff[gi]+ri, c.moff[gi]+ti
	if v := c.lastView(rk); v != nil && !v.Has(rx) {
		return fmt.Sprintf("%v removed from %v for good", rx, g)
	}
	if v := c.lastView(tk); v != nil && !v.Has(rx) {
		return fmt.Sprintf("%v out of %v's view of %v at the end", rx, tx, g)
	}
	if snap := c.resets[rk]; snap != nil && idx < snap[ti] {
		return fmt.Sprintf("cast before %v's removal from %v: its state for the group was dropped", rx, g)
	}
	if snap := c.resets[tk]; snap != nil && idx < snap[ti] {
		// The sender itself was removed (or readmitted as new) after the
		// cast: R1/R3 drop its own stream, retransmission buffer included,
		// so what the receiver lacked of it then is never sent again.
		return fmt.Sprintf("cast before %v learned of its removal from %v: its own stream was dropped", tx, g)
	}
	if d := c.drops[rk]; d != nil && idx < d[ti] {
		return fmt.Sprintf("cast before %v saw %v removed from %v: its state for the sender was dropped", rx, tx, g)
	}
	// The sender may have cast it just before it removed (or readmitted)
	// the receiver, or was removed itself: a view it installed right after
	// the cast (before casting again) changes one of them, and the
	// receiver, readmitted or having removed the sender, takes the casts
	// of the sender's older view as not owed (R3).
	es := c.epochs[tk]
	j, _ := slices.BinarySearchFunc(es, idx+1, func(ep epoch, t uint64) int { return cmp.Compare(ep.start, t) })
	if j < len(es) {
		switch {
		case es[j].selfOut:
			return fmt.Sprintf("cast just before %v was removed from %v", tx, g)
		case slices.Contains(es[j].changed, rx):
			return fmt.Sprintf("cast just before %v removed %v from %v", tx, rx, g)
		}
	}
	if w := c.readmitted[rk]; w > 0 {
		if v := c.viewAtCast(tk, idx); v != nil && v.ID < w {
			// The sender, slow to install views, cast it under a view
			// older than the one that readmitted the receiver (after
			// the readmission, so the snapshot above misses it): a cast
			// of the receiver's life before its removal, which the
			// readmitted receiver takes as not owed (R3).
			return fmt.Sprintf("cast under %v's view %d of %v, older than view %d that readmitted %v: not owed to its new life in the group", tx, v.ID, g, w, rx)
		}
	}
	return ""
}

// viewAtCast is the view of sender slot k when it cast message idx (nil
// before any view, or out of the group).
func (c *Collector) viewAtCast(k int, idx uint64) *event.ViewInfo {
	es := c.epochs[k]
	j, _ := slices.BinarySearchFunc(es, idx+1, func(ep epoch, t uint64) int { return cmp.Compare(ep.start, t) })
	if j == 0 {
		return nil
	}
	return es[j-1].view
}

// inViewAtCast reports whether rx, of rank rr in the group, was in the
// view of sender slot k when it cast message idx (before any view: yes).
func (c *Collector) inViewAtCast(k, rr int, rx event.NodeID, idx uint64) bool {
	es := c.epochs[k]
	j, _ := slices.BinarySearchFunc(es, idx+1, func(ep epoch, t uint64) int { return cmp.Compare(ep.start, t) })
	if j == 0 {
		return true
	}
	ep := &es[j-1]
	switch {
	case ep.view == nil:
		return false
	case rr < 64:
		return ep.in&(1<<rr) != 0
	}
	return ep.view.Has(rx)
}

// inMask is epoch.in for view v of group gi.
func (c *Collector) inMask(gi int, v *event.ViewInfo) uint64 {
	var in uint64
	if v == nil {
		return 0
	}
	for r, m := range c.groups[gi][:min(64, len(c.groups[gi]))] {
		if v.Has(m) {
			in |= 1 << r
		}
	}
	return in
}

// owedRanges calls fn for each stretch [a, b) of sender k's casts to group
// gi with whether they are owed to rx (by the sender's view at the time).
func (c *Collector) owedRanges(gi, k int, rx event.NodeID, fn func(a, b uint64, owed bool)) {
	n := c.sent[k]
	es := c.epochs[k]
	if len(es) == 0 || es[0].start > 0 {
		end := n
		if len(es) > 0 {
			end = min(es[0].start, n)
		}
		fn(0, end, true) // before any view: the intended membership
	}
	for i, ep := range es {
		b := n
		if i+1 < len(es) {
			b = min(es[i+1].start, n)
		}
		if ep.start >= b {
			continue
		}
		fn(ep.start, b, ep.view != nil && ep.view.Has(rx))
	}
}

// GaveUp counts losses a layer reported to node n's application
// (stack.AppFuncs.OnLost): count messages, 0 when the layer could not say
// how many (an unbounded range), which still counts one report.
func (c *Collector) GaveUp(n event.NodeID, count uint32) {
	c.givenUp += int64(max(count, 1))
}

// Finish builds the report. It may be called more than once.
func (c *Collector) Finish(o Outcome) *Report {
	es := newEndState(o)
	rep := &Report{
		Spec: o.Spec, Network: o.Network, Seed: c.sc.Seed, Scenario: c.sc.Describe(),
		SimSeconds:   units.Round6(o.End.Duration().Seconds()),
		WallSeconds:  units.Round6(o.Wall.Seconds()),
		MessagesSent: c.messagesSent, Deliveries: c.deliveries,
		Duplicates: c.duplicates, FIFOViolations: c.fifo, GivenUp: c.givenUp,
		Backpressure: c.backpressure,
		Promises:     specPromises(o.Spec),
		Layers:       map[string]map[string]int64{},
		Notes:        []string{},
	}
	if c.trackOut {
		var ns int64
		for k := range c.sent {
			ns += int64(c.sent[k] - min(c.out[k], c.sent[k]))
		}
		rep.NeverSent = &ns
	}
	// Owed deliveries, and why the missing ones are missing.
	explained := map[string]int64{}
	short := map[[3]event.NodeID]int64{} // unexplained by (receiver, sender, group)
	held := map[int]string{}             // sender slot -> why its stack held casts back
	var dropMissing int64                // owed, missing, and a packet of it to the receiver dropped
	mex := missingExamples{c: c}         // the first unexplained ones
	agreed := slices.Contains(rep.Promises, string(agreedOrder))
	for gi, ms := range c.groups {
		size := len(ms)
		for ti, tx := range ms {
			tk := c.moff[gi] + ti
			if c.sent[tk] == 0 {
				continue
			}
			for ri, rx := range ms {
				if rx == tx {
					continue
				}
				s := &c.streams[c.off[gi]+ri*size+ti]
				if es.crashed(tx) || es.crashed(rx) {
					rep.NotOwed += s.n
					continue
				}
				c.owedRanges(gi, tk, rx, func(a, b uint64, owed bool) {
					if !owed {
						rep.NotOwed += s.got.count(a, b)
						return
					}
					rep.DeliveriesExpected += int64(b - a)
					for i := a; i < b; i++ {
						if s.got.has(i) {
							rep.DeliveriesOfExpected++
							continue
						}
						rep.Missing++
						if s.lost.has(i) {
							dropMissing++
						}
						if c.trackOut && i >= c.out[tk] {
							rep.MissingNeverSent++
							if snap := c.resets[tk]; snap != nil && i < snap[ti] {
								// As for a cast sent and lost (explain): the
								// sender was removed after it, and its stack
								// dropped what it still held of its own
								// stream, unsent casts too; the others'
								// views had moved on without it.
								rep.MissingExplained++
								explained[fmt.Sprintf("never sent: cast before %v learned of its removal from g%d: its own stream was dropped", tx, gi+1)]++
								continue
							}
							why, ok := held[tk]
							if !ok {
								why = c.heldBy(gi, tk, tx, es, o.StaticMembership)
								if why == "" {
									why = siteStall(tx, es, &o, agreed)
								}
								held[tk] = why
							}
							if why != "" {
								rep.MissingExplained++
								explained["never sent: "+why]++
								continue
							}
							rep.MissingUnexplained++
							mex.add(gi, ti, ri, i, a, s.lost.has(i), true)
							short[[3]event.NodeID{rx, tx, event.NodeID(gi + 1)}]++
							continue
						}
						why := c.explain(gi, ti, ri, i, es)
						if why == "" {
							why = siteStall(tx, es, &o, agreed)
						}
						if why != "" {
							rep.MissingExplained++
							explained[why]++
							continue
						}
						rep.MissingUnexplained++
						mex.add(gi, ti, ri, i, a, s.lost.has(i), false)
						short[[3]event.NodeID{rx, tx, event.NodeID(gi + 1)}]++
					}
				})
			}
		}
	}
	rep.DeliveredAll = rep.Missing == 0
	if rep.Missing > 0 {
		line := fmt.Sprintf("%d of %d owed deliveries missing: %d explained, %d unexplained", rep.Missing, rep.DeliveriesExpected,
			rep.MissingExplained, rep.MissingUnexplained)
		if rep.NeverSent != nil {
			line += fmt.Sprintf("; %d are of casts never sent, %d of casts the network or the stack lost", rep.MissingNeverSent, rep.Missing-rep.MissingNeverSent)
		}
		rep.Notes = append(rep.Notes, line)
	}
	if rep.NeverSent != nil && *rep.NeverSent > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d casts the stacks accepted were never sent: still queued in the stack or its layers at the end", *rep.NeverSent))
	}
	// Explained: one note per kind of explanation, with its most
	// frequent case.
	kinds := map[string]int64{}
	top := map[string]string{}
	for _, why := range slices.Sorted(maps.Keys(explained)) {
		k := explanationKind(why)
		kinds[k] += explained[why]
		if t, ok := top[k]; !ok || explained[why] > explained[t] {
			top[k] = why
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(kinds), func(a, b string) int {
		return cmp.Or(cmp.Compare(kinds[b], kinds[a]), cmp.Compare(a, b))
	}) {
		rep.Notes = append(rep.Notes, fmt.Sprintf("missing explained by %s: %d; most: %s (%d)", k, kinds[k], top[k], explained[top[k]]))
	}
	if len(short) > 0 {
		worst := slices.SortedFunc(maps.Keys(short), func(a, b [3]event.NodeID) int {
			return cmp.Or(cmp.Compare(short[b], short[a]), cmp.Compare(a[2], b[2]), cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
		})
		rxs := map[event.NodeID]bool{}
		for _, k := range worst {
			rxs[k[0]] = true
		}
		w := worst[0]
		rep.Notes = append(rep.Notes, fmt.Sprintf("missing unexplained: %d owed deliveries at %d receivers; most at %v from %v in g%d (%d)",
			rep.MissingUnexplained, len(rxs), w[0], w[1], w[2], short[w]))
	}
	if o.StaticMembership {
		for _, n := range slices.Sorted(maps.Keys(es.crashAt)) {
			if c.rank1(n) {
				rep.Notes = append(rep.Notes, fmt.Sprintf("%v crashed at %v and static membership keeps it: senders to its groups are held off once their buffers fill (a membership service would remove it)", n, es.crashAt[n]))
			}
		}
	}
	if rep.NotOwed > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d deliveries of messages not owed (receiver out of the sender's view when it cast, or sender or receiver crashed): not counted as expected", rep.NotOwed))
	}
	if c.foreign > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d deliveries were not experiment messages", c.foreign))
	}
	if c.nonMember > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d deliveries at nodes outside the group or from senders outside it (not counted)", c.nonMember))
	}
	if c.self > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d deliveries of a node's own messages (not counted)", c.self))
	}
	rep.AgreedViolations, rep.AgreedViolationExamples = c.order.check(es.crashed)
	c.finishVsync(rep)
	rep.MissingExamples = mex.finish()
	rep.DuplicateExamples, rep.FIFOViolationExamples = slices.Clone(c.ex.dup), slices.Clone(c.ex.fifo)
	rep.Broken = brokenPromises(rep)

	// Throughput: mean over receivers of deliveries per second (with a
	// warm-up, in the steady-state window only).
	var tp float64
	var nrx int
	for i := range c.rx {
		r := &c.rx[i]
		if r.n == 0 || r.last <= c.start {
			continue
		}
		if w := c.sc.Duration - c.sc.Warmup; c.sc.Warmup > 0 && w > 0 {
			tp += float64(r.steady) / w.Seconds()
		} else {
			tp += float64(r.n) / r.last.Sub(c.start).Seconds()
		}
		nrx++
	}
	if nrx > 0 {
		rep.ThroughputMsgsPerS = units.Round3(tp / float64(nrx))
	}
	if c.sc.Duration > 0 {
		rep.OfferedMsgsPerS = units.Round3(float64(c.messagesSent) / c.sc.Duration.Seconds())
	}
	rep.LatencyMs = Percentile{
		P50: units.Ms(float64(c.lat.quantile(0.50))), P90: units.Ms(float64(c.lat.quantile(0.90))),
		P99: units.Ms(float64(c.lat.quantile(0.99))), Max: units.Ms(float64(c.lat.max)),
	}
	rep.Loss = LossReport{
		DroppedByModel: o.DroppedByModel, DroppedOverflow: o.DroppedOverflow,
		DroppedControl: o.DroppedControl, DroppedOther: o.DroppedOther,
		Recovered: c.recovered, RecoveredBy: c.recoveredBy,
		RecoveredWithoutDrop: c.markedNoDrop,
		DiscoveryLatencyMs:   MeanP99{Mean: units.Ms(c.disc.mean()), P99: units.Ms(float64(c.disc.quantile(0.99)))},
		RecoveryLatencyMs:    MeanP99{Mean: units.Ms(c.rec.mean()), P99: units.Ms(float64(c.rec.quantile(0.99)))},
		RecoveryLatencyByMs:  map[string]Percentile{},
	}
	for by, h := range c.recBy {
		rep.Loss.RecoveryLatencyByMs[by] = Percentile{
			P50: units.Ms(float64(h.quantile(0.50))), P90: units.Ms(float64(h.quantile(0.90))),
			P99: units.Ms(float64(h.quantile(0.99))), Max: units.Ms(float64(h.max)),
		}
	}

	// Counters. Acknowledgements and buffer peaks are found by the role
	// each layer's registration gives its counters, never by name.
	acks := map[string]int64{}
	roles := counterRoles{}
	for _, nc := range o.Nodes {
		rep.Net.PacketsSent += nc.Net.PacketsSent
		rep.Net.BytesSent += nc.Net.BytesSent
		rep.Net.ControlPacketsSent += nc.Net.ControlPacketsSent
		rep.Net.ControlBytesSent += nc.Net.ControlBytesSent
		rep.Net.PacketsReceived += nc.Net.PacketsReceived
		rep.Net.Malformed += nc.Net.Malformed
		var peak int64
		for _, l := range nc.Layers {
			m := rep.Layers[l.Layer]
			if m == nil {
				m = map[string]int64{}
				rep.Layers[l.Layer] = m
			}
			for i, name := range l.Names {
				m[name] += l.Values[i]
				switch roles.of(l.Layer, name) {
				case compose.AckRole:
					acks[l.Layer] += l.Values[i]
				case compose.BufferPeakRole:
					peak += l.Values[i]
				}
			}
		}
		rep.PeakBufferBytes = max(rep.PeakBufferBytes, peak)
	}
	if c.messagesSent > 0 {
		n := float64(c.messagesSent)
		rep.Overhead = Overhead{
			ControlPacketsPerMsg: units.Round3(float64(rep.Net.ControlPacketsSent) / n),
			ControlBytesPerMsg:   units.Round3(float64(rep.Net.ControlBytesSent) / n),
		}
		var all int64
		for l, a := range acks {
			all += a
			if rep.Overhead.AcksPerMsgBy == nil {
				rep.Overhead.AcksPerMsgBy = map[string]float64{}
			}
			rep.Overhead.AcksPerMsgBy[l] = units.Round3(float64(a) / n)
		}
		rep.Overhead.AcksPerMsg = units.Round3(float64(all) / n)
	}
	c.finishDrops(rep, dropMissing)
	rep.Notes = append(rep.Notes, o.Notes...)
	summarizeLayers(rep, o.Nodes, c.messagesSent)
	for _, s := range Summarizers {
		s(rep, o.Nodes)
	}
	return rep
}

// counterRoles caches, per layer and counter name, the role the layer's
// registration gives the counter (every node reports the same names).
type counterRoles map[string]map[string]compose.CounterRole

func (c counterRoles) of(layer, name string) compose.CounterRole {
	m := c[layer]
	if m == nil {
		m = map[string]compose.CounterRole{}
		c[layer] = m
	}
	r, ok := m[name]
	if !ok {
		if info, found := compose.Lookup(layer); found {
			if d := info.Counter(name); d != nil {
				r = d.Role
			}
		}
		m[name] = r
	}
	return r
}

// explanationKind sorts the explanations of explain and heldBy.
func explanationKind(why string) string {
	switch {
	case strings.HasPrefix(why, "never sent: "):
		return "casts the sender held back"
	case strings.HasPrefix(why, "cast "):
		return "removals (state dropped when a node was removed or readmitted)"
	case strings.Contains(why, "for good") || strings.Contains(why, "at the end"):
		return "nodes removed for good"
	}
	return "faults in force at the end"
}

// rank1 reports whether n is a node of the run.
func (c *Collector) rank1(n event.NodeID) bool { return n >= 1 && int(n) <= len(c.rx) }

// count is the number of indexes in [a, b) in the set.
func (b bitset) count(lo, hi uint64) int64 {
	var n int64
	for i := lo; i < hi; i++ {
		if w := i / 64; i%64 == 0 && hi-i >= 64 && w < uint64(len(b)) {
			n += int64(bits.OnesCount64(b[w]))
			i += 63
			continue
		}
		if b.has(i) {
			n++
		}
	}
	return n
}

// finishDrops fills the loss report's drop accounting (after the counters,
// for the stacks' malformed packets) and says where every drop went.
func (c *Collector) finishDrops(rep *Report, dropMissing int64) {
	by := c.dropBy
	by.Malformed += rep.Net.Malformed
	l := &rep.Loss
	l.DroppedBy = by
	l.Dropped = by.Total()
	var lost int64
	for i := range c.streams {
		lost += c.streams[i].lost.count(0, uint64(len(c.streams[i].lost))*64)
	}
	l.DropOutcome = DropOutcome{
		Recovered: c.recovered, Missing: dropMissing, NotOwed: lost - c.recovered - dropMissing,
		Again: c.dropAgain, Untied: c.dropLoose + rep.Net.Malformed,
	}
	if l.Dropped > 0 {
		p := units.Round3(100 * float64(l.Recovered) / float64(l.Dropped))
		l.RecoveredPct = &p
		o := l.DropOutcome
		parts := []string{fmt.Sprintf("%d recovered", o.Recovered)}
		for _, p := range []struct {
			n    int64
			what string
		}{
			{o.Missing, "never delivered though owed"},
			{o.NotOwed, "never delivered and not owed (receiver out of the sender's view, or one of them crashed)"},
			{o.Again, "further drops of a message the receiver had already lost or delivered (each a drop, the message recovered once)"},
			{o.Untied, "not tied to one message (coded repairs, drops the network counts but cannot read)"},
		} {
			if p.n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
			}
		}
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d data packets dropped (per receiver): %s", l.Dropped, strings.Join(parts, ", ")))
	}
	if l.RecoveredWithoutDrop > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d deliveries a layer marked recovered had no recorded drop of that message to that receiver (the packet was late, or its drop was not tied to a message): not counted as recovered", l.RecoveredWithoutDrop))
	}
}
