package main

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/layercast/layercast/compose"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:      "check",
		Usage:     "validate a spec: layer names, parameters and units, and needs/gives",
		ArgsUsage: "SPEC|FILE...",
		Description: "Parses the spec (a spec string or a .stack file), checks every layer and parameter against\n" +
			"the registry and that each layer's needs are given by a layer below it, and prints the\n" +
			"canonical form with what each layer gives. Errors show file:line:col, the line and a caret.\n" +
			"Example: stacktool check 'fifo : reliable(nak_delay=20ms)'",
		OnUsageError: usageError,
		Action:       checkCmd,
	})
}

func checkCmd(c *cli.Context) error {
	args := c.Args().Slice()
	if len(args) == 0 {
		return fmt.Errorf("check needs a spec: stacktool check SPEC|FILE (e.g. 'fifo : reliable')")
	}
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			return fmt.Errorf("check: unknown flag %s (see 'stacktool check --help')", a)
		}
	}
	// An unquoted spec arrives in pieces (stacktool check fifo : reliable):
	// unless some argument is a file, the arguments are one spec.
	specs := args
	if len(args) > 1 && !anyFile(args) {
		specs = []string{strings.Join(args, " ")}
	}
	w := c.App.Writer
	if w == nil {
		w = os.Stdout
	}
	for _, arg := range specs {
		sp, err := compose.Load(arg)
		if err != nil {
			return err
		}
		if err := compose.Check(sp); err != nil {
			return err
		}
		if sp.File != "" {
			fmt.Fprintf(w, "ok: %s (%s)\n", sp, sp.File)
		} else {
			fmt.Fprintf(w, "ok: %s\n", sp)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, l := range sp.Layers {
			info, _ := compose.Lookup(l.Name) // Check found every layer
			line := "  " + l.Name + "\tgives " + describeProps(info.Gives)
			if len(info.Needs) > 0 {
				line += "\t(needs " + describeProps(info.Needs) + ")"
			}
			fmt.Fprintln(tw, line)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// anyFile reports whether some argument names a spec file rather than spec
// text.
func anyFile(args []string) bool {
	for _, a := range args {
		if strings.HasSuffix(a, ".stack") {
			return true
		}
		if st, err := os.Stat(a); err == nil && !st.IsDir() {
			return true
		}
	}
	return false
}
