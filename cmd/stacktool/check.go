package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/experiment"
	"github.com/layercast/layercast/internal/readfile"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:      "check",
		Usage:     "validate a spec or a scenario file: what run would refuse, check refuses",
		ArgsUsage: "SPEC|FILE...",
		Description: "Parses the spec (a spec string or a .stack file), checks every layer and parameter against\n" +
			"the registry, that each layer's needs are given by a layer below it, that no layer is a\n" +
			"service's (gms_service), and that every layer accepts its parameters together (each layer is\n" +
			"built once, as run builds it); prints the canonical form with what each layer gives.\n" +
			"A scenario file (.scenario, or key: value lines) is checked as run --scenario reads it.\n" +
			"-v also prints every parameter's effective value (defaults filled in) and what the stack gives.\n" +
			"Errors show file:line:col, the line and a caret. Exit 0 when all is valid, 2 when not.\n" +
			"Example: stacktool check -v 'fifo : reliable(nak_delay=20ms)'",
		Flags:        []cli.Flag{&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "print every parameter's effective value and what the stack gives"}},
		OnUsageError: func(c *cli.Context, err error, sub bool) error { return badInput(usageError(c, err, sub)) },
		Action: func(c *cli.Context) error {
			if err := checkCmd(c); err != nil {
				return badInput(err)
			}
			return nil
		},
	})
}

// inputError is an error in what the user gave: stacktool exits 2.
type inputError struct{ err error }

func (e inputError) Error() string { return e.err.Error() }
func (e inputError) Unwrap() error { return e.err }

// ExitCode is 2: bad input (DESIGN.md, stacktool exit codes).
func (e inputError) ExitCode() int { return 2 }

func badInput(err error) error {
	if err == nil {
		return nil
	}
	return inputError{err}
}

func checkCmd(c *cli.Context) error {
	verbose := c.Bool("verbose")
	var args []string
	for _, a := range c.Args().Slice() {
		switch a {
		case "-v", "--v", "-verbose", "--verbose": // flags after an argument are not parsed by cli
			verbose = true
			continue
		}
		if strings.HasPrefix(a, "-") {
			return fmt.Errorf("check: unknown flag %s (see 'stacktool check --help')", a)
		}
		args = append(args, a)
	}
	if len(args) == 0 {
		return fmt.Errorf("check needs a spec: stacktool check SPEC|FILE (e.g. 'fifo : reliable')")
	}
	// An unquoted spec arrives in pieces (stacktool check fifo : reliable):
	// unless some argument is a file, the arguments are one spec.
	if len(args) > 1 && !anyFile(args) {
		args = []string{strings.Join(args, " ")}
	}
	w, _ := writers(c)
	for _, arg := range args {
		var err error
		if isScenario(arg) {
			err = checkScenario(w, arg, verbose)
		} else {
			err = checkSpec(w, arg, verbose)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkSpec checks one spec with the code run uses (compose.Explain is
// compose.Check with the effective parameters) and prints what it found.
func checkSpec(w io.Writer, arg string, verbose bool) error {
	sp, err := compose.Load(arg)
	if err != nil {
		return err
	}
	ls, err := compose.Explain(sp)
	if err != nil {
		return err
	}
	if sp.File != "" {
		fmt.Fprintf(w, "ok: %s (%s)\n", sp, sp.File)
	} else {
		fmt.Fprintf(w, "ok: %s\n", sp)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, l := range ls {
		needs := ""
		if len(l.Info.Needs) > 0 {
			needs = "(needs " + describeProps(l.Info.Needs) + ")"
		}
		if !verbose {
			line := "  " + l.Info.Name + "\tgives " + describeProps(l.Info.Gives)
			if needs != "" {
				line += "\t" + needs
			}
			fmt.Fprintln(tw, line)
			continue
		}
		// The layer's line has no tab, so each layer's parameter rows
		// align among themselves: name, effective value with its unit,
		// where it came from, what it means.
		fmt.Fprintln(tw, strings.TrimRight("  "+l.Info.Name+": gives "+describeProps(l.Info.Gives)+" "+needs, " "))
		for _, p := range l.Params.Schema() {
			from := "default"
			if l.Params.Given(p.Name) {
				from = "set"
			} else if l.Params.Fitted(p.Name) != "" {
				from = "fitted"
			}
			fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\n", p.Name, l.Params.Text(p.Name), from, p.Doc)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, l := range ls {
		for _, n := range l.Notes {
			fmt.Fprintf(w, "  note: %s: %s\n", l.Info.Name, n)
		}
	}
	if verbose {
		fmt.Fprintf(w, "  stack gives: %s\n", describeProps(compose.Gives(ls)))
		fmt.Fprintf(w, "  in full: %s\n", fullSpec(ls))
	}
	return nil
}

// fullSpec is the spec with every parameter written out at its effective
// value: a spec that builds the same stack whatever the defaults become.
func fullSpec(ls []compose.Checked) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		var args []string
		for _, p := range l.Params.Schema() {
			args = append(args, p.Name+"="+l.Params.Text(p.Name))
		}
		parts[i] = l.Info.Name
		if len(args) > 0 {
			parts[i] += "(" + strings.Join(args, ", ") + ")"
		}
	}
	return strings.Join(parts, " : ")
}

// checkScenario reads a scenario file exactly as run --scenario does
// (experiment's loader, then the whole-scenario check) and prints it.
func checkScenario(w io.Writer, path string, verbose bool) error {
	data, err := readfile.Read("scenario", path)
	if err != nil {
		return err
	}
	sc := experiment.Default()
	if err := sc.LoadFile(path); err != nil {
		return withCaret(err, path, string(data))
	}
	if err := sc.Check(); err != nil {
		return fmt.Errorf("%s: %s", path, strings.TrimPrefix(err.Error(), "scenario: "))
	}
	fmt.Fprintf(w, "ok: scenario %s\n", path)
	settings := strings.Fields(sc.Describe())
	if !verbose {
		fmt.Fprintf(w, "  %s\n", strings.Join(settings, " "))
		return nil
	}
	// Every key with its effective value, defaults filled in.
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range settings {
		k, v, _ := strings.Cut(s, "=")
		fmt.Fprintf(tw, "  %s\t%s\n", k, v)
	}
	return tw.Flush()
}

// withCaret turns the loader's "file:line: message" into the one error form
// of specs, file:line:col with the line and a caret under the key or the
// value at fault. An error of another shape is returned as it is.
func withCaret(err error, path, text string) error {
	rest, ok := strings.CutPrefix(err.Error(), path+":")
	if !ok {
		return err
	}
	num, msg, ok := strings.Cut(rest, ": ")
	n, aerr := strconv.Atoi(num)
	lines := strings.Split(text, "\n")
	if !ok || aerr != nil || n < 1 || n > len(lines) {
		return err
	}
	src := strings.TrimRight(lines[n-1], "\r")
	line := src
	if i := strings.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	// The loader names the key for an unknown key or a line with no
	// colon; otherwise the value is wrong.
	off := len(line) - len(strings.TrimLeft(line, " \t"))
	if k, v, found := strings.Cut(line, ":"); found && !strings.HasPrefix(msg, "unknown scenario key") && strings.TrimSpace(v) != "" {
		off = len(k) + 1 + len(v) - len(strings.TrimLeft(v, " \t"))
	}
	return &compose.SpecError{File: path, Line: n, Col: utf8.RuneCountInString(line[:off]) + 1, Msg: msg, Source: src}
}

// isScenario reports whether arg names a scenario file: by its extension,
// or, for another existing file, by content made only of `key: value`
// lines whose keys are not layer names.
func isScenario(arg string) bool {
	if strings.HasSuffix(arg, ".scenario") {
		return true
	}
	if strings.HasSuffix(arg, ".stack") {
		return false
	}
	st, err := os.Stat(arg)
	if err != nil || st.IsDir() || st.Size() > 1<<20 {
		return false
	}
	data, err := os.ReadFile(arg)
	return err == nil && looksLikeScenario(string(data))
}

// looksLikeScenario: every line (comments aside) is `key: value` with a
// lower-case key that is a scenario key, or is neither a layer name nor
// close to one. A one-line spec "fifo : reliable" has the same shape, so the
// keys decide.
func looksLikeScenario(text string) bool {
	var layers []string
	for _, l := range compose.Layers() {
		layers = append(layers, l.Name)
	}
	seen := false
	for _, line := range strings.Split(text, "\n") {
		text, k, v, ok := experiment.ScenarioLine(line)
		if text == "" {
			continue
		}
		if !ok || v == "" || !isKeyWord(k) {
			return false
		}
		if !isScenarioKey(k) {
			if _, near := compose.Nearest(k, layers); near {
				return false
			}
		}
		seen = true
	}
	return seen
}

// isKeyWord: a scenario key's shape, lower-case letters, digits and '-'.
func isKeyWord(s string) bool {
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || r == '-' && i > 0 || r >= '0' && r <= '9' && i > 0) {
			return false
		}
	}
	return s != ""
}

func isScenarioKey(k string) bool {
	for _, key := range experiment.Keys {
		if key.Name == k {
			return true
		}
	}
	return false
}

// anyFile reports whether some argument names a spec or scenario file
// rather than spec text.
func anyFile(args []string) bool {
	for _, a := range args {
		if strings.HasSuffix(a, ".stack") || strings.HasSuffix(a, ".scenario") {
			return true
		}
		if st, err := os.Stat(a); err == nil && !st.IsDir() {
			return true
		}
	}
	return false
}
