package experiment

import (
	"cmp"
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
var SoakSpecs = []string{"fifo:reliable:gms", "mflow(window=50000,ack_thresh=25000):fifo:reliable:gms", "fifo:reliable:lec:gms"}

// OverloadSpecs are the specs an overload soak runs unless told otherwise:
// the reliable stacks with and without flow control, with and without gms.
var OverloadSpecs = []string{"fifo:reliable", "mflow(window=50000,ack_thresh=25000):fifo:reliable", "fifo:reliable:gms", "mflow(window=50000,ack_thresh=25000):fifo:reliable:gms"}

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
	// The drain must outlast the slowest honest delivery: a stack driven
	// past its capacity under up to 20% loss (an agreed-order ring's p50
	// passes 2 s with no fault), then a crash in the last second of
	// sending, which holds an agreed order until gms removes the node (about
	// 2 s) and every member has the view (up to 1 s more under loss). 6 s
	// fell short by half a second on three agreed-lec seeds whose every
	// owed message came; what is lost for good stays missing however long
	// the drain.
	sc.Drain = 10 * time.Second
	if quick {
		// Shorter sending, the same drain: a quick run is as crowded
		// (seed 2 drives 8 nodes past a 5,000 packets/s capacity under
		// 9.4% loss and a partition healed 145 ms before sending ends;
		// its last owed messages arrive between 4 and 10 s later).
		sc.Duration = 2 * time.Second
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
	SoakPanic      = "panic"           // a panic in the run (caught)
	SoakError      = "error"           // the run failed otherwise (e.g. views never settled)
	SoakTimeout    = "timeout"         // the run hit its wall-time cap
	SoakDuplicates = "duplicates"      // a message delivered twice
	SoakFIFO       = "fifo"            // a FIFO violation where the stack gives FIFO
	SoakAgreed     = "agreed"          // two members delivered messages in different orders, where the stack gives agreed order
	SoakMissing    = "missing"         // an owed delivery missing with nothing to explain it, where the stack gives reliability
	SoakMemory     = "memory"          // a layer held more than the bound its parameters set (compose.LayerInfo.BufferBound)
	SoakLost       = "lost"            // overload: an owed delivery missing or a message given up (no fault explains any there)
	SoakNoPressure = "no-backpressure" // overload: the application was never held off
	SoakVsync      = "vsync"           // members that moved together between two views delivered different messages, where the stack gives view synchrony
)

// SoakKinds lists every failure kind in the order summaries print them.
var SoakKinds = []string{SoakPanic, SoakError, SoakTimeout, SoakDuplicates, SoakFIFO, SoakAgreed, SoakMissing, SoakMemory, SoakLost, SoakNoPressure, SoakVsync}

// OverloadScenario is the overload run of a seed: senders faster than the
// receivers can take (every receiver capacity-limited to a fraction of what
// the senders offer it), for the given virtual time, without loss or
// faults, then a drain. The stack must hold the application off (its
// buffers bounded) and lose nothing. It is a pure function of seed and
// duration.
func OverloadScenario(seed uint64, duration time.Duration) Scenario {
	rng := rand.New(rand.NewPCG(seed, 0x0e71))
	sc := Default()
	sc.Seed = seed
	sc.Nodes = 3 + rng.IntN(4)
	sc.GroupsPerNode, sc.GroupSize = 1, sc.Nodes
	sc.MsgSize = []int{256, 1000}[rng.IntN(2)]
	capacity := 2000 * (1 + rng.IntN(3)) // packets per second per receiver
	// The senders together offer each receiver 2 to 4 times its capacity.
	sc.Rate = float64(capacity * (2 + rng.IntN(3)) / (sc.Nodes - 1))
	sc.Capacity = fmt.Sprintf("%dpps,buf=%d", capacity, 64<<rng.IntN(3))
	sc.Loss = "none"
	sc.Duration = duration
	sc.Drain = 30 * time.Second
	return sc
}

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
// delivery out of agreed order where it gives agreed order (crashed
// members judged against the survivors' order, see orderLog.violations),
// no unexplained missing owed delivery where it gives reliable delivery,
// no view-synchrony violation (counted only where the stack gives it).
// The detail names each broken invariant's first case (the report's
// examples), for the engineer replaying the seed.
func SoakCheck(rep *Report) (kinds []string, detail string) {
	var parts []string
	if rep.Duplicates > 0 {
		kinds = append(kinds, SoakDuplicates)
		parts = append(parts, fmt.Sprintf("%d duplicates", rep.Duplicates)+firstCase(rep, duplicateExamples))
	}
	if rep.FIFOViolations > 0 && slices.Contains(rep.Promises, string(compose.FIFO)) {
		kinds = append(kinds, SoakFIFO)
		parts = append(parts, fmt.Sprintf("%d FIFO violations", rep.FIFOViolations)+firstCase(rep, fifoExamples))
	}
	if rep.AgreedViolations > 0 && slices.Contains(rep.Promises, string(agreedOrder)) {
		kinds = append(kinds, SoakAgreed)
		parts = append(parts, fmt.Sprintf("%d deliveries out of agreed order", rep.AgreedViolations)+firstCase(rep, agreedExamples))
	}
	if rep.MissingUnexplained > 0 && slices.Contains(rep.Promises, string(compose.Reliable)) {
		kinds = append(kinds, SoakMissing)
		parts = append(parts, fmt.Sprintf("%d of %d owed deliveries missing unexplained", rep.MissingUnexplained, rep.DeliveriesExpected)+firstCase(rep, missingExamplesKind))
	}
	if rep.VsyncViolations > 0 {
		kinds = append(kinds, SoakVsync)
		parts = append(parts, fmt.Sprintf("%d view-synchrony violations", rep.VsyncViolations)+firstCase(rep, vsyncExamples))
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
	// Overload runs OverloadScenario (for OverloadTime of virtual time, 0:
	// 60 s) instead of SoakScenario: its runs must also show back-pressure
	// and lose nothing.
	Overload     bool
	OverloadTime time.Duration
	// Drain, when positive, replaces the scenarios' drain (SoakScenario's
	// 10 s): a replay of a seed found under another drain keeps it.
	Drain time.Duration
}

// scenario is the scenario of one seed under these options.
func (o SoakOptions) scenario(seed uint64) Scenario {
	if o.Overload {
		return OverloadScenario(seed, cmp.Or(o.OverloadTime, time.Minute))
	}
	sc := SoakScenario(seed, o.Quick)
	if o.Drain > 0 {
		sc.Drain = o.Drain
	}
	return sc
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
	// Memory is, per layer that bounds its buffer, the run whose peak came
	// closest to its bound (or passed it furthest).
	Memory []SoakBuffer `json:"memory,omitempty"`
	// Backpressure is how many casts the stacks refused for a while
	// (back-pressure the application felt), summed over the runs.
	Backpressure int64 `json:"backpressure"`
	// Tried is what the spec's runs went through and what was checked.
	Tried SoakTried `json:"tried"`
}

// SoakTried counts, over a spec's runs, the faults its scenarios set and
// the owed deliveries the checks covered.
type SoakTried struct {
	Crashes    int `json:"crashes"`
	Freezes    int `json:"freezes"`
	Partitions int `json:"partitions"`
	// Bursts counts runs whose loss comes in bursts (a bursty or markov
	// loss model).
	Bursts int `json:"loss_burst_runs"`
	// Checked counts owed deliveries checked (receiver, message pairs).
	Checked int64 `json:"deliveries_checked"`
}

// add counts sc's faults and loss model.
func (t *SoakTried) add(sc Scenario) {
	for _, f := range sc.Faults {
		switch {
		case strings.HasPrefix(f, "crash:"):
			t.Crashes++
		case strings.HasPrefix(f, "freeze:"):
			t.Freezes++
		case strings.HasPrefix(f, "partition:"):
			t.Partitions++
		}
	}
	if strings.HasPrefix(sc.Loss, "bursty:") || strings.HasPrefix(sc.Loss, "markov:") {
		t.Bursts++
	}
}

// SoakBuffer is a layer's peak buffer in one run of a soak, against its bound.
type SoakBuffer struct {
	BufferUse
	Seed uint64 `json:"seed"`
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
	results := make([]soakOutcome, len(jobs))
	wallCap := o.WallCap
	if wallCap <= 0 {
		wallCap = time.Minute
	}
	Parallel(ctx, len(jobs), o.Workers, func(i int) {
		j := jobs[i]
		results[i] = soakOne(ctx, j.seed, j.sp, o, wallCap)
		if o.Done != nil {
			o.Done(j.seed, j.sp.Name, results[i].fail != nil)
		}
	})
	res := SoakResult{Runs: len(jobs), Failures: []SoakFailure{}, ByKind: map[string]int{}}
	res.BySpec = make([]SoakSpecResult, len(o.Specs))
	for i, sp := range o.Specs {
		res.BySpec[i] = SoakSpecResult{Spec: sp.Name, Runs: len(o.Seeds), ByKind: map[string]int{}}
	}
	for i, r := range results {
		per := &res.BySpec[i%len(o.Specs)] // jobs run seed by seed over the specs
		per.Backpressure += r.backpressure
		per.Tried.add(o.scenario(jobs[i].seed))
		per.Tried.Checked += r.checked
		for _, u := range r.mem {
			per.noteBuffer(SoakBuffer{u, jobs[i].seed})
		}
		f := r.fail
		if f == nil {
			continue
		}
		per.Failed++
		res.Failures = append(res.Failures, *f)
		for _, k := range f.Kinds {
			res.ByKind[k]++
			per.ByKind[k]++
		}
	}
	return res
}

// noteBuffer keeps, per layer, the run closest to (or furthest over) its bound.
func (per *SoakSpecResult) noteBuffer(b SoakBuffer) {
	for i, old := range per.Memory {
		if old.Layer == b.Layer {
			// b.Peak/b.Bound > old.Peak/old.Bound, without division
			if b.Peak*max(old.Bound, 1) > old.Peak*max(b.Bound, 1) {
				per.Memory[i] = b
			}
			return
		}
	}
	per.Memory = append(per.Memory, b)
}

// soakOutcome is what one run of a soak gives: its failure (nil if every
// invariant held), its layers' peak buffers against their bounds and the
// casts refused by back-pressure.
type soakOutcome struct {
	fail         *SoakFailure
	mem          []BufferUse
	backpressure int64
	checked      int64 // owed deliveries checked
}

// soakOne runs one seed on one spec and checks it.
func soakOne(ctx context.Context, seed uint64, sp SoakSpec, o SoakOptions, wallCap time.Duration) soakOutcome {
	sc := o.scenario(seed)
	f := &SoakFailure{Seed: seed, Spec: sp.Name, Replay: ReplayCommand("sim", sp.Name, sc)}
	rctx, cancel := context.WithTimeout(ctx, wallCap)
	defer cancel()
	rep, err := Run(rctx, "sim", sp.Spec, sc, nil)
	var pe *PanicError
	switch {
	case errors.As(err, &pe):
		f.Kinds, f.Detail = []string{SoakPanic}, fmt.Sprint(pe.Value)
		return soakOutcome{fail: f}
	case err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		f.Kinds, f.Detail = []string{SoakTimeout}, fmt.Sprintf("over the %v wall-time cap", wallCap)
		return soakOutcome{fail: f}
	case err != nil:
		f.Kinds, f.Detail = []string{SoakError}, err.Error()
		return soakOutcome{fail: f}
	}
	out := soakOutcome{backpressure: rep.Backpressure, checked: rep.DeliveriesExpected}
	kinds, detail := SoakCheck(rep)
	parts := []string{}
	if detail != "" {
		parts = append(parts, detail)
	}
	mem, err := BufferBounds(rep, sp.Spec, sc)
	if err != nil {
		f.Kinds, f.Detail = []string{SoakError}, err.Error()
		return soakOutcome{fail: f}
	}
	out.mem = mem
	if k, d := MemoryCheck(mem); k != "" {
		kinds, parts = append(kinds, k), append(parts, d)
	}
	if o.Overload {
		k, d := OverloadCheck(rep)
		kinds, parts = append(kinds, k...), append(parts, d...)
	}
	if len(kinds) > 0 {
		f.Kinds, f.Detail = kinds, strings.Join(parts, ", ")
		out.fail = f
	}
	return out
}

// MemoryCheck names the memory invariant if a layer's peak passed its bound,
// and says which.
func MemoryCheck(mem []BufferUse) (kind, detail string) {
	var over []string
	for _, u := range mem {
		if u.Over() {
			over = append(over, "memory over bound: "+u.String())
		}
	}
	if len(over) == 0 {
		return "", ""
	}
	return SoakMemory, strings.Join(over, ", ")
}

// OverloadCheck lists what an overload run broke beyond SoakCheck: nothing
// may be lost (no fault explains a loss there: every owed delivery made,
// nothing given up), and the application must have been held off.
func OverloadCheck(rep *Report) (kinds, details []string) {
	if rep.Missing > 0 || rep.GivenUp > 0 {
		kinds = append(kinds, SoakLost)
		details = append(details, fmt.Sprintf("%d of %d owed deliveries missing, %d messages given up", rep.Missing, rep.DeliveriesExpected, rep.GivenUp))
	}
	if rep.Backpressure == 0 {
		kinds = append(kinds, SoakNoPressure)
		details = append(details, "the application was never held off")
	}
	return kinds, details
}
