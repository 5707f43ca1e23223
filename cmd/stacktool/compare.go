package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/layercast/layercast/experiment"
	"github.com/layercast/layercast/experiment/sweep"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:      "compare",
		Usage:     "run several stacks under the same scenario and seed, side by side",
		ArgsUsage: "SPEC|FILE... [--out DIR]",
		Description: "Runs each spec under the same scenario (same seed, so the same groups, senders and\n" +
			"loss pattern offered), in parallel, and prints one table, one column per spec, then which stack\n" +
			"did best on each metric and by how much. With --out DIR it also writes what sweep writes:\n" +
			"results.csv, results.json and a bar chart per metric (METRIC.svg, METRIC.png). Flags may follow the specs.\n" +
			"Example: stacktool compare specs/baseline.stack specs/ricochet.stack --scenario specs/baseline.scenario",
		Flags:  append(scenarioFlags(), &cli.StringFlag{Name: "out", Usage: "directory to write results.csv, results.json and the charts into (created if missing)"}),
		Action: compareCmd,
	})
}

func compareCmd(c *cli.Context) error {
	o, err := parseCommand(c, []string{"out"}, nil, true)
	if err != nil || o == nil {
		return err
	}
	if len(o.args) == 0 {
		return fmt.Errorf("compare needs at least one spec: stacktool compare SPEC|FILE... [flags]")
	}
	dir := last(o.values["out"])
	if _, set := o.values["out"]; set && strings.TrimSpace(dir) == "" {
		return fmt.Errorf("--out: empty directory name")
	}
	pl, err := stackPlan(o, sweep.Config{})
	if err != nil {
		return err
	}
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("--out: %v", err)
		}
	}
	out, errw := writers(c)
	progress, done := sweepProgress(errw, "compare", pl, o.bools["progress"] || isTerminal(errw))
	res, err := sweep.Run(context.Background(), pl, progress)
	done(err == nil)
	if err != nil {
		return err
	}
	reps := make([]*experiment.Report, len(res))
	for i := range res {
		if o.bools["no-wall"] {
			res[i].Report = res[i].Report.Mask()
		}
		reps[i] = res[i].Report
	}
	rows := sweep.Aggregate(pl, res)
	if dir != "" {
		files, err := sweep.WriteAll(dir, pl, res, rows)
		if err != nil {
			return fmt.Errorf("--out: %v", err)
		}
		fmt.Fprintf(errw, "compare: wrote %d files into %s\n", len(files), dir)
	}
	if o.bools["json"] {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		err = enc.Encode(reps)
	} else if err = experiment.WriteTable(out, reps, !o.bools["no-wall"]); err == nil && len(reps) > 1 {
		fmt.Fprintln(out, "\nbetter stack per metric:")
		for _, v := range sweep.Verdicts(pl, rows) {
			fmt.Fprintln(out, "  "+v.String())
		}
	}
	if err != nil {
		return err
	}
	return brokenError(reps)
}

// stackPlan completes cfg with the command's specs (labelled apart), its
// scenario and network, and plans it; without Params it is a comparison
// (one point).
func stackPlan(o *options, cfg sweep.Config) (*sweep.Plan, error) {
	cfg.Base, cfg.Network = o.scenario, o.network
	for _, a := range o.args {
		sp, err := loadSpec(a)
		if err != nil {
			return nil, err
		}
		cfg.Stacks = append(cfg.Stacks, sweep.Stack{Label: sweep.Label(sp), Spec: sp})
	}
	// Two specs with one label (two inline specs never clash; two files
	// of one name in different folders may) are told apart by position.
	labels := map[string]int{}
	for _, st := range cfg.Stacks {
		labels[st.Label]++
	}
	for i := range cfg.Stacks {
		if labels[cfg.Stacks[i].Label] > 1 {
			cfg.Stacks[i].Label = fmt.Sprintf("%d:%s", i+1, cfg.Stacks[i].Label)
		}
	}
	return sweep.NewPlan(cfg)
}
