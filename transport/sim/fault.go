package sim

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/units"
)

// Crash stops a node for good: it sends and receives nothing more, and what
// its NIC and receive buffer held is lost.
func (n *Network) Crash(id event.NodeID) {
	nd := n.nodes[id]
	if nd == nil || nd.down {
		return
	}
	nd.down = true
	for {
		it, ok := nd.tx.pop()
		if !ok {
			break
		}
		n.pool.put(it.pb)
	}
	for _, q := range []*ring[rxItem]{&nd.rx, &nd.rxu} {
		for {
			it, ok := q.pop()
			if !ok {
				break
			}
			n.stats.DownDrops++
			n.pool.put(it.pb)
		}
	}
	nd.rxBytes, nd.rxuBytes = 0, 0
	if n.trace != nil {
		n.emit(TraceEvent{Kind: TraceFault, To: id, Reason: "crash"})
	}
}

// Freeze stops a node from processing anything for d (a long GC pause, a
// descheduled VM): packets arriving meanwhile wait in its bounded receive
// buffer (and overflow drops), its timers wait. Afterwards it catches up.
// Its NIC keeps sending what was already queued. Freezing a frozen node
// extends the freeze to whichever end is later. Functions scheduled with At
// still run: a driver that feeds application sends should skip frozen nodes
// (Node.Frozen), as a frozen process would not submit any.
func (n *Network) Freeze(id event.NodeID, d time.Duration) {
	nd := n.nodes[id]
	if nd == nil || nd.down || d <= 0 {
		return
	}
	end := n.now.Add(d)
	if nd.frozen && end <= nd.thawAt {
		return
	}
	nd.frozen, nd.thawAt = true, end
	n.push(simEvent{at: end, kind: evThaw, node: nd})
	if n.trace != nil {
		n.emit(TraceEvent{Kind: TraceFault, To: id, Reason: "freeze " + d.String()})
	}
}

// Frozen says whether the node is frozen now.
func (nd *Node) Frozen() bool { return nd.frozen }

// Down says whether the node has crashed.
func (nd *Node) Down() bool { return nd.down }

func (n *Network) thaw(nd *Node) {
	if !nd.frozen || n.now < nd.thawAt || nd.down {
		return
	}
	nd.frozen = false
	if n.trace != nil {
		n.emit(TraceEvent{Kind: TraceFault, To: nd.id, Reason: "thaw"})
	}
	n.startRecv(nd)
	if nd.st != nil && !nd.down && !nd.frozen {
		nd.st.Pump()
		nd.wake = event.Never // the queued wake-ups were ignored while frozen
		n.reschedule(nd)
	}
}

// Partition splits the network: packets between nodes in different sets
// are dropped. Nodes in no set form one more set together. It replaces any
// earlier partition.
func (n *Network) Partition(sets ...[]event.NodeID) {
	n.split("partition", sets, func(nd *Node) *int { return &nd.part })
}

// Cut drops the packets between nodes in different sets and no others:
// a node in no set still talks to every node, so connectivity is not
// transitive (a site's LAN split in two while both halves still reach the
// other sites). It replaces any earlier cut; a partition may be in force
// beside it.
func (n *Network) Cut(sets ...[]event.NodeID) {
	n.split("cut", sets, func(nd *Node) *int { return &nd.cut })
}

// split numbers every node's set from 1 in the field which names (0 for
// a node in no set) and puts the network under a partition or cut.
func (n *Network) split(what string, sets [][]event.NodeID, which func(*Node) *int) {
	n.parted = true
	for _, nd := range n.order {
		*which(nd) = 0
	}
	for i, s := range sets {
		for _, id := range s {
			if nd := n.nodes[id]; nd != nil {
				*which(nd) = i + 1
			}
		}
	}
	if n.trace != nil {
		n.emit(TraceEvent{Kind: TraceFault, Reason: what + " " + fmtSets(sets)})
	}
}

// Heal ends any partition and any cut.
func (n *Network) Heal() {
	n.parted = false
	for _, nd := range n.order {
		nd.part, nd.cut = 0, 0
	}
	if n.trace != nil {
		n.emit(TraceEvent{Kind: TraceFault, Reason: "heal"})
	}
}

func fmtSets(sets [][]event.NodeID) string {
	var b strings.Builder
	for i, s := range sets {
		if i > 0 {
			b.WriteByte('|')
		}
		for j, id := range s {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatUint(uint64(id), 10))
		}
	}
	return b.String()
}

// FaultKind is what a fault does.
type FaultKind uint8

// Fault kinds.
const (
	FaultCrash FaultKind = iota + 1
	FaultFreeze
	FaultPartition
	FaultHeal
	FaultCut
)

// Fault is one scheduled fault, as ParseFault reads it.
type Fault struct {
	Kind FaultKind
	Node event.NodeID     // crash, freeze
	At   event.Time       // when it happens
	For  time.Duration    // freeze
	Sets [][]event.NodeID // partition, cut
}

// String gives the fault in ParseFault syntax.
func (f Fault) String() string {
	at := time.Duration(f.At).String()
	switch f.Kind {
	case FaultCrash:
		return fmt.Sprintf("crash:%d@%s", f.Node, at)
	case FaultFreeze:
		return fmt.Sprintf("freeze:%d@%s+%s", f.Node, at, f.For)
	case FaultPartition:
		return "partition:" + fmtSets(f.Sets) + "@" + at
	case FaultHeal:
		return "heal@" + at
	case FaultCut:
		return "cut:" + fmtSets(f.Sets) + "@" + at
	}
	return "fault?"
}

// Schedule puts the fault on the network's timeline.
func (f Fault) Schedule(net *Network) {
	switch f.Kind {
	case FaultCrash:
		net.At(f.At, func() { net.Crash(f.Node) })
	case FaultFreeze:
		net.At(f.At, func() { net.Freeze(f.Node, f.For) })
	case FaultPartition:
		net.At(f.At, func() { net.Partition(f.Sets...) })
	case FaultHeal:
		net.At(f.At, net.Heal)
	case FaultCut:
		net.At(f.At, func() { net.Cut(f.Sets...) })
	}
}

const faultSyntax = "crash:NODE@TIME, freeze:NODE@TIME+DURATION, partition:1,2|3,4@TIME, cut:1,2|3,4@TIME or heal@TIME"

// ParseFault parses a fault: crash:3@2s, freeze:3@2s+500ms,
// partition:1,2|3,4@1s, cut:1,2|3,4@1s or heal@3s. A node is a number (3)
// or n3.
func ParseFault(text string) (Fault, error) {
	s := strings.TrimSpace(text)
	what, when, ok := strings.Cut(s, "@")
	if !ok {
		return Fault{}, fmt.Errorf("fault %q has no time; want %s", s, faultSyntax)
	}
	kind, arg, hasArg := strings.Cut(strings.TrimSpace(what), ":")
	var f Fault
	var err error
	switch strings.TrimSpace(kind) {
	case "crash":
		f.Kind = FaultCrash
	case "freeze":
		f.Kind = FaultFreeze
		var dur string
		when, dur, ok = strings.Cut(when, "+")
		if !ok {
			return Fault{}, fmt.Errorf("fault %q: freeze needs a duration: freeze:NODE@TIME+DURATION", s)
		}
		if f.For, err = parseDur(dur); err != nil {
			return Fault{}, fmt.Errorf("fault %q: freeze duration: %v", s, err)
		}
		if f.For == 0 {
			return Fault{}, fmt.Errorf("fault %q: freeze duration must be more than 0", s)
		}
	case "partition":
		f.Kind = FaultPartition
	case "cut":
		f.Kind = FaultCut
	case "heal":
		f.Kind = FaultHeal
		if hasArg {
			return Fault{}, fmt.Errorf("fault %q: heal takes no argument: heal@TIME", s)
		}
	default:
		return Fault{}, fmt.Errorf("unknown fault %q in %q; use crash, freeze, partition, cut or heal", kind, s)
	}
	switch f.Kind {
	case FaultCrash, FaultFreeze:
		if !hasArg {
			return Fault{}, fmt.Errorf("fault %q needs a node: %s:NODE@TIME", s, kind)
		}
		if f.Node, err = parseNode(arg); err != nil {
			return Fault{}, fmt.Errorf("fault %q: %v", s, err)
		}
	case FaultPartition, FaultCut:
		if !hasArg || strings.TrimSpace(arg) == "" {
			return Fault{}, fmt.Errorf("fault %q needs node sets: %s:1,2|3,4@TIME", s, kind)
		}
		seen := map[event.NodeID]bool{}
		for _, part := range strings.Split(arg, "|") {
			var set []event.NodeID
			for _, x := range strings.Split(part, ",") {
				id, err := parseNode(x)
				if err != nil {
					return Fault{}, fmt.Errorf("fault %q: %v", s, err)
				}
				if seen[id] {
					return Fault{}, fmt.Errorf("fault %q: node %d is in two sets", s, id)
				}
				seen[id] = true
				set = append(set, id)
			}
			f.Sets = append(f.Sets, set)
		}
		if f.Kind == FaultCut && len(f.Sets) < 2 {
			return Fault{}, fmt.Errorf("fault %q: a cut needs at least two node sets, which lose touch with each other: cut:1,2|3,4@TIME", s)
		}
	}
	at, err := parseDur(when)
	if err != nil {
		return Fault{}, fmt.Errorf("fault %q: time: %v", s, err)
	}
	f.At = event.Time(at)
	return f, nil
}

func parseNode(t string) (event.NodeID, error) {
	s := strings.TrimSpace(t)
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "n"), 10, 32)
	if err != nil || v == 0 {
		return 0, fmt.Errorf("node %q is not a node number such as 3 or n3", s)
	}
	return event.NodeID(v), nil
}

func parseDur(t string) (time.Duration, error) { return units.ParseDuration(strings.TrimSpace(t)) }
