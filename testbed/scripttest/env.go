package scripttest

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// Defaults of an Env; the script's net command changes them.
const (
	defaultLatency = time.Millisecond
	// defaultBound is how long stabilize runs at most.
	defaultBound = 10 * time.Second
	// maxCount bounds one cast command's count=N.
	maxCount = 10000
	// maxRun bounds one advance or stabilize, so a typo (advance 10h)
	// cannot keep a test busy for minutes.
	maxRun = 10 * time.Minute
)

// Env is one scripted scenario: a simulated network, one stack per node
// built from the script's spec, the membership service if the spec has a
// gms layer, and the record of everything the application saw. It runs on
// the caller's goroutine; every command steps the simulator to completion.
type Env struct {
	seed     uint64
	latency  time.Duration
	jitter   time.Duration
	net      *sim.Network
	loss     switchLoss
	spec     *compose.Spec
	specText string
	fifo     bool // the stack gives FIFO order: check it

	ids     []event.NodeID // member nodes, in the order added
	stacks  map[event.NodeID]*stack.Stack
	service event.NodeID // NoNode: static membership
	svcSpec *compose.Spec

	static map[event.GroupID]*event.ViewInfo // the last static view of each group
	views  map[event.NodeID]map[event.GroupID]*event.ViewInfo
	// gap[r][g] is the number of casts recorded when r last saw itself
	// outside g: casts before it are not owed to r.
	gap map[event.NodeID]map[event.GroupID]int

	casts []cast
	seqs  map[event.GroupID]map[event.NodeID]uint32
	got   map[msgID]map[event.NodeID]int // deliveries of each message per receiver
	last  map[event.NodeID]map[streamID]uint32
	lost  map[event.NodeID]map[streamID]int // Lost events per receiver and stream

	out        strings.Builder // the current command's output
	drops      map[string]int  // drops by reason during the current command
	traceDrops bool
	quiet      bool                 // count casts and deliveries instead of printing them
	nCast      map[event.NodeID]int // casts during the current command (quiet)
	nDeliv     map[event.NodeID]int // deliveries during the current command (quiet)
	nRecov     map[event.NodeID]int // of which recovered (quiet)
	nSkip      map[event.NodeID]int // casts skipped, the node down or frozen (quiet)
	tracePkts  bool
	lastPkt    event.Time // last send or delivery on the network
	anyPkt     bool       // lastPkt is set
	violations []string
}

// streamID is one sender's stream in one group.
type streamID struct {
	g event.GroupID
	s event.NodeID
}

// msgID names a message the script cast: its sender's stream and number.
type msgID struct {
	streamID
	seq uint32
}

// cast records what a cast command sent and to whom it was owed.
type cast struct {
	msgID
	text    string
	members []event.NodeID // the sender's view of the group when it cast
}

// switchLoss is the network's loss model, replaced by the loss command. It
// draws from the network's random source only while a model is set, so a
// script without loss sees the same jitter with or without this wrapper.
type switchLoss struct {
	m  sim.LossModel
	to []event.NodeID // if set, only packets to these nodes are exposed
}

// Drop implements sim.LossModel.
func (l *switchLoss) Drop(rx event.NodeID, rng *rand.Rand) bool {
	if l.m == nil || len(l.to) > 0 && !slices.Contains(l.to, rx) {
		return false
	}
	return l.m.Drop(rx, rng)
}

// NewEnv makes an empty scenario: seed 1, latency 1ms, no jitter, no loss.
func NewEnv() *Env {
	return &Env{
		seed: 1, latency: defaultLatency,
		stacks: map[event.NodeID]*stack.Stack{},
		static: map[event.GroupID]*event.ViewInfo{},
		views:  map[event.NodeID]map[event.GroupID]*event.ViewInfo{},
		gap:    map[event.NodeID]map[event.GroupID]int{},
		seqs:   map[event.GroupID]map[event.NodeID]uint32{},
		got:    map[msgID]map[event.NodeID]int{},
		last:   map[event.NodeID]map[streamID]uint32{},
		lost:   map[event.NodeID]map[streamID]int{},
		drops:  map[string]int{},
		nCast:  map[event.NodeID]int{},
		nDeliv: map[event.NodeID]int{},
		nRecov: map[event.NodeID]int{},
		nSkip:  map[event.NodeID]int{},
	}
}

// Run executes one command line and returns what it caused, one event per
// line. A malformed command prints one line starting "error:".
func (e *Env) Run(line string) string {
	e.out.Reset()
	clear(e.drops)
	clear(e.nCast)
	clear(e.nDeliv)
	clear(e.nRecov)
	clear(e.nSkip)
	args, err := split(line)
	if err == nil && len(args) == 0 {
		err = fmt.Errorf("%w: empty command", errUsage)
	}
	if err == nil {
		err = e.dispatch(args[0], args[1:])
	}
	if err != nil {
		e.printf("error: %v", err)
	}
	e.flushCounts()
	e.flushDrops()
	return e.out.String()
}

// commands maps a command name to its handler and a one-line usage.
var commands = map[string]struct {
	fn    func(e *Env, args []string) error
	usage string
}{
	"seed":      {(*Env).cmdSeed, "seed N"},
	"net":       {(*Env).cmdNet, "net latency=D jitter=D"},
	"nodes":     {(*Env).cmdNodes, "nodes ID..."},
	"spec":      {(*Env).cmdSpec, "spec LAYER : LAYER ..."},
	"view":      {(*Env).cmdView, "view GROUP ID..."},
	"join":      {(*Env).cmdJoin, "join ID[,ID...] GROUP"},
	"leave":     {(*Env).cmdLeave, "leave ID[,ID...] GROUP"},
	"cast":      {(*Env).cmdCast, "cast ID GROUP [\"text\"] [count=N] [every=D]"},
	"advance":   {(*Env).cmdAdvance, "advance D"},
	"stabilize": {(*Env).cmdStabilize, "stabilize [max=D]"},
	"partition": {(*Env).cmdPartition, "partition ID,ID | ID,ID ..."},
	"heal":      {(*Env).cmdHeal, "heal"},
	"crash":     {(*Env).cmdCrash, "crash ID"},
	"freeze":    {(*Env).cmdFreeze, "freeze ID D"},
	"loss":      {(*Env).cmdLoss, "loss MODEL|none [to=ID,ID...]"},
	"trace":     {(*Env).cmdTrace, "trace drops|packets|off"},
	"quiet":     {(*Env).cmdQuiet, "quiet on|off"},
	"print":     {(*Env).cmdPrint, "print counters LAYER [ID...] | print views | print net"},
	"check":     {(*Env).cmdCheck, "check delivered"},
}

func (e *Env) dispatch(name string, args []string) error {
	c, ok := commands[name]
	if !ok {
		var names []string
		for n := range commands {
			names = append(names, n)
		}
		if near, ok := compose.Nearest(name, names); ok {
			return fmt.Errorf("unknown command %q (did you mean %q?)", name, near)
		}
		return fmt.Errorf("unknown command %q", name)
	}
	if err := c.fn(e, args); err != nil {
		if strings.Contains(err.Error(), errUsage.Error()) {
			return fmt.Errorf("%v (usage: %s)", err, c.usage)
		}
		return err
	}
	return nil
}

func (e *Env) printf(format string, args ...any) {
	fmt.Fprintf(&e.out, format, args...)
	e.out.WriteByte('\n')
}

// event prints one event line stamped with the virtual time.
func (e *Env) event(format string, args ...any) {
	e.out.WriteString(DescribeTime(e.now()))
	e.out.WriteByte(' ')
	e.printf(format, args...)
}

func (e *Env) now() event.Time {
	if e.net == nil {
		return 0
	}
	return e.net.Now()
}

// flushCounts prints, in quiet mode, how many casts and deliveries each
// node made during the command.
func (e *Env) flushCounts() {
	line := func(what string, m map[event.NodeID]int) {
		if len(m) == 0 {
			return
		}
		var parts []string
		for _, id := range slices.Sorted(maps.Keys(m)) {
			p := fmt.Sprintf("n%d=%d", id, m[id])
			if what == "delivered" && e.nRecov[id] > 0 {
				p += fmt.Sprintf("(%d recovered)", e.nRecov[id])
			}
			parts = append(parts, p)
		}
		e.printf("%s: %s", what, strings.Join(parts, " "))
	}
	line("cast", e.nCast)
	line("cast skipped (down or frozen)", e.nSkip)
	line("delivered", e.nDeliv)
}

func (e *Env) flushDrops() {
	if len(e.drops) == 0 {
		return
	}
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(e.drops)) {
		parts = append(parts, fmt.Sprintf("%s=%d", r, e.drops[r]))
	}
	e.printf("drops: %s", strings.Join(parts, " "))
}

// network makes the simulator on first use: seed, latency and jitter are
// fixed from then on.
func (e *Env) network() *sim.Network {
	if e.net == nil {
		e.net = sim.New(sim.Config{Seed: e.seed, Latency: e.latency, Jitter: e.jitter, Loss: &e.loss, Trace: e.trace})
	}
	return e.net
}

func (e *Env) trace(ev sim.TraceEvent) {
	switch ev.Kind {
	case sim.TraceSend, sim.TraceDeliver:
		e.lastPkt, e.anyPkt = ev.At, true
		if e.tracePkts {
			e.printf("%s", DescribeTrace(ev, e.service))
		}
	case sim.TraceDrop:
		e.drops[ev.Reason]++
		if e.traceDrops || e.tracePkts {
			e.printf("%s", DescribeTrace(ev, e.service))
		}
	case sim.TraceFault:
		e.printf("%s", DescribeTrace(ev, e.service))
	}
}

func (e *Env) cmdSeed(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("%w: seed takes one number", errUsage)
	}
	if e.net != nil {
		return fmt.Errorf("seed must come before the network is used")
	}
	v, err := strconv.ParseUint(args[0], 10, 64)
	if err != nil {
		return fmt.Errorf("seed %q: not a number", args[0])
	}
	e.seed = v
	return nil
}

func (e *Env) cmdNet(args []string) error {
	if e.net != nil {
		return fmt.Errorf("net must come before the network is used")
	}
	kv, err := settingsOnly(args)
	if err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		d, err := parseDuration(kv[k])
		if err != nil {
			return fmt.Errorf("%s: %v", k, err)
		}
		switch k {
		case "latency":
			e.latency = d
		case "jitter":
			e.jitter = d
		default:
			return fmt.Errorf("%w: unknown setting %q", errUsage, k)
		}
	}
	return nil
}

func (e *Env) cmdNodes(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: no node ids", errUsage)
	}
	n := len(e.ids)
	for _, a := range args {
		id, err := parseNode(a)
		if err == nil && (slices.Contains(e.ids, id) || id == e.service) {
			err = fmt.Errorf("node %v exists already", id)
		}
		if err != nil {
			e.ids = e.ids[:n]
			return err
		}
		e.ids = append(e.ids, id)
	}
	if err := e.build(); err != nil {
		e.ids = e.ids[:n]
		return err
	}
	return nil
}

func (e *Env) cmdSpec(args []string) error {
	if e.spec != nil {
		return fmt.Errorf("the spec is set already (%s)", e.specText)
	}
	text := strings.Join(args, " ")
	sp, err := compose.Parse(text)
	if err != nil {
		return err
	}
	ls, err := compose.Explain(sp)
	if err != nil {
		return err
	}
	e.fifo = slices.Contains(compose.Gives(ls), compose.FIFO)
	// A spec whose layers name a membership service (gms) gets it, as the
	// simulator's runs do: its id and spec are what the layer asks for.
	need, _, err := compose.ServiceNeedOf(ls)
	if err != nil {
		return err
	}
	if need != nil {
		e.service = need.Node
		if e.svcSpec, err = compose.Parse(need.Spec); err != nil {
			return fmt.Errorf("service spec %q: %v", need.Spec, err)
		}
	}
	e.spec, e.specText = sp, sp.String()
	if err := e.build(); err != nil {
		e.spec, e.specText, e.service, e.svcSpec = nil, "", event.NoNode, nil
		return err
	}
	return nil
}

// build makes the stacks that do not exist yet, once both the spec and the
// nodes are known, and the service node with the first member.
func (e *Env) build() error {
	if e.spec == nil || len(e.ids) == 0 {
		return nil
	}
	net := e.network()
	if e.service != event.NoNode && net.Node(e.service) == nil {
		if slices.Contains(e.ids, e.service) {
			return fmt.Errorf("the membership service's id %v is a member's; set gms(service=N)", e.service)
		}
		ls, err := compose.BuildService(e.svcSpec)
		if err != nil {
			return err
		}
		if _, err := e.addStack(e.service, ls, false); err != nil {
			return err
		}
	}
	for _, id := range e.ids {
		if e.stacks[id] != nil {
			continue
		}
		ls, err := compose.Build(e.spec)
		if err != nil {
			return err
		}
		st, err := e.addStack(id, ls, true)
		if err != nil {
			return err
		}
		e.stacks[id] = st
	}
	return nil
}

// addStack adds a node running the given layers; a member's stack gets the
// probe on top, which records what reaches the application.
func (e *Env) addStack(id event.NodeID, ls []stack.Entry, member bool) (*stack.Stack, error) {
	if member {
		ls = append([]stack.Entry{{Name: "script", Layer: &probe{env: e, self: id}}}, ls...)
	}
	nd := e.net.AddNode(id)
	st, err := stack.New(stack.Config{Self: id, Transport: nd, Clock: e.net, Layers: ls, Seed: e.seed, AppQueue: 1024})
	if err != nil {
		return nil, fmt.Errorf("node %v: %v", id, err)
	}
	nd.Attach(st)
	return st, nil
}

// ready says whether the stacks exist: a spec and nodes were given.
func (e *Env) ready() error {
	if e.spec == nil {
		return fmt.Errorf("no spec yet (spec LAYER : LAYER ...)")
	}
	if len(e.ids) == 0 {
		return fmt.Errorf("no nodes yet (nodes ID...)")
	}
	return nil
}

// member returns a member node's stack.
func (e *Env) member(a string) (event.NodeID, *stack.Stack, error) {
	id, err := parseNode(a)
	if err != nil {
		return 0, nil, err
	}
	st := e.stacks[id]
	if st == nil {
		return 0, nil, fmt.Errorf("no node %v", id)
	}
	return id, st, nil
}

// step runs fn as a scheduled function of the simulator at the current time,
// so the simulator reschedules every stack it touched, and runs everything
// due now.
func (e *Env) step(fn func()) {
	e.net.At(e.net.Now(), fn)
	e.net.RunUntil(e.net.Now())
}

func (e *Env) cmdView(args []string) error {
	if err := e.ready(); err != nil {
		return err
	}
	if e.service != event.NoNode {
		return fmt.Errorf("the spec has a membership service: use join and leave")
	}
	if len(args) < 1 {
		return fmt.Errorf("%w: view needs a group", errUsage)
	}
	g, err := parseGroup(args[0])
	if err != nil {
		return err
	}
	v := &event.ViewInfo{Group: g, ID: 1}
	for _, a := range args[1:] {
		id, _, err := e.member(a)
		if err != nil {
			return err
		}
		if !slices.Contains(v.Members, id) {
			v.Members = append(v.Members, id)
		}
	}
	slices.Sort(v.Members)
	// Every old and new member hears of the view: a node left out learns
	// it was removed.
	to := slices.Clone(v.Members)
	if old := e.static[g]; old != nil {
		v.ID = old.ID + 1
		for _, id := range v.Members {
			if !old.Has(id) {
				v.Joined = append(v.Joined, id)
			}
		}
		for _, id := range old.Members {
			if !v.Has(id) {
				v.Left = append(v.Left, id)
				to = append(to, id)
			}
		}
	}
	e.static[g] = v
	slices.Sort(to)
	e.step(func() {
		for _, id := range to {
			if nd := e.net.Node(id); nd.Down() {
				continue
			}
			e.stacks[id].InstallView(v)
		}
	})
	return nil
}

func (e *Env) cmdJoin(args []string) error  { return e.joinLeave(args, (*stack.Stack).Join) }
func (e *Env) cmdLeave(args []string) error { return e.joinLeave(args, (*stack.Stack).Leave) }

// joinLeave has the nodes listed in args[0] ask (act: Join or Leave) for
// the group args[1].
func (e *Env) joinLeave(args []string, act func(*stack.Stack, event.GroupID) error) error {
	if err := e.ready(); err != nil {
		return err
	}
	if len(args) != 2 {
		return fmt.Errorf("%w: two arguments", errUsage)
	}
	g, err := parseGroup(args[1])
	if err != nil {
		return err
	}
	var sts []*stack.Stack
	for _, a := range strings.Split(args[0], ",") {
		_, st, err := e.member(a)
		if err != nil {
			return err
		}
		sts = append(sts, st)
	}
	var errs []string
	e.step(func() {
		for _, st := range sts {
			if err := act(st, g); err != nil {
				errs = append(errs, fmt.Sprintf("%v: %v", st.Self(), err))
			}
		}
	})
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func (e *Env) cmdCast(args []string) error {
	if err := e.ready(); err != nil {
		return err
	}
	kv, pos, err := keyValues(args)
	if err != nil {
		return err
	}
	if len(pos) < 2 || len(pos) > 3 {
		return fmt.Errorf("%w: cast takes a node, a group and an optional text", errUsage)
	}
	id, st, err := e.member(pos[0])
	if err != nil {
		return err
	}
	g, err := parseGroup(pos[1])
	if err != nil {
		return err
	}
	text := "m"
	if len(pos) == 3 {
		text = pos[2]
	}
	count := 1
	if v, ok := kv["count"]; ok {
		if count, err = strconv.Atoi(v); err != nil || count < 1 || count > maxCount {
			return fmt.Errorf("count %q: want 1 to %d", v, maxCount)
		}
		delete(kv, "count")
	}
	var every time.Duration
	if v, ok := kv["every"]; ok {
		if every, err = parseDuration(v); err != nil || every == 0 {
			return fmt.Errorf("every %q: want a duration above zero", v)
		}
		delete(kv, "every")
	}
	if len(kv) > 0 {
		return fmt.Errorf("%w: unknown setting %q", errUsage, slices.Sorted(maps.Keys(kv))[0])
	}
	nd := e.net.Node(id)
	if nd.Down() || nd.Frozen() {
		return fmt.Errorf("%v is %s: it casts nothing", id, stopped(nd))
	}
	for i := 0; i < count; i++ {
		t := text
		if count > 1 {
			t = fmt.Sprintf("%s%d", text, i+1)
		}
		e.net.At(e.net.Now().Add(time.Duration(i)*every), func() { e.castOne(id, st, g, t) })
	}
	e.net.RunUntil(e.net.Now()) // the casts due now
	return nil
}

// stopped says why a node that is down or frozen does nothing.
func stopped(nd *sim.Node) string {
	if nd.Down() {
		return "down"
	}
	return "frozen"
}

// castOne casts one message, as a scheduled function of the simulator (so
// it reschedules the stacks it touched). A node that is down or frozen when
// the time comes casts nothing, as a stopped process would not.
func (e *Env) castOne(id event.NodeID, st *stack.Stack, g event.GroupID, text string) {
	if nd := e.net.Node(id); nd.Down() || nd.Frozen() {
		if e.quiet {
			e.nSkip[id]++
			return
		}
		e.event("n%d cast g%d %q skipped: %s", id, g, text, stopped(nd))
		return
	}
	if e.seqs[g] == nil {
		e.seqs[g] = map[event.NodeID]uint32{}
	}
	seq := e.seqs[g][id] + 1
	if err := st.Cast(g, encode(seq, text)); err != nil {
		e.event("n%d cast g%d %q refused: %v", id, g, text, err)
		return
	}
	var members []event.NodeID
	if v := e.views[id][g]; v != nil {
		members = slices.Clone(v.Members)
	}
	e.seqs[g][id] = seq
	e.casts = append(e.casts, cast{msgID: msgID{streamID{g, id}, seq}, text: text, members: members})
	if e.quiet {
		e.nCast[id]++
		return
	}
	e.event("n%d cast g%d #%d %q", id, g, seq, text)
}

// encode is an application payload: the script's number for the message,
// then its text.
func encode(seq uint32, text string) []byte {
	b := make([]byte, 4+len(text))
	binary.BigEndian.PutUint32(b, seq)
	copy(b[4:], text)
	return b
}

func (e *Env) cmdAdvance(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("%w: advance takes a duration", errUsage)
	}
	d, err := parseDuration(args[0])
	if err != nil {
		return err
	}
	if d > maxRun {
		return fmt.Errorf("advance %v: at most %v at a time", d, maxRun)
	}
	e.network().Run(d)
	return nil
}

// cmdStabilize runs until the network is idle: no packet in flight (none
// sent or received for longer than the largest one-way delay, latency plus
// jitter), no frozen node waiting to thaw, and no timer pending at any live
// member or at the service. It stops at the bound if that never happens (a
// gms stack's heartbeats never stop) and says so.
func (e *Env) cmdStabilize(args []string) error {
	kv, err := settingsOnly(args)
	if err != nil {
		return err
	}
	bound := defaultBound
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		v := kv[k]
		if k != "max" {
			return fmt.Errorf("%w: unknown setting %q", errUsage, k)
		}
		if bound, err = parseDuration(v); err != nil {
			return err
		}
		if bound > maxRun {
			return fmt.Errorf("stabilize max=%v: at most %v", bound, maxRun)
		}
	}
	net := e.network()
	start := net.Now()
	const step = time.Millisecond
	for {
		busy := e.busy()
		if len(busy) == 0 {
			e.printf("idle after %s", DescribeDuration(net.Now().Sub(start)))
			return nil
		}
		if net.Now().Sub(start) >= bound {
			e.printf("not idle after %s (bound): %s", DescribeDuration(bound), strings.Join(busy, ", "))
			return nil
		}
		net.Run(min(step, bound-net.Now().Sub(start)))
	}
}

// busy says what keeps the network from being idle (nothing: idle).
func (e *Env) busy() []string {
	var why []string
	if e.anyPkt && e.net.Now().Sub(e.lastPkt) <= e.latency+e.jitter {
		why = append(why, "packets in flight")
	}
	var frozen, timers []string
	ids := slices.Clone(e.ids)
	if e.service != event.NoNode {
		ids = append(ids, e.service)
	}
	for _, id := range ids {
		nd := e.net.Node(id)
		if nd == nil || nd.Down() {
			continue
		}
		if nd.Frozen() {
			frozen = append(frozen, DescribeNode(id, e.service))
			continue
		}
		if nd.Stack().Next() != event.Never {
			timers = append(timers, DescribeNode(id, e.service))
		}
	}
	if len(frozen) > 0 {
		why = append(why, "frozen "+strings.Join(frozen, " "))
	}
	if len(timers) > 0 {
		why = append(why, "timers at "+strings.Join(timers, " "))
	}
	return why
}

func (e *Env) cmdPartition(args []string) error {
	if err := e.ready(); err != nil {
		return err
	}
	var sets [][]event.NodeID
	for _, part := range strings.Split(strings.Join(args, " "), "|") {
		var set []event.NodeID
		for _, a := range strings.FieldsFunc(part, func(r rune) bool { return r == ',' || r == ' ' }) {
			id, err := parseNode(a)
			if err != nil {
				return err
			}
			if e.net.Node(id) == nil {
				return fmt.Errorf("no node %v", id)
			}
			set = append(set, id)
		}
		if len(set) == 0 {
			return fmt.Errorf("%w: an empty side", errUsage)
		}
		sets = append(sets, set)
	}
	if len(sets) < 2 {
		return fmt.Errorf("%w: a partition needs two sides", errUsage)
	}
	e.net.Partition(sets...)
	return nil
}

func (e *Env) cmdHeal(args []string) error {
	if err := e.ready(); err != nil {
		return err
	}
	if len(args) > 0 {
		return fmt.Errorf("%w: heal takes no argument", errUsage)
	}
	e.net.Heal()
	return nil
}

func (e *Env) cmdCrash(args []string) error {
	id, err := e.nodeArgs(args, 1, "crash takes a node")
	if err != nil {
		return err
	}
	e.net.Crash(id)
	return nil
}

func (e *Env) cmdFreeze(args []string) error {
	id, err := e.nodeArgs(args, 2, "freeze takes a node and a duration")
	if err != nil {
		return err
	}
	d, err := parseDuration(args[1])
	if err != nil {
		return err
	}
	e.net.Freeze(id, d)
	return nil
}

// nodeArgs checks a fault command that names a member node first and takes
// n arguments in all (usage says so otherwise), and returns the node.
func (e *Env) nodeArgs(args []string, n int, usage string) (event.NodeID, error) {
	if err := e.ready(); err != nil {
		return 0, err
	}
	if len(args) != n {
		return 0, fmt.Errorf("%w: %s", errUsage, usage)
	}
	id, _, err := e.member(args[0])
	return id, err
}

func (e *Env) cmdLoss(args []string) error {
	kv, pos, err := keyValues(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: loss takes one model", errUsage)
	}
	var to []event.NodeID
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		v := kv[k]
		if k != "to" {
			return fmt.Errorf("%w: unknown setting %q", errUsage, k)
		}
		for _, a := range strings.Split(v, ",") {
			id, err := parseNode(a)
			if err != nil {
				return err
			}
			to = append(to, id)
		}
	}
	if pos[0] == "none" {
		e.loss = switchLoss{}
		return nil
	}
	m, err := sim.ParseLoss(pos[0])
	if err != nil {
		return err
	}
	e.loss = switchLoss{m: m, to: to}
	return nil
}

func (e *Env) cmdTrace(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("%w: one argument", errUsage)
	}
	switch args[0] {
	case "drops":
		e.traceDrops, e.tracePkts = true, false
	case "packets":
		e.traceDrops, e.tracePkts = true, true
	case "off":
		e.traceDrops, e.tracePkts = false, false
	default:
		return fmt.Errorf("%w: trace %q", errUsage, args[0])
	}
	return nil
}

func (e *Env) cmdQuiet(args []string) error {
	if len(args) != 1 || args[0] != "on" && args[0] != "off" {
		return fmt.Errorf("%w: quiet on or off", errUsage)
	}
	e.quiet = args[0] == "on"
	return nil
}

func (e *Env) cmdPrint(args []string) error {
	if err := e.ready(); err != nil {
		return err
	}
	if len(args) == 0 {
		return fmt.Errorf("%w: print what?", errUsage)
	}
	switch args[0] {
	case "counters":
		if len(args) < 2 {
			return fmt.Errorf("%w: print counters needs a layer name", errUsage)
		}
		ids := e.ids
		if len(args) > 2 {
			ids = nil
			for _, a := range args[2:] {
				id, _, err := e.member(a)
				if err != nil {
					return err
				}
				ids = append(ids, id)
			}
		}
		found := false
		for _, id := range ids {
			for _, lc := range e.stacks[id].Counters() {
				if lc.Layer == args[1] {
					found = true
					e.printf("%s", DescribeCounters(id, lc))
				}
			}
		}
		if !found {
			return fmt.Errorf("no layer %q in %s", args[1], e.specText)
		}
	case "views":
		for _, id := range e.ids {
			vs := e.views[id]
			for _, g := range slices.Sorted(maps.Keys(vs)) {
				e.printf("n%d %s", id, DescribeView(vs[g]))
			}
		}
	case "net":
		e.printf("%s", DescribeStats(e.net.Stats()))
	default:
		return fmt.Errorf("%w: print %q", errUsage, args[0])
	}
	return nil
}

func (e *Env) cmdCheck(args []string) error {
	if len(args) != 1 || args[0] != "delivered" {
		return fmt.Errorf("%w: check delivered", errUsage)
	}
	if err := e.ready(); err != nil {
		return err
	}
	for _, id := range e.ids {
		if nd := e.net.Node(id); nd == nil {
			continue
		} else if nd.Down() {
			e.printf("skipped n%d: down", id)
		} else if nd.Frozen() {
			e.printf("skipped n%d: frozen", id)
		}
	}
	ls := e.lacking()
	if len(ls) == 0 {
		e.printf("ok: every live member delivered every message owed to it")
	}
	for _, l := range ls {
		if l.reported >= len(l.seqs) {
			e.printf("reported lost: %s", l)
		} else {
			e.printf("missing: %s", l)
		}
	}
	return nil
}

// Violations lists every invariant broken so far (also printed where it
// happened).
func (e *Env) Violations() []string { return e.violations }

// Missing lists, per receiver and stream, the messages a live member has
// not delivered though they are owed to it, and of which its stack has not
// reported as many lost (a Lost event names the stream, not the message). A
// message is owed to r when r was in the sender's view of the group when it
// was cast, r is alive (not crashed; a frozen node is skipped), r is in its
// own latest view of the group, r has not seen itself outside the group
// since the cast, and the sender has not crashed (what a crashed sender cast
// may be lost with it).
func (e *Env) Missing() []string {
	var out []string
	for _, l := range e.lacking() {
		if l.reported < len(l.seqs) {
			out = append(out, l.String())
		}
	}
	return out
}

// lack is what one receiver lacks of one stream.
type lack struct {
	r event.NodeID
	streamID
	seqs     []uint32
	reported int // Lost events r's stack raised for the stream
}

func (l lack) String() string {
	s := fmt.Sprintf("n%d lacks n%d g%d %s", l.r, l.s, l.g, DescribeSeqs(l.seqs))
	if l.reported > 0 {
		s += fmt.Sprintf(" (its stack reported %d lost)", l.reported)
	}
	return s
}

func (e *Env) lacking() []lack {
	if e.net == nil {
		return nil
	}
	type key struct {
		r event.NodeID
		streamID
	}
	seqs := map[key][]uint32{}
	var keys []key
	for i, c := range e.casts {
		if nd := e.net.Node(c.s); nd == nil || nd.Down() {
			continue
		}
		for _, r := range c.members {
			if r == c.s || !e.owes(r, c.g, i) || e.got[c.msgID][r] > 0 {
				continue
			}
			k := key{r, c.streamID}
			if seqs[k] == nil {
				keys = append(keys, k)
			}
			seqs[k] = append(seqs[k], c.seq)
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.r != b.r {
			return cmp.Compare(a.r, b.r)
		}
		if a.g != b.g {
			return cmp.Compare(a.g, b.g)
		}
		return cmp.Compare(a.s, b.s)
	})
	var out []lack
	for _, k := range keys {
		out = append(out, lack{r: k.r, streamID: k.streamID, seqs: seqs[k], reported: e.lost[k.r][k.streamID]})
	}
	return out
}

// owes says whether r should have cast number i of group g.
func (e *Env) owes(r event.NodeID, g event.GroupID, i int) bool {
	nd := e.net.Node(r)
	if nd == nil || nd.Down() || nd.Frozen() {
		return false
	}
	v := e.views[r][g]
	if v == nil || !v.Has(r) {
		return false
	}
	return i >= e.gap[r][g]
}

// deliver records a delivery at r and checks it: no message twice, and
// with a FIFO stack none before an earlier one of its sender.
func (e *Env) deliver(r event.NodeID, ev *event.Event) {
	b := ev.Msg.Bytes()
	if len(b) < 4 {
		e.violation("n%d delivered a %d-byte payload from n%d g%d that no script cast", r, len(b), ev.Peer, ev.Group)
		return
	}
	id := msgID{streamID{ev.Group, ev.Peer}, binary.BigEndian.Uint32(b)}
	how := ""
	if by := ev.Msg.Recovery.By; by != "" {
		how = " (" + by + ")"
	}
	if e.quiet {
		e.nDeliv[r]++
		if how != "" {
			e.nRecov[r]++
		}
	} else {
		e.event("n%d <- n%d g%d #%d %q%s", r, ev.Peer, ev.Group, id.seq, b[4:], how)
	}
	if e.got[id] == nil {
		e.got[id] = map[event.NodeID]int{}
	}
	e.got[id][r]++
	if e.got[id][r] > 1 {
		e.violation("n%d delivered n%d g%d #%d %d times", r, ev.Peer, ev.Group, id.seq, e.got[id][r])
		return
	}
	if id.seq > e.seqs[id.g][id.s] {
		e.violation("n%d delivered n%d g%d #%d, which was never cast", r, ev.Peer, ev.Group, id.seq)
	}
	if e.last[r] == nil {
		e.last[r] = map[streamID]uint32{}
	}
	if prev := e.last[r][id.streamID]; e.fifo && id.seq < prev {
		e.violation("n%d delivered n%d g%d #%d after #%d: out of FIFO order", r, ev.Peer, ev.Group, id.seq, prev)
	}
	e.last[r][id.streamID] = max(e.last[r][id.streamID], id.seq)
}

func (e *Env) violation(format string, args ...any) {
	v := fmt.Sprintf(format, args...)
	e.violations = append(e.violations, v)
	e.printf("violation: %s", v)
}

// view records a view r installed.
func (e *Env) view(r event.NodeID, v *event.ViewInfo) {
	e.event("n%d %s", r, DescribeView(v))
	if e.views[r] == nil {
		e.views[r] = map[event.GroupID]*event.ViewInfo{}
		e.gap[r] = map[event.GroupID]int{}
	}
	prev := e.views[r][v.Group]
	cp := *v
	cp.Members = slices.Clone(v.Members)
	e.views[r][v.Group] = &cp
	if !v.Has(r) || prev == nil || !prev.Has(r) {
		// r was outside the group until now (or is now): what was cast
		// before is not owed to it.
		e.gap[r][v.Group] = len(e.casts)
	}
}

// probe is the top layer of every member's stack: it records what goes up
// to the application and passes everything on.
type probe struct {
	stack.Base
	env  *Env
	self event.NodeID
}

// Up records the event and passes it up.
func (p *probe) Up(ev *event.Event) {
	e := p.env
	switch ev.Kind {
	case event.Cast:
		if !ev.Control && ev.Msg != nil {
			e.deliver(p.self, ev)
		}
	case event.Send:
		if !ev.Control && ev.Msg != nil {
			e.event("n%d <- n%d send %q", p.self, ev.Peer, ev.Msg.Bytes())
		}
	case event.View:
		if ev.View != nil {
			e.view(p.self, ev.View)
		}
	case event.Lost:
		if e.lost[p.self] == nil {
			e.lost[p.self] = map[streamID]int{}
		}
		e.lost[p.self][streamID{ev.Group, ev.Peer}]++
		e.event("n%d %s", p.self, DescribeEvent(ev))
	case event.Regions, event.Membership:
		// derived structures and service traffic: not the application's
	default:
		e.event("n%d %s", p.self, DescribeEvent(ev))
	}
	p.Ctx.Up(ev)
}

func parseNode(a string) (event.NodeID, error) {
	v, err := strconv.ParseUint(strings.TrimPrefix(a, "n"), 10, 32)
	if err != nil || v == 0 {
		return 0, fmt.Errorf("%w: node %q: want a number from 1 to %d", errUsage, a, uint32(math.MaxUint32))
	}
	return event.NodeID(v), nil
}

func parseGroup(a string) (event.GroupID, error) {
	v, err := strconv.ParseUint(strings.TrimPrefix(a, "g"), 10, 32)
	if err != nil || v == 0 {
		return 0, fmt.Errorf("%w: group %q: want g1, g2, ...", errUsage, a)
	}
	return event.GroupID(v), nil
}

func parseDuration(a string) (time.Duration, error) {
	d, err := time.ParseDuration(a)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%w: duration %q: want e.g. 5ms or 1.5s", errUsage, a)
	}
	return d, nil
}

// keyValues splits arguments into key=value settings and the rest.
func keyValues(args []string) (map[string]string, []string, error) {
	kv := map[string]string{}
	var rest []string
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || strings.ContainsAny(k, " \"") {
			rest = append(rest, a)
			continue
		}
		if _, dup := kv[k]; dup {
			return nil, nil, fmt.Errorf("%w: %s given twice", errUsage, k)
		}
		kv[k] = v
	}
	return kv, rest, nil
}

// settingsOnly is keyValues for a command that takes key=value settings
// and no other word.
func settingsOnly(args []string) (map[string]string, error) {
	kv, rest, err := keyValues(args)
	if err == nil && len(rest) > 0 {
		err = fmt.Errorf("%w: unexpected %q", errUsage, rest[0])
	}
	return kv, err
}

// split cuts a command line into words; a double-quoted word may hold
// spaces and Go escapes.
func split(line string) ([]string, error) {
	var out []string
	for i := 0; i < len(line); {
		switch c := line[i]; {
		case c == ' ' || c == '\t':
			i++
		case c == '"':
			j := i + 1
			for j < len(line) && line[j] != '"' {
				if line[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(line) {
				return nil, fmt.Errorf("%w: unterminated string at column %d", errUsage, i+1)
			}
			s, err := strconv.Unquote(line[i : j+1])
			if err != nil {
				return nil, fmt.Errorf("%w: bad string at column %d: %v", errUsage, i+1, err)
			}
			out = append(out, s)
			i = j + 1
		default:
			j := i
			for j < len(line) && line[j] != ' ' && line[j] != '\t' {
				j++
			}
			out = append(out, line[i:j])
			i = j
		}
	}
	return out, nil
}
