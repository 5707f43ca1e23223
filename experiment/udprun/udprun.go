package udprun

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/experiment"
	"github.com/layercast/layercast/stack"
)

func init() {
	experiment.Networks["udp"] = Run
	experiment.Networks["udp-fanout"] = RunFanout
}

// MaxNodes bounds the processes one run starts.
const MaxNodes = 64

// Interface is the multicast interface the workers use.
var Interface = "lo"

// Executable is the stacktool binary to re-execute as `stacktool worker`
// (default: this process's own executable).
var Executable = ""

// Stderr receives the workers' standard error (default os.Stderr).
var Stderr io.Writer = os.Stderr

// setupTimeout bounds each start-up phase (ready, joined) and the final
// reports.
const setupTimeout = 15 * time.Second

type line struct {
	w    int
	text string
	err  error // stdout closed
}

type worker struct {
	id    event.NodeID
	cmd   *exec.Cmd
	stdin io.WriteCloser
	addr  string
	done  bool
	said  string // the last verb it said
	rep   *WorkerReport
}

// Run is the "udp" network: one worker process per node, multicast on the
// loopback interface.
func Run(ctx context.Context, spec *compose.Spec, sc experiment.Scenario, progress experiment.Progress) (*experiment.Report, error) {
	rep, _, err := run(ctx, spec, sc, progress, BenchOptions{})
	return rep, err
}

// RunFanout is the "udp-fanout" network: Run with every multicast
// channel carried by unicast to each node (udp.Config.Fanout), for
// networks without IP multicast.
func RunFanout(ctx context.Context, spec *compose.Spec, sc experiment.Scenario, progress experiment.Progress) (*experiment.Report, error) {
	rep, _, err := run(ctx, spec, sc, progress, BenchOptions{Fanout: true})
	return rep, err
}

// BenchOptions are what Bench adds to a run.
type BenchOptions struct {
	// Messages is how many messages each sender casts (0: as the
	// scenario's rate and duration say).
	Messages int64
	// Fanout carries multicast by unicast fan-out (udp.Config.Fanout).
	Fanout bool
	// ReceiversOnlyLoss applies the scenario's loss model at the nodes
	// that only receive, not at the senders: loss "at the receivers" as
	// bench/peers inject it into JGroups (DISCARD) and NORM
	// (NormSetRxLoss), whose senders lose none of the NAKs and ACKs they
	// are sent. Without it every node drops, the sender's NAKs and
	// digests included.
	ReceiversOnlyLoss bool
}

// Usage is what each worker process of a Bench run cost.
type Usage struct {
	// CPU is each process's user and system CPU time (rusage) up to its
	// report (WorkerReport.CPU), or to its exit if it did not say.
	CPU map[event.NodeID]time.Duration
	// Sent and Delivered are each worker's casts and the deliveries its
	// own check counted.
	Sent, Delivered map[event.NodeID]int64
	// Senders are the nodes that cast.
	Senders []event.NodeID
}

// Bench is Run with a fixed workload: every sender casts messages messages
// as fast as its stack takes them (the scenario's Rate and Duration only
// bound the run) and the receivers are done once they delivered all of
// them. It also returns each worker process's CPU time.
func Bench(ctx context.Context, spec *compose.Spec, sc experiment.Scenario, o BenchOptions) (*experiment.Report, *Usage, error) {
	if o.Messages <= 0 {
		return nil, nil, fmt.Errorf("udp bench: %d messages: want at least 1", o.Messages)
	}
	return run(ctx, spec, sc, nil, o)
}

func run(ctx context.Context, spec *compose.Spec, sc experiment.Scenario, progress experiment.Progress, o BenchOptions) (*experiment.Report, *Usage, error) {
	wall := time.Now()
	if !o.Fanout {
		if err := CheckMulticast(Interface); err != nil {
			return nil, nil, err
		}
	}
	if len(sc.Faults) > 0 {
		return nil, nil, fmt.Errorf("udp network: faults (%s) are simulator-only for now; run them with --network sim", strings.Join(sc.Faults, ", "))
	}
	if sc.Capacity != "" && sc.Capacity != "none" && sc.Capacity != "unlimited" {
		return nil, nil, fmt.Errorf("udp network: --capacity %s is a simulator setting; on udp the machine's own capacity applies", sc.Capacity)
	}
	asg, err := experiment.Assign(sc)
	if err != nil {
		return nil, nil, err
	}
	if len(asg.Nodes) > MaxNodes {
		return nil, nil, fmt.Errorf("udp network: %d nodes would be %d processes; at most %d", len(asg.Nodes), len(asg.Nodes), MaxNodes)
	}
	if _, err := compose.Build(spec); err != nil {
		return nil, nil, err
	}
	exe := Executable
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return nil, nil, fmt.Errorf("udp network: cannot find the stacktool binary to start workers: %v", err)
		}
	}
	mport, err := freePort()
	if err != nil {
		return nil, nil, err
	}
	scJSON, err := jsonScenario(sc)
	if err != nil {
		return nil, nil, err
	}
	runFor := sc.Duration + sc.Drain
	deadline := runFor + 3*setupTimeout

	lines := make(chan line, 64)
	quit := make(chan struct{}) // the stdout readers stop when Run returns
	defer close(quit)
	ws := make([]*worker, len(asg.Nodes))
	// Whatever happens, no child outlives the run: the ones still running
	// at the end are killed by PID.
	defer func() {
		for _, w := range ws {
			if w == nil {
				continue
			}
			w.stdin.Close()
			if w.cmd.ProcessState == nil {
				_ = w.cmd.Process.Kill()
				_ = w.cmd.Wait()
			}
		}
	}()
	for i, id := range asg.Nodes {
		cmd := exec.Command(exe, "worker", "--id", strconv.Itoa(int(id)), "--spec", spec.String(),
			"--scenario", scJSON, "--mcast-if", Interface, "--mcast-port", strconv.Itoa(mport),
			"--deadline", deadline.String(), "--messages", strconv.FormatInt(o.Messages, 10), "--fanout="+strconv.FormatBool(o.Fanout),
			"--sender-loss="+strconv.FormatBool(!o.ReceiversOnlyLoss))
		cmd.Stderr = Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, nil, fmt.Errorf("udp network: start worker %v: %v", id, err)
		}
		ws[i] = &worker{id: id, cmd: cmd, stdin: stdin}
		go func(i int, r io.Reader) {
			s := bufio.NewScanner(r)
			s.Buffer(make([]byte, 1<<16), 1<<30) // the report line is long
			for s.Scan() {
				select {
				case lines <- line{w: i, text: s.Text()}:
				case <-quit:
					return
				}
			}
			select {
			case lines <- line{w: i, err: io.EOF}:
			case <-quit:
			}
		}(i, stdout)
	}

	// wait collects one verb from every worker (or the run's end).
	wait := func(verb string, timeout time.Duration, each func(w *worker, rest string) error, tick func()) error {
		got := 0
		t := time.NewTimer(timeout)
		defer t.Stop()
		tk := time.NewTicker(100 * time.Millisecond)
		defer tk.Stop()
		for got < len(ws) {
			select {
			case l := <-lines:
				w := ws[l.w]
				if l.err != nil && w.said == verb {
					continue // said it, then exited (after "report")
				}
				if l.err != nil {
					_ = w.cmd.Wait()
					return fmt.Errorf("udp network: worker %v exited before %q (%v)", w.id, verb, w.cmd.ProcessState)
				}
				v, rest, _ := strings.Cut(l.text, " ")
				if v != verb {
					return fmt.Errorf("udp network: worker %v said %q, expected %q", w.id, shorten(l.text), verb)
				}
				if err := each(w, rest); err != nil {
					return err
				}
				w.said = verb
				got++
			case <-tk.C:
				if tick != nil {
					tick()
				}
			case <-t.C:
				return fmt.Errorf("udp network: %d of %d workers did not say %q within %v", len(ws)-got, len(ws), verb, timeout)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	tell := func(msg string) {
		for _, w := range ws {
			_, _ = io.WriteString(w.stdin, msg+"\n")
		}
	}

	if err := wait("ready", setupTimeout, func(w *worker, rest string) error { w.addr = rest; return nil }, nil); err != nil {
		return nil, nil, err
	}
	book := make([]string, len(ws))
	for i, w := range ws {
		book[i] = fmt.Sprintf("%d=%s", w.id, w.addr)
	}
	epoch := time.Now()
	tell(fmt.Sprintf("start %d %s", epoch.UnixNano(), strings.Join(book, ",")))
	if err := wait("joined", setupTimeout, func(*worker, string) error { return nil }, nil); err != nil {
		return nil, nil, err
	}
	// Let every worker read "go" before the first message is due.
	goAt := event.Time(time.Since(epoch) + 50*time.Millisecond)
	tell(fmt.Sprintf("go %d", goAt))

	total := runFor
	err = wait("done", runFor+setupTimeout, func(w *worker, _ string) error { w.done = true; return nil }, func() {
		if progress != nil {
			progress(experiment.ProgressInfo{Done: min(time.Since(epoch)-goAt.Duration(), total), Total: total})
		}
	})
	var notes []string
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, err
		}
		notes = append(notes, err.Error()) // report what was delivered anyway
	}
	end := event.Time(time.Since(epoch))
	tell("stop")
	if err := wait("report", setupTimeout, func(w *worker, rest string) error {
		w.rep = new(WorkerReport)
		if err := json.Unmarshal([]byte(rest), w.rep); err != nil {
			return fmt.Errorf("udp network: worker %v: bad report: %v", w.id, err)
		}
		return nil
	}, nil); err != nil {
		return nil, nil, err
	}
	use := &Usage{CPU: map[event.NodeID]time.Duration{}, Sent: map[event.NodeID]int64{}, Delivered: map[event.NodeID]int64{}, Senders: asg.Senders}
	for _, w := range ws {
		w.stdin.Close()
		_ = w.cmd.Wait()
		if w.rep.CPU > 0 {
			use.CPU[w.id] = w.rep.CPU // up to its report, as the peers count theirs
		} else if ps := w.cmd.ProcessState; ps != nil {
			use.CPU[w.id] = ps.UserTime() + ps.SystemTime()
		}
		for _, c := range w.rep.Sent {
			use.Sent[w.id] += int64(c.Count)
		}
		use.Delivered[w.id] = w.rep.Delivered
	}
	return aggregate(spec, sc, asg, ws, goAt, end, time.Since(wall), notes), use, nil
}

// aggregate replays the workers' logs into the harness's collector, so the
// report has the simulator's fields with the same meaning.
func aggregate(spec *compose.Spec, sc experiment.Scenario, asg *experiment.Assignment, ws []*worker, goAt, end event.Time, wall time.Duration, notes []string) *experiment.Report {
	col := experiment.NewCollector(sc, asg)
	col.SetStart(goAt)
	for _, w := range ws {
		for _, s := range w.rep.Sent {
			for i := uint64(0); i < s.Count; i++ {
				col.Sent(w.id, s.Group, i)
			}
		}
	}
	payload := make([]byte, experiment.PayloadHeader)
	var nodes []experiment.NodeCounters
	var sendDrops, kernelDrops, truncated, lossData, lossCtrl int64
	for _, w := range ws {
		// Drops and deliveries in time order: a delivery after a drop of
		// its message at this receiver is a recovery.
		drops := w.rep.Drops
		for _, r := range w.rep.Deliveries {
			for len(drops) > 0 && drops[0].At <= r.At {
				dropRecord(col, w.id, &drops[0])
				drops = drops[1:]
			}
			experiment.PutStamp(payload, experiment.Stamp{Sender: r.Sender, Group: r.Group, Index: r.Index, Sent: r.Sent})
			d := stack.Delivery{Group: r.Group, From: r.Sender, Payload: payload,
				Recovery: event.Recovery{By: r.By, Discovered: r.Discovered}}
			col.Delivered(w.id, &d, r.At)
		}
		for i := range drops {
			dropRecord(col, w.id, &drops[i])
		}
		// Model drops beyond the records, tied to no message.
		col.DroppedUntied(experiment.DropModel, w.rep.LossData-int64(len(w.rep.Drops)))
		nodes = append(nodes, experiment.NodeCounters{Node: w.id, Alive: true, Layers: w.rep.Layers, Net: w.rep.Net})
		sendDrops += w.rep.Transport.SendDrops
		kernelDrops += w.rep.Transport.KernelDrops
		lossData += w.rep.LossData
		lossCtrl += w.rep.LossControl
		truncated += w.rep.Transport.Truncated
		if !w.done {
			notes = append(notes, fmt.Sprintf("worker %v stopped before it had everything: delivered %d of %d", w.id, w.rep.Delivered, w.rep.Expected))
		}
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Node < nodes[j].Node })
	notes = append(notes, fmt.Sprintf("udp: %d processes on %s, multicast on %s; times are wall-clock, latency and jitter are the host's own (the scenario's latency only sets the arrival estimate recovery latencies count from); dropped_overflow counts the kernel's drops: %d from full receive queues (SO_RXQ_OVFL; loss.dropped_by.kernel), %d refused at the send (loss.dropped_by.queue), data and control alike: the kernel cannot tell them apart nor say which message they carried", len(ws), "127.0.0.1", Interface, kernelDrops, sendDrops))
	col.DroppedUntied(experiment.DropKernel, kernelDrops)
	col.DroppedUntied(experiment.DropQueue, sendDrops)
	if truncated > 0 {
		notes = append(notes, fmt.Sprintf("udp: %d datagrams longer than the transport's MaxPacket dropped", truncated))
	}
	return col.Finish(experiment.Outcome{
		Spec: spec.String(), Network: "udp", End: end, Wall: wall,
		Nodes: nodes, DroppedByModel: lossData, DroppedControl: lossCtrl, DroppedOverflow: sendDrops + kernelDrops, Notes: notes,
	})
}

func shorten(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// freePort picks the base of NumChannelKinds consecutive UDP ports nobody
// uses right now, for the run's multicast channels. The base lies below the
// kernel's ephemeral range: the workers' unicast sockets take ephemeral
// ports after the check, and one that drew a channel's port would make every
// multicast bind of that port fail with "address already in use" (CI, stop
// 31: 47853).
func freePort() (int, error) {
	lo, hi := ephemeralRange()
	n := int(event.NumChannelKinds)
	// Ports 20000 up to the ephemeral range, or above it if it starts low.
	from, to := 20000, lo-n
	if to-from < 1000 {
		from, to = hi+1, 65536-n
	}
	if to-from < 1 {
		return 0, fmt.Errorf("udp network: no room for %d multicast ports outside the ephemeral range %d-%d", n, lo, hi)
	}
	start := int(time.Now().UnixNano()/1000) % (to - from)
	for try := 0; try < 64; try++ {
		base := from + (start+try*7919)%(to-from)
		if portsFree(base, n) {
			return base, nil
		}
	}
	return 0, fmt.Errorf("udp network: found no %d free consecutive UDP ports in %d-%d", n, from, to+n-1)
}

// portsFree says whether ports base to base+n-1 can each be bound on every
// address (no socket holds them on any address).
func portsFree(base, n int) bool {
	for p := base; p < base+n; p++ {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{Port: p})
		if err != nil {
			return false
		}
		c.Close()
	}
	return true
}

// ephemeralRange is the kernel's range of ports for sockets bound to port 0
// (Linux's default when it cannot be read).
func ephemeralRange() (lo, hi int) {
	lo, hi = 32768, 60999
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	f := strings.Fields(string(b))
	if len(f) == 2 {
		a, err1 := strconv.Atoi(f[0])
		z, err2 := strconv.Atoi(f[1])
		if err1 == nil && err2 == nil && a > 0 && a <= z {
			return a, z
		}
	}
	return lo, hi
}

// howTo is how to get a network where the udp runs may multicast.
const howTo = "run inside a network namespace with loopback only, e.g.\n" +
	"  sudo unshare -n sh -c 'ip link set lo up; ip link set lo multicast on; ip route add 224.0.0.0/4 dev lo; stacktool run ... --network udp'\n" +
	"or set the same up in a namespace made with `ip netns add` and use `ip netns exec NAME stacktool run ...`"

// CheckMulticast says whether interface name can carry the runs' multicast:
// it must be up, have the MULTICAST flag, and have a route for 224.0.0.0/4.
func CheckMulticast(name string) error {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return fmt.Errorf("udp network: interface %q: %v; %s", name, err, howTo)
	}
	if ifi.Flags&net.FlagUp == 0 || ifi.Flags&net.FlagMulticast == 0 {
		return fmt.Errorf("udp network: interface %s is not up with the MULTICAST flag (flags: %v); %s", name, ifi.Flags, howTo)
	}
	ok, err := hasMulticastRoute(name)
	if err != nil {
		return fmt.Errorf("udp network: reading routes: %v", err)
	}
	if !ok {
		return fmt.Errorf("udp network: no route for 224.0.0.0/4 on %s; %s", name, howTo)
	}
	return nil
}

// hasMulticastRoute looks in /proc/net/route for a route on ifname that
// covers 224.0.0.0/4 (the file prints addresses as little-endian hex).
func hasMulticastRoute(ifname string) (bool, error) {
	b, err := os.ReadFile("/proc/net/route")
	if err != nil {
		return false, err
	}
	le := func(h string) (uint32, error) {
		x, err := hex.DecodeString(h)
		if err != nil || len(x) != 4 {
			return 0, errors.New("bad address " + h)
		}
		return uint32(x[3])<<24 | uint32(x[2])<<16 | uint32(x[1])<<8 | uint32(x[0]), nil
	}
	for _, l := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(l)
		if len(f) < 8 || f[0] != ifname {
			continue
		}
		dst, err1 := le(f[1])
		mask, err2 := le(f[7])
		if err1 != nil || err2 != nil {
			continue
		}
		// The route covers 224/4 if its mask is no longer than /4 and
		// 224.0.0.0 matches it.
		if mask&0xf0000000 == mask && 0xe0000000&mask == dst&mask {
			return true, nil
		}
	}
	return false, nil
}

func jsonScenario(sc experiment.Scenario) (string, error) {
	b, err := json.Marshal(sc)
	return string(b), err
}

// dropRecord hands one of a worker's dropped data packets to the collector.
func dropRecord(col *experiment.Collector, rx event.NodeID, r *Record) {
	col.Dropped(experiment.DropModel, rx, &experiment.Stamp{Sender: r.Sender, Group: r.Group, Index: r.Index, Sent: r.Sent})
}
