package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/experiment"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:      "run",
		Usage:     "run one stack under one scenario and report the metrics",
		ArgsUsage: "SPEC|FILE",
		Description: "Runs the stack on every node of the scenario (the simulator by default) and reports\n" +
			"deliveries, order, latency, loss and recovery, overhead and buffers. Flags may follow the spec.\n" +
			"--log-level debug prints every layer's log lines on stderr, each with the virtual time, the node and\n" +
			"the layer (on the simulator; off by default, and free when off).\n" +
			"Example: stacktool run specs/baseline.stack --loss uniform:5% --duration 10s",
		Flags: append(scenarioFlags(), &cli.StringFlag{Name: "log-level", Value: "info",
			Usage: "debug prints the layers' log lines (virtual time, node, layer: text) on stderr; info, warn or error print none"}),
		Action: runCmd,
	})
}

// extraBool are the boolean flags shared by run and compare.
var extraBool = []struct{ name, usage string }{
	{"json", "print JSON (run: one object, compare: an array) instead of the table"},
	{"no-wall", "leave wall-clock time out of the output (zero in JSON) so runs compare byte for byte"},
	{"progress", "show the progress line on stderr even when it is not a terminal"},
}

// scenarioFlags is the flag set run and compare share: every scenario key
// (experiment.Keys), --scenario, --network and the output switches.
func scenarioFlags() []cli.Flag {
	def := experiment.Default()
	defaults := map[string]string{
		"nodes": fmt.Sprint(def.Nodes), "groups-per-node": fmt.Sprint(def.GroupsPerNode),
		"group-size": fmt.Sprint(def.GroupSize), "senders": "all", "rate": def.RateText(),
		"msg-size": fmt.Sprint(def.MsgSize), "duration": def.Duration.String(), "warmup": "0s", "drain": def.Drain.String(),
		"loss": def.Loss, "latency": def.Latency.String(), "jitter": def.Jitter.String(),
		"seed": fmt.Sprint(def.Seed), "max-burst": fmt.Sprint(def.MaxBurst),
	}
	var fs []cli.Flag
	for _, k := range experiment.Keys {
		if k.Repeatable {
			fs = append(fs, &cli.StringSliceFlag{Name: k.Name, Usage: k.Usage})
			continue
		}
		fs = append(fs, &cli.StringFlag{Name: k.Name, Usage: k.Usage, Value: defaults[k.Name]})
	}
	fs = append(fs,
		&cli.StringFlag{Name: "scenario", Usage: "scenario file (key: value lines, same keys as these flags); flags given override it"},
		&cli.StringFlag{Name: "network", Value: "sim", Usage: "network: " + strings.Join(experiment.NetworkNames(), ", ")},
	)
	for _, b := range extraBool {
		fs = append(fs, &cli.BoolFlag{Name: b.name, Usage: b.usage})
	}
	return fs
}

// options are the parsed command line of run or compare.
type options struct {
	args     []string
	values   map[string][]string // string flags given, in order
	bools    map[string]bool
	scenario experiment.Scenario
	network  string
}

// parseOptions parses the command line of run or compare, whose scenario
// must be complete as given.
func parseOptions(c *cli.Context) (*options, error) {
	return parseCommand(c, []string{"log-level"}, nil, true)
}

// parseCommand collects the flags cli parsed (those before the first
// argument) and parses the rest, so flags may also follow the spec (the Go
// flag package stops at the first argument). Beside the scenario flags and
// extraBool it takes the string flags extra, of which those in repeated are
// slices; check says whether the scenario must pass Check as it stands (a
// sweep's parameters may still complete it).
func parseCommand(c *cli.Context, extra, repeated []string, check bool) (*options, error) {
	o := &options{values: map[string][]string{}, bools: map[string]bool{}}
	strs := []string{"scenario", "network"}
	for _, k := range experiment.Keys {
		strs = append(strs, k.Name)
		if k.Repeatable {
			repeated = append(repeated, k.Name)
		}
	}
	strs = append(strs, extra...)
	for _, name := range strs {
		if !c.IsSet(name) {
			continue
		}
		if slices.Contains(repeated, name) {
			o.values[name] = append(o.values[name], c.StringSlice(name)...)
		} else {
			o.values[name] = append(o.values[name], c.String(name))
		}
	}
	for _, b := range extraBool {
		o.bools[b.name] = c.Bool(b.name)
	}
	set := flag.NewFlagSet(c.Command.Name, flag.ContinueOnError)
	set.SetOutput(io.Discard)
	for _, name := range strs {
		set.Func(name, "", func(v string) error { o.values[name] = append(o.values[name], v); return nil })
	}
	for _, b := range extraBool {
		set.BoolFunc(b.name, "", func(string) error { o.bools[b.name] = true; return nil })
	}
	rest := c.Args().Slice()
	for len(rest) > 0 {
		if err := set.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, cli.ShowCommandHelp(c, c.Command.Name)
			}
			return nil, fmt.Errorf("%v (see 'stacktool %s --help')", err, c.Command.Name)
		}
		rest = set.Args()
		if len(rest) > 0 {
			if rest[0] == "--" {
				o.args = append(o.args, rest[1:]...)
				break
			}
			o.args = append(o.args, rest[0])
			rest = rest[1:]
		}
	}

	sc := experiment.Default()
	if f := last(o.values["scenario"]); f != "" {
		if err := sc.LoadFile(f); err != nil {
			return nil, err
		}
	}
	for _, k := range experiment.Keys {
		vs, ok := o.values[k.Name]
		if !ok {
			continue
		}
		if k.Repeatable {
			sc.Clear(k.Name) // flags replace the file's list of this key only
			for _, v := range vs {
				if err := sc.Set(k.Name, v); err != nil {
					return nil, fmt.Errorf("--%v", err)
				}
			}
			continue
		}
		if err := sc.Set(k.Name, last(vs)); err != nil {
			return nil, fmt.Errorf("--%v", err)
		}
	}
	if check {
		if err := sc.Check(); err != nil {
			return nil, err
		}
	}
	o.scenario = sc
	o.network = last(o.values["network"])
	if o.network == "" {
		o.network = "sim"
	}
	if _, ok := experiment.Networks[o.network]; !ok {
		return nil, fmt.Errorf("--network: unknown network %q; choose one of: %s", o.network, strings.Join(experiment.NetworkNames(), ", "))
	}
	return o, nil
}

// writers are the command's output and error streams: the app's, or the
// process's where the app sets none.
func writers(c *cli.Context) (out, errw io.Writer) {
	out, errw = c.App.Writer, c.App.ErrWriter
	if out == nil {
		out = os.Stdout
	}
	if errw == nil {
		errw = os.Stderr
	}
	return out, errw
}

// last is the last of vs, "" if there is none.
func last(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1]
}

// loadSpec reads and checks one spec (a spec string or a .stack file).
func loadSpec(arg string) (*compose.Spec, error) {
	if strings.TrimSpace(arg) == "" {
		return nil, fmt.Errorf("empty spec: give a spec such as 'fifo : reliable' or a .stack file")
	}
	sp, err := compose.Load(arg)
	if err != nil {
		return nil, err
	}
	if err := compose.Check(sp); err != nil {
		return nil, err
	}
	return sp, nil
}

func runCmd(c *cli.Context) error {
	o, err := parseOptions(c)
	if err != nil || o == nil {
		return err
	}
	switch {
	case len(o.args) == 0:
		return fmt.Errorf("run needs a spec: stacktool run SPEC|FILE [flags]")
	case len(o.args) > 1:
		return fmt.Errorf("run takes one spec, got %d (%s); use compare for several", len(o.args), strings.Join(o.args, ", "))
	}
	sp, err := loadSpec(o.args[0])
	if err != nil {
		return err
	}
	out, errw := writers(c)
	ctx := context.Background()
	logw, err := stackLogWriter(last(o.values["log-level"]), errw)
	if err != nil {
		return err
	}
	if logw != nil {
		ctx = experiment.WithStackLog(ctx, func(line string) {
			logw.WriteString(line)
			logw.WriteByte('\n')
		})
	}
	// the progress line would be torn by the log lines on the same stream
	show := o.bools["progress"] || logw == nil && isTerminal(errw)
	var p experiment.Progress
	if show {
		p = progressLine(errw, "")
	}
	r, err := experiment.Run(ctx, o.network, sp, o.scenario, p)
	if logw != nil {
		logw.Flush()
	}
	if show {
		fmt.Fprint(errw, "\r\033[K")
	}
	if err != nil {
		return err
	}
	if o.bools["no-wall"] {
		r = r.Mask()
	}
	reps := []*experiment.Report{r}
	if o.bools["json"] {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		err = enc.Encode(r)
	} else {
		err = experiment.WriteTable(out, reps, !o.bools["no-wall"])
	}
	if err != nil {
		return err
	}
	return brokenError(reps)
}

// stackLogWriter is where run's --log-level sends the stacks' log lines:
// a buffer on errw at debug, nil at any other level (the layers' lines are
// all debug lines, as on a real node), an error for a level that is none.
func stackLogWriter(level string, errw io.Writer) (*bufio.Writer, error) {
	if level == "" {
		return nil, nil
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	if lv > slog.LevelDebug {
		return nil, nil
	}
	return bufio.NewWriterSize(errw, 64<<10), nil
}

// brokenError is nil when every report kept its stack's promises, and
// otherwise an exit-1 error naming what broke.
func brokenError(reps []*experiment.Report) error {
	var parts []string
	for i, r := range reps {
		if len(r.Broken) == 0 {
			continue
		}
		who := r.Spec
		if len(reps) > 1 {
			who = fmt.Sprintf("[%d] %s", i+1, r.Spec)
		}
		parts = append(parts, who+": "+strings.Join(r.Broken, "; "))
	}
	if len(parts) == 0 {
		return nil
	}
	return brokenf("promise broken: %s", strings.Join(parts, " | "))
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// timeLeft is the wall time a run that has done the fraction f of its
// work in elapsed has left, at the pace so far ("about 12s left").
func timeLeft(elapsed time.Duration, f float64) string {
	if f <= 0 {
		return "time left unknown"
	}
	left := time.Duration(float64(elapsed) * (1 - min(f, 1)) / f)
	return fmt.Sprintf("up to about %v left", left.Round(time.Second))
}

// progressLine prints a progress line, overwritten in place, once the run
// has taken a second of wall time, at most five times a second.
func progressLine(w io.Writer, label string) experiment.Progress {
	start := time.Now()
	var lastPrint time.Time
	var lastEvents int64
	return func(p experiment.ProgressInfo) {
		now := time.Now()
		if now.Sub(start) < time.Second || now.Sub(lastPrint) < 200*time.Millisecond {
			return
		}
		rate := 0.0
		if !lastPrint.IsZero() {
			rate = float64(p.Events-lastEvents) / now.Sub(lastPrint).Seconds()
		} else {
			rate = float64(p.Events) / now.Sub(start).Seconds()
		}
		lastPrint, lastEvents = now, p.Events
		f := p.Done.Seconds() / max(p.Total.Seconds(), 1e-9)
		fmt.Fprintf(w, "\r\033[K%s%5.1f%% of at most %v virtual, %.2fM events/s, %s", label, 100*f, p.Total, rate/1e6, timeLeft(now.Sub(start), f))
	}
}
