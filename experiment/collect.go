package experiment

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// Collector checks and measures deliveries: duplicates, FIFO order per
// (sender, group), latency, recovery. Runners call Sent for every cast the
// stack accepted and Delivered for every delivery, then Finish. It is not
// safe for concurrent use.
//
// Streams are indexed densely: group g (1..G) owns s*s slots from off[g-1],
// the receiver's rank in the group times s plus the sender's rank.
type Collector struct {
	sc    Scenario
	asg   *Assignment
	start event.Time

	groups  [][]event.NodeID // by group id - 1
	off     []int
	streams []stream
	sent    []uint64 // by off[g-1] + sender rank
	rx      []rxStat // by node id - 1

	messagesSent, deliveries, duplicates, fifo, recovered int64
	foreign, self, nonMember                              int64
	outstanding                                           int64
	recoveredBy                                           map[string]int64
	lat, disc, rec                                        hist
	backpressure                                          int64
}

// stream is one receiver's view of one (sender, group) stream: the
// delivered prefix and, only when order was broken, the indexes delivered
// beyond it.
type stream struct {
	next  uint64
	ahead map[uint64]bool
}

type rxStat struct {
	n    int64
	last event.Time
}

// NewCollector makes a collector for a scenario and its assignment.
func NewCollector(sc Scenario, asg *Assignment) *Collector {
	c := &Collector{sc: sc, asg: asg, recoveredBy: map[string]int64{}}
	G := len(asg.Groups)
	c.groups = make([][]event.NodeID, G)
	c.off = make([]int, G)
	total := 0
	for g := 1; g <= G; g++ {
		ms := asg.Groups[event.GroupID(g)]
		c.groups[g-1] = ms
		c.off[g-1] = total
		total += len(ms) * len(ms)
	}
	c.streams = make([]stream, total)
	c.sent = make([]uint64, total) // only the first s of each group's slots are used
	c.rx = make([]rxStat, len(asg.Nodes))
	return c
}

// rank is n's position in group g, or -1 if g is not a group of the run or n
// is not a member.
func (c *Collector) rank(g event.GroupID, n event.NodeID) int {
	if g == event.NoGroup || int(g) > len(c.groups) {
		return -1
	}
	i, ok := slices.BinarySearch(c.groups[g-1], n)
	if !ok {
		return -1
	}
	return i
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
	return c.sent[c.off[g-1]+r]
}

// Sent records that tx's stack accepted message index of group g.
func (c *Collector) Sent(tx event.NodeID, g event.GroupID, index uint64) {
	r := c.rank(g, tx)
	if r < 0 {
		return
	}
	k := c.off[g-1] + r
	c.sent[k] = max(c.sent[k], index+1)
	c.messagesSent++
	c.outstanding += int64(len(c.groups[g-1]) - 1)
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
	tr, rr := c.rank(st.Group, st.Sender), c.rank(st.Group, rx)
	if tr < 0 || rr < 0 || rx < 1 || int(rx) > len(c.rx) {
		c.nonMember++
		return
	}
	size := len(c.groups[st.Group-1])
	s := &c.streams[c.off[st.Group-1]+rr*size+tr]
	switch {
	case st.Index < s.next || s.ahead[st.Index]:
		c.duplicates++
		return
	case st.Index > s.next:
		c.fifo++
		if s.ahead == nil {
			s.ahead = map[uint64]bool{}
		}
		s.ahead[st.Index] = true
	default:
		s.next++
		for len(s.ahead) > 0 && s.ahead[s.next] {
			delete(s.ahead, s.next)
			s.next++
		}
	}
	c.deliveries++
	c.outstanding--
	r := &c.rx[rx-1]
	r.n++
	r.last = now
	c.lat.add(now.Sub(st.Sent))
	if by := d.Recovery.By; by != "" {
		c.recovered++
		c.recoveredBy[by]++
		arrive := st.Sent.Add(c.sc.Latency)
		if d.Recovery.Discovered != 0 {
			c.disc.add(d.Recovery.Discovered.Sub(arrive))
		}
		c.rec.add(now.Sub(arrive))
	}
}

// Outcome is what a runner knows at the end of a run besides deliveries.
type Outcome struct {
	Spec, Network string
	// End is the virtual (or elapsed) time the run ended.
	End  event.Time
	Wall time.Duration
	// Alive says which nodes were up at the end (nil: all).
	Alive func(event.NodeID) bool
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

// Finish builds the report.
func (c *Collector) Finish(o Outcome) *Report {
	alive := o.Alive
	if alive == nil {
		alive = func(event.NodeID) bool { return true }
	}
	rep := &Report{
		Spec: o.Spec, Network: o.Network, Seed: c.sc.Seed, Scenario: c.sc.Describe(),
		SimSeconds:   round6(o.End.Duration().Seconds()),
		WallSeconds:  round6(o.Wall.Seconds()),
		MessagesSent: c.messagesSent, Deliveries: c.deliveries,
		Duplicates: c.duplicates, FIFOViolations: c.fifo,
		Backpressure: c.backpressure,
		Layers:       map[string]map[string]int64{},
		Notes:        []string{},
	}
	// Expected deliveries: messages of senders alive at the end, to
	// members alive at the end.
	var delivered int64
	short := map[event.NodeID]int64{}
	for gi, ms := range c.groups {
		size := len(ms)
		for ti, tx := range ms {
			n := int64(c.sent[c.off[gi]+ti])
			if n == 0 || !alive(tx) {
				continue
			}
			for ri, m := range ms {
				if m == tx || !alive(m) {
					continue
				}
				rep.DeliveriesExpected += n
				s := &c.streams[c.off[gi]+ri*size+ti]
				got := min(int64(s.next)+int64(len(s.ahead)), n)
				delivered += got
				if got < n {
					short[m] += n - got
				}
			}
		}
	}
	rep.Missing = rep.DeliveriesExpected - delivered
	rep.DeliveredAll = rep.Missing == 0
	if len(short) > 0 {
		worst := slices.SortedFunc(maps.Keys(short), func(a, b event.NodeID) int {
			return cmp.Or(cmp.Compare(short[b], short[a]), cmp.Compare(a, b))
		})
		w := worst[0]
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d expected deliveries missing at %d receivers; most at %v (%d)",
			rep.Missing, len(short), w, short[w]))
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

	// Throughput: mean over receivers of deliveries per second.
	var tp float64
	var nrx int
	for i := range c.rx {
		r := &c.rx[i]
		if r.n == 0 || r.last <= c.start {
			continue
		}
		tp += float64(r.n) / r.last.Sub(c.start).Seconds()
		nrx++
	}
	if nrx > 0 {
		rep.ThroughputMsgsPerS = round3(tp / float64(nrx))
	}
	if c.sc.Duration > 0 {
		rep.OfferedMsgsPerS = round3(float64(c.messagesSent) / c.sc.Duration.Seconds())
	}
	rep.LatencyMs = Percentile{
		P50: ms(float64(c.lat.quantile(0.50))), P90: ms(float64(c.lat.quantile(0.90))),
		P99: ms(float64(c.lat.quantile(0.99))), Max: ms(float64(c.lat.max)),
	}
	rep.Loss = LossReport{
		Dropped:        o.DroppedByModel + o.DroppedOverflow,
		DroppedByModel: o.DroppedByModel, DroppedOverflow: o.DroppedOverflow,
		DroppedControl: o.DroppedControl, DroppedOther: o.DroppedOther,
		Recovered: c.recovered, RecoveredBy: c.recoveredBy,
		DiscoveryLatencyMs: MeanP99{Mean: ms(c.disc.mean()), P99: ms(float64(c.disc.quantile(0.99)))},
		RecoveryLatencyMs:  MeanP99{Mean: ms(c.rec.mean()), P99: ms(float64(c.rec.quantile(0.99)))},
	}

	// Counters.
	var acks int64
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
				switch name {
				case "acks_sent":
					acks += l.Values[i]
				case "peak_buffer_bytes":
					peak += l.Values[i]
				}
			}
		}
		rep.PeakBufferBytes = max(rep.PeakBufferBytes, peak)
	}
	if c.messagesSent > 0 {
		n := float64(c.messagesSent)
		rep.Overhead = Overhead{
			ControlPacketsPerMsg: round3(float64(rep.Net.ControlPacketsSent) / n),
			ControlBytesPerMsg:   round3(float64(rep.Net.ControlBytesSent) / n),
			AcksPerMsg:           round3(float64(acks) / n),
		}
	}
	rep.Notes = append(rep.Notes, o.Notes...)
	for _, s := range Summarizers {
		s(rep, o.Nodes)
	}
	return rep
}

func round3(f float64) float64 { return float64(int64(f*1e3+0.5)) / 1e3 }
func round6(f float64) float64 { return float64(int64(f*1e6+0.5)) / 1e6 }
