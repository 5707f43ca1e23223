// Command stacktool runs and compares layercast stacks on the simulated
// network or on real UDP/IP multicast.
//
//	stacktool layers                       catalogue of layers
//	stacktool check SPEC|FILE              validate a spec
//	stacktool run SPEC|FILE [flags]        one stack under one scenario
//	stacktool compare SPEC|FILE... [flags] several stacks side by side (--out DIR: CSV, JSON, charts)
//	stacktool sweep SPEC|FILE... --param NAME=V1,V2,... --out DIR
//	                                       stacks across parameter values, with charts
//	stacktool reproduce PAPER [--quick]    a paper's headline experiments beside its figures
//	stacktool soak --seeds N [flags]       seeded faults with invariant checks
//
// Exit codes: 0 every promise kept, 1 a promise broken (the output says
// which) or a run failed, 2 bad input.
//
// Each subcommand lives in its own file and adds itself to commands in an
// init function; main only assembles the app.
package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	_ "github.com/layercast/layercast/layers/all" // register every layer
)

// commands is filled by the subcommand files' init functions.
var commands []*cli.Command

func newApp() *cli.App {
	sort.Slice(commands, func(i, j int) bool { return commands[i].Name < commands[j].Name })
	return &cli.App{
		Name:                 "stacktool",
		Usage:                "build, run and compare layercast multicast stacks",
		Commands:             commands,
		EnableBashCompletion: true,
		HideHelpCommand:      false,
		// Errors are printed once, by main, as one line.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return fmt.Errorf("%v (see 'stacktool --help')", err)
		},
		CommandNotFound: func(c *cli.Context, name string) {
			names := make([]string, 0, len(commands))
			for _, cmd := range commands {
				if !cmd.Hidden {
					names = append(names, cmd.Name)
				}
			}
			fmt.Fprintf(os.Stderr, "stacktool: unknown command %q; commands are: %s\n", name, strings.Join(names, ", "))
			os.Exit(2)
		},
	}
}

func main() {
	os.Exit(runMain(os.Args))
}

// runMain runs the app and returns the exit code: 0 every promise kept, 1 a
// promise broken or a run failed, 2 bad input. Errors are printed as one
// line; a panic outside a run (runs catch their own) is too, never as a
// goroutine dump.
func runMain(args []string) (code int) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(os.Stderr, "stacktool: internal error: %v\n", p)
			code = exitBroken
		}
	}()
	if err := newApp().Run(args); err != nil {
		fmt.Fprintln(os.Stderr, "stacktool:", err)
		return exitCode(err)
	}
	return exitOK
}
