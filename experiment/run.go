package experiment

import (
	"context"
	"fmt"
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

// Run runs spec under sc on the named network ("" means "sim").
func Run(ctx context.Context, network string, spec *compose.Spec, sc Scenario, progress Progress) (*Report, error) {
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
	return fn(ctx, spec, sc, progress)
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
