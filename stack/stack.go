package stack

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"unsafe"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/prefetch"
)

// Errors returned by the application API.
var (
	// ErrBackpressure means the stack cannot take the send now: its bounded
	// application queue is full or flow control holds the group off. Retry
	// after Application.Flow reports ok, or after the next step.
	ErrBackpressure = errors.New("stack: back-pressure: send queue full or group held off")
	// ErrClosed means the stack was closed.
	ErrClosed = errors.New("stack: closed")
	// ErrTooLarge means a payload exceeds Config.MaxPayload.
	ErrTooLarge = errors.New("stack: payload too large")
	// ErrNoChannels means the transport carries no channels but groups'
	// (it does not implement Channels).
	ErrNoChannels = errors.New("stack: the transport has no multicast channels besides groups'")
)

// Config builds a Stack.
type Config struct {
	// Self is this node's id (non-zero).
	Self event.NodeID
	// Layers, top first.
	Layers []Entry
	// Transport is the network below.
	Transport Transport
	// Clock gives the time.
	Clock Clock
	// App receives deliveries, views and flow changes; nil discards them.
	App Application
	// Seed seeds every layer's random source (mixed with Self and the
	// layer's position).
	Seed uint64
	// AppQueue bounds the sends waiting between application and stack
	// (default 256).
	AppQueue int
	// MaxPayload bounds one application payload (default 64000 bytes).
	MaxPayload int
	// Log receives log lines; nil discards them.
	Log Logger
	// Pool recycles messages; nil means event.DefaultPool.
	Pool *event.Pool
	// Site is the Spread site (LAN) this node is placed in; layers read it
	// through Context.Site and membership learns it with the node's joins.
	Site event.SiteID
	// Scratch, if set, lends the stack the buffers of its event queues
	// for the length of each step, from a store shared with the other
	// stacks stepped by the same goroutine one at a time (a simulator's);
	// nil: the stack keeps buffers of its own. It changes nothing but
	// which memory a step touches.
	Scratch *Scratch
}

// PayloadLimiter is implemented by a layer that sets how large an
// application payload may be (frag, which fragments what the network
// cannot carry whole): without Config.MaxPayload, the first such layer's
// MaxPayload is the stack's limit, the one ErrTooLarge names.
type PayloadLimiter interface {
	MaxPayload() int
}

// Stack is one node's protocol stack: the steppable core. It is not safe for
// concurrent use: the simulator drives many stacks from one goroutine, and
// Node (node.go) wraps one stack in a goroutine for real networks.
//
// Every input method (Receive, Tick, Cast, Send, Join, Leave, InstallView,
// Pump) runs every layer's reaction to completion before it returns: events
// move through the layers by two queues, control first, then data. Packets
// leave through the Transport during the call. Afterwards Next says when the
// stack next needs a Tick.
type Stack struct {
	// The fields every step reads come first, so that a step of a stack
	// whose memory is cold (thousands of simulated stacks) touches as
	// few cache lines of it as it can.
	closed  bool
	running bool
	self    event.NodeID
	now     event.Time
	clock   Clock
	layers  []Entry
	ctrl    ring
	data    ring
	timers  timerQueue
	pool    *event.Pool
	scratch *Scratch // lends ctrl's and data's buffers (nil: they keep their own)
	// room is the headroom of every message the stack makes: its layers'
	// declared header sizes and the frame.
	room int
	// carrier, during ReceiveShared, is what received messages borrow
	// their bytes from (nil: they are copied); share says whether
	// ReceiveShared may (every layer is a CompactHolder).
	carrier *event.Message
	share   bool
	log     Logger // nil: logging off (layers ask, Context.Logging, per packet)
	// Ready feeds (feed.go); the application queue is appFeed, a data feed.
	ctrlFeeds, dataFeeds feedQueue
	// cur is the item being dispatched. It lives in the Stack, not on the
	// run loop's frame, because layers receive a pointer to its event and
	// a local would escape to the heap once per step. Layers must not keep
	// the *event.Event past the call.
	cur item
	app Application
	tr  Transport
	// pacer and appData are read by every step too (run, enqueue): among
	// the hot lines, where beyond them each was one more load waiting for
	// memory per packet at thousands of simulated stacks
	pacer   Pacer
	appData int // events for the application in the data queue (enqueue)
	net     NetStats
	nwarm   int16 // warm's length
	// dataAt has bit 4*k+i set when warm[i] asks for something at
	// stage k of a data packet (StagedWarmer), ctlAt when it does for a
	// control packet (a ControlWarmer); castWarm has bit i set when
	// warm[i] is a CastWarmer
	dataAt, ctlAt, castWarm uint16
	// hints are what Prefetch asks the CPU to load: the objects behind
	// the layers (bottom first), the application and the transport, the
	// layers' contexts.
	hints [maxHints]unsafe.Pointer
	// warm are the layers that implement Warmer, bottom first (Warm).
	warm [maxWarmers]Warmer

	site   event.SiteID
	ctxs   []*Context
	chtr   Channels      // nil if the transport has only group channels
	lost   LossReporter  // app, if it implements it
	block  BlockReporter // app, if it implements it
	maxPay int

	apps    appQueue
	appFeed Feed
	held    map[event.GroupID]bool
	subs    map[event.GroupID]bool
	chans   map[event.ChannelID]bool // subscribed channels other than groups'
}

// HotLines is how many 64-byte cache lines from the start of a Stack hold
// what every step reads, and what Prefetch reads (a simulator may
// prefetch them).
const HotLines = 10

// NetStats counts what a stack sent and received at its bottom edge.
type NetStats struct {
	PacketsSent, BytesSent               int64
	ControlPacketsSent, ControlBytesSent int64
	PacketsReceived, BytesReceived       int64
	Malformed                            int64
	AppBackpressure                      int64
	// NoChannel counts casts on a channel the transport cannot carry
	// (dropped).
	NoChannel int64
	// BadCast counts casts going down with a Peer but not OneMember, or
	// with OneMember but no Peer (refused: a layer's mistake).
	BadCast int64
}

// New builds a stack and initialises its layers, top first.
func New(cfg Config) (*Stack, error) {
	if cfg.Self == event.NoNode {
		return nil, fmt.Errorf("stack: Config.Self must be a non-zero node id")
	}
	if cfg.Transport == nil {
		return nil, fmt.Errorf("stack: Config.Transport is nil")
	}
	if cfg.Clock == nil {
		return nil, fmt.Errorf("stack: Config.Clock is nil")
	}
	if len(cfg.Layers) == 0 {
		return nil, fmt.Errorf("stack: no layers")
	}
	s := &Stack{
		self:    cfg.Self,
		site:    cfg.Site,
		layers:  cfg.Layers,
		tr:      cfg.Transport,
		clock:   cfg.Clock,
		app:     cfg.App,
		log:     cfg.Log,
		pool:    cfg.Pool,
		scratch: cfg.Scratch,
		maxPay:  cfg.MaxPayload,
		held:    map[event.GroupID]bool{},
		subs:    map[event.GroupID]bool{},
		chans:   map[event.ChannelID]bool{},
	}
	if s.app == nil {
		s.app = AppFuncs{}
	}
	s.lost, _ = s.app.(LossReporter)
	s.block, _ = s.app.(BlockReporter)
	if s.pool == nil {
		s.pool = event.DefaultPool
	}
	if s.maxPay <= 0 {
		s.maxPay = 64000
		// A layer that fragments (frag) sets the limit itself.
		for _, e := range cfg.Layers {
			if p, ok := e.Layer.(PayloadLimiter); ok {
				s.maxPay = p.MaxPayload()
				break
			}
		}
	}
	n := cfg.AppQueue
	if n <= 0 {
		n = 256
	}
	s.apps.max = n
	s.appFeed = Feed{st: s, pull: s.pullApp}
	s.pacer, _ = cfg.Transport.(Pacer)
	s.chtr, _ = cfg.Transport.(Channels)
	s.timers.st = s
	s.now = s.clock.Now()
	// The contexts side by side: a step reads the context of every layer
	// it passes (Now, Down), one or two lines for all of them.
	ctxs := make([]Context, len(cfg.Layers))
	for i, e := range cfg.Layers {
		ctx := &ctxs[i]
		*ctx = Context{
			st: s, idx: i, name: e.Name,
			rng: rand.New(rand.NewPCG(cfg.Seed^uint64(cfg.Self)*0x9e3779b97f4a7c15, uint64(i)+1)),
		}
		s.ctxs = append(s.ctxs, ctx)
		if err := e.Layer.Init(ctx); err != nil {
			return nil, fmt.Errorf("stack: layer %s: %w", e.Name, err)
		}
	}
	s.room = FrameSize
	s.share = true
	for _, e := range cfg.Layers {
		if h, ok := e.Layer.(HeaderSizer); ok {
			s.room += max(h.HeaderSize(), 0)
		}
		if _, ok := e.Layer.(CompactHolder); !ok {
			s.share = false
		}
	}
	s.setHints()
	s.setWarmers()
	return s, nil
}

// maxHints bounds Stack.hints.
const maxHints = 8

// setHints notes the objects behind the stack's interfaces for Prefetch:
// the layers bottom first, then the application and the transport, then
// the layers' contexts, as many as fit.
func (s *Stack) setHints() {
	k := 0
	add := func(p unsafe.Pointer) {
		if k < maxHints {
			s.hints[k] = p
			k++
		}
	}
	for i := len(s.layers) - 1; i >= 0; i-- {
		add(dataOf(s.layers[i].Layer))
	}
	add(dataOf(s.app))
	add(dataOf(s.tr))
	for i := len(s.ctxs) - 1; i >= 0; i-- {
		add(unsafe.Pointer(s.ctxs[i]))
	}
}

// dataOf is the data word of an interface value: the pointer to the
// object behind it (or to a boxed copy).
func dataOf(v any) unsafe.Pointer {
	return (*[2]unsafe.Pointer)(unsafe.Pointer(&v))[1]
}

// Prefetch hints that the stack is about to be stepped (a packet or a
// timer for it): it asks the CPU to start loading what a step reads after
// the Stack itself (its queues' first slots, its layers, its application
// and transport), so that a caller that knows its next
// steps in advance (the simulator, stepping thousands of stacks) overlaps
// those loads with other work. It reads the Stack's first HotLines cache
// lines, which the caller should have prefetched a little earlier. It
// changes nothing.
func (s *Stack) Prefetch() {
	// One line each: more hints at once than the CPU has room to track
	// would stall the step that gives them. The data queue's first slot
	// takes two (an item is 88 bytes): every packet's first event goes
	// there, and copying it out of a half-loaded slot stalled each step.
	// Queues that lend their buffers (Config.Scratch) have none here: a
	// step borrows one that is in the caches.
	prefetch.Lines(unsafe.Pointer(unsafe.SliceData(s.data.buf)), 2)
	prefetch.Lines(unsafe.Pointer(unsafe.SliceData(s.ctrl.buf)), 1)
	prefetch.Lines(unsafe.Pointer(unsafe.SliceData(s.layers)), 1)
	for _, p := range s.hints {
		prefetch.Lines(p, 1)
	}
}

// Headroom is the room every message the stack makes keeps in front of its
// payload: the sum of its layers' header sizes (HeaderSizer) and the frame.
func (s *Stack) Headroom() int { return s.room }

// Self is this stack's node.
func (s *Stack) Self() event.NodeID { return s.self }

// Now is the time of the current or last step.
func (s *Stack) Now() event.Time { return s.now }

// Next is when the stack next needs Tick (event.Never if no timer is set).
func (s *Stack) Next() event.Time {
	if s.closed {
		return event.Never // a closed stack fires no more timers
	}
	return s.timers.next()
}

// Tick fires every timer that is due.
func (s *Stack) Tick() {
	if s.closed {
		return
	}
	s.now = s.clock.Now()
	for {
		t := s.timers.pop(s.now)
		if t == nil {
			break
		}
		s.ctrl.push(item{dir: dirTimer, tm: t}, s.scratch)
		s.run()
	}
	s.run()
}

// Receive feeds one packet from the network. pkt is only read during the
// call. A malformed packet is counted and dropped; its error is returned for
// the transport to log.
func (s *Stack) Receive(pkt []byte) error {
	if s.closed {
		return ErrClosed
	}
	s.now = s.clock.Now()
	err := s.accept(pkt)
	s.run()
	return err
}

// ReceiveBatch feeds several packets that arrived together (a batched read).
// All are classified first, so control packets in the batch are processed
// before its data packets (QSM 2006, section 3). It returns the first
// malformed packet's error, if any; the others are still processed.
//
// A batch of more than receiveChunk packets (a read of UDP GRO buffers
// holds thousands) takes its control packets first, then its data packets
// receiveChunk at a time, stepping through each chunk before taking the
// next: queued all at once, their events and copies would leave the
// caches (receivers took a third more CPU per message).
func (s *Stack) ReceiveBatch(pkts [][]byte) error {
	if s.closed {
		return ErrClosed
	}
	s.now = s.clock.Now()
	var first error
	if len(pkts) <= receiveChunk {
		for _, p := range pkts {
			if err := s.accept(p); err != nil && first == nil {
				first = err
			}
		}
		s.run()
		return first
	}
	for _, p := range pkts {
		if controlFrame(p) {
			_ = s.accept(p) // it parsed
		}
	}
	n := 0
	for _, p := range pkts {
		if controlFrame(p) {
			continue
		}
		if err := s.accept(p); err != nil && first == nil {
			first = err
		}
		if n++; n%receiveChunk == 0 {
			s.run()
		}
	}
	s.run()
	return first
}

// ReceiveShared is ReceiveBatch without copying: the messages made of
// pkts share their bytes, which lie in the memory carrier stands for
// (event.NewCarrier), each holding a reference on it until it is
// released. It shares only when every layer is a CompactHolder (it
// copies otherwise, as ReceiveBatch does): a layer that keeps a message
// keeps Compact's result, which copies a shared one unless the carrier's
// budget (event.Pins) has room for it, so the carrier's last reference is
// dropped once every message taken from the batch has been delivered,
// dropped or compacted, within the call, or it is one of the at most
// Pins.Max carriers that held messages keep. The caller holds one
// reference of its own across the call and releases it after.
func (s *Stack) ReceiveShared(pkts [][]byte, carrier *event.Message) error {
	if !s.share {
		return s.ReceiveBatch(pkts)
	}
	s.carrier = carrier
	err := s.ReceiveBatch(pkts)
	s.carrier = nil
	return err
}

// Shares reports whether ReceiveShared shares the buffers it is handed
// (every layer is a CompactHolder) rather than copying each packet.
func (s *Stack) Shares() bool { return s.share }

// controlFrame says whether pkt parses as a frame the stack queues as
// control (Event.IsControl).
func controlFrame(pkt []byte) bool {
	f, err := ParseFrame(pkt)
	return err == nil && (!f.Kind.IsData() || f.Control)
}

// receiveChunk is how many data packets of a large batch ReceiveBatch
// queues before it runs the stack (a small batch's size before UDP GRO:
// the transport's read batch).
const receiveChunk = 64

// accept parses one packet and queues it at the bottom layer.
func (s *Stack) accept(pkt []byte) error {
	f, err := ParseFrame(pkt)
	if err != nil {
		s.net.Malformed++
		return err
	}
	s.net.PacketsReceived++
	s.net.BytesReceived += int64(len(pkt))
	if f.Src == s.self && f.Kind == event.Cast {
		return nil // our own multicast looped back
	}
	var m *event.Message
	if s.carrier != nil {
		m = s.pool.Borrow(s.carrier, pkt[FrameSize:], s.room)
	} else {
		m = s.pool.FromBytesRoom(pkt[FrameSize:], s.room)
	}
	ev := event.Event{Kind: f.Kind, Group: f.Group, Peer: f.Src, Control: f.Control, Msg: m}
	s.enqueue(len(s.layers)-1, dirUp, &ev)
	return nil
}

// Cast multicasts payload to group g. The payload is copied. It returns
// ErrBackpressure when the application queue is full or flow control holds
// the group off.
func (s *Stack) Cast(g event.GroupID, payload []byte) error {
	return s.submit(event.Cast, g, event.NoNode, payload, 0)
}

// Send sends payload to one node, reliably if the stack has a layer that
// makes point-to-point reliable.
func (s *Stack) Send(to event.NodeID, payload []byte) error {
	return s.submit(event.Send, event.NoGroup, to, payload, 0)
}

func (s *Stack) submit(k event.Kind, g event.GroupID, to event.NodeID, payload []byte, stamp event.Time) error {
	if s.closed {
		return ErrClosed
	}
	if len(payload) > s.maxPay {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(payload), s.maxPay)
	}
	if s.apps.full() || (len(s.held) > 0 && s.held[g]) {
		s.net.AppBackpressure++
		return ErrBackpressure
	}
	s.now = s.clock.Now()
	m := s.pool.FromBytesRoom(payload, s.room)
	m.Stamp = stamp
	s.apps.push(appSend{kind: k, group: g, peer: to, msg: m})
	s.appFeed.Ready()
	s.run()
	return nil
}

// Join asks to join group g (going down through the stack: a gms layer turns
// it into a request to the membership service; at the bottom the transport
// subscribes to the group's channel).
func (s *Stack) Join(g event.GroupID) error { return s.control(event.Join, g) }

// Leave asks to leave group g.
func (s *Stack) Leave(g event.GroupID) error { return s.control(event.Leave, g) }

func (s *Stack) control(k event.Kind, g event.GroupID) error {
	if s.closed {
		return ErrClosed
	}
	s.now = s.clock.Now()
	ev := event.Event{Kind: k, Group: g}
	s.enqueue(0, dirDown, &ev)
	s.run()
	return nil
}

// InstallView is the static membership source: it hands the stack a view
// from below, through the same entry as a packet from the network, exactly
// where a membership layer (gms) would produce it. The stack treats it like
// any other view (see follow).
func (s *Stack) InstallView(v *event.ViewInfo) {
	s.Inject(len(s.layers)-1, true, event.Event{Kind: event.View, Group: v.Group, View: v})
}

// InstallNeighbourhood is the static source of the multi-group layers'
// derived membership, handed in from below as gms would produce it.
func (s *Stack) InstallNeighbourhood(n *event.Neighbourhood) {
	s.Inject(len(s.layers)-1, true, event.Event{Kind: event.Regions, Regions: n})
}

// follow subscribes the node to group g's channel when in is true: on a
// Join reaching the bottom, and on every view naming the node, whichever
// source installed it (gms or a static one). Only Leave and Close
// unsubscribe.
func (s *Stack) follow(g event.GroupID, in bool) {
	if !in {
		return
	}
	if err := s.subscribe(event.ChannelOf(g)); err != nil && s.log != nil {
		s.log(fmt.Sprintf("%v %v stack: subscribe %v: %v", s.now, s.self, g, err))
	}
}

// Inject feeds an arbitrary event into layer i going up (from below) or
// down (from above). Tests and the static membership source (InstallView)
// use it; i out of range means the network side (i = number of layers) or
// the application side (i = -1).
func (s *Stack) Inject(i int, up bool, ev event.Event) {
	s.now = s.clock.Now()
	d := dirDown
	if up {
		d = dirUp
	}
	s.enqueue(i, d, &ev)
	s.run()
}

// Pump pulls ready feeds (control first, then data: the application's
// waiting sends are one data feed) while the transport can take more.
// Transports that implement Pacer call it when they drain.
func (s *Stack) Pump() {
	s.now = s.clock.Now()
	s.run()
}

// Backlog is the number of application sends waiting in the stack.
func (s *Stack) Backlog() int { return s.apps.size }

// Close shuts the stack down, the one shutdown path: an Exit event goes
// down (a layer may still send, as gms says goodbye), waiting sends are
// dropped, then every layer that implements Closer is closed exactly once,
// top first, and releases what it holds. Layers do not release on Exit.
func (s *Stack) Close() {
	if s.closed {
		return
	}
	s.now = s.clock.Now()
	ev := event.Event{Kind: event.Exit}
	s.enqueue(0, dirDown, &ev)
	s.run()
	s.closed = true
	for {
		a, ok := s.apps.pop()
		if !ok {
			break
		}
		a.msg.Release()
	}
	for _, e := range s.layers {
		if c, ok := e.Layer.(Closer); ok {
			c.Close()
		}
	}
	for g := range s.subs {
		_ = s.tr.Unsubscribe(g)
	}
	for ch := range s.chans {
		_ = s.chtr.UnsubscribeChannel(ch)
	}
}

// subscribe makes the node receive channel ch (Context.Subscribe).
func (s *Stack) subscribe(ch event.ChannelID) error {
	switch {
	case s.closed:
		return ErrClosed
	case !ch.Valid():
		return fmt.Errorf("stack: subscribe: %v is not a channel", ch)
	case ch.Kind() == event.GroupChannel:
		g := ch.Group()
		if g == event.NoGroup {
			return fmt.Errorf("stack: subscribe: no group")
		}
		if s.subs[g] {
			return nil
		}
		if err := s.tr.Subscribe(g); err != nil {
			return err
		}
		s.subs[g] = true
		return nil
	case s.chtr == nil:
		return ErrNoChannels
	case s.chans[ch]:
		return nil
	}
	if err := s.chtr.SubscribeChannel(ch); err != nil {
		return err
	}
	s.chans[ch] = true
	return nil
}

// unsubscribe stops receiving ch (Context.Unsubscribe).
func (s *Stack) unsubscribe(ch event.ChannelID) error {
	if ch.Kind() == event.GroupChannel {
		g := ch.Group()
		if !s.subs[g] {
			return nil
		}
		delete(s.subs, g)
		return s.tr.Unsubscribe(g)
	}
	if !s.chans[ch] {
		return nil
	}
	delete(s.chans, ch)
	return s.chtr.UnsubscribeChannel(ch)
}

// enqueue queues ev for layer target (or a sink) in direction d. Control
// goes before data, except on its way to the application: there a control
// event (a View, Block, Lost, flow control) waits behind the deliveries
// queued before it, so the application sees the top layer's events in the
// order it passed them up (a view after the last deliveries of the view
// before).
func (s *Stack) enqueue(target int, d direction, ev *event.Event) {
	var it *item
	switch {
	case target < 0 && (!ev.IsControl() || s.appData > 0):
		s.appData++
		it = s.data.slot(s.scratch)
	case ev.IsControl():
		it = s.ctrl.slot(s.scratch)
	default:
		it = s.data.slot(s.scratch)
	}
	// the slot is zero (pop clears what it takes): tm stays nil
	it.ev, it.target, it.dir = *ev, target, d
}

// run steps until no work is left: control first, then data, then ready
// feeds (control feeds first; the application queue is a data feed) while
// the transport has room.
func (s *Stack) run() {
	if s.running {
		return // re-entered from an application callback: the outer run goes on
	}
	s.running = true
	it := &s.cur
	for {
		if s.ctrl.pop(it) {
			s.dispatch(it)
			continue
		}
		if s.data.pop(it) {
			if it.target < 0 {
				s.appData--
			}
			s.dispatch(it)
			continue
		}
		if s.closed || (s.pacer != nil && !s.pacer.Writable()) || !s.pullFeed() {
			break
		}
	}
	*it = item{}
	s.running = false
	s.ctrl.lend(s.scratch)
	s.data.lend(s.scratch)
}

// pullApp is the application queue's feed: it takes the oldest waiting
// send into the top layer.
func (s *Stack) pullApp() bool {
	a, ok := s.apps.pop()
	if !ok {
		return false
	}
	it := &s.cur
	*it = item{ev: event.Event{Kind: a.kind, Group: a.group, Peer: a.peer, Msg: a.msg}}
	s.layers[0].Layer.Down(&it.ev)
	return s.apps.size > 0
}

func (s *Stack) dispatch(it *item) {
	switch {
	case it.dir == dirTimer:
		s.timers.fire(it.tm)
	case it.target < 0:
		s.toApp(&it.ev)
	case it.target >= len(s.layers):
		s.toNet(&it.ev)
	case it.dir == dirUp:
		s.layers[it.target].Layer.Up(&it.ev)
	default:
		s.layers[it.target].Layer.Down(&it.ev)
	}
}

// toApp is the top sink.
func (s *Stack) toApp(ev *event.Event) {
	switch ev.Kind {
	case event.Cast, event.Send:
		if ev.Control {
			ev.Msg.Release() // a layer's control message nobody consumed
			return
		}
		m := ev.Msg
		s.app.Deliver(Delivery{Group: ev.Group, From: ev.Peer, Payload: m.Bytes(), Recovery: m.Recovery})
		m.Release()
	case event.View:
		if ev.View != nil {
			s.follow(ev.View.Group, ev.View.Has(s.self))
		}
		s.app.View(ev.View)
	case event.Lost:
		if s.lost != nil {
			l := Loss{Group: ev.Group, From: ev.Peer}
			if ev.Lost != nil {
				l.Range = *ev.Lost
			}
			s.lost.Lost(l)
		}
	case event.Block, event.Unblock:
		if s.block != nil {
			s.block.Blocked(ev.Group, ev.Kind == event.Block)
		}
	case event.HoldOff:
		s.held[ev.Group] = true
		s.app.Flow(ev.Group, false)
	case event.Resume:
		delete(s.held, ev.Group)
		s.app.Flow(ev.Group, true)
		// sends may proceed; the run loop pulls them
	default:
		if ev.Msg != nil {
			ev.Msg.Release()
		}
	}
}

// toNet is the bottom sink: frame and transmit data, act on Join/Leave.
func (s *Stack) toNet(ev *event.Event) {
	switch ev.Kind {
	case event.Cast, event.Send, event.Membership:
		m := ev.Msg
		if ev.Kind == event.Cast && (ev.Peer != event.NoNode) != ev.OneMember {
			s.net.BadCast++
			if s.log != nil {
				s.log(fmt.Sprintf("%v %v stack: refused cast in %v to %v (one member: %v)", s.now, s.self, ev.Group, ev.Peer, ev.OneMember))
			}
			m.Release()
			return
		}
		multi := ev.Kind == event.Cast && ev.Peer == event.NoNode
		other := multi && ev.Channel != 0 && ev.Channel.Kind() != event.GroupChannel
		if other && (s.chtr == nil || !ev.Channel.Valid()) {
			s.net.NoChannel++
			m.Release()
			return
		}
		hdr := m.Prepend(FrameSize)
		PutFrame(hdr, Frame{Kind: ev.Kind, Control: ev.IsControl(), Group: ev.Group, Src: s.self})
		pkt := m.Bytes()
		s.net.PacketsSent++
		s.net.BytesSent += int64(len(pkt))
		if ev.IsControl() {
			s.net.ControlPacketsSent++
			s.net.ControlBytesSent += int64(len(pkt))
		}
		switch {
		case other:
			s.chtr.MulticastOn(ev.Channel, pkt)
		case multi && ev.Channel != 0:
			s.tr.Multicast(ev.Channel.Group(), pkt)
		case multi:
			s.tr.Multicast(ev.Group, pkt)
		default:
			s.tr.Send(ev.Peer, pkt)
		}
		m.Release()
	case event.Join:
		s.follow(ev.Group, true)
	case event.Leave:
		_ = s.unsubscribe(event.ChannelOf(ev.Group))
	default:
		if ev.Msg != nil {
			ev.Msg.Release()
		}
	}
}

// Net returns the stack's network counters.
func (s *Stack) Net() NetStats { return s.net }

// LayerCounters are one layer's counters, in the order they were created.
type LayerCounters struct {
	Layer  string
	Names  []string
	Values []int64
}

// Counters returns every layer's counters, top first.
func (s *Stack) Counters() []LayerCounters {
	out := make([]LayerCounters, len(s.ctxs))
	for i, c := range s.ctxs {
		lc := LayerCounters{Layer: c.name, Names: append([]string(nil), c.names...)}
		for _, ctr := range c.ctrs {
			lc.Values = append(lc.Values, ctr.v)
		}
		out[i] = lc
	}
	return out
}

// Layer returns the i-th layer, top first (for tests and reports).
func (s *Stack) Layer(i int) Layer { return s.layers[i].Layer }

// NumLayers is the number of layers.
func (s *Stack) NumLayers() int { return len(s.layers) }
