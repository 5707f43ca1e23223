package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/units"
)

// LossModel decides, per receiver, whether a packet arriving there is lost.
// Implementations keep per-receiver state (bursts) and use the given random
// source only, so runs stay deterministic.
type LossModel interface {
	Drop(rx event.NodeID, rng *rand.Rand) bool
}

// Uniform drops each packet independently with probability P (Ricochet
// section 5, "uniform").
type Uniform struct{ P float64 }

// Drop implements LossModel.
func (u Uniform) Drop(_ event.NodeID, rng *rand.Rand) bool { return u.P > 0 && rng.Float64() < u.P }

// String gives the model in ParseLoss syntax.
func (u Uniform) String() string { return "uniform:" + pct(u.P) }

// Bursty drops packets in bursts of exactly B consecutive packets at each
// receiver, with overall loss rate P (Ricochet section 5, "bursty": "the
// probability of starting a loss burst is set so that each burst is of
// exactly b packets and the loss rate is maintained at L").
//
// After a burst the next packet always gets through, so bursts never merge
// into longer ones; every later packet starts a burst with probability
// q = P / (B (1-P)). A good run then lasts 1/q packets on average and the
// long-run loss rate is B / (B + 1/q) = P. That needs q <= 1, that is
// P <= B/(B+1); NewBursty refuses more.
type Bursty struct {
	P  float64
	B  int
	q  float64
	st perRx[int32] // >0: packets of the burst still to drop; -1: next one passes
}

// NewBursty makes a bursty model with loss rate p and burst length b.
func NewBursty(p float64, b int) (*Bursty, error) {
	if err := checkRate(p); err != nil {
		return nil, err
	}
	if b < 1 {
		return nil, fmt.Errorf("burst length %d must be at least 1", b)
	}
	if max := float64(b) / float64(b+1); p > max {
		return nil, fmt.Errorf("loss rate %s with bursts of %d is impossible: bursts of exactly %d need a received packet between them, so the rate is at most %s", pct(p), b, b, pct(max))
	}
	return &Bursty{P: p, B: b, q: p / (float64(b) * (1 - p))}, nil
}

// Drop implements LossModel.
func (m *Bursty) Drop(rx event.NodeID, rng *rand.Rand) bool {
	s := m.st.get(rx)
	switch {
	case *s > 0:
		*s--
		if *s == 0 {
			*s = -1
		}
		return true
	case *s < 0:
		*s = 0
		return false
	}
	if m.q > 0 && rng.Float64() < m.q {
		*s = int32(m.B - 1)
		if *s == 0 {
			*s = -1
		}
		return true
	}
	return false
}

// String gives the model in ParseLoss syntax.
func (m *Bursty) String() string { return fmt.Sprintf("bursty:%s,%d", pct(m.P), m.B) }

// Markov is the two-state (Gilbert) loss channel of Ricochet section 5
// ("markov"): each receiver alternates between a lossy state, where every
// packet is lost, and a lossless one. It leaves the lossy state with
// probability 1/M per packet, so a loss burst lasts M packets on average,
// and enters it with probability P / (M (1-P)), so the stationary share of
// the lossy state, the loss rate, is P. That needs P <= M/(M+1).
type Markov struct {
	P, M   float64
	gb, bg float64
	bad    perRx[bool]
}

// NewMarkov makes a Markov model with loss rate p and mean burst length m.
func NewMarkov(p, m float64) (*Markov, error) {
	if err := checkRate(p); err != nil {
		return nil, err
	}
	if !(m >= 1) || math.IsInf(m, 0) {
		return nil, fmt.Errorf("mean burst length %g must be at least 1", m)
	}
	if max := m / (m + 1); p > max {
		return nil, fmt.Errorf("loss rate %s with mean bursts of %g is impossible; the most is %s", pct(p), m, pct(max))
	}
	return &Markov{P: p, M: m, gb: p / (m * (1 - p)), bg: 1 / m}, nil
}

// Drop implements LossModel.
func (m *Markov) Drop(rx event.NodeID, rng *rand.Rand) bool {
	bad := m.bad.get(rx)
	// the state moves first, then the packet shares the new state's fate
	if *bad {
		if rng.Float64() < m.bg {
			*bad = false
			return false
		}
		return true
	}
	if m.gb > 0 && rng.Float64() < m.gb {
		*bad = true
		return true
	}
	return false
}

// String gives the model in ParseLoss syntax.
func (m *Markov) String() string { return fmt.Sprintf("markov:%s,%g", pct(m.P), m.M) }

// ParseLoss parses a loss model: none, uniform:P, bursty:P,b or markov:P,m.
// P is a percentage (5%) or a fraction (0.05); b is a burst length in
// packets, m a mean burst length. It returns nil for none.
func ParseLoss(text string) (LossModel, error) {
	s := strings.TrimSpace(text)
	if s == "none" || s == "" {
		if s == "" {
			return nil, fmt.Errorf("empty loss model; use none, uniform:P, bursty:P,b or markov:P,m")
		}
		return nil, nil
	}
	kind, arg, ok := strings.Cut(s, ":")
	kind = strings.TrimSpace(kind)
	switch kind {
	case "uniform", "bursty", "markov":
	default:
		return nil, fmt.Errorf("unknown loss model %q; use uniform, bursty or markov", kind)
	}
	if !ok || strings.TrimSpace(arg) == "" {
		if kind == "uniform" {
			return nil, fmt.Errorf("loss model %q needs a rate: uniform:P such as uniform:5%%", s)
		}
		return nil, fmt.Errorf("loss model %q needs a rate and a burst length: %s:P,LEN such as %s:1%%,10", s, kind, kind)
	}
	ps, ls, two := strings.Cut(arg, ",")
	p, err := parseRate(ps)
	if err != nil {
		return nil, err
	}
	if kind == "uniform" {
		if two {
			return nil, fmt.Errorf("loss model %q: uniform takes only a rate, such as uniform:5%%", s)
		}
		return Uniform{P: p}, nil
	}
	if !two {
		return nil, fmt.Errorf("loss model %q needs a burst length: %s:P,LEN such as %s:1%%,10", s, kind, kind)
	}
	ls = strings.TrimSpace(ls)
	if kind == "bursty" {
		b, err := strconv.Atoi(ls)
		if err != nil {
			return nil, fmt.Errorf("burst length %q in %q is not a whole number of packets", ls, s)
		}
		if b > 1<<20 {
			return nil, fmt.Errorf("burst length %d in %q is too long (most 1048576)", b, s)
		}
		return NewBursty(p, b)
	}
	m, err := strconv.ParseFloat(ls, 64)
	if err != nil {
		return nil, fmt.Errorf("mean burst length %q in %q is not a number", ls, s)
	}
	return NewMarkov(p, m)
}

func parseRate(t string) (float64, error) {
	f, err := units.ParseFraction(t)
	if err != nil {
		return 0, fmt.Errorf("loss rate %q is not a percentage such as 5%% or a fraction such as 0.05", strings.TrimSpace(t))
	}
	return f, checkRate(f)
}

func checkRate(p float64) error {
	if !(p >= 0 && p <= 1) {
		return fmt.Errorf("loss rate %s is outside 0%% to 100%%", pct(p))
	}
	return nil
}

func pct(p float64) string { return strconv.FormatFloat(p*100, 'g', 6, 64) + "%" }

// perRx is per-receiver state: a dense slice for small node ids, a map
// beyond.
type perRx[T any] struct {
	dense  []T
	sparse map[event.NodeID]*T
}

func (p *perRx[T]) get(id event.NodeID) *T {
	if id < 1<<16 {
		if int(id) >= len(p.dense) {
			p.dense = append(p.dense, make([]T, int(id)+1-len(p.dense))...)
		}
		return &p.dense[id]
	}
	if p.sparse == nil {
		p.sparse = map[event.NodeID]*T{}
	}
	v := p.sparse[id]
	if v == nil {
		v = new(T)
		p.sparse[id] = v
	}
	return v
}
