package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/experiment"
	"github.com/layercast/layercast/experiment/udprun"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:      "bench",
		Usage:     "1 sender and K receiver processes over loopback multicast: messages per second, latency and CPU per message",
		ArgsUsage: "SPEC|FILE",
		Description: "Runs the stack over UDP as `run --network udp` does (one process per node, multicast on --mcast-if),\n" +
			"with one sender casting --messages messages of --size bytes as fast as its stack takes them, and\n" +
			"reports as run does plus the CPU time of every process and per message. --netns runs it in a network\n" +
			"namespace of its own, made and removed here (needs root). bench/peers and scripts/bench-peers.sh run\n" +
			"JGroups and NORM through the same work.\n" +
			"Example: stacktool bench 'fifo : reliable : pack' --receivers 3 --messages 200000 --size 1000 --netns",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "receivers", Value: 3, Usage: "receiver processes (1 to 63)"},
			&cli.Int64Flag{Name: "messages", Value: 200000, Usage: "messages the sender casts"},
			&cli.IntFlag{Name: "size", Value: 1000, Usage: "payload bytes per message (24 to 60000)"},
			&cli.StringFlag{Name: "loss", Value: "none", Usage: "loss at the receivers: a percentage (1%) or a loss model (uniform:1%, bursty:P,b, markov:P,m)"},
			&cli.BoolFlag{Name: "sender-loss", Value: true, Usage: "apply --loss at the sender too, to the NAKs and acknowledgements it is sent (--sender-loss=false: at the receivers only, as bench/peers inject loss into JGroups and NORM)"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of the loss model and the stacks"},
			&cli.StringFlag{Name: "mcast-if", Value: "lo", Usage: "multicast interface (set explicitly on every socket)"},
			&cli.BoolFlag{Name: "netns", Usage: "run inside a network namespace made for the run (loopback with multicast; needs root)"},
			&cli.BoolFlag{Name: "fanout", Usage: "carry multicast by unicast to each member, for networks without IP multicast (with --netns: a namespace without a multicast route)"},
			&cli.BoolFlag{Name: "json", Usage: "print run's JSON plus cpu_seconds and cpu_us_per_msg"},
		},
		Action: benchCmd,
	})
}

// BenchCPU is what bench adds to run's report.
type BenchCPU struct {
	// Seconds is each process's user and system CPU time, by node, up to
	// the report it gives the parent (as the peers count theirs: encoding
	// the delivery log is the harness's cost, not the stack's).
	Seconds map[string]float64 `json:"cpu_seconds"`
	// PerMsg is CPU microseconds per message: the sender's per message
	// cast, the receivers' mean per message delivered.
	PerMsg struct {
		Sender       float64 `json:"sender"`
		ReceiverMean float64 `json:"receiver_mean"`
	} `json:"cpu_us_per_msg"`
}

// benchOptions is bench's command line: the flags cli parsed (those before
// the spec) and those after it.
type benchOptions struct {
	spec                string
	receivers, size     int
	messages            int64
	loss, mcastIf       string
	seed                uint64
	netns, json, fanout bool
	senderLoss          bool
}

func parseBench(c *cli.Context) (*benchOptions, error) {
	o := &benchOptions{receivers: c.Int("receivers"), size: c.Int("size"), messages: c.Int64("messages"),
		loss: c.String("loss"), mcastIf: c.String("mcast-if"), seed: c.Uint64("seed"), netns: c.Bool("netns"), json: c.Bool("json"), fanout: c.Bool("fanout"),
		senderLoss: c.Bool("sender-loss")}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&o.receivers, "receivers", o.receivers, "")
	fs.IntVar(&o.size, "size", o.size, "")
	fs.Int64Var(&o.messages, "messages", o.messages, "")
	fs.StringVar(&o.loss, "loss", o.loss, "")
	fs.StringVar(&o.mcastIf, "mcast-if", o.mcastIf, "")
	fs.Uint64Var(&o.seed, "seed", o.seed, "")
	fs.BoolVar(&o.netns, "netns", o.netns, "")
	fs.BoolVar(&o.json, "json", o.json, "")
	fs.BoolVar(&o.fanout, "fanout", o.fanout, "")
	fs.BoolVar(&o.senderLoss, "sender-loss", o.senderLoss, "")
	args, err := splitArgs(c, fs)
	if err != nil {
		return nil, err
	}
	if len(args) != 1 {
		return nil, fmt.Errorf("bench needs one spec: stacktool bench SPEC|FILE [flags], got %d arguments", len(args))
	}
	o.spec = args[0]
	return o, nil
}

// splitArgs parses the flags fs knows wherever they stand among c's
// arguments (cli stops at the first argument; flags may follow it) and
// returns the arguments.
func splitArgs(c *cli.Context, fs *flag.FlagSet) ([]string, error) {
	var args []string
	for rest := c.Args().Slice(); len(rest) > 0; {
		if err := fs.Parse(rest); err != nil {
			return nil, fmt.Errorf("%v (see 'stacktool %s --help')", err, c.Command.Name)
		}
		if rest = fs.Args(); len(rest) > 0 {
			args, rest = append(args, rest[0]), rest[1:]
		}
	}
	return args, nil
}

func benchCmd(c *cli.Context) error {
	o, err := parseBench(c)
	if err != nil {
		return err
	}
	if o.netns {
		return benchInNetns(c, o.fanout)
	}
	k, m, size := o.receivers, o.messages, o.size
	switch {
	case k < 1 || k+1 > udprun.MaxNodes:
		return fmt.Errorf("--receivers %d: want 1 to %d", k, udprun.MaxNodes-1)
	case m < 1 || m > 1e9:
		return fmt.Errorf("--messages %d: want 1 to 1000000000", m)
	case size < experiment.PayloadHeader || size > maxCastSize:
		return fmt.Errorf("--size %d: want %d to %d bytes", size, experiment.PayloadHeader, maxCastSize)
	}
	spec, err := loadSpec(o.spec)
	if err != nil {
		return err
	}
	sc := experiment.Default()
	sc.Nodes, sc.GroupsPerNode, sc.GroupSize, sc.Senders = k+1, 1, k+1, 1
	sc.Rate, sc.MsgSize, sc.Seed = 0, size, o.seed
	// The duration only bounds the run: at least 10 s, or 5,000 messages
	// a second.
	sc.Duration = max(10*time.Second, time.Duration(m)*time.Second/5000)
	sc.Drain = 10 * time.Second
	loss := o.loss
	if loss != "none" && !strings.Contains(loss, ":") {
		loss = "uniform:" + loss
	}
	if err := sc.Set("loss", loss); err != nil {
		return fmt.Errorf("--%v", err)
	}
	if err := sc.Check(); err != nil {
		return err
	}
	udprun.Interface = o.mcastIf
	rep, use, err := udprun.Bench(context.Background(), spec, sc, udprun.BenchOptions{Messages: m, Fanout: o.fanout, ReceiversOnlyLoss: !o.senderLoss})
	if err != nil {
		return err
	}
	if rep.SimSeconds > 0 {
		rep.OfferedMsgsPerS = float64(rep.MessagesSent) / rep.SimSeconds
	}
	rep.Notes = append(rep.Notes, fmt.Sprintf("bench: %d messages cast at rate max; the scenario's duration only bounds the run, offered load is over the run's time", m))
	cpu := benchCPU(use)
	out, _ := writers(c)
	if o.json {
		b, err := benchJSON(rep, cpu)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s\n", b)
	} else {
		if err := experiment.WriteTable(out, []*experiment.Report{rep}, true); err != nil {
			return err
		}
		ids := make([]string, 0, len(cpu.Seconds))
		for id := range cpu.Seconds {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			role := "receiver"
			if slices.ContainsFunc(use.Senders, func(n event.NodeID) bool { return n.String() == id }) {
				role = "sender"
			}
			fmt.Fprintf(out, "cpu %-6s %-8s %8.3f s\n", id, role, cpu.Seconds[id])
		}
		fmt.Fprintf(out, "cpu per message (us): sender %.3f, receiver mean %.3f\n", cpu.PerMsg.Sender, cpu.PerMsg.ReceiverMean)
	}
	return brokenError([]*experiment.Report{rep})
}

// benchCPU turns the workers' rusage into seconds per process and
// microseconds per message.
func benchCPU(use *udprun.Usage) BenchCPU {
	var out BenchCPU
	out.Seconds = map[string]float64{}
	var rxSum float64
	var rxN int
	for id, d := range use.CPU {
		out.Seconds[id.String()] = d.Seconds()
		if slices.Contains(use.Senders, id) {
			if n := use.Sent[id]; n > 0 {
				out.PerMsg.Sender = d.Seconds() * 1e6 / float64(n)
			}
			continue
		}
		if n := use.Delivered[id]; n > 0 {
			rxSum += d.Seconds() * 1e6 / float64(n)
			rxN++
		}
	}
	if rxN > 0 {
		out.PerMsg.ReceiverMean = rxSum / float64(rxN)
	}
	return out
}

// benchJSON is run's JSON object with bench's fields added.
func benchJSON(rep *experiment.Report, cpu BenchCPU) ([]byte, error) {
	b, err := json.Marshal(rep)
	if err != nil {
		return nil, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, err
	}
	for k, v := range map[string]any{"cpu_seconds": cpu.Seconds, "cpu_us_per_msg": cpu.PerMsg} {
		if obj[k], err = json.Marshal(v); err != nil {
			return nil, err
		}
	}
	return json.MarshalIndent(obj, "", "  ")
}

// benchInNetns runs this same command line, without --netns, inside a
// network namespace made for it (loopback up, multicast on, a route for
// 224.0.0.0/4; with fan-out, no multicast at all) and removes the
// namespace afterwards, whatever happened.
func benchInNetns(c *cli.Context, fanout bool) error {
	if os.Geteuid() != 0 {
		return errors.New("--netns: making a network namespace needs root (run as root, or leave --netns out and run inside a namespace of your own)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("--netns: the ip command (iproute2) is not installed")
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("--netns: cannot find the stacktool binary: %v", err)
	}
	name := fmt.Sprintf("lcbench%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		return fmt.Errorf("--netns: ip netns add %s: %v: %s", name, err, strings.TrimSpace(string(out)))
	}
	defer exec.Command("ip", "netns", "del", name).Run()
	setup := [][]string{{"link", "set", "lo", "up"}}
	if !fanout { // with fan-out, a namespace where multicast goes nowhere
		setup = append(setup, []string{"link", "set", "lo", "multicast", "on"}, []string{"route", "add", "224.0.0.0/4", "dev", "lo"})
	}
	for _, args := range setup {
		if out, err := exec.Command("ip", append([]string{"netns", "exec", name, "ip"}, args...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("--netns: ip %s in %s: %v: %s", strings.Join(args, " "), name, err, strings.TrimSpace(string(out)))
		}
	}
	args := []string{"netns", "exec", name, exe}
	for _, a := range os.Args[1:] {
		if a != "--netns" && a != "-netns" && a != "--netns=true" && a != "-netns=true" {
			args = append(args, a)
		}
	}
	cmd := exec.Command("ip", args...)
	out, errw := writers(c)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, out, errw
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		// The inner command said what went wrong; pass its exit code on.
		return &exitError{code: ee.ExitCode(), err: fmt.Errorf("bench in namespace %s: %v", name, ee)}
	}
	return err
}
