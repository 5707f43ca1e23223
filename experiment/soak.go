package experiment

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/layercast/layercast/compose"
)

// SoakSpecs are the specs a soak runs besides the spec files it is given
// (specs/*.stack in stacktool soak).
var SoakSpecs = []string{"fifo:reliable:gms", "mflow:fifo:reliable:gms", "fifo:reliable:lec:gms"}

// SoakScenario is the random scenario of one soak seed: 6 to 20 nodes
// (quick: 6 to 12) in groups that fit, a loss model (uniform, bursty or
// markov, 0 to 20%), a rate, sometimes a capacity limit, and up to three
// faults of every kind (crash, freeze, partition then heal) at times
// inside the sending period. It is a pure function of seed and quick, and
// every setting is a scenario key, so `stacktool run` replays it
// (ReplayCommand).
func SoakScenario(seed uint64, quick bool) Scenario {
	rng := rand.New(rand.NewPCG(seed, 0x50a4))
	sc := Default()
	sc.Seed = seed
	maxNodes := 20
	if quick {
		maxNodes = 12
	}
	for {
		n := 6 + rng.IntN(maxNodes-5)
		d := 1 + rng.IntN(3)
		s := 3 + rng.IntN(min(n, 8)-2)
		if (n*d)%s == 0 && d <= n*d/s && s <= n {
			sc.Nodes, sc.GroupsPerNode, sc.GroupSize = n, d, s
			break
		}
	}
	sc.Rate = []float64{50, 100, 200, 400, 800}[rng.IntN(5)]
	sc.MsgSize = []int{64, 256, 1000}[rng.IntN(3)]
	sc.Duration = time.Duration(2+rng.IntN(3)) * time.Second
	sc.Drain = 6 * time.Second
	if quick {
		sc.Duration, sc.Drain = 2*time.Second, 4*time.Second
	}
	p := rng.IntN(201) // tenths of a percent, 0 to 20%
	pt := fmt.Sprintf("%d.%d%%", p/10, p%10)
	switch k := rng.IntN(4); {
	case p == 0 || k == 0:
		if p == 0 {
			sc.Loss = "none"
		} else {
			sc.Loss = "uniform:" + pt
		}
	case k == 1:
		sc.Loss = "uniform:" + pt
	case k == 2:
		sc.Loss = fmt.Sprintf("bursty:%s,%d", pt, 2+rng.IntN(9))
	default:
		sc.Loss = fmt.Sprintf("markov:%s,%d", pt, 2+rng.IntN(4))
	}
	if rng.IntN(3) == 0 {
		sc.Capacity = fmt.Sprintf("%dpps,buf=%d", 5000*(1+rng.IntN(10)), 64<<rng.IntN(5))
	}
	// Faults at absolute times from 1s (after a membership service's
	// first views) to the end of sending.
	ms := func(d time.Duration) string { return fmt.Sprintf("%dms", d.Milliseconds()) }
	at := func() time.Duration {
		return time.Second + time.Duration(rng.Int64N(int64(sc.Duration-time.Second)+1)).Round(time.Millisecond)
	}
	for range rng.IntN(4) {
		node := 1 + rng.IntN(sc.Nodes)
		switch rng.IntN(3) {
		case 0:
			sc.Faults = append(sc.Faults, fmt.Sprintf("crash:%d@%s", node, ms(at())))
		case 1:
			sc.Faults = append(sc.Faults, fmt.Sprintf("freeze:%d@%s+%s", node, ms(at()), ms(time.Duration(100+rng.IntN(1400))*time.Millisecond)))
		default:
			// One side is named; the other nodes (and a membership
			// service, if any) form the other side.
			ids := rng.Perm(sc.Nodes)[:1+rng.IntN(sc.Nodes-1)]
			slices.Sort(ids)
			side := make([]string, len(ids))
			for i, id := range ids {
				side[i] = fmt.Sprint(id + 1)
			}
			t := at()
			sc.Faults = append(sc.Faults, fmt.Sprintf("partition:%s@%s", strings.Join(side, ","), ms(t)),
				"heal@"+ms(t+time.Duration(200+rng.IntN(1300))*time.Millisecond))
		}
	}
	return sc
}

// SoakFailure kinds.
const (
	SoakPanic      = "panic"      // a panic in the run (caught)
	SoakError      = "error"      // the run failed otherwise (e.g. views never settled)
	SoakTimeout    = "timeout"    // the run hit its wall-time cap
	SoakDuplicates = "duplicates" // a message delivered twice
	SoakFIFO       = "fifo"       // a FIFO violation where the stack gives FIFO
	SoakMissing    = "missing"    // an owed delivery missing with nothing to explain it, where the stack gives reliability
	SoakVsync      = "vsync"      // members that moved together between two views delivered different messages, where the stack gives view synchrony
)

// SoakFailure is one run that broke an invariant.
type SoakFailure struct {
	Seed   uint64   `json:"seed"`
	Spec   string   `json:"spec"`
	Kinds  []string `json:"kinds"`
	Detail string   `json:"detail"`
	Replay string   `json:"replay"`
}

// SoakCheck lists the invariants a finished run broke (kinds above): no
// duplicate, no FIFO violation where the stack gives FIFO order, no
// unexplained missing owed delivery where it gives reliable delivery, no
// view-synchrony violation (counted only where the stack gives it).
func SoakCheck(rep *Report) (kinds []string, detail string) {
	var parts []string
	if rep.Duplicates > 0 {
		kinds = append(kinds, SoakDuplicates)
		parts = append(parts, fmt.Sprintf("%d duplicates", rep.Duplicates))
	}
	if rep.FIFOViolations > 0 && slices.Contains(rep.Promises, string(compose.FIFO)) {
		kinds = append(kinds, SoakFIFO)
		parts = append(parts, fmt.Sprintf("%d FIFO violations", rep.FIFOViolations))
	}
	if rep.MissingUnexplained > 0 && slices.Contains(rep.Promises, string(compose.Reliable)) {
		kinds = append(kinds, SoakMissing)
		parts = append(parts, fmt.Sprintf("%d of %d owed deliveries missing unexplained", rep.MissingUnexplained, rep.DeliveriesExpected))
	}
	if rep.VsyncViolations > 0 {
		kinds = append(kinds, SoakVsync)
		parts = append(parts, fmt.Sprintf("%d view-synchrony violations", rep.VsyncViolations))
	}
	return kinds, strings.Join(parts, ", ")
}

// SoakSpec is one spec a soak runs: Name is how the replay command names
// it (a file path or the spec text).
type SoakSpec struct {
	Name string
	Spec *compose.Spec
}

// SoakOptions configure Soak.
type SoakOptions struct {
	// Seeds are the seeds to run, each on every spec.
	Seeds []uint64
	Specs []SoakSpec
	// Quick makes smaller, shorter scenarios.
	Quick bool
	// WallCap bounds each run's wall time (0: 60s); a run that hits it
	// is a failure.
	WallCap time.Duration
	// Workers run in parallel (0: GOMAXPROCS).
	Workers int
	// Done is called after each run, from the worker (nil: nothing).
	Done func(seed uint64, spec string, failed bool)
}

// SoakResult is what Soak found.
type SoakResult struct {
	Runs     int            `json:"runs"`
	Failures []SoakFailure  `json:"failures"`
	ByKind   map[string]int `json:"failures_by_kind"`
	// BySpec is one line per spec, in the order given: how many seeds it
	// ran and how many of them failed, so a soak over many specs says at a
	// glance which stack broke.
	BySpec []SoakSpecResult `json:"by_spec"`
}

// SoakSpecResult is one spec's share of a soak.
type SoakSpecResult struct {
	Spec   string         `json:"spec"`
	Runs   int            `json:"runs"`
	Failed int            `json:"failed"`
	ByKind map[string]int `json:"failures_by_kind"`
}

// Soak runs every seed's scenario on every spec, in parallel, and checks
// each run (SoakCheck, plus no panic, no error, no run past its wall-time
// cap). Failures come in seed then spec order, whatever the parallelism:
// the result depends only on the options.
func Soak(ctx context.Context, o SoakOptions) SoakResult {
	type job struct {
		i    int
		seed uint64
		sp   SoakSpec
	}
	jobs := make([]job, 0, len(o.Seeds)*len(o.Specs))
	for _, seed := range o.Seeds {
		for _, sp := range o.Specs {
			jobs = append(jobs, job{len(jobs), seed, sp})
		}
	}
	results := make([]*SoakFailure, len(jobs))
	wallCap := o.WallCap
	if wallCap <= 0 {
		wallCap = time.Minute
	}
	Parallel(ctx, len(jobs), o.Workers, func(i int) {
		j := jobs[i]
		results[i] = soakOne(ctx, j.seed, j.sp, o.Quick, wallCap)
		if o.Done != nil {
			o.Done(j.seed, j.sp.Name, results[i] != nil)
		}
	})
	res := SoakResult{Runs: len(jobs), Failures: []SoakFailure{}, ByKind: map[string]int{}}
	res.BySpec = make([]SoakSpecResult, len(o.Specs))
	for i, sp := range o.Specs {
		res.BySpec[i] = SoakSpecResult{Spec: sp.Name, Runs: len(o.Seeds), ByKind: map[string]int{}}
	}
	for i, f := range results {
		if f == nil {
			continue
		}
		per := &res.BySpec[i%len(o.Specs)] // jobs run seed by seed over the specs
		per.Failed++
		res.Failures = append(res.Failures, *f)
		for _, k := range f.Kinds {
			res.ByKind[k]++
			per.ByKind[k]++
		}
	}
	return res
}

// soakOne runs one seed on one spec; nil if every invariant held.
func soakOne(ctx context.Context, seed uint64, sp SoakSpec, quick bool, wallCap time.Duration) *SoakFailure {
	sc := SoakScenario(seed, quick)
	f := &SoakFailure{Seed: seed, Spec: sp.Name, Replay: ReplayCommand("sim", sp.Name, sc)}
	rctx, cancel := context.WithTimeout(ctx, wallCap)
	defer cancel()
	rep, err := Run(rctx, "sim", sp.Spec, sc, nil)
	var pe *PanicError
	switch {
	case errors.As(err, &pe):
		f.Kinds, f.Detail = []string{SoakPanic}, fmt.Sprint(pe.Value)
		return f
	case err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		f.Kinds, f.Detail = []string{SoakTimeout}, fmt.Sprintf("over the %v wall-time cap", wallCap)
		return f
	case err != nil:
		f.Kinds, f.Detail = []string{SoakError}, err.Error()
		return f
	}
	if f.Kinds, f.Detail = SoakCheck(rep); len(f.Kinds) == 0 {
		return nil
	}
	return f
}
