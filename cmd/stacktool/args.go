package main

import (
	"flag"
	"io"

	"github.com/urfave/cli/v2"
)

// positional returns the command's arguments and reads the command's own
// flags that follow them into c, as if they had come first: cli stops
// reading flags at the first argument, and ours may follow it
// (stacktool reproduce mflow --quick).
func positional(c *cli.Context) ([]string, error) {
	set := flag.NewFlagSet(c.Command.Name, flag.ContinueOnError)
	set.SetOutput(io.Discard)
	for _, f := range c.Command.Flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, name := range f.Names() {
			fn := func(v string) error { return c.Set(name, v) }
			if isBool {
				set.BoolFunc(name, "", fn)
			} else {
				set.Func(name, "", fn)
			}
		}
	}
	return splitArgs(c, set)
}
