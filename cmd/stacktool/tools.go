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

// toolCommand makes a layer's tool a subcommand; the tool parses its own
// flags (compose.Tool.Parse), like a layer's parameters.
func toolCommand(t compose.Tool) *cli.Command {
	flags := make([]cli.Flag, len(t.Flags))
	for i, f := range t.Flags {
		flags[i] = &cli.StringFlag{Name: f.Name, Usage: f.Doc, Value: f.Default}
	}
	return &cli.Command{
		Name: t.Name, Usage: t.Usage, Description: t.Description, Flags: flags,
		Action: func(c *cli.Context) error {
			given := map[string]string{}
			for _, f := range t.Flags {
				if c.IsSet(f.Name) {
					given[f.Name] = c.String(f.Name)
				}
			}
			p, err := t.Parse(given)
			if err != nil {
				return fmt.Errorf("%v (see 'stacktool %s --help')", err, t.Name)
			}
			return t.Run(p, c.App.Writer)
		},
	}
}
