package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v2"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/layercast/layercast/experiment"
	"github.com/layercast/layercast/experiment/sweep"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:      "sweep",
		Usage:     "run stacks over a grid of parameter values and seeds; write a table, CSV, JSON and charts",
		ArgsUsage: "SPEC|FILE... --param NAME=V1,V2,... --out DIR",
		Description: "Runs every spec at every combination of the --param values (a scenario key such as\n" +
			"groups-per-node, rate, loss, or a layer parameter LAYER.PARAM such as lec.r), each with --seeds\n" +
			"seeds from --seed on, in parallel on every core, and writes into --out: results.csv (one row per\n" +
			"stack, value and seed), results.json, and one chart per metric as METRIC.svg and METRIC.png (one\n" +
			"line per stack, x = the first parameter's values, error bars with several seeds). Prints a table\n" +
			"of the means. Scenario flags are those of run; flags may follow the specs.\n" +
			"Example: stacktool sweep specs/baseline.stack specs/ricochet.stack --param groups-per-node=2,8,32,128 --out /tmp/sweep",
		Flags:  sweepFlags(),
		Action: sweepCmd,
	})
}

// sweepExtra are sweep's own flags, beside run's.
var sweepExtra = []struct{ name, usage string }{
	{"param", "NAME=V1,V2,...: a scenario key or LAYER.PARAM and its values (';' between values that hold commas), repeatable; the first is the charts' x axis"},
	{"seeds", "seeds per point: --seed, --seed+1, ... (default 1)"},
	{"out", "directory to write results.csv, results.json and the charts into (created if missing)"},
	{"workers", "runs at once (default: GOMAXPROCS)"},
}

func sweepFlags() []cli.Flag {
	fs := scenarioFlags()
	for _, e := range sweepExtra {
		if e.name == "param" {
			fs = append(fs, &cli.StringSliceFlag{Name: e.name, Usage: e.usage})
			continue
		}
		fs = append(fs, &cli.StringFlag{Name: e.name, Usage: e.usage})
	}
	return fs
}

// parseSweep parses sweep's command line: run's flags and sweep's own.
// Its scenario is not checked here: the parameters swept may complete it.
func parseSweep(c *cli.Context) (*options, error) {
	var extra []string
	for _, e := range sweepExtra {
		extra = append(extra, e.name)
	}
	return parseCommand(c, extra, []string{"param"}, false)
}

// intFlag parses a positive integer flag of sweep, def when not given.
func (o *options) intFlag(name string, def, hi int) (int, error) {
	v := last(o.values[name])
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || n > hi {
		return 0, fmt.Errorf("--%s: want a whole number in [1, %d], got %q", name, hi, v)
	}
	return n, nil
}

func sweepCmd(c *cli.Context) error {
	o, err := parseSweep(c)
	if err != nil || o == nil {
		return err
	}
	if len(o.args) == 0 {
		return fmt.Errorf("sweep needs at least one spec: stacktool sweep SPEC|FILE... --param NAME=V1,V2,... --out DIR")
	}
	if len(o.values["param"]) == 0 {
		return fmt.Errorf("sweep needs at least one --param NAME=V1,V2,... (e.g. --param groups-per-node=2,8,32)")
	}
	dir := last(o.values["out"])
	if strings.TrimSpace(dir) == "" {
		return fmt.Errorf("sweep needs --out DIR: the directory for results.csv, results.json and the charts")
	}
	seeds, err := o.intFlag("seeds", 1, 1000)
	if err != nil {
		return err
	}
	workers, err := o.intFlag("workers", runtime.GOMAXPROCS(0), 1024)
	if err != nil {
		return err
	}
	var params []sweep.Param
	for _, text := range o.values["param"] {
		p, err := sweep.ParseParam(text)
		if err != nil {
			return err
		}
		params = append(params, p)
	}
	pl, err := stackPlan(o, sweep.Config{Params: params, Seeds: seeds, Workers: workers})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out: %v", err)
	}
	out, errw := writers(c)
	for si, names := range pl.Flat {
		fmt.Fprintf(errw, "sweep: %s has no layer for %s: it runs unchanged at every value\n", pl.Config.Stacks[si].Label, strings.Join(names, ", "))
	}

	start := time.Now()
	progress, done := sweepProgress(errw, "sweep", pl, o.bools["progress"] || isTerminal(errw))
	res, err := sweep.Run(context.Background(), pl, progress)
	done(err == nil)
	if err != nil {
		return err
	}
	if o.bools["no-wall"] {
		for i := range res {
			res[i].Report = res[i].Report.Mask()
		}
	}
	rows := sweep.Aggregate(pl, res)
	files, err := sweep.WriteAll(dir, pl, res, rows)
	if err != nil {
		return err
	}
	if o.bools["json"] {
		err = sweep.WriteJSON(out, sweep.NewOutput(pl, res, rows))
	} else {
		err = sweep.WriteTable(out, pl, rows)
	}
	if err != nil {
		return err
	}
	wall := time.Since(start).Round(100 * time.Millisecond)
	if o.bools["no-wall"] {
		fmt.Fprintf(errw, "sweep: %d runs on %d workers; wrote %d files into %s\n", len(pl.Jobs), min(pl.Config.Workers, len(pl.Jobs)), len(files), dir)
	} else {
		fmt.Fprintf(errw, "sweep: %d runs in %v on %d workers; wrote %d files into %s\n", len(pl.Jobs), wall, min(pl.Config.Workers, len(pl.Jobs)), len(files), dir)
	}
	reps := make([]*experiment.Report, len(res))
	for i := range res {
		reps[i] = res[i].Report
	}
	return brokenError(reps)
}

// sweepProgress is a progress bar on w with the runs done and the time
// left, weighted by each run's estimated cost (a run at groups-per-node=128
// counts for more than one at 2); nothing when show is false. done stops
// it.
func sweepProgress(w io.Writer, name string, pl *sweep.Plan, show bool) (sweep.Progress, func(ok bool)) {
	if !show {
		return nil, func(bool) {}
	}
	const scale = 1000 // bar units per unit of estimated cost's share
	var total float64
	for _, j := range pl.Jobs {
		total += j.Cost
	}
	total = max(total, 1)
	units := int64(scale * len(pl.Jobs))
	runs := len(pl.Jobs)
	var runsDone atomic.Int64 // read by mpb's goroutine
	p := mpb.New(mpb.WithOutput(w), mpb.WithRefreshRate(200*time.Millisecond),
		mpb.WithAutoRefresh()) // --progress draws to a file or pipe too
	bar := p.New(units, mpb.BarStyle().Lbound(" [").Rbound("] "),
		mpb.PrependDecorators(
			decor.Name(name+" "),
			decor.Any(func(decor.Statistics) string { return fmt.Sprintf("%d/%d runs", runsDone.Load(), runs) }, decor.WCSyncWidth),
		),
		mpb.AppendDecorators(
			decor.Percentage(decor.WC{W: 6}),
			decor.Name(" "),
			decor.OnComplete(decor.AverageETA(decor.ET_STYLE_GO, decor.WC{W: 6}), "done"),
			decor.Name(" left"),
		),
	)
	var told int64
	progress := func(costDone float64, n int) {
		runsDone.Store(int64(n))
		cur := int64(float64(units) * costDone / total)
		if cur > told {
			bar.IncrInt64(cur - told)
			told = cur
		}
	}
	return progress, func(ok bool) {
		if ok {
			bar.SetCurrent(units)
		} else {
			bar.Abort(false)
		}
		p.Wait()
	}
}
