package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/layercast/layercast/compose"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:      "layers",
		Usage:     "list every layer with what it promises, its parameters, properties and counters",
		ArgsUsage: "[NAME...]",
		Description: "Prints the catalogue of registered layers: a few sentences on what each promises and how,\n" +
			"its parameters (name, type, default, range, meaning), what it needs from the layers below\n" +
			"and what it gives the layers above, and its counters (name, kind, role, meaning: what a run's\n" +
			"report shows under layers.<name>; role 'acks' counts in the report's acks per message).\n" +
			"Name layers to show only those.\n" +
			"Example: stacktool layers reliable fifo",
		Flags:        []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print a JSON array for machines"}},
		OnUsageError: usageError,
		Action:       layersCmd,
	})
}

// usageError turns a flag error into one line (urfave/cli would otherwise
// print the whole help text).
func usageError(c *cli.Context, err error, _ bool) error {
	return fmt.Errorf("%v (see 'stacktool %s --help')", err, c.Command.Name)
}

// jsonParam and jsonLayer are the --json form of the catalogue. Min and Max
// are in base units (a count, seconds, bytes, or a fraction for percent) and
// absent when the parameter is unbounded; needs and gives are property ids.
type jsonParam struct {
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	Default string   `json:"default"`
	Doc     string   `json:"doc"`
	Min     *float64 `json:"min,omitempty"`
	Max     *float64 `json:"max,omitempty"`
	Choices []string `json:"choices,omitempty"`
}

type jsonLayer struct {
	Name    string      `json:"name"`
	Summary string      `json:"summary"`
	Params  []jsonParam `json:"params"`
	Needs   []string    `json:"needs"`
	Gives   []string    `json:"gives"`
	// Counters are the counters the layer reports, with their meaning.
	Counters []jsonCounter `json:"counters"`
}

type jsonCounter struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	Role string `json:"role,omitempty"`
	Doc  string `json:"doc"`
}

// roleWords names a counter's role for the catalogue ("" for none).
func roleWords(r compose.CounterRole) string {
	switch r {
	case compose.AckRole:
		return "acks"
	case compose.BufferPeakRole:
		return "buffer peak"
	}
	return ""
}

func layersCmd(c *cli.Context) error {
	asJSON := c.Bool("json")
	var names []string
	for _, a := range c.Args().Slice() {
		switch a {
		case "--json", "-json": // flags after a name are not parsed by cli
			asJSON = true
			continue
		}
		if strings.HasPrefix(a, "-") {
			return fmt.Errorf("layers: unknown flag %s (see 'stacktool layers --help')", a)
		}
		names = append(names, a)
	}
	all := compose.Layers()
	ls := all
	if len(names) > 0 {
		ls = nil
		for _, n := range names {
			info, ok := compose.Lookup(n)
			if !ok {
				return fmt.Errorf("layers: %s", unknownLayer(n, all))
			}
			ls = append(ls, info)
		}
	}
	w, _ := writers(c)
	if asJSON {
		return writeLayersJSON(w, ls)
	}
	return writeLayers(w, ls)
}

// unknownLayer says a layer name is not registered, with the nearest name.
func unknownLayer(name string, all []*compose.LayerInfo) string {
	known := make([]string, len(all))
	for i, l := range all {
		known[i] = l.Name
	}
	if best, ok := compose.Nearest(name, known); ok {
		return fmt.Sprintf("unknown layer %q; did you mean %q?", name, best)
	}
	return fmt.Sprintf("unknown layer %q; known layers: %s", name, strings.Join(known, ", "))
}

func writeLayersJSON(w io.Writer, ls []*compose.LayerInfo) error {
	out := make([]jsonLayer, 0, len(ls))
	for _, l := range ls {
		jl := jsonLayer{Name: l.Name, Summary: l.Summary, Params: []jsonParam{}, Needs: props(l.Needs), Gives: props(l.Gives)}
		for _, p := range l.Params {
			jp := jsonParam{Name: p.Name, Type: p.Type.String(), Default: p.Default, Doc: p.Doc, Choices: p.Choices}
			if p.Min < p.Max {
				lo, hi := p.Min, p.Max
				jp.Min, jp.Max = &lo, &hi
			}
			jl.Params = append(jl.Params, jp)
		}
		jl.Counters = []jsonCounter{}
		for _, d := range l.Counters {
			jl.Counters = append(jl.Counters, jsonCounter{Name: d.Name, Kind: d.Kind.String(), Role: roleWords(d.Role), Doc: d.Doc})
		}
		out = append(out, jl)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func props(ps []compose.Property) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = string(p)
	}
	return out
}

// describeProps lists properties in words: "reliable delivery, FIFO order".
func describeProps(ps []compose.Property) string {
	if len(ps) == 0 {
		return "nothing"
	}
	ws := make([]string, len(ps))
	for i, p := range ps {
		ws[i] = p.Describe()
	}
	return strings.Join(ws, ", ")
}

// writeLayers prints the catalogue for a terminal: each layer's name, its
// summary wrapped to 80 columns, its properties and a parameter table.
func writeLayers(w io.Writer, ls []*compose.LayerInfo) error {
	if len(ls) == 0 {
		_, err := fmt.Fprintln(w, "no layers are registered")
		return err
	}
	for i, l := range ls {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w, l.Name)
		for _, line := range wrap(l.Summary, 76) {
			fmt.Fprintln(w, "    "+line)
		}
		fmt.Fprintf(w, "    needs: %s\n    gives: %s\n", describeProps(l.Needs), describeProps(l.Gives))
		if err := writeParams(w, l); err != nil {
			return err
		}
		if err := writeCounters(w, l); err != nil {
			return err
		}
	}
	return nil
}

// writeParams prints a layer's parameter table.
func writeParams(w io.Writer, l *compose.LayerInfo) error {
	var rows [][]string
	for _, p := range l.Params {
		def := p.Default
		if def == "" {
			def = `""`
		}
		rows = append(rows, []string{p.Name, p.Type.String(), def, paramRange(&p), p.Doc})
	}
	return writeSection(w, "parameters", "none", []string{"NAME", "TYPE", "DEFAULT", "RANGE", "MEANING"}, rows)
}

// writeCounters prints what the layer's counters mean, as its registration
// says (a report shows them under layers.<name>).
func writeCounters(w io.Writer, l *compose.LayerInfo) error {
	var rows [][]string
	for _, d := range l.Counters {
		kind := d.Kind.String()
		if r := roleWords(d.Role); r != "" {
			kind += ", " + r
		}
		rows = append(rows, []string{d.Name, kind, d.Doc})
	}
	return writeSection(w, "counters", "none documented", []string{"NAME", "KIND", "MEANING"}, rows)
}

// writeSection prints one titled table of a layer's entry, its columns
// aligned under header, or "title: none" when it has no rows.
func writeSection(w io.Writer, title, none string, header []string, rows [][]string) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintf(w, "    %s: %s\n", title, none)
		return err
	}
	fmt.Fprintf(w, "    %s:\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range append([][]string{header}, rows...) {
		fmt.Fprintf(tw, "      %s\n", strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// paramRange prints a parameter's bounds or choices in its own units.
func paramRange(p *compose.Param) string {
	if p.Type == compose.Enum {
		return strings.Join(p.Choices, "|")
	}
	if p.Type == compose.Bool {
		return "on|off"
	}
	if !(p.Min < p.Max) {
		return "-"
	}
	return bound(p, p.Min) + ".." + bound(p, p.Max)
}

func bound(p *compose.Param, b float64) string {
	switch p.Type {
	case compose.Duration:
		d := time.Duration(b * float64(time.Second))
		switch {
		case d == 0:
			return "0"
		case d%time.Hour == 0:
			return fmt.Sprintf("%dh", d/time.Hour)
		case d%time.Minute == 0:
			return fmt.Sprintf("%dm", d/time.Minute)
		}
		return d.String()
	case compose.Percent:
		return strconv.FormatFloat(b*100, 'g', -1, 64) + "%"
	case compose.Size:
		return sizeText(b)
	}
	if b == float64(int64(b)) && b < 1e15 && b > -1e15 {
		return strconv.FormatInt(int64(b), 10)
	}
	return strconv.FormatFloat(b, 'g', 6, 64)
}

// sizeText prints a byte count with the largest binary or decimal unit that
// divides it exactly.
func sizeText(b float64) string {
	n := int64(b)
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"GB", 1e9}, {"MiB", 1 << 20}, {"MB", 1e6}, {"KiB", 1 << 10}, {"KB", 1e3}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// wrap breaks text into lines of at most width characters at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
