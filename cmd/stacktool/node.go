package main

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/layers/gms"
	"github.com/layercast/layercast/stack"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:  "node",
		Usage: "run one real node over UDP: join groups through a membership service (stacktool gms) and print views and deliveries",
		Description: "Builds the stack of --spec (it must end in gms), joins the groups of --join through the service at\n" +
			"--gms, prints every view installed and, every --report, how many messages it delivered. With --cast it\n" +
			"multicasts that many messages per second over its groups in turn. Multicast goes out on --mcast-if\n" +
			"(loopback by default). SIGINT or SIGTERM leave the groups and stop the node.\n" +
			"Example: stacktool node --spec specs/gms.stack --gms 127.0.0.1:7000 --join news,sports --id 1",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "spec", Usage: "stack spec or spec file; its bottom layer must be gms", Required: true},
			&cli.StringFlag{Name: "gms", Usage: "UDP address of the membership service (stacktool gms --listen)", Required: true},
			&cli.StringFlag{Name: "join", Usage: "comma-separated group names to join (1 to 200 bytes each)"},
			&cli.UintFlag{Name: "id", Usage: "this node's id (1 to 4294967279; default: from the process id)"},
			&cli.StringFlag{Name: "listen", Usage: "UDP address for unicast", Value: "127.0.0.1:0"},
			&cli.StringFlag{Name: "mcast-if", Usage: "network interface for multicast", Value: "lo"},
			&cli.DurationFlag{Name: "wait", Usage: "how long to wait for the service's first views before giving up", Value: 5 * time.Second},
			&cli.Float64Flag{Name: "cast", Usage: "messages per second to multicast, over the joined groups in turn (0: none)"},
			&cli.IntFlag{Name: "size", Usage: "payload bytes per message cast", Value: 100},
			&cli.DurationFlag{Name: "report", Usage: "interval between delivery count lines", Value: time.Second},
		},
		Action: nodeCmd,
	})
}

// parseGroups maps comma-separated names to group ids.
func parseGroups(list string) ([]event.GroupID, map[event.GroupID]string, error) {
	names := map[event.GroupID]string{}
	var gs []event.GroupID
	if list == "" {
		return nil, nil, fmt.Errorf("--join: group name is empty")
	}
	for i, name := range strings.Split(list, ",") {
		g, err := event.GroupByName(name)
		if err != nil {
			return nil, nil, fmt.Errorf("--join: group %d of %q: %v", i+1, shorten(list), err)
		}
		if other, dup := names[g]; dup && other != name {
			return nil, nil, fmt.Errorf("--join: groups %q and %q map to the same id %v; rename one", other, name, g)
		}
		if _, dup := names[g]; !dup {
			gs = append(gs, g)
		}
		names[g] = name
	}
	return gs, names, nil
}

func shorten(s string) string {
	if len(s) > 40 {
		return s[:30] + "..." + s[len(s)-6:]
	}
	return s
}

func nodeCmd(c *cli.Context) error {
	groups, names := []event.GroupID(nil), map[event.GroupID]string{}
	if c.IsSet("join") {
		var err error
		if groups, names, err = parseGroups(c.String("join")); err != nil {
			return err
		}
	}
	gmsAddr, err := net.ResolveUDPAddr("udp4", c.String("gms"))
	if err != nil {
		return fmt.Errorf("--gms %q: %v", c.String("gms"), err)
	}
	if c.Uint("id") >= uint(gms.ServiceNode) {
		return fmt.Errorf("--id %d: ids from %d up are reserved for the membership service", c.Uint("id"), uint32(gms.ServiceNode))
	}
	self := event.NodeID(c.Uint("id"))
	if self == event.NoNode {
		self = event.NodeID(os.Getpid()%1000000 + 1)
	}
	spec, err := loadSpec(c.String("spec"))
	if err != nil {
		return err
	}
	entries, err := compose.Build(spec)
	if err != nil {
		return err
	}
	var gl *gms.Layer
	for _, e := range entries {
		if l, ok := e.Layer.(*gms.Layer); ok {
			gl = l
		}
	}
	if gl == nil {
		return fmt.Errorf("spec %q has no gms layer: a node needs one to join groups through the service", c.String("spec"))
	}
	ifi, err := net.InterfaceByName(c.String("mcast-if"))
	if err != nil {
		return fmt.Errorf("--mcast-if %q: %v", c.String("mcast-if"), err)
	}
	tr, err := newUDPNet(c.String("listen"), ifi)
	if err != nil {
		return err
	}
	defer tr.close()
	tr.learn(gl.Config().Service, gmsAddr)

	name := func(g event.GroupID) string {
		if n, ok := names[g]; ok {
			return n
		}
		return g.String()
	}
	delivered := map[event.NodeID]int{}
	total := 0
	var mine map[event.GroupID]bool // groups whose view lists us
	mine = map[event.GroupID]bool{}
	app := stack.AppFuncs{
		OnDeliver: func(d stack.Delivery) { delivered[d.From]++; total++ },
		OnView: func(v *event.ViewInfo) {
			fmt.Printf("view %s#%d members %v joined %v left %v\n", name(v.Group), v.ID, v.Members, v.Joined, v.Left)
			mine[v.Group] = v.Has(self)
		},
	}
	r, err := newRunner(self, entries, tr, app)
	if err != nil {
		return err
	}
	fmt.Printf("node %v listening on %v, membership service %v, joining %v\n", self, tr.conn.LocalAddr(), gmsAddr, c.String("join"))

	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	for _, g := range groups {
		r.st.Join(g)
	}
	// Wait for the first views.
	deadline := time.Now().Add(c.Duration("wait"))
	joined := func() bool {
		for _, g := range groups {
			if !mine[g] {
				return false
			}
		}
		return true
	}
	if err := r.runUntil(ctx, func() bool { return joined() || time.Now().After(deadline) }); err != nil {
		return err
	}
	if ctx.Err() != nil {
		r.close()
		fmt.Println("stopped")
		return nil
	}
	if !joined() {
		r.close()
		return fmt.Errorf("membership service at %v did not answer within %v (is stacktool gms running there?)", gmsAddr, c.Duration("wait"))
	}

	var castEvery time.Duration
	if rate := c.Float64("cast"); rate > 0 && len(groups) > 0 {
		castEvery = time.Duration(float64(time.Second) / rate)
	}
	payload := make([]byte, max(c.Int("size"), 1))
	nextCast, nextReport := time.Now(), time.Now().Add(c.Duration("report"))
	k := 0
	r.every = func(now time.Time) time.Time {
		for castEvery > 0 && !now.Before(nextCast) {
			g := groups[k%len(groups)]
			if mine[g] {
				if err := r.st.Cast(g, payload); err == nil {
					k++
				} else if !errors.Is(err, stack.ErrBackpressure) {
					fmt.Fprintln(os.Stderr, "cast:", err)
				}
			} else {
				k++
			}
			nextCast = nextCast.Add(castEvery)
		}
		if !now.Before(nextReport) {
			froms := make([]string, 0, len(delivered))
			for n, cnt := range delivered {
				froms = append(froms, fmt.Sprintf("%v:%d", n, cnt))
			}
			sort.Strings(froms)
			fmt.Printf("delivered %d messages (%s), cast %d\n", total, strings.Join(froms, " "), k)
			nextReport = nextReport.Add(c.Duration("report"))
		}
		next := nextReport
		if castEvery > 0 && nextCast.Before(next) {
			next = nextCast
		}
		return next
	}
	if err := r.runUntil(ctx, func() bool { return false }); err != nil {
		return err
	}
	r.close()
	fmt.Printf("stopped: delivered %d messages, cast %d\n", total, k)
	return nil
}

// runner drives one stack from real time and UDP sockets, on the caller's
// goroutine (the stack is not safe for concurrent use).
type runner struct {
	st    *stack.Stack
	tr    *udpNet
	start time.Time
	// every, if set, is called on each wake-up with the time and returns
	// when it next wants to be called.
	every func(now time.Time) time.Time
	bad   int
}

func newRunner(self event.NodeID, entries []stack.Entry, tr *udpNet, app stack.Application) (*runner, error) {
	r := &runner{tr: tr, start: time.Now()}
	st, err := stack.New(stack.Config{
		Self: self, Layers: entries, Transport: tr, App: app, Seed: uint64(time.Now().UnixNano()),
		Clock: stack.ClockFunc(func() event.Time { return event.Time(time.Since(r.start)) }),
		Log:   func(line string) { fmt.Println(line) },
	})
	if err != nil {
		return nil, err
	}
	r.st = st
	return r, nil
}

// runUntil steps the stack until done() or ctx ends.
func (r *runner) runUntil(ctx context.Context, done func() bool) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for !done() {
		wake := r.start.Add(time.Duration(r.st.Next()))
		if r.st.Next() == event.Never {
			wake = time.Now().Add(100 * time.Millisecond)
		}
		if r.every != nil {
			if t := r.every(time.Now()); t.Before(wake) {
				wake = t
			}
		}
		wake = minTime(wake, time.Now().Add(100*time.Millisecond)) // re-check done()
		timer.Reset(max(time.Until(wake), 0))
		select {
		case <-ctx.Done():
			return nil
		case p := <-r.tr.in:
			r.receive(p)
			for n := len(r.tr.in); n > 0; n-- {
				r.receive(<-r.tr.in)
			}
		case err := <-r.tr.errs:
			return err
		case <-timer.C:
		}
		r.st.Tick()
	}
	return nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func (r *runner) receive(p []byte) {
	if err := r.st.Receive(p); err != nil {
		r.bad++
		if r.bad <= 10 || r.bad%1000 == 0 {
			fmt.Printf("malformed packet (%d so far): %v\n", r.bad, err)
		}
	}
}

// close says goodbye (the gms layer tells the service) and lets the last
// packets out.
func (r *runner) close() { r.st.Close() }

// udpNet is a stack.Transport over UDP for stacktool node and gms: one
// unicast socket, one socket per joined multicast group (bound to the
// group's address, so several processes on one host share it), peers'
// unicast addresses learned from the packets they send.
type udpNet struct {
	conn  *net.UDPConn
	ifi   *net.Interface
	in    chan []byte
	errs  chan error
	mu    sync.Mutex
	peers map[event.NodeID]*net.UDPAddr
	subs  map[event.GroupID]*net.UDPConn
	drops int
}

func newUDPNet(listen string, ifi *net.Interface) (*udpNet, error) {
	addr, err := net.ResolveUDPAddr("udp4", listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: %v", listen, err)
	}
	conn, err := net.ListenUDP("udp4", addr)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: %v", listen, err)
	}
	_ = conn.SetReadBuffer(4 << 20)
	_ = conn.SetWriteBuffer(4 << 20)
	t := &udpNet{conn: conn, ifi: ifi, in: make(chan []byte, 4096), errs: make(chan error, 1),
		peers: map[event.NodeID]*net.UDPAddr{}, subs: map[event.GroupID]*net.UDPConn{}}
	go t.read(conn, true)
	return t, nil
}

// read feeds one socket's packets to the runner.
func (t *udpNet) read(c *net.UDPConn, unicast bool) {
	buf := make([]byte, 65536)
	for {
		n, from, err := c.ReadFromUDP(buf)
		if err != nil {
			if unicast && !errors.Is(err, net.ErrClosed) {
				select {
				case t.errs <- fmt.Errorf("reading %v: %w", c.LocalAddr(), err):
				default:
				}
			}
			return
		}
		if f, err := stack.ParseFrame(buf[:n]); err == nil && f.Src != event.NoNode {
			t.learn(f.Src, from)
		}
		select {
		case t.in <- append([]byte(nil), buf[:n]...):
		default:
			t.mu.Lock()
			t.drops++ // the stack is behind: drop, like a full socket buffer
			t.mu.Unlock()
		}
	}
}

// learn records a node's unicast address.
func (t *udpNet) learn(n event.NodeID, a *net.UDPAddr) {
	t.mu.Lock()
	if old := t.peers[n]; old == nil || !old.IP.Equal(a.IP) || old.Port != a.Port {
		t.peers[n] = a
	}
	t.mu.Unlock()
}

// groupAddr maps a group to a multicast address in 239.192.0.0/16 and a
// port, from a hash of its id.
func groupAddr(g event.GroupID) *net.UDPAddr {
	h := fnv.New32a()
	h.Write([]byte{byte(g >> 24), byte(g >> 16), byte(g >> 8), byte(g)})
	v := h.Sum32()
	return &net.UDPAddr{IP: net.IPv4(239, 192, byte(v>>8), byte(v)), Port: 20000 + int(v>>16)%20000}
}

// Send implements stack.Transport.
func (t *udpNet) Send(to event.NodeID, pkt []byte) {
	t.mu.Lock()
	a := t.peers[to]
	t.mu.Unlock()
	if a == nil {
		return // address not known yet: lost, as on a lossy network
	}
	_, _ = t.conn.WriteToUDP(pkt, a)
}

// Multicast implements stack.Transport.
func (t *udpNet) Multicast(g event.GroupID, pkt []byte) {
	_, _ = t.conn.WriteToUDP(pkt, groupAddr(g))
}

// Subscribe implements stack.Transport.
func (t *udpNet) Subscribe(g event.GroupID) error {
	if t.subs[g] != nil {
		return nil
	}
	c, err := net.ListenMulticastUDP("udp4", t.ifi, groupAddr(g))
	if err != nil {
		return fmt.Errorf("joining %v at %v on %s: %w", g, groupAddr(g), t.ifi.Name, err)
	}
	_ = c.SetReadBuffer(4 << 20)
	t.subs[g] = c
	go t.read(c, false)
	return nil
}

// Unsubscribe implements stack.Transport.
func (t *udpNet) Unsubscribe(g event.GroupID) error {
	if c := t.subs[g]; c != nil {
		delete(t.subs, g)
		return c.Close()
	}
	return nil
}

func (t *udpNet) close() {
	for g, c := range t.subs {
		c.Close()
		delete(t.subs, g)
	}
	t.conn.Close()
}
