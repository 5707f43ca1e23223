package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/layercast/layercast/experiment"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:  "soak",
		Usage: "run seeded random fault scenarios on every spec and check the invariants",
		Description: "For each seed, builds a random scenario from it (6-20 nodes, groups that fit, uniform, bursty\n" +
			"or markov loss at 0-20%, rates, capacity limits, crashes, freezes, partitions then heals inside the\n" +
			"sending period) and runs it on every spec (specs/*.stack plus fifo:reliable:gms,\n" +
			"mflow(window=50000,ack_thresh=25000):fifo:reliable:gms and fifo:reliable:lec:gms, or the --spec given), in parallel. Each run must\n" +
			"not panic, not deliver twice, keep FIFO order and agreed order where the stack gives them, and miss\n" +
			"no owed delivery that a fault in force at the end or a removal does not explain, and keep every\n" +
			"layer's buffer within the bound its parameters set (memory). Prints one line per failure with the\n" +
			"command that replays it, then per spec the peak buffer of each bounded layer against its bound,\n" +
			"then totals; exits 1 if any run failed. Same seed, same scenario, same result.\n" +
			"--overload runs instead, per seed, senders 2 to 4 times faster than the capacity-limited receivers\n" +
			"for --overload-time of virtual time (default fifo:reliable, mflow(window=50000,ack_thresh=25000):fifo:reliable and both over gms):\n" +
			"each run must also hold the application off (back-pressure) and lose nothing.\n" +
			"Example: stacktool soak --seeds 100; stacktool soak --overload --seeds 5",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "seeds", Usage: "number of seeds to run (required)"},
			&cli.Uint64Flag{Name: "from", Value: 1, Usage: "first seed"},
			&cli.StringSliceFlag{Name: "spec", Usage: "spec or .stack file to run (repeatable); default specs/*.stack and the three gms stacks"},
			&cli.BoolFlag{Name: "quick", Usage: "smaller, shorter scenarios (6-12 nodes, 2s of sending)"},
			&cli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
			&cli.DurationFlag{Name: "drain", Usage: "virtual time after sending ends for every owed message to arrive (default: 10s)"},
			&cli.DurationFlag{Name: "wall-cap", Value: time.Minute, Usage: "wall time allowed per run; a run past it is a failure"},
			&cli.IntFlag{Name: "workers", Usage: "runs in parallel (default GOMAXPROCS)"},
			&cli.BoolFlag{Name: "overload", Usage: "overload runs: senders faster than the receivers; back-pressure, bounded memory, nothing lost"},
			&cli.DurationFlag{Name: "overload-time", Value: time.Minute, Usage: "virtual sending time of an overload run"},
		},
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return fmt.Errorf("%v (see 'stacktool soak --help')", err)
		},
		Action: soakCmd,
	})
}

func soakCmd(c *cli.Context) error {
	if c.Args().Len() > 0 {
		return fmt.Errorf("soak takes no arguments, got %q; give specs with --spec", c.Args().First())
	}
	n := c.Int("seeds")
	if n < 1 || n > 1_000_000 {
		return fmt.Errorf("--seeds N is required, 1 to 1000000 (e.g. --seeds 100)")
	}
	from := c.Uint64("from")
	if from > ^uint64(0)-uint64(n) {
		return fmt.Errorf("--from %d: the seeds would overflow", from)
	}
	if c.Duration("wall-cap") <= 0 || c.Int("workers") < 0 {
		return fmt.Errorf("--wall-cap must be positive and --workers not negative")
	}
	if ot := c.Duration("overload-time"); ot < time.Second || ot > time.Hour {
		return fmt.Errorf("--overload-time %v: want 1s to 1h", ot)
	}
	names := c.StringSlice("spec")
	switch {
	case len(names) > 0:
	case c.Bool("overload"):
		names = experiment.OverloadSpecs
	default:
		files, _ := filepath.Glob("specs/*.stack")
		slices.Sort(files)
		names = append(files, experiment.SoakSpecs...)
	}
	var specs []experiment.SoakSpec
	for _, name := range names {
		sp, err := loadSpec(name)
		if err != nil {
			return err
		}
		specs = append(specs, experiment.SoakSpec{Name: name, Spec: sp})
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = from + uint64(i)
	}
	out, errw := writers(c)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	total := len(seeds) * len(specs)
	var mu sync.Mutex
	done, failed := 0, 0
	show := isTerminal(errw)
	wall := time.Now()
	res := experiment.Soak(ctx, experiment.SoakOptions{
		Seeds: seeds, Specs: specs, Quick: c.Bool("quick"), WallCap: c.Duration("wall-cap"), Drain: c.Duration("drain"), Workers: c.Int("workers"),
		Overload: c.Bool("overload"), OverloadTime: c.Duration("overload-time"),
		Done: func(uint64, string, bool) {
			mu.Lock()
			defer mu.Unlock()
			done++
			if show {
				fmt.Fprintf(errw, "\r\033[Ksoak: %d of %d runs, %d failed", done, total, failed)
			}
		},
	})
	if show {
		fmt.Fprint(errw, "\r\033[K")
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("soak interrupted after %d of %d runs", done, total)
	}
	if c.Bool("json") {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		for _, f := range res.Failures {
			fmt.Fprintf(out, "FAIL seed %d %s: %s: %s; replay: %s\n", f.Seed, f.Spec, strings.Join(f.Kinds, ","), f.Detail, f.Replay)
		}
		for _, per := range res.BySpec {
			line := fmt.Sprintf("soak: %s: %d of %d seeds failed", per.Spec, per.Failed, per.Runs)
			if k := soakKinds(per.ByKind); k != "" {
				line += " (" + k + ")"
			}
			tr := per.Tried
			line += fmt.Sprintf("; %d crashes, %d freezes, %d partitions, %d runs with loss bursts, %d owed deliveries checked",
				tr.Crashes, tr.Freezes, tr.Partitions, tr.Bursts, tr.Checked)
			var mem []string
			for _, m := range per.Memory {
				mem = append(mem, fmt.Sprintf("%v, seed %d", m.BufferUse, m.Seed))
			}
			if len(mem) > 0 {
				line += "; peak buffer against bound: " + strings.Join(mem, "; ")
			}
			line += fmt.Sprintf("; %d casts held off by back-pressure", per.Backpressure)
			fmt.Fprintln(out, line)
		}
		line := fmt.Sprintf("soak: %d runs (%d seeds from %d x %d specs), %d failed", res.Runs, n, from, len(specs), len(res.Failures))
		if k := soakKinds(res.ByKind); k != "" {
			line += " (" + k + ")"
		}
		fmt.Fprintf(out, "%s; wall %.1fs\n", line, time.Since(wall).Seconds())
	}
	if len(res.Failures) > 0 {
		return brokenf("soak: %d of %d runs broke an invariant", len(res.Failures), res.Runs)
	}
	return nil
}

// soakKinds lists failure counts by kind, in a fixed order ("" for none).
func soakKinds(by map[string]int) string {
	var kinds []string
	for _, k := range experiment.SoakKinds {
		if by[k] > 0 {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, by[k]))
		}
	}
	return strings.Join(kinds, ", ")
}
