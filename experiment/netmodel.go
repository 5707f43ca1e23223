package experiment

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/transport/sim"
)

// This file parses the scenario's network models (loss, faults) and applies
// them to transport/sim. It stands in until the simulator ships its own
// parsers; the syntax is the one of issue 2.

// ParseLoss parses a loss model: none, uniform:P, bursty:P,b or markov:P,m
// (P a percentage such as 5%; b and m mean burst lengths in packets).
//
//   - uniform:P drops each packet independently with probability P.
//   - bursty:P,b drops bursts of exactly b consecutive packets at each
//     receiver, started with probability P/b, so the loss rate is about P.
//   - markov:P,m is a two-state (Gilbert) channel per receiver: every packet
//     in the bad state is lost, a bad spell lasts m packets on average, and
//     the good-to-bad probability is set so that the loss rate is P.
func ParseLoss(s string) (sim.LossModel, error) {
	kind, arg, ok := strings.Cut(strings.TrimSpace(s), ":")
	if kind == "none" && !ok {
		return nil, nil
	}
	if !ok {
		return nil, fmt.Errorf("loss %q: want none, uniform:P, bursty:P,b or markov:P,m", s)
	}
	ps, ls, two := strings.Cut(arg, ",")
	p, err := compose.ParsePercent(strings.TrimSpace(ps))
	if err != nil {
		return nil, fmt.Errorf("loss %q: %v", s, err)
	}
	if p < 0 || p >= 1 {
		return nil, fmt.Errorf("loss %q: %g%% is out of range [0%%, 100%%)", s, p*100)
	}
	burst := 0.0
	if kind == "bursty" || kind == "markov" {
		if !two {
			return nil, fmt.Errorf("loss %q: %s needs a burst length: %s:P,LEN", s, kind, kind)
		}
		burst, err = strconv.ParseFloat(strings.TrimSpace(ls), 64)
		if err != nil || burst < 1 || burst > 1e6 {
			return nil, fmt.Errorf("loss %q: burst length %q must be a number in [1, 1e6]", s, ls)
		}
	} else if two {
		return nil, fmt.Errorf("loss %q: uniform takes one parameter", s)
	}
	switch kind {
	case "uniform":
		return sim.Uniform{P: p}, nil
	case "bursty":
		return &bursty{p: p, b: int(burst), left: map[event.NodeID]int{}}, nil
	case "markov":
		return &markov{bad: map[event.NodeID]bool{}, gb: p / (p + burst*(1-p)), bg: 1 / burst}, nil
	}
	return nil, fmt.Errorf("loss %q: unknown model %q; want uniform, bursty or markov", s, kind)
}

type bursty struct {
	p    float64
	b    int
	left map[event.NodeID]int
}

func (m *bursty) Drop(rx event.NodeID, rng *rand.Rand) bool {
	if n := m.left[rx]; n > 0 {
		m.left[rx] = n - 1
		return true
	}
	if m.p > 0 && rng.Float64() < m.p/float64(m.b) {
		m.left[rx] = m.b - 1
		return true
	}
	return false
}

type markov struct {
	bad    map[event.NodeID]bool
	gb, bg float64
}

func (m *markov) Drop(rx event.NodeID, rng *rand.Rand) bool {
	if !m.bad[rx] {
		if m.gb == 0 || rng.Float64() >= m.gb {
			return false
		}
		m.bad[rx] = true
	}
	// In the bad state: this packet is lost, and the spell ends after it
	// with probability 1/m (so spells last m packets on average).
	if rng.Float64() < m.bg {
		delete(m.bad, rx)
	}
	return true
}

// FaultKind is what a fault does.
type FaultKind int

// Fault kinds.
const (
	FaultCrash FaultKind = iota + 1
	FaultFreeze
)

// Fault is one scheduled fault: crash:NODE@TIME or
// freeze:NODE@TIME+DURATION (NODE as 3 or n3).
type Fault struct {
	Kind FaultKind
	Node event.NodeID
	At   event.Time
	For  time.Duration
}

// ParseFault parses a fault.
func ParseFault(s string) (Fault, error) {
	kind, rest, ok := strings.Cut(strings.TrimSpace(s), ":")
	node, when, ok2 := strings.Cut(rest, "@")
	if !ok || !ok2 {
		return Fault{}, fmt.Errorf("fault %q: want crash:NODE@TIME or freeze:NODE@TIME+DURATION", s)
	}
	n, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(node), "n"), 10, 32)
	if err != nil || n == 0 {
		return Fault{}, fmt.Errorf("fault %q: node %q is not a node number such as 3 or n3", s, node)
	}
	f := Fault{Node: event.NodeID(n)}
	switch kind {
	case "crash":
		f.Kind = FaultCrash
	case "freeze":
		f.Kind = FaultFreeze
		var dur string
		when, dur, ok = strings.Cut(when, "+")
		if !ok {
			return Fault{}, fmt.Errorf("fault %q: freeze needs a duration: freeze:NODE@TIME+DURATION", s)
		}
		if f.For, err = compose.ParseDuration(strings.TrimSpace(dur)); err != nil || f.For <= 0 {
			return Fault{}, fmt.Errorf("fault %q: bad freeze duration %q", s, dur)
		}
	default:
		return Fault{}, fmt.Errorf("fault %q: unknown fault %q; want crash or freeze", s, kind)
	}
	at, err := compose.ParseDuration(strings.TrimSpace(when))
	if err != nil || at < 0 {
		return Fault{}, fmt.Errorf("fault %q: bad time %q", s, when)
	}
	f.At = event.Time(at)
	return f, nil
}

// Schedule puts the fault on the network's timeline.
func (f Fault) Schedule(net *sim.Network) error {
	switch f.Kind {
	case FaultCrash:
		net.At(f.At, func() { net.Crash(f.Node) })
		return nil
	default:
		return fmt.Errorf("fault freeze:%v: this simulator build cannot freeze nodes yet (crash works)", f.Node)
	}
}

// parseCapacity checks a per-node capacity; the simulator has none yet.
func parseCapacity(s string) error {
	return fmt.Errorf("capacity %q: this simulator build has no per-node capacity yet", s)
}
