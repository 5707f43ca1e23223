package udprun

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/experiment"
	"github.com/layercast/layercast/membership"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
	"github.com/layercast/layercast/transport/udp"
)

// quiet is how long a worker at rate max waits without a delivery, once it
// has sent everything, before it calls itself done (it cannot know how many
// messages to expect).
const quiet = time.Second

// Worker runs one node: `stacktool worker ARGS`. It speaks the line
// protocol of the package doc on in and out and returns when it has printed
// its report (or failed).
func Worker(args []string, in io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	id := fs.Uint("id", 0, "node id")
	specText := fs.String("spec", "", "stack spec")
	scText := fs.String("scenario", "", "scenario as JSON")
	ifName := fs.String("mcast-if", "lo", "multicast interface")
	mport := fs.Int("mcast-port", 0, "multicast port")
	deadline := fs.Duration("deadline", time.Minute, "stop by then whatever happens")
	gmsText := fs.String("gms", "", "membership service address: join --join through it instead of static views")
	joinText := fs.String("join", "", "with --gms: comma-separated group names to join")
	messages := fs.Int64("messages", 0, "cast exactly this many messages in all (0: as the scenario's rate and duration say)")
	fanout := fs.Bool("fanout", false, "carry multicast by unicast to every node of the address book")
	senderLoss := fs.Bool("sender-loss", true, "apply the scenario's loss model at a sending node too (false: at the nodes that only receive)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("worker: %v", err)
	}
	if *id == 0 || *id > 1<<31 {
		return fmt.Errorf("worker: --id %d out of range", *id)
	}
	self := event.NodeID(*id)
	if dir := os.Getenv(ProfileEnv); dir != "" {
		stop, err := startProfile(dir, self)
		if err != nil {
			return fmt.Errorf("worker %v: %v", self, err)
		}
		defer stop()
	}
	var sc experiment.Scenario
	if err := json.Unmarshal([]byte(*scText), &sc); err != nil {
		return fmt.Errorf("worker: --scenario: %v", err)
	}
	spec, err := compose.Parse(*specText)
	if err != nil {
		return fmt.Errorf("worker: --spec: %v", err)
	}
	if err := shortSlices(sc); err != nil {
		return fmt.Errorf("worker %v: %v", self, err)
	}
	entries, err := compose.Build(spec)
	if err != nil {
		return fmt.Errorf("worker: %v", err)
	}
	// With --gms the worker is a node like `stacktool node`: it joins
	// groups through the service, learns its peers from their traffic and
	// casts (at a fixed Rate only) over the groups it joined; the
	// scenario gives only the workload.
	var (
		gms     *net.UDPAddr
		service event.NodeID
		joining []event.GroupID
		asg     *experiment.Assignment
		learn   int
	)
	if *gmsText != "" {
		if gms, err = net.ResolveUDPAddr("udp4", *gmsText); err != nil {
			return fmt.Errorf("worker: --gms %q: %v", *gmsText, err)
		}
		if service, err = ServiceOf(spec); err != nil {
			return fmt.Errorf("worker: %v", err)
		}
		if joining, _, err = ParseGroups(*joinText); err != nil {
			return fmt.Errorf("worker: --join: %v", err)
		}
		asg = &experiment.Assignment{Of: map[event.NodeID][]event.GroupID{self: joining}}
		if sc.Rate > 0 {
			asg.Senders = []event.NodeID{self}
		}
		learn = NodeLearn
	} else if asg, err = experiment.Assign(sc); err != nil {
		return fmt.Errorf("worker: %v", err)
	}
	stopAt := time.Now().Add(*deadline)

	tcfg := TransportConfig(self, "", *ifName, *mport, service, gms, learn)
	tcfg.Fanout = *fanout
	tcfg.NoOffload = os.Getenv(NoOffloadEnv) != ""
	tr, err := udp.New(tcfg, nil)
	if err != nil {
		return fmt.Errorf("worker %v: %v", self, err)
	}
	defer tr.Close()
	w := bufio.NewWriter(out)
	say := func(format string, a ...any) {
		fmt.Fprintf(w, format+"\n", a...)
		w.Flush()
	}
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	timeout := time.NewTimer(time.Until(stopAt))
	defer timeout.Stop()
	expect := func(verb string) ([]string, error) {
		select {
		case l, ok := <-lines:
			f := strings.Fields(l)
			if !ok || len(f) == 0 || f[0] != verb {
				return nil, fmt.Errorf("worker %v: expected %q from the parent, got %q", self, verb, l)
			}
			return f[1:], nil
		case <-timeout.C:
			return nil, fmt.Errorf("worker %v: deadline passed waiting for %q", self, verb)
		}
	}

	say("ready %s", tr.LocalAddr())
	f, err := expect("start")
	if err != nil || len(f) != 2 {
		return fmt.Errorf("worker %v: bad start line: %v", self, err)
	}
	epochNs, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return fmt.Errorf("worker %v: epoch %q: %v", self, f[0], err)
	}
	for _, kv := range strings.Split(f[1], ",") {
		if kv == "-" {
			continue // an empty book
		}
		k, v, _ := strings.Cut(kv, "=")
		n, err1 := strconv.ParseUint(k, 10, 32)
		a, err2 := net.ResolveUDPAddr("udp4", v)
		if err := errors.Join(err1, err2); err != nil {
			return fmt.Errorf("worker %v: address book entry %q: %v", self, kv, err)
		}
		if err := tr.SetAddr(event.NodeID(n), a); err != nil {
			return err
		}
	}

	// Deliveries are recorded on the node goroutine; the main goroutine
	// reads them only after the node is closed.
	var (
		recs      []Record
		streams   = map[[2]uint32]*experiment.StreamCheck{} // (group, sender): the collector's checker
		delivered atomic.Int64
		lastAt    atomic.Int64
		rep       = WorkerReport{Node: self}
		nd        *stack.Node
	)
	expected := int64(-1) // joined through a service: nobody knows in advance
	if gms == nil {
		expected = expectedDeliveries(sc, asg, self, *messages)
	}
	if expected >= 0 {
		recs = make([]Record, 0, expected)
	}
	views := NewViews(self, joining)
	app := stack.AppFuncs{OnDeliver: func(d stack.Delivery) {
		st, err := experiment.ReadStamp(d.Payload)
		if err != nil || st.Group != d.Group || st.Sender != d.From {
			rep.Foreign++
			return
		}
		now := nd.Now()
		recs = append(recs, Record{Group: st.Group, Sender: st.Sender, Index: st.Index, Sent: st.Sent, At: now,
			By: d.Recovery.By, Discovered: d.Recovery.Discovered})
		k := [2]uint32{uint32(st.Group), uint32(st.Sender)}
		chk := streams[k]
		if chk == nil {
			chk = &experiment.StreamCheck{}
			streams[k] = chk
		}
		switch dup, late := chk.Deliver(st.Index, true); {
		case dup:
			rep.Duplicates++
			return
		case late:
			rep.FIFOViolations++
		}
		delivered.Add(1)
		lastAt.Store(int64(now))
	}, OnView: views.View}
	nd, err = stack.NewNode(stack.NodeConfig{
		Epoch: time.Unix(0, epochNs), BlockOnBackpressure: true,
		Stack: stack.Config{Self: self, Layers: entries, Transport: tr, App: app, Seed: sc.Seed},
	})
	if err != nil {
		return fmt.Errorf("worker %v: %v", self, err)
	}
	closeNode := sync.OnceFunc(nd.Close)
	defer closeNode()
	var loss *lossySink
	if sc.Loss != "" && sc.Loss != "none" && (*senderLoss || !isSender(asg, self)) {
		model, err := sim.ParseLoss(sc.Loss)
		if err != nil {
			return fmt.Errorf("worker %v: loss: %v", self, err)
		}
		loss = &lossySink{nd: nd, now: nd.Now, model: model, self: self, size: sc.MsgSize, rng: rand.New(rand.NewPCG(sc.Seed, uint64(self)))}
		tr.SetSink(loss)
	} else {
		tr.SetSink(nd)
	}
	if gms != nil {
		if err := views.Join(context.Background(), nd, gms, time.Until(stopAt)); err != nil {
			return fmt.Errorf("worker %v: %v", self, err)
		}
	} else if err := installStatic(nd, tr, asg, self); err != nil {
		return fmt.Errorf("worker %v: %v", self, err)
	}
	say("joined")
	f, err = expect("go")
	if err != nil || len(f) != 1 {
		return fmt.Errorf("worker %v: bad go line: %v", self, err)
	}
	goNs, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return fmt.Errorf("worker %v: go time %q: %v", self, f[0], err)
	}
	goAt := time.Unix(0, epochNs+goNs)

	sendDone := make(chan []SentCount, 1)
	if isSender(asg, self) {
		go func() { sendDone <- send(nd, sc, *messages, asg.Of[self], self, goAt, stopAt) }()
	} else {
		sendDone <- nil
	}

	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	sent, sending := []SentCount(nil), true
	for stopped := false; !stopped; {
		select {
		case sent = <-sendDone:
			sending = false
		case <-tick.C:
		case l, ok := <-lines:
			if !ok || l == "stop" {
				stopped = true
			}
		case <-timeout.C:
			stopped = true
		}
		if !sending && !rep.Done {
			if expected >= 0 && delivered.Load() >= expected ||
				expected < 0 && time.Since(time.Unix(0, epochNs+lastAt.Load())) > quiet {
				rep.Done = true
				say("done")
			}
		}
	}
	_ = nd.Do(func(st *stack.Stack) {
		rep.Layers = st.Counters()
		rep.Net = st.Net()
	})
	closeNode()
	if sending {
		sent = <-sendDone // a Cast blocked by back-pressure returns once the node is closed
	}
	rep.Transport = tr.Stats()
	if loss != nil {
		loss.mu.Lock()
		rep.LossData, rep.LossControl, rep.Drops = loss.data, loss.ctrl, loss.drops
		loss.mu.Unlock()
	}
	rep.Sent = sent
	rep.Deliveries = recs
	rep.Delivered = delivered.Load()
	rep.Expected = expected
	rep.LastDelivery = event.Time(lastAt.Load())
	rep.CPU = cpuTime()
	b, err := json.Marshal(&rep)
	if err != nil {
		return err
	}
	say("report %s", b)
	return nil
}

// installStatic installs the scenario's views at start, as the
// simulator's static membership does.
func installStatic(nd *stack.Node, tr *udp.Transport, asg *experiment.Assignment, self event.NodeID) error {
	views := make(map[event.GroupID]*event.ViewInfo, len(asg.Groups))
	for g, ms := range asg.Groups {
		views[g] = &event.ViewInfo{Group: g, ID: 1, Members: ms, Joined: ms}
	}
	nbs := membership.Static(views)
	var subErr error
	_ = nd.Do(func(st *stack.Stack) {
		for _, g := range asg.Of[self] {
			st.InstallView(views[g])
			if err := tr.Subscribe(g); err != nil && subErr == nil {
				subErr = err
			}
		}
		if nb := nbs[self]; nb != nil {
			st.InstallNeighbourhood(nb)
		}
	})
	return subErr
}

func isSender(asg *experiment.Assignment, id event.NodeID) bool {
	for _, s := range asg.Senders {
		if s == id {
			return true
		}
	}
	return false
}

// perGroup is how many of a sender's total messages go to its i-th of n
// groups (round-robin from the first).
func perGroup(total int64, i, n int) int64 {
	c := total / int64(n)
	if int64(i) < total%int64(n) {
		c++
	}
	return c
}

// total is how many messages each sender casts: messages if set, else
// the scenario's rate times its duration (-1 at rate max: as many as it
// can in the duration).
func total(sc experiment.Scenario, messages int64) int64 {
	switch {
	case messages > 0:
		return messages
	case sc.Rate > 0:
		return int64(sc.Duration.Seconds() * sc.Rate)
	}
	return -1
}

// expectedDeliveries is how many messages node self should deliver when
// every sender casts a known number (-1 otherwise: nobody knows in
// advance).
func expectedDeliveries(sc experiment.Scenario, asg *experiment.Assignment, self event.NodeID, messages int64) int64 {
	total := total(sc, messages)
	if total < 0 {
		return -1
	}
	mine := map[event.GroupID]bool{}
	for _, g := range asg.Of[self] {
		mine[g] = true
	}
	var n int64
	for _, s := range asg.Senders {
		if s == self {
			continue
		}
		for i, g := range asg.Of[s] {
			if mine[g] {
				n += perGroup(total, i, len(asg.Of[s]))
			}
		}
	}
	return n
}

// send is the sender's workload, as the simulator's: Rate messages per
// second over the node's groups in turn, for Duration from goAt (or as fast
// as the stack takes them at rate max; messages, if set, is the number to
// send, whatever the duration). Casts block while the stack pushes back.
func send(nd *stack.Node, sc experiment.Scenario, messages int64, groups []event.GroupID, self event.NodeID, goAt, stopAt time.Time) []SentCount {
	counts := make([]uint64, len(groups))
	buf := make([]byte, max(sc.MsgSize, experiment.PayloadHeader))
	total := total(sc, messages)
	var period time.Duration
	if sc.Rate > 0 {
		period = time.Duration(1e9 / sc.Rate)
	}
	time.Sleep(time.Until(goAt))
	end := goAt.Add(sc.Duration)
	for k := int64(0); total < 0 || k < total; k++ {
		now := time.Now()
		if total < 0 && !now.Before(end) || now.After(stopAt) {
			break
		}
		if period > 0 {
			// Sleep only when more than a millisecond ahead; behind
			// schedule, catch up at once.
			if due := goAt.Add(time.Duration(k) * period); due.Sub(now) > time.Millisecond {
				time.Sleep(due.Sub(now))
			}
		}
		if period == 0 {
			// At rate max, a burst of casts per visit to the node's
			// goroutine: one hand-off for many messages. A cast the stack
			// refuses ends the burst; the next one waits in Cast.
			burst := int64(0)
			_ = nd.Do(func(st *stack.Stack) {
				for ; burst < maxBurst && (total < 0 || k+burst < total); burst++ {
					i := int((k + burst) % int64(len(groups)))
					experiment.PutStamp(buf, experiment.Stamp{Sender: self, Group: groups[i], Index: counts[i], Sent: nd.Now()})
					if st.Cast(groups[i], buf) != nil {
						break
					}
					counts[i]++
				}
			})
			if burst > 0 {
				k += burst - 1
				continue
			}
		}
		i := int(k % int64(len(groups)))
		g := groups[i]
		experiment.PutStamp(buf, experiment.Stamp{Sender: self, Group: g, Index: counts[i], Sent: nd.Now()})
		if err := nd.Cast(g, buf); err != nil {
			break // closed
		}
		counts[i]++
	}
	out := make([]SentCount, len(groups))
	for i, g := range groups {
		out[i] = SentCount{Group: g, Count: counts[i]}
	}
	return out
}

// maxBurst bounds the casts a sender at rate max makes in one visit to
// its node's goroutine.
const maxBurst = 64

// lossySink applies the scenario's loss model (sim.ParseLoss syntax) to the
// packets this node receives, before its stack sees them, so --loss means
// on the udp network what it means on the simulator: every packet, data or
// control, is dropped at the receiver with the model's probability.
type lossySink struct {
	nd    *stack.Node
	self  event.NodeID
	mu    sync.Mutex // several reader goroutines
	model sim.LossModel
	rng   *rand.Rand
	data  int64
	ctrl  int64
	size  int // the scenario's message size: the payload is a data packet's tail
	now   func() event.Time
	drops []Record // data packets dropped that carried an experiment message
}

// Input drops packets by the model and hands the rest to the node.
func (l *lossySink) Input(b *stack.Batch) bool {
	l.Filter(b)
	if len(b.Pkts) == 0 {
		b.Release()
		return true
	}
	return l.nd.Input(b)
}

// Filter drops packets by the model (udp.Filter: the node's own polls
// lose packets too).
func (l *lossySink) Filter(b *stack.Batch) {
	keep := b.Pkts[:0]
	l.mu.Lock()
	for _, p := range b.Pkts {
		f, err := stack.ParseFrame(p)
		// Our own multicasts, looped back, are not network traffic (the
		// stack drops them): the model leaves them alone.
		own := err == nil && f.Src == l.self && f.Kind == event.Cast
		if own || !l.model.Drop(l.self, l.rng) {
			keep = append(keep, p)
			continue
		}
		if err == nil && f.Control {
			l.ctrl++
			continue
		}
		l.data++
		if r, ok := l.record(p); ok && len(l.drops) < MaxDropRecords {
			l.drops = append(l.drops, r)
		}
	}
	l.mu.Unlock()
	b.Pkts = keep
}

// Wake passes the transport's wake-up to the node.
func (l *lossySink) Wake() { l.nd.Wake() }

// record reads the experiment message a dropped data packet carried.
func (l *lossySink) record(p []byte) (Record, bool) {
	if l.size < experiment.PayloadHeader || len(p) < stack.FrameSize+l.size {
		return Record{}, false
	}
	st, err := experiment.ReadStamp(p[len(p)-l.size:])
	if err != nil {
		return Record{}, false
	}
	return Record{Group: st.Group, Sender: st.Sender, Index: st.Index, Sent: st.Sent, At: l.now()}, true
}

// NoOffloadEnv names the environment variable that, set (to anything),
// makes every worker run its transport without UDP GSO and GRO
// (udp.Config.NoOffload): to measure what offload gives.
const NoOffloadEnv = "LAYERCAST_NO_OFFLOAD"

// SliceEnv names the environment variable that sets the time slice every
// worker of a run at a fixed rate asks the kernel for (udp.ShortSlices):
// a duration, default udp.DefaultSlice; 0 leaves the kernel's default.
const SliceEnv = "LAYERCAST_SLICE"

// shortSlices asks for short time slices as SliceEnv says when the
// scenario casts at a fixed rate: its latency is what counts, and on a
// loaded machine each wake-up (a packet's, a timer's) waited for another
// process's slice. At rate max the default stays: throughput counts, and
// 100 us slices cost the sender 25% more CPU per message (bench, 1%
// loss: 0.94-0.99 -> 1.22-1.26 us) in switches. A kernel that refuses
// (before Linux 6.12 the slice is ignored, not refused; a seccomp filter
// might refuse) costs latency under load, not correctness: only a bad
// SliceEnv is an error.
func shortSlices(sc experiment.Scenario) error {
	d := udp.DefaultSlice
	if sc.Rate <= 0 {
		d = 0
	}
	if v := os.Getenv(SliceEnv); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d < 0 {
			return fmt.Errorf("%s=%q: want a duration such as 100us, or 0", SliceEnv, v)
		}
	}
	if d > 0 {
		_, _ = udp.ShortSlices(d)
	}
	return nil
}

// ProfileEnv names the environment variable that, set to a directory,
// makes every worker write a CPU profile of its whole run there
// (worker-ID.pprof): where a bench's CPU per message goes, process by
// process (go tool pprof).
const ProfileEnv = "LAYERCAST_CPUPROFILE"

// startProfile starts a CPU profile into dir/worker-ID.pprof and returns
// what stops and writes it.
func startProfile(dir string, self event.NodeID) (func(), error) {
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("worker-%d.pprof", self)))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", ProfileEnv, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %v", ProfileEnv, err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// cpuTime is the process's user and system CPU time so far (0 if unknown).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
