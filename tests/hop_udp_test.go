package tests

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/experiment/udprun"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/udp"
)

// hopUDPSpec is the stack of TestHopUDPNetns: Spread's, with ring's token
// timers made for a loaded machine.
const hopUDPSpec = "hop : ring(token_timeout=500ms, token_retransmit=20ms) : gms"

// TestHopUDPNetns: hop : ring : gms over UDP in a network namespace
// (loopback only): the membership service (stacktool gms) and two sites of
// two processes each (n1, n2 in site 1; n3, n4 in site 2), every process
// casting. The service gives the site views, the representatives n1 and n3
// join the sites by a Hop link, and every process delivers every other
// process's messages once, in FIFO order, all in one agreed order.
func TestHopUDPNetns(t *testing.T) {
	ns := newNetns(t)
	bin := stacktool(t)
	const svcAddr, nodes, count = "127.0.0.1:7600", 4, 100
	ns.startService(t, bin, svcAddr, "--view-interval", "100ms", "--fd-timeout", "2s")
	got := runChildren(t, ns, "TestHopUDPProcess", nodes, func(i int) []string {
		return []string{fmt.Sprintf("LAYERCAST_HOP_NODE=%d", i+1), fmt.Sprintf("LAYERCAST_HOP_SITE=%d", i/2+1),
			fmt.Sprintf("LAYERCAST_HOP_NODES=%d", nodes), fmt.Sprintf("LAYERCAST_HOP_COUNT=%d", count), "LAYERCAST_HOP_GMS=" + svcAddr}
	})
	for i := range got {
		if len(got[i]) != (nodes-1)*count {
			t.Errorf("node %d delivered %d messages, want %d", i+1, len(got[i]), (nodes-1)*count)
		}
		checkNumbered(t, i+1, got[i])
	}
	// Agreed order: any two nodes deliver the messages both deliver (of
	// the other two senders) in the same order.
	for i := range nodes {
		for j := i + 1; j < nodes; j++ {
			both := func(d string) bool {
				return !strings.HasPrefix(d, fmt.Sprintf("n%d ", i+1)) && !strings.HasPrefix(d, fmt.Sprintf("n%d ", j+1))
			}
			a := slices.DeleteFunc(slices.Clone(got[i]), func(d string) bool { return !both(d) })
			b := slices.DeleteFunc(slices.Clone(got[j]), func(d string) bool { return !both(d) })
			if !slices.Equal(a, b) {
				t.Errorf("nodes %d and %d delivered the messages of the other two in different orders", i+1, j+1)
			}
		}
	}
}

// runChildren runs n nodes as copies of this test binary in ns, each
// running the test named run (a ...Process test) with what env(i) adds to
// the environment of node i+1; it waits until each has printed DONE (every
// message delivered), closes their standard input so they may stop, and
// returns each node's deliveries in order ("from seq", from its lines
// "D from seq").
func runChildren(t *testing.T, ns *netns, run string, n int, env func(i int) []string) [][]string {
	t.Helper()
	kids := make([]*proc, n)
	stdins := make([]io.WriteCloser, n)
	for i := range kids {
		cmd := ns.command(os.Args[0], "-test.run=^"+run+"$")
		cmd.Env = append(os.Environ(), env(i)...)
		var err error
		if stdins[i], err = cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		kids[i] = start(t, fmt.Sprintf("node%d", i+1), cmd)
	}
	for _, k := range kids {
		k.waitFor(t, regexp.MustCompile(`^DONE$`), 60*time.Second, "every message delivered")
	}
	for _, w := range stdins {
		w.Close() // every node has everything: they may stop
	}
	got := make([][]string, n)
	for i, k := range kids {
		for _, l := range k.lines() {
			if d, ok := strings.CutPrefix(l, "D "); ok {
				got[i] = append(got[i], d)
			}
		}
	}
	return got
}

// checkNumbered reports the first delivery ("from seq") of a node that is
// not the next of its sender's numbered messages (FIFO order, from 1).
func checkNumbered(t *testing.T, node int, got []string) {
	t.Helper()
	next := map[string]int{}
	for _, d := range got {
		from, seq, _ := strings.Cut(d, " ")
		n, _ := strconv.Atoi(seq)
		if n != next[from]+1 {
			t.Errorf("node %d delivered %s's message %d after %d", node, from, n, next[from])
			return
		}
		next[from] = n
	}
}

// TestHopUDPProcess is one node of TestHopUDPNetns, run in the namespace by
// it (skipped otherwise): hopUDPSpec over UDP in site LAYERCAST_HOP_SITE,
// joining group 1 through the service, casting LAYERCAST_HOP_COUNT messages
// once the view holds every node, printing every delivery ("D <from>
// <seq>") in order and "DONE" once it has all; it keeps going until its
// standard input closes.
func TestHopUDPProcess(t *testing.T) {
	self, err := strconv.Atoi(os.Getenv("LAYERCAST_HOP_NODE"))
	if err != nil {
		t.Skip("run by TestHopUDPNetns")
	}
	site, _ := strconv.Atoi(os.Getenv("LAYERCAST_HOP_SITE"))
	nodes, _ := strconv.Atoi(os.Getenv("LAYERCAST_HOP_NODES"))
	count, _ := strconv.Atoi(os.Getenv("LAYERCAST_HOP_COUNT"))
	gmsAddr, err := net.ResolveUDPAddr("udp4", os.Getenv("LAYERCAST_HOP_GMS"))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := compose.Parse(hopUDPSpec)
	if err != nil {
		t.Fatal(err)
	}
	service, err := udprun.ServiceOf(spec)
	if err != nil {
		t.Fatal(err)
	}
	// Every address is given: representatives of two sites share no
	// multicast channel, so they would never learn each other's address
	// from traffic as stacktool node's nodes do.
	book := map[event.NodeID]*net.UDPAddr{service: gmsAddr}
	for i := 1; i <= nodes; i++ {
		book[event.NodeID(i)] = &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7600 + i}
	}
	tr, err := udp.New(udp.Config{Self: event.NodeID(self), Book: book, Interface: "lo", MulticastPort: 27300}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	pr := newDeliveryPrinter((nodes - 1) * count)
	views := udprun.NewViews(event.NodeID(self), []event.GroupID{1})
	full := make(chan struct{})
	fullOnce := sync.OnceFunc(func() { close(full) })
	nd, err := stack.NewNode(stack.NodeConfig{BlockOnBackpressure: true, Stack: stack.Config{
		Self: event.NodeID(self), Transport: tr, Seed: uint64(self), Site: event.SiteID(site),
		Layers: compose.MustBuild(hopUDPSpec),
		App: stack.AppFuncs{
			OnView: func(v *event.ViewInfo) {
				views.View(v)
				if len(v.Members) == nodes {
					fullOnce()
				}
			},
			OnDeliver: pr.deliver,
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer nd.Close()
	tr.SetSink(nd)
	if err := views.Join(context.Background(), nd, gmsAddr, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case <-full:
	case <-time.After(20 * time.Second):
		t.Fatalf("no view of all %d nodes within 20 s", nodes)
	}
	// Let the site views and the Hop link settle before the first casts.
	castNumbered(t, nd, count, 5*time.Millisecond)
	pr.finish()
}

// deliveryPrinter prints a child process's deliveries for its parent test
// to read: "D <from> <seq>" (the payload's first 4 bytes), in order, and
// "DONE" once it has want of them.
type deliveryPrinter struct {
	mu      sync.Mutex
	out     *bufio.Writer
	n, want int
	done    bool
}

func newDeliveryPrinter(want int) *deliveryPrinter {
	return &deliveryPrinter{out: bufio.NewWriter(os.Stdout), want: want}
}

// deliver is the stack's OnDeliver.
func (p *deliveryPrinter) deliver(d stack.Delivery) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.out, "D %v %d\n", d.From, binary.BigEndian.Uint32(d.Payload))
	p.n++
	if p.n == p.want && !p.done {
		p.done = true
		fmt.Fprintln(p.out, "DONE")
	}
	if p.done || p.n%32 == 0 {
		p.out.Flush()
	}
}

// finish waits until the parent closes standard input (every node is
// done: they may stop), then flushes.
func (p *deliveryPrinter) finish() {
	_, _ = io.Copy(io.Discard, os.Stdin)
	p.mu.Lock()
	p.out.Flush()
	p.mu.Unlock()
}

// castNumbered waits half a second for every process to start (and bind),
// then casts count 100-byte messages to group 1, numbered from 1 in their
// first 4 bytes, one every gap.
func castNumbered(t *testing.T, nd *stack.Node, count int, gap time.Duration) {
	time.Sleep(500 * time.Millisecond)
	payload := make([]byte, 100)
	for i := 1; i <= count; i++ {
		binary.BigEndian.PutUint32(payload, uint32(i))
		if err := nd.Cast(1, payload); err != nil {
			t.Fatal(err)
		}
		time.Sleep(gap)
	}
}
