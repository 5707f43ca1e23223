package main

import "github.com/urfave/cli/v2"

func init() {
	commands = append(commands, &cli.Command{
		Name:      "compare",
		Usage:     "run several stacks under the same scenario and seed, side by side",
		ArgsUsage: "SPEC|FILE...",
		Description: "Runs each spec in turn under the same scenario (same seed, so the same groups, senders\n" +
			"and loss pattern offered) and prints one table, one column per spec. Flags may follow the specs.\n" +
			"Example: stacktool compare specs/baseline.stack specs/reliable.stack --scenario specs/baseline.scenario",
		Flags:  scenarioFlags(),
		Action: func(c *cli.Context) error { return runCmd(c, true) },
	})
}
