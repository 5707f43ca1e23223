package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/layercast/layercast/experiment/reproduce"
	"github.com/layercast/layercast/experiment/sweep"
)

func init() {
	var names []string
	for _, p := range reproduce.Papers {
		names = append(names, p.Name)
	}
	commands = append(commands, &cli.Command{
		Name:      "reproduce",
		Usage:     "run a paper's headline experiments and set our figures beside the paper's",
		ArgsUsage: strings.Join(names, "|") + " [--quick] [--json] [--out DIR]",
		Description: "Runs the paper's headline experiments from the spec library (specs/), prints each measured\n" +
			"figure beside the paper's, says which hold in shape and which do not and why (measured on the\n" +
			"runs), and writes each experiment's results.csv, results.json and charts into --out (default:\n" +
			"a folder under the system's temporary directory). --quick scales every run down (well under a\n" +
			"minute a paper). Known deviations are listed with their cause and do not fail the command; a\n" +
			"figure that does not hold otherwise, or a run that broke its stack's promise, exits 1.\n" +
			"Example: stacktool reproduce mflow --quick",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "quick", Usage: "scaled-down runs (the output says so)"},
			&cli.BoolFlag{Name: "json", Usage: "print a JSON array of {experiment, metric, paper, ours, holds, why, ...}"},
			&cli.StringFlag{Name: "out", Usage: "directory for the results and charts (created if missing)"},
			&cli.StringFlag{Name: "specs", Value: "specs", Usage: "the spec library's folder"},
			&cli.IntFlag{Name: "workers", Value: runtime.GOMAXPROCS(0), Usage: "runs at once"},
			&cli.BoolFlag{Name: "progress", Usage: "show the progress bar even when stderr is not a terminal"},
		},
		Action: reproduceCmd,
	})
}

// reproduceArgs are reproduce's flags, given before or after the paper.
type reproduceArgs struct {
	paper, out, specs string
	quick, json, prog bool
	workers           int
}

func parseReproduce(c *cli.Context) (*reproduceArgs, error) {
	args, err := positional(c)
	if err != nil {
		return nil, err
	}
	a := &reproduceArgs{out: c.String("out"), specs: c.String("specs"), quick: c.Bool("quick"),
		json: c.Bool("json"), prog: c.Bool("progress"), workers: c.Int("workers")}
	if len(args) != 1 {
		return nil, fmt.Errorf("reproduce needs one paper, got %d: stacktool reproduce %s", len(args), c.Command.ArgsUsage)
	}
	if a.workers < 1 || a.workers > 1024 {
		return nil, fmt.Errorf("--workers: want a whole number in [1, 1024], got %d", a.workers)
	}
	a.paper = args[0]
	return a, nil
}

func reproduceCmd(c *cli.Context) error {
	a, err := parseReproduce(c)
	if err != nil {
		return err
	}
	p, err := reproduce.Lookup(a.paper)
	if err != nil {
		return err
	}
	dir := a.out
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "layercast-reproduce", p.Name)
	}
	pd, err := reproduce.Plan(p, reproduce.Options{SpecDir: a.specs, Quick: a.quick, Workers: a.workers})
	if errors.Is(err, reproduce.ErrNotBuilt) {
		return fmt.Errorf("%v: `stacktool reproduce %s` runs once it is", err, p.Name)
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out: %v", err)
	}
	out, errw := writers(c)
	// One bar over every experiment's runs.
	all := &sweep.Plan{}
	for _, pl := range pd.Plans {
		all.Jobs = append(all.Jobs, pl.Jobs...)
	}
	all.Config.Workers = a.workers
	progress, done := sweepProgress(errw, "reproduce "+p.Name, all, a.prog || isTerminal(errw))
	pd.Opts.Progress = progress
	start := time.Now()
	o, err := pd.Run(context.Background())
	done(err == nil)
	if err != nil {
		return err
	}
	files, err := o.WriteFiles(dir)
	if err != nil {
		return fmt.Errorf("--out: %v", err)
	}
	if a.json {
		err = o.WriteJSON(out)
	} else {
		err = o.WriteText(out)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(errw, "reproduce %s: %d runs in %v; wrote %d files into %s\n", p.Name, len(all.Jobs), time.Since(start).Round(100*time.Millisecond), len(files), dir)
	var failed []string
	for _, f := range o.Findings {
		if f.Failed() {
			id, _, _ := strings.Cut(f.Experiment, ":")
			failed = append(failed, id+" "+f.Metric)
		}
	}
	if len(failed) > 0 {
		return brokenf("reproduce %s: %d figure(s) do not hold: %s", p.Name, len(failed), strings.Join(failed, "; "))
	}
	return nil
}
