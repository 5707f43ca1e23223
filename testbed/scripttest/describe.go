package scripttest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/spans"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// DescribeTime prints a virtual time in milliseconds, exactly ("1002.5ms"),
// so lines sort and compare as text.
func DescribeTime(t event.Time) string {
	return DescribeDuration(time.Duration(t))
}

// DescribeDuration prints a duration in milliseconds, exactly.
func DescribeDuration(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64) + "ms"
}

// DescribeNode names a node: "n3", or "svc" for the membership service.
func DescribeNode(id, service event.NodeID) string {
	if id == service && service != event.NoNode {
		return "svc"
	}
	return "n" + strconv.FormatUint(uint64(id), 10)
}

// DescribeNodes prints node ids as "[1 2 3]".
func DescribeNodes(ids []event.NodeID) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatUint(uint64(id), 10))
	}
	b.WriteByte(']')
	return b.String()
}

// DescribeView prints a view: "view g1 #2 [1 2 3] +[3] -[4]" (the changes
// only when there are some).
func DescribeView(v *event.ViewInfo) string {
	s := fmt.Sprintf("view g%d #%d %s", v.Group, v.ID, DescribeNodes(v.Members))
	if len(v.Joined) > 0 {
		s += " +" + DescribeNodes(v.Joined)
	}
	if len(v.Left) > 0 {
		s += " -" + DescribeNodes(v.Left)
	}
	return s
}

// DescribeEvent prints an event other than a delivery or a view: its kind,
// group and peer ("holdoff g1", "lost g1 n3").
func DescribeEvent(ev *event.Event) string {
	s := ev.Kind.String()
	if ev.Group != event.NoGroup {
		s += fmt.Sprintf(" g%d", ev.Group)
	}
	if ev.Peer != event.NoNode {
		s += fmt.Sprintf(" n%d", ev.Peer)
	}
	switch r := ev.Lost; {
	case r == nil:
	case r.Bounded && r.Count() == 1:
		s += fmt.Sprintf(" #%d", r.First)
	case r.Bounded:
		s += fmt.Sprintf(" #%d..#%d", r.First, r.End-1)
	default:
		s += fmt.Sprintf(" below #%d", r.End)
	}
	return s
}

// DescribeTrace prints a network trace event: "12ms drop n1->n3 loss",
// "5ms fault crash n3"; service names the membership service's node.
func DescribeTrace(ev sim.TraceEvent, service event.NodeID) string {
	at := DescribeTime(ev.At)
	from, to := DescribeNode(ev.From, service), DescribeNode(ev.To, service)
	switch ev.Kind {
	case sim.TraceSend:
		if ev.To == event.NoNode {
			return fmt.Sprintf("%s send %s->g%d %dB", at, from, ev.Group, ev.Size)
		}
		return fmt.Sprintf("%s send %s->%s %dB", at, from, to, ev.Size)
	case sim.TraceDeliver:
		return fmt.Sprintf("%s recv %s->%s %dB", at, from, to, ev.Size)
	case sim.TraceDrop:
		return fmt.Sprintf("%s drop %s->%s %dB %s", at, from, to, ev.Size, ev.Reason)
	case sim.TraceFault:
		if ev.To != event.NoNode {
			return fmt.Sprintf("%s fault %s %s", at, ev.Reason, to)
		}
		return fmt.Sprintf("%s fault %s", at, ev.Reason)
	}
	return at + " ?"
}

// DescribeCounters prints one layer's non-zero counters at a node, sorted
// by name: "n1 reliable: naks_sent=2 retransmits=2".
func DescribeCounters(id event.NodeID, lc stack.LayerCounters) string {
	var parts []string
	for i, n := range lc.Names {
		if i < len(lc.Values) && lc.Values[i] != 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", n, lc.Values[i]))
		}
	}
	slices.Sort(parts)
	if len(parts) == 0 {
		parts = []string{"(all zero)"}
	}
	return fmt.Sprintf("n%d %s: %s", id, lc.Layer, strings.Join(parts, " "))
}

// DescribeStats prints the network's counters that are not zero.
func DescribeStats(s sim.Stats) string {
	all := []struct {
		name string
		v    int64
	}{
		{"sent", s.Sent}, {"delivered", s.Deliveries}, {"lost", s.Dropped},
		{"partition_drops", s.PartitionDrops}, {"overflow_drops", s.OverflowDrops},
		{"send_queue_drops", s.SendQueueDrops}, {"down_drops", s.DownDrops},
	}
	var parts []string
	for _, c := range all {
		if c.v != 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", c.name, c.v))
		}
	}
	return "net: " + strings.Join(parts, " ")
}

// DescribeSeqs prints message numbers, runs as ranges: "#1 #3..#5".
func DescribeSeqs(seqs []uint32) string { return spans.Format(seqs, " ", "#%d", "#%d..#%d") }
