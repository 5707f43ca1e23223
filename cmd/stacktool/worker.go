package main

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/layercast/layercast/experiment/udprun" // registers the "udp" network
)

// worker is the hidden subcommand `stacktool run --network udp` starts once
// per node (experiment/udprun describes its line protocol on stdin/stdout).
func init() {
	commands = append(commands, &cli.Command{
		Name:            "worker",
		Usage:           "one node of a --network udp run (started by stacktool run; not for direct use)",
		Hidden:          true,
		SkipFlagParsing: true,
		Action: func(c *cli.Context) error {
			return udprun.Worker(c.Args().Slice(), os.Stdin, os.Stdout)
		},
	})
}
