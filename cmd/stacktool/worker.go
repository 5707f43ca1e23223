package main

import (
	"os"
	"runtime"

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
			// One node per process: one P unless GOMAXPROCS says otherwise.
			// With two, the runtime woke a second thread to look for work
			// at each hand-off from a socket reader to the node goroutine:
			// bench measured 20% more CPU per message, sender and receivers
			// alike, and no more throughput.
			if os.Getenv("GOMAXPROCS") == "" {
				runtime.GOMAXPROCS(1)
			}
			return udprun.Worker(c.Args().Slice(), os.Stdin, os.Stdout)
		},
	})
}
