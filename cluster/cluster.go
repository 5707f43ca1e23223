// Package cluster runs a layercast stack inside a Go program: a whole
// simulated cluster in one process, or real nodes over UDP multicast, built
// from a spec string or file, with named groups and explicit members.
//
// The usage loop:
//
//	c, err := cluster.New("fifo : reliable : lec(r=8, c=5)", cluster.WithLoss("2%"))
//	c.Group("prices", 1, 2, 3)           // name a group and its members
//	c.Group("news", 2, 3, 4)
//	c.OnDeliver(func(d cluster.Delivery) { /* d.Node, d.Group, d.From, d.Payload */ })
//	// or: ch := c.Deliveries(), read on a goroutine of its own
//	err = c.Start()                      // build the nodes, install views (or run gms)
//	err = c.Cast(1, "prices", []byte("tick"))
//	err = c.RunUntilQuiet()              // or c.Run(time.Second)
//	m := c.Metrics()                     // per node, per layer counters
//	c.Close()
//
// Membership is static by default: cluster computes every group's view and
// every node's neighbourhood (the regions lec and other multi-group layers
// need) with package membership and installs them at Start. A spec whose
// layers produce views themselves (gms) gets its membership service started
// for it in the simulator, and every member joins its groups at Start.
//
// The network is the deterministic simulator unless WithUDP is given: the
// same program then runs each node on a real UDP socket with IP multicast on
// the named interface, and Run and RunUntilQuiet wait in real time.
//
// Callbacks (OnDeliver, OnView, OnBlock, OnLoss) run one at a time, never
// concurrently: on the caller's goroutine inside Run and RunUntilQuiet in
// the simulator (where a callback may Cast), on the nodes' goroutines over
// UDP (where a callback must not Cast: hand the work to another goroutine).
//
// What a node's stack gave up (messages it will never deliver) comes
// through OnGap.
//
// The same events also come through channels, for a program that would
// rather range over them on a goroutine of its own: Deliveries, Views,
// Losses and Gaps. They are bounded (Config.ChanBuffer) and apply back-pressure: a
// full channel makes the cluster wait for its reader, and nothing is
// dropped or queued beside it (Deliveries says what waits, and how).
// Close closes them.
//
// # Examples
//
// Each is a runnable Example function that `go test ./cluster` compiles,
// runs and checks against its output; `go test ./cluster -run Example -v`
// runs them, and `go doc -http` or pkg.go.dev shows them with their code
// (they live in this package's example_test.go, examples_api_test.go and
// example_chan_test.go):
//
//   - Example: the README's program, 5 nodes in 3 overlapping groups with
//     2% loss, every member checked to get every message in order
//   - ExampleNew: building a cluster from a spec, and a spec refused
//   - ExampleCluster_Group: naming groups and their members
//   - ExampleCluster_Join: joining a group through gms's service
//   - ExampleCluster_Cast: casting, and what the errors say
//   - ExampleCluster_OnDeliver: receiving deliveries and views by callback
//   - ExampleCluster_Deliveries: receiving them through channels
//   - ExampleCluster_Run: running for a duration
//   - ExampleCluster_RunUntilQuiet: running until quiet under loss
//   - ExampleCluster_Metrics: reading every counter
//   - ExampleWithUDP: the same on UDP multicast; it needs multicast routed
//     on lo, so go test only compiles it, and tests/embed_chan_udp_test.go
//     runs it in a network namespace and checks its output
//   - ExampleInbox: one node's stack run by hand (as stack.NewNode runs it
//     over UDP) with its deliveries and views through channels
//
// For a program that runs a single node itself, Inbox is the channel form
// of stack.AppFuncs.
package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/membership"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// Config configures a cluster. DefaultConfig gives the defaults; options
// change one field each.
type Config struct {
	// Seed makes a simulated run repeatable and seeds every layer's random
	// source (default 1).
	Seed uint64
	// Loss is the simulated loss model: "none" (default), "2%" (uniform),
	// "uniform:P", "bursty:P,b" or "markov:P,m" as Ricochet defines them.
	Loss string
	// Latency is the simulated one-way delay of every link (default 1ms);
	// Jitter adds a uniform random delay in [0, Jitter) (default 0).
	Latency, Jitter time.Duration
	// UDP runs the nodes on real UDP sockets instead of the simulator.
	UDP bool
	// Interface is the multicast interface over UDP (default "lo").
	Interface string
	// MulticastPort is the UDP port of every group's channel (default
	// 47000).
	MulticastPort int
	// Quiet is how long no delivery may happen, with every send queue
	// empty, before RunUntilQuiet returns (default 1s of virtual time in
	// the simulator, 300ms over UDP).
	Quiet time.Duration
	// MaxRun bounds RunUntilQuiet (default 10 minutes of virtual time in
	// the simulator, 30s over UDP).
	MaxRun time.Duration
	// AppQueue bounds each node's sends waiting for its stack (default
	// 256); a full queue makes Cast return an error wrapping
	// stack.ErrBackpressure.
	AppQueue int
	// ChanBuffer bounds each of the channels Deliveries, Views, Losses
	// and Gaps return (default 256); a full one makes the cluster wait
	// for its reader (see Deliveries).
	ChanBuffer int
}

// DefaultConfig is a simulated network with no loss and 1ms links.
func DefaultConfig() Config {
	return Config{Seed: 1, Loss: "none", Latency: time.Millisecond, Interface: "lo",
		MulticastPort: 47000, AppQueue: 256, ChanBuffer: defaultChanBuffer}
}

// Option changes one field of the Config.
type Option func(*Config)

// WithSeed sets Config.Seed.
func WithSeed(seed uint64) Option { return func(c *Config) { c.Seed = seed } }

// WithLoss sets the simulated loss model (Config.Loss).
func WithLoss(model string) Option { return func(c *Config) { c.Loss = model } }

// WithLatency sets the simulated link latency and jitter.
func WithLatency(latency, jitter time.Duration) Option {
	return func(c *Config) { c.Latency, c.Jitter = latency, jitter }
}

// WithUDP runs the cluster on real UDP sockets with IP multicast on the
// named interface ("" means "lo"). Every node of the cluster runs in this
// process; use it inside a network namespace or on a network you own.
func WithUDP(iface string) Option {
	return func(c *Config) {
		c.UDP = true
		if iface != "" {
			c.Interface = iface
		}
	}
}

// WithQuiet sets Config.Quiet.
func WithQuiet(d time.Duration) Option { return func(c *Config) { c.Quiet = d } }

// WithConfig replaces the whole Config (options after it still apply);
// zero Quiet, MaxRun, Interface, AppQueue and ChanBuffer take their
// defaults.
func WithConfig(cfg Config) Option { return func(c *Config) { *c = cfg } }

// Delivery is a message a node delivered.
type Delivery struct {
	// Node delivered it; From cast it.
	Node, From int
	// Group is the group's name ("" for a point-to-point message).
	Group string
	// Payload is valid only during the callback: copy it to keep it. A
	// Delivery received from the Deliveries channel holds its own copy.
	Payload []byte
	// RecoveredBy names the mechanism that brought the message back after
	// a loss ("nak", "lec", ...); empty if it arrived first time.
	RecoveredBy string
	// At is the node's clock when it delivered (virtual in the simulator).
	At time.Duration
}

// View is a membership view a node installed.
type View struct {
	// Node installed view number ID of Group, whose Members (in id order)
	// are listed.
	Node    int
	Group   string
	ID      uint64
	Members []int
}

// Block is a view-synchronous flush at a node (a spec with vsync): with
// Blocked true, a view change of Group is being flushed and the node
// should stop casting to it (casts made meanwhile wait, never dropped);
// with Blocked false, the flush is over, the new view has been reported
// (OnView, just before) and casting may resume.
type Block struct {
	Node    int
	Group   string
	Blocked bool
	// At is the node's clock (virtual in the simulator).
	At time.Duration
}

// Loss is a packet the simulated network dropped on its way to a node.
type Loss struct {
	From, To int
	// Group is the multicast channel's group ("" for a unicast packet).
	Group string
	// Reason is the cause: "loss" (the loss model), "overflow",
	// "partition", "down" and so on.
	Reason string
	// At is the network's virtual time of the drop.
	At time.Duration
}

// Cluster is a set of nodes running one stack spec. Build it with New,
// declare groups with Group, then Start. Its methods are safe for concurrent
// use over UDP; in the simulator, call them from one goroutine.
type Cluster struct {
	cfg     Config
	spec    *compose.Spec
	gms     bool // the spec's layers produce views (a service installs them)
	names   []string
	ids     map[string]event.GroupID
	groups  [][]event.NodeID // by GroupID-1
	viewIDs []uint64         // static membership: each group's last view id
	nodes   []event.NodeID   // sorted, every member of some group

	onDeliver func(Delivery)
	onView    func(View)
	onLoss    func(Loss)
	onBlock   func(Block)
	onGap     func(Gap)

	cbMu      sync.Mutex // serialises callbacks over UDP
	joinMu    sync.Mutex // serialises Join and Leave
	mu        sync.Mutex // guards views, delivered, and groups' members against Join and Leave
	started   bool
	closed    bool
	views     map[viewKey]uint64
	delivered int64

	net      *sim.Network
	stacks   map[event.NodeID]*stack.Stack
	udpNodes map[event.NodeID]*udpNode
	service  event.NodeID

	ch *chans // the channels behind Deliveries, Views and Losses
}

type viewKey struct {
	n event.NodeID
	g event.GroupID
}

// New parses and checks a spec (a spec string or the path of a .stack file)
// and returns an empty cluster to declare groups in.
func New(spec string, opts ...Option) (*Cluster, error) {
	cfg := DefaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.Quiet <= 0 {
		cfg.Quiet = time.Second
		if cfg.UDP {
			cfg.Quiet = 300 * time.Millisecond
		}
	}
	if cfg.MaxRun <= 0 {
		cfg.MaxRun = 10 * time.Minute
		if cfg.UDP {
			cfg.MaxRun = 30 * time.Second
		}
	}
	if cfg.Interface == "" {
		cfg.Interface = "lo"
	}
	if cfg.AppQueue <= 0 {
		cfg.AppQueue = 256
	}
	if cfg.ChanBuffer <= 0 {
		cfg.ChanBuffer = defaultChanBuffer
	}
	if cfg.Latency < 0 || cfg.Jitter < 0 {
		return nil, fmt.Errorf("cluster: latency %v and jitter %v must not be negative", cfg.Latency, cfg.Jitter)
	}
	if !cfg.UDP {
		if _, err := parseLoss(cfg.Loss); err != nil {
			return nil, err
		}
	} else if l := strings.TrimSpace(cfg.Loss); l != "" && l != "none" {
		return nil, fmt.Errorf("cluster: loss %q applies to the simulator only; over UDP the network loses what it loses", cfg.Loss)
	}
	sp, err := compose.Load(spec)
	if err != nil {
		return nil, err
	}
	if err := compose.Check(sp); err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, spec: sp, ids: map[string]event.GroupID{}, views: map[viewKey]uint64{},
		ch: newChans(cfg.ChanBuffer)}
	// Build one node's layers now, so a spec that cannot be built fails
	// here and not at Start, and to learn whether it produces views.
	entries, err := compose.Build(sp)
	if err != nil {
		return nil, err
	}
	c.gms = givesViews(entries)
	return c, nil
}

// givesViews reports whether one of a stack's layers names a membership
// service (compose.LayerInfo.Service): that service then installs the views.
func givesViews(entries []stack.Entry) bool {
	for _, e := range entries {
		if info, ok := compose.Lookup(e.Name); ok && info.Service != nil {
			return true
		}
	}
	return false
}

// Group declares a group by name and its members (node ids, at least two,
// positive, no repeats). Nodes are the union of all groups' members. Groups
// are declared before Start.
func (c *Cluster) Group(name string, members ...int) error {
	if c.started {
		return fmt.Errorf("cluster: group %q declared after Start; declare every group first", name)
	}
	if strings.TrimSpace(name) == "" {
		return errors.New("cluster: a group needs a name")
	}
	if _, dup := c.ids[name]; dup {
		return fmt.Errorf("cluster: group %q declared twice", name)
	}
	if len(members) < 2 {
		return fmt.Errorf("cluster: group %q has %d member(s); a group needs at least 2", name, len(members))
	}
	ms := make([]event.NodeID, 0, len(members))
	for _, m := range members {
		if m <= 0 || m > 1<<30 {
			return fmt.Errorf("cluster: group %q: node id %d out of range (1 to %d)", name, m, 1<<30)
		}
		id := event.NodeID(m)
		if slices.Contains(ms, id) {
			return fmt.Errorf("cluster: group %q names node %d twice", name, m)
		}
		ms = append(ms, id)
	}
	slices.Sort(ms)
	c.names = append(c.names, name)
	c.groups = append(c.groups, ms)
	c.viewIDs = append(c.viewIDs, 1)
	c.ids[name] = event.GroupID(len(c.names))
	for _, id := range ms {
		if i, found := slices.BinarySearch(c.nodes, id); !found {
			c.nodes = slices.Insert(c.nodes, i, id)
		}
	}
	return nil
}

// OnDeliver sets the function called for every delivery. Set it before
// Start.
func (c *Cluster) OnDeliver(fn func(Delivery)) { c.onDeliver = fn }

// OnView sets the function called for every view a node installs. Set it
// before Start.
func (c *Cluster) OnView(fn func(View)) { c.onView = fn }

// OnBlock sets the function called when a node's view-synchronous flush
// (vsync) blocks and unblocks a group. Set it before Start.
func (c *Cluster) OnBlock(fn func(Block)) { c.onBlock = fn }

// OnLoss sets the function called for every packet the simulated network
// drops (over UDP, drops are only counted: see Metrics). Set it before
// Start.
func (c *Cluster) OnLoss(fn func(Loss)) { c.onLoss = fn }

// Nodes returns the ids of every node, in order.
func (c *Cluster) Nodes() []int {
	out := make([]int, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = int(n)
	}
	return out
}

// Members returns a group's members, in order (nil for an unknown group).
func (c *Cluster) Members(group string) []int {
	g, ok := c.ids[group]
	if !ok {
		return nil
	}
	c.mu.Lock() // Join and Leave change the members
	ms := c.groups[g-1]
	c.mu.Unlock()
	out := make([]int, len(ms))
	for i, n := range ms {
		out[i] = int(n)
	}
	return out
}

// Start builds every node's stack and installs membership: static views and
// neighbourhoods, or, for a spec with gms, the membership service, every
// member joining its groups, and (in the simulator) a run until every member
// holds the view of each of its groups.
func (c *Cluster) Start() error {
	if c.started {
		return errors.New("cluster: Start called twice")
	}
	if len(c.names) == 0 {
		return errors.New("cluster: no groups; declare them with Group before Start")
	}
	c.started = true
	if c.cfg.UDP {
		return c.startUDP()
	}
	return c.startSim()
}

// staticViews computes every group's first view and every node's
// neighbourhood.
func (c *Cluster) staticViews() (map[event.GroupID]*event.ViewInfo, map[event.NodeID]*event.Neighbourhood) {
	views := make(map[event.GroupID]*event.ViewInfo, len(c.groups))
	for i, ms := range c.groups {
		g := event.GroupID(i + 1)
		views[g] = &event.ViewInfo{Group: g, ID: 1, Members: ms, Joined: ms}
	}
	return views, membership.Static(views)
}

// installStatic installs, on a node's stack, the first view of each of its
// groups and its neighbourhood (what lec and the other multi-group layers
// need), and records the views so casts know the node holds them.
func (c *Cluster) installStatic(st *stack.Stack, views map[event.GroupID]*event.ViewInfo, nbs map[event.NodeID]*event.Neighbourhood) {
	id := st.Self()
	for _, g := range c.groupsOf(id) {
		st.InstallView(views[g])
		c.mu.Lock()
		c.views[viewKey{id, g}] = views[g].ID
		c.mu.Unlock()
	}
	if nb := nbs[id]; nb != nil {
		st.InstallNeighbourhood(nb)
	}
}

// groupsOf lists the groups node n is a member of.
func (c *Cluster) groupsOf(n event.NodeID) []event.GroupID {
	var out []event.GroupID
	for i, ms := range c.groups {
		if slices.Contains(ms, n) {
			out = append(out, event.GroupID(i+1))
		}
	}
	return out
}

func (c *Cluster) groupName(g event.GroupID) string {
	if g == event.NoGroup || int(g) > len(c.names) {
		return ""
	}
	return c.names[g-1]
}

// app is node self's application: it records views and calls the user's
// functions, one at a time.
func (c *Cluster) app(self event.NodeID, now func() event.Time) stack.AppFuncs {
	return stack.AppFuncs{
		OnLost: func(l stack.Loss) { c.gap(self, now, l) },
		OnDeliver: func(d stack.Delivery) {
			c.mu.Lock()
			c.delivered++
			c.mu.Unlock()
			dv := Delivery{Node: int(self), From: int(d.From), Group: c.groupName(d.Group),
				Payload: d.Payload, RecoveredBy: d.Recovery.By, At: now().Duration()}
			if c.onDeliver != nil {
				c.serial(func() { c.onDeliver(dv) })
			}
			c.chanDeliver(dv)
		},
		OnView: func(v *event.ViewInfo) {
			c.mu.Lock()
			c.views[viewKey{self, v.Group}] = v.ID
			c.mu.Unlock()
			if c.onView == nil && !c.ch.wantV.Load() {
				return
			}
			ms := make([]int, len(v.Members))
			for i, m := range v.Members {
				ms[i] = int(m)
			}
			vw := View{Node: int(self), Group: c.groupName(v.Group), ID: v.ID, Members: ms}
			if c.onView != nil {
				c.serial(func() { c.onView(vw) })
			}
			c.chanView(vw)
		},
		OnBlock: func(g event.GroupID, blocked bool) {
			if c.onBlock != nil {
				c.serial(func() {
					c.onBlock(Block{Node: int(self), Group: c.groupName(g), Blocked: blocked, At: now().Duration()})
				})
			}
		},
	}
}

// serial runs a user callback. Over UDP the nodes' goroutines call it
// concurrently, so it takes a lock; the simulator runs everything on one
// goroutine and takes none, so a callback there may call Cast.
func (c *Cluster) serial(fn func()) {
	if c.cfg.UDP {
		c.cbMu.Lock()
		defer c.cbMu.Unlock()
	}
	fn()
}

// check says what is wrong with a cast before the stack sees it.
func (c *Cluster) check(from int, group string) (event.NodeID, event.GroupID, error) {
	if !c.started {
		return 0, 0, errors.New("cluster: not started; call Start before Cast")
	}
	if c.closed {
		return 0, 0, errors.New("cluster: closed")
	}
	g, ok := c.ids[group]
	if !ok {
		return 0, 0, fmt.Errorf("cluster: no group %q (groups: %s)", group, strings.Join(c.names, ", "))
	}
	n := event.NodeID(from)
	c.mu.Lock() // Join and Leave change the members
	member := slices.Contains(c.groups[g-1], n)
	c.mu.Unlock()
	if !member {
		return 0, 0, fmt.Errorf("cluster: node %d is not a member of %q (members %v)", from, group, c.Members(group))
	}
	c.mu.Lock()
	_, has := c.views[viewKey{n, g}]
	c.mu.Unlock()
	if !has {
		return 0, 0, fmt.Errorf("cluster: node %d has no view of %q yet: join it or install its view (with gms, run the cluster until the service has installed it)", from, group)
	}
	return n, g, nil
}

// Cast multicasts payload from node from to a group. It returns an error
// wrapping stack.ErrBackpressure when the node's send queue is full or flow
// control holds the group off: run the cluster (or, over UDP, wait) and
// retry.
func (c *Cluster) Cast(from int, group string, payload []byte) error {
	n, g, err := c.check(from, group)
	if err != nil {
		return err
	}
	if c.cfg.UDP {
		err = c.udpNodes[n].node.Cast(g, payload)
	} else {
		err = c.stacks[n].Cast(g, payload)
	}
	if errors.Is(err, stack.ErrBackpressure) {
		return fmt.Errorf("cluster: node %d cannot cast to %q now (its queue of %d sends is full or flow control holds it off; run the cluster to drain it and retry): %w",
			from, group, c.cfg.AppQueue, err)
	}
	if err != nil {
		return fmt.Errorf("cluster: node %d cast to %q: %w", from, group, err)
	}
	return nil
}

// Run runs the cluster for d: virtual time in the simulator, real time over
// UDP.
func (c *Cluster) Run(d time.Duration) error {
	if !c.started {
		return errors.New("cluster: not started; call Start before Run")
	}
	if c.cfg.UDP {
		time.Sleep(d)
		return nil
	}
	c.net.Run(d)
	return nil
}

// CastWait casts like Cast, but where the node's send queue is full or
// flow control holds it off it runs the cluster a millisecond at a time
// (in the simulator; over UDP it waits) and tries again, for at most
// Config.MaxRun. Any other error is returned at once.
func (c *Cluster) CastWait(from int, group string, payload []byte) error {
	var waited time.Duration
	for {
		err := c.Cast(from, group, payload)
		if !errors.Is(err, stack.ErrBackpressure) || waited >= c.cfg.MaxRun {
			return err
		}
		if err := c.Run(time.Millisecond); err != nil {
			return err
		}
		waited += time.Millisecond
	}
}

// RunUntilQuiet runs the cluster until no node has delivered anything for
// Config.Quiet and every send queue is empty, or fails after Config.MaxRun.
func (c *Cluster) RunUntilQuiet() error {
	if !c.started {
		return errors.New("cluster: not started; call Start before RunUntilQuiet")
	}
	step := c.cfg.Quiet / 10
	if step <= 0 {
		step = c.cfg.Quiet
	}
	var ran, still time.Duration
	last := int64(-1)
	for ran < c.cfg.MaxRun {
		if err := c.Run(step); err != nil {
			return err
		}
		ran += step
		c.mu.Lock()
		d := c.delivered
		c.mu.Unlock()
		if d != last || c.backlog() > 0 {
			last, still = d, 0
			continue
		}
		if still += step; still >= c.cfg.Quiet {
			return nil
		}
	}
	return fmt.Errorf("cluster: not quiet after %v: %d sends still queued, deliveries still happening", c.cfg.MaxRun, c.backlog())
}

// backlog counts the sends waiting in every node's queue.
func (c *Cluster) backlog() int {
	total := 0
	if c.cfg.UDP {
		for _, u := range c.udpNodes {
			_ = u.node.Do(func(st *stack.Stack) { total += st.Backlog() })
		}
		return total
	}
	for _, st := range c.stacks {
		total += st.Backlog()
	}
	return total
}

// Now is the cluster's clock: virtual time in the simulator, time since
// Start over UDP.
func (c *Cluster) Now() time.Duration {
	if c.net != nil {
		return c.net.Now().Duration()
	}
	if u := c.anyUDP(); u != nil {
		return u.node.Now().Duration()
	}
	return 0
}

// Close stops every node (over UDP, closes the sockets) and closes the
// channels Deliveries, Views, Losses and Gaps return (what they hold can
// still be read).
func (c *Cluster) Close() {
	if c.closed {
		return
	}
	c.closed = true
	c.ch.shut() // ends waits for channel readers, so the nodes can stop
	for _, st := range c.stacks {
		st.Close()
	}
	c.closeUDP()
}
