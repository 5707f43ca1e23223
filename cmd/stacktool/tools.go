package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/layercast/layercast/compose"
)

// Layers add their own commands through their registrations
// (compose.LayerInfo.Tools: `stacktool mflow-params`, for example); the
// command line knows none of them by name and imports no layer.
func init() {
	for _, l := range compose.Layers() {
		for _, t := range l.Tools {
			commands = append(commands, toolCommand(t))
		}
	}
}

// toolCommand makes a layer's tool a subcommand with text flags.
func toolCommand(t compose.Tool) *cli.Command {
	flags := make([]cli.Flag, len(t.Flags))
	for i, f := range t.Flags {
		flags[i] = &cli.StringFlag{Name: f.Name, Usage: f.Usage, Value: f.Default}
	}
	return &cli.Command{
		Name: t.Name, Usage: t.Usage, Description: t.Description, Flags: flags,
		Action: func(c *cli.Context) error {
			vals := make(map[string]string, len(t.Flags))
			for _, f := range t.Flags {
				if f.Required && !c.IsSet(f.Name) {
					return fmt.Errorf("--%s is required (see 'stacktool %s --help')", f.Name, t.Name)
				}
				vals[f.Name] = c.String(f.Name)
			}
			return t.Run(vals, c.App.Writer)
		},
	}
}
