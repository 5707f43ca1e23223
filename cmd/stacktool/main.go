// Command stacktool runs and compares layercast stacks on the simulated
// network or on real UDP/IP multicast.
//
//	stacktool layers                       catalogue of layers
//	stacktool check SPEC|FILE              validate a spec
//	stacktool run SPEC|FILE [flags]        one stack under one scenario
//	stacktool compare SPEC|FILE... [flags] several stacks side by side
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
	if err := newApp().Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "stacktool:", err)
		code := 1
		if ec, ok := err.(cli.ExitCoder); ok && ec.ExitCode() != 0 {
			code = ec.ExitCode()
		}
		os.Exit(code)
	}
}
