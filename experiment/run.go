package experiment

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/layercast/layercast/compose"
)

// ProgressInfo is what a runner reports while it runs.
type ProgressInfo struct {
	// Done and Total are virtual time run so far and in all (sending plus
	// drain).
	Done, Total time.Duration
	// Events is the number of network events (packet deliveries) so far.
	Events int64
}

// Progress receives progress reports, often (every slice of virtual
// time); it should throttle what it prints. nil means none.
type Progress func(ProgressInfo)

// RunFunc runs one spec under one scenario on one kind of network.
type RunFunc func(ctx context.Context, spec *compose.Spec, sc Scenario, progress Progress) (*Report, error)

// Networks are the networks a run can use, by name. "sim" is the
// deterministic simulator; the UDP runner registers "udp" from
// experiment/udprun.
var Networks = map[string]RunFunc{"sim": runSim}

// NetworkNames lists the registered networks, sorted.
func NetworkNames() []string {
	out := make([]string, 0, len(Networks))
	for n := range Networks {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// ErrRunFailed is wrapped by every error of Run that is not about its
// input: the stack or the harness failed while running (a panic, views that
// never settled). Commands exit 1 for these and 2 for bad input.
var ErrRunFailed = errors.New("run failed")

// PanicError is a panic caught in a run, with what it takes to replay it.
type PanicError struct {
	// Value is what was passed to panic; Where is the panicking
	// goroutine's stack (for a debugger, not for the one-line message).
	Value any
	Where string
	// Replay is the stacktool command that reproduces the run.
	Replay string
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("panic in the run: %v (replay: %s)", e.Value, e.Replay)
}

// Unwrap makes a PanicError an ErrRunFailed.
func (e *PanicError) Unwrap() error { return ErrRunFailed }

// Run runs spec under sc on the named network ("" means "sim"). A panic in
// a layer or the harness is caught and returned as a *PanicError.
func Run(ctx context.Context, network string, spec *compose.Spec, sc Scenario, progress Progress) (rep *Report, err error) {
	if network == "" {
		network = "sim"
	}
	fn := Networks[network]
	if fn == nil {
		return nil, fmt.Errorf("unknown network %q; choose one of: %s", network, strings.Join(NetworkNames(), ", "))
	}
	if err := sc.Check(); err != nil {
		return nil, err
	}
	defer func() {
		if p := recover(); p != nil {
			rep, err = nil, &PanicError{Value: p, Where: string(debug.Stack()), Replay: ReplayCommand(network, spec.String(), sc)}
		}
	}()
	rep, err = fn(ctx, spec, sc, progress)
	if rep != nil {
		rep.Notes = append(rep.Notes, specNotes(spec)...)
	}
	return rep, err
}

// specNotes are what checking the spec noted about its layers (a reorder
// bound set below what the layer beneath may hand up: compose's FitSpread),
// so a report whose run lost messages that way says why beside the loss.
func specNotes(spec *compose.Spec) []string {
	ls, err := compose.Explain(spec)
	if err != nil {
		return nil // the network built it, so this does not happen
	}
	var out []string
	for _, l := range ls {
		for _, n := range l.Notes {
			out = append(out, "spec: "+l.Info.Name+": "+n)
		}
	}
	return out
}

// ReplayCommand is the stacktool command line that runs spec under sc on
// network again, every scenario key spelled out, quoted for a POSIX shell.
func ReplayCommand(network, spec string, sc Scenario) string {
	parts := []string{"stacktool", "run", shellQuote(spec)}
	for _, kv := range sc.Flags() {
		parts = append(parts, kv[0], shellQuote(kv[1]))
	}
	if network != "" && network != "sim" {
		parts = append(parts, "--network", network)
	}
	return strings.Join(parts, " ")
}

// shellQuote quotes s for a POSIX shell unless it needs none.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:,@+=%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Compare runs every spec under the same scenario (same seed) on the named
// network, one after the other.
func Compare(ctx context.Context, network string, specs []*compose.Spec, sc Scenario, progress func(i int) Progress) ([]*Report, error) {
	var out []*Report
	for i, sp := range specs {
		var p Progress
		if progress != nil {
			p = progress(i)
		}
		r, err := Run(ctx, network, sp, sc, p)
		if err != nil {
			return out, fmt.Errorf("%s: %w", sp.String(), err)
		}
		out = append(out, r)
	}
	return out, nil
}
