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
			"mflow:fifo:reliable:gms and fifo:reliable:lec:gms, or the --spec given), in parallel. Each run must\n" +
			"not panic, not deliver twice, keep FIFO order where the stack gives it, and miss no owed delivery that\n" +
			"a fault in force at the end or a removal does not explain. Prints one line per failure with the\n" +
			"command that replays it, then totals; exits 1 if any run failed. Same seed, same scenario, same result.\n" +
			"Example: stacktool soak --seeds 100",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "seeds", Usage: "number of seeds to run (required)"},
			&cli.Uint64Flag{Name: "from", Value: 1, Usage: "first seed"},
			&cli.StringSliceFlag{Name: "spec", Usage: "spec or .stack file to run (repeatable); default specs/*.stack and the three gms stacks"},
			&cli.BoolFlag{Name: "quick", Usage: "smaller, shorter scenarios (6-12 nodes, 2s of sending)"},
			&cli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
			&cli.DurationFlag{Name: "wall-cap", Value: time.Minute, Usage: "wall time allowed per run; a run past it is a failure"},
			&cli.IntFlag{Name: "workers", Usage: "runs in parallel (default GOMAXPROCS)"},
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
	names := c.StringSlice("spec")
	if len(names) == 0 {
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
		Seeds: seeds, Specs: specs, Quick: c.Bool("quick"), WallCap: c.Duration("wall-cap"), Workers: c.Int("workers"),
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
		if len(specs) > 1 {
			for _, per := range res.BySpec {
				line := fmt.Sprintf("soak: %s: %d of %d seeds failed", per.Spec, per.Failed, per.Runs)
				if k := soakKinds(per.ByKind); k != "" {
					line += " (" + k + ")"
				}
				fmt.Fprintln(out, line)
			}
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
	for _, k := range []string{experiment.SoakPanic, experiment.SoakError, experiment.SoakTimeout,
		experiment.SoakDuplicates, experiment.SoakFIFO, experiment.SoakMissing} {
		if by[k] > 0 {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, by[k]))
		}
	}
	return strings.Join(kinds, ", ")
}
