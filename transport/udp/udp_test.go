package udp

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
)

// chanSink copies every packet into a channel and releases the batch.
type chanSink chan []byte

func (c chanSink) Input(b *stack.Batch) bool {
	for _, p := range b.Pkts {
		c <- append([]byte(nil), p...)
	}
	b.Release()
	return true
}

func pair(t testing.TB, sink Sink) (*Transport, *Transport) {
	b := open(t, Config{Self: 2}, sink)
	return toward(t, Config{Self: 1}, nil, 2, b), b
}

// open makes a transport of cfg delivering to sink, closed when the test
// ends.
func open(tb testing.TB, cfg Config, sink Sink) *Transport {
	tb.Helper()
	tr, err := New(cfg, sink)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { tr.Close() })
	return tr
}

// toward is open with rx's address in the new transport's address book as
// node id (pinned, as every caller's entry is).
func toward(tb testing.TB, cfg Config, sink Sink, id event.NodeID, rx *Transport) *Transport {
	tb.Helper()
	tx := open(tb, cfg, sink)
	if err := tx.SetAddr(id, rx.LocalAddr()); err != nil {
		tb.Fatal(err)
	}
	return tx
}

func TestUnicastLoopback(t *testing.T) {
	got := make(chanSink, 1000)
	a, _ := pair(t, got)
	for i := range 500 {
		a.Send(2, []byte(fmt.Sprintf("packet %d", i)))
	}
	seen := map[string]bool{}
	timeout := time.After(5 * time.Second)
	for len(seen) < 500 {
		select {
		case p := <-got:
			seen[string(p)] = true
		case <-timeout:
			t.Fatalf("received %d of 500 distinct packets; stats %+v", len(seen), a.Stats())
		}
	}
	if !seen["packet 0"] || !seen["packet 499"] {
		t.Fatalf("wrong contents")
	}
	a.Send(99, []byte("nobody"))
	if s := a.Stats(); s.SendErrors != 1 || s.PacketsSent != 500 {
		t.Errorf("stats %+v: want 500 sent and 1 error (unknown node 99)", s)
	}
}

func TestBadConfig(t *testing.T) {
	if _, err := New(Config{}, nil); err == nil {
		t.Error("zero Self accepted")
	}
	if _, err := New(Config{Self: 1, Interface: "no-such-if0"}, nil); err == nil {
		t.Error("unknown interface accepted")
	}
	tr := open(t, Config{Self: 1}, nil)
	if err := tr.SetAddr(2, &net.UDPAddr{IP: net.ParseIP("::1"), Port: 1}); err == nil {
		t.Error("IPv6 address accepted")
	}
}

func TestGroupAddr(t *testing.T) {
	seen := map[string]event.GroupID{}
	for g := event.GroupID(1); g <= 5000; g++ {
		a := GroupAddr(g, 47000)
		if !a.IP.IsMulticast() || a.IP.To4()[0] != 239 {
			t.Fatalf("group %v -> %v, not in 239.0.0.0/8", g, a)
		}
		if o, dup := seen[a.IP.String()]; dup {
			t.Fatalf("groups %v and %v share %v", o, g, a.IP)
		}
		seen[a.IP.String()] = g
	}
	if GroupAddr(7, 1).String() != GroupAddr(7, 1).String() {
		t.Fatal("not deterministic")
	}
}

// TestMulticastNetns runs TestMulticastInside in a fresh network namespace
// with loopback only (unshare -n), multicast enabled on lo.
func TestMulticastNetns(t *testing.T) { inNetns(t, "TestMulticastInside") }

// inNetns runs the named test of this binary in a fresh network namespace
// with loopback only (unshare -n), multicast enabled on lo, and fails if it
// does not pass there.
func inNetns(t *testing.T, test string) {
	t.Helper()
	if os.Getenv("LC_UDP_NETNS") != "" {
		t.Skip("already inside")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a network namespace (unshare -n)")
	}
	for _, tool := range []string{"unshare", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s to create a network namespace: %v", tool, err)
		}
	}
	script := "ip link set lo up && ip link set lo multicast on && ip route add 224.0.0.0/4 dev lo && exec \"$0\" -test.run \"^$1\\$\" -test.v"
	cmd := exec.Command("unshare", "-n", "sh", "-c", script, os.Args[0], test)
	cmd.Env = append(os.Environ(), "LC_UDP_NETNS=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: "+test)) {
		t.Fatalf("inside the namespace: %v\n%s", err, out)
	}
}

// TestMulticastInside: three transports on lo, two subscribed to a group;
// a multicast reaches both subscribers (loopback on), not the third, and
// stops after Unsubscribe.
func TestMulticastInside(t *testing.T) {
	if os.Getenv("LC_UDP_NETNS") == "" {
		t.Skip("runs only inside the namespace TestMulticastNetns creates")
	}
	sinks := []chanSink{make(chanSink, 100), make(chanSink, 100), make(chanSink, 100)}
	var trs []*Transport
	for i := range 3 {
		trs = append(trs, open(t, Config{Self: event.NodeID(i + 1), MulticastPort: 47123}, sinks[i]))
	}
	g := event.GroupID(42)
	for _, tr := range trs[:2] {
		if err := tr.Subscribe(g); err != nil {
			t.Fatal(err)
		}
	}
	if err := trs[2].Subscribe(43); err != nil { // another group, same port
		t.Fatal(err)
	}
	trs[2].Multicast(g, []byte("hello"))
	for i := range 2 {
		select {
		case p := <-sinks[i]:
			if string(p) != "hello" {
				t.Fatalf("node %d got %q", i+1, p)
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("node %d got nothing; sender stats %+v", i+1, trs[2].Stats())
		}
	}
	if err := trs[1].Unsubscribe(g); err != nil {
		t.Fatal(err)
	}
	trs[0].Multicast(g, []byte("again"))
	time.Sleep(200 * time.Millisecond)
	for i, want := range []int{1, 0, 0} { // node 1 hears its own multicast (the stack drops it)
		if len(sinks[i]) != want {
			for len(sinks[i]) > 0 {
				t.Logf("node %d got %q", i+1, <-sinks[i])
			}
			t.Errorf("node %d: %d packets after unsubscribe, want %d", i+1, len(sinks[i]), want)
		}
	}
}

// countSink counts packets and releases batches at once.
type countSink chan int

func (c countSink) Input(b *stack.Batch) bool {
	c <- len(b.Pkts)
	b.Release()
	return true
}

// BenchmarkUDPLoopback: one transport sends 1000-byte packets to another on
// 127.0.0.1; reports received packets per second (send drops excluded).
func BenchmarkUDPLoopback(b *testing.B) {
	got := make(countSink, 1024)
	a, _ := pair(b, got)
	start := time.Now()
	recv := sendLoop(b, a, got, make([]byte, 1000))
	b.ReportMetric(float64(recv)/time.Since(start).Seconds(), "pkts/s")
}

// sendLoop sends pkt from tx to node 2 b.N times (timed), taking what got
// counts as it goes, then waits up to a second for the rest. It returns
// the packets received, b.N if the wait ran out (the missing ones are
// reported as lost).
func sendLoop(b *testing.B, tx *Transport, got countSink, pkt []byte) int {
	recv := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tx.Send(2, pkt)
		if i%32 == 31 {
			tx.Flush() // a step's worth of packets, as stack.Node flushes
		}
		for more := true; more; {
			select {
			case n := <-got:
				recv += n
			default:
				more = false
			}
		}
	}
	tx.Flush()
	deadline := time.After(time.Second)
	for recv+int(tx.Stats().SendDrops) < b.N {
		select {
		case n := <-got:
			recv += n
		case <-deadline:
			b.ReportMetric(float64(b.N-recv), "lost")
			recv = b.N
		}
	}
	return recv
}

// wakeSink discards packets and counts Wake calls.
type wakeSink struct{ woken chan struct{} }

func (w *wakeSink) Input(b *stack.Batch) bool { b.Release(); return true }
func (w *wakeSink) Wake() {
	select {
	case w.woken <- struct{}{}:
	default:
	}
}

// TestPacer: after a refused send (simulated: on loopback the kernel hands
// a datagram straight to the receiving socket, so the sender's buffer never
// fills) the transport reports itself not writable, then writable again
// within a few pauses, and wakes its node. The pause is made 200 ms long
// here: at 200 µs a loaded machine let it end between pause and the check.
func TestPacer(t *testing.T) {
	pauseFor = 200 * time.Millisecond
	defer func() { pauseFor = PauseFor }()
	ws := &wakeSink{woken: make(chan struct{}, 1)}
	a := open(t, Config{Self: 1}, ws)
	if !a.Writable() {
		t.Fatal("not writable at start")
	}
	for round := range 2 { // the second round reuses the timer
		a.pause()
		if a.Writable() {
			t.Fatalf("round %d: writable right after a refused send", round)
		}
		select {
		case <-ws.woken:
		case <-time.After(time.Second):
			t.Fatalf("round %d: node never woken", round)
		}
		if !a.Writable() {
			t.Errorf("round %d: still not writable after the wake", round)
		}
	}
}
