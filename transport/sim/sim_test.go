package sim_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
	"github.com/layercast/layercast/transport/sim"
)

// pass is a layer that passes everything through.
type pass struct{ stack.Base }

type recv struct {
	at   event.Time
	from event.NodeID
	body string
}

type harness struct {
	t      *testing.T
	net    *sim.Network
	stacks map[event.NodeID]*stack.Stack
	got    map[event.NodeID][]recv
	// onDeliver, if set, is called after each delivery is recorded.
	onDeliver func(self event.NodeID, d stack.Delivery)
}

const grp = event.GroupID(1)

// newHarness makes n nodes (ids 1..n) with pass-through stacks, all members
// of group grp, each stack clocked by its own node.
func newHarness(t *testing.T, cfg sim.Config, n int, extra func(id event.NodeID) []stack.Entry) *harness {
	return newHarnessClock(t, cfg, n, extra, false)
}

// newHarnessClock is newHarness; with netClock every stack is clocked by the
// Network instead of its node (the network then cannot tell which stacks a
// scheduled function touched).
func newHarnessClock(t *testing.T, cfg sim.Config, n int, extra func(id event.NodeID) []stack.Entry, netClock bool) *harness {
	h := &harness{t: t, net: sim.New(cfg), stacks: map[event.NodeID]*stack.Stack{}, got: map[event.NodeID][]recv{}}
	var members []event.NodeID
	for id := event.NodeID(1); id <= event.NodeID(n); id++ {
		members = append(members, id)
	}
	for _, id := range members {
		nd := h.net.AddNode(id)
		layers := []stack.Entry{{Name: "pass", Layer: &pass{}}}
		if extra != nil {
			layers = append(extra(id), layers...)
		}
		self := id
		var clock stack.Clock = nd
		if netClock {
			clock = h.net
		}
		st, err := stack.New(stack.Config{
			Self: id, Transport: nd, Clock: clock, Layers: layers, AppQueue: 4096,
			App: stack.AppFuncs{OnDeliver: func(d stack.Delivery) {
				h.got[self] = append(h.got[self], recv{at: h.net.Now(), from: d.From, body: string(d.Payload)})
				if h.onDeliver != nil {
					h.onDeliver(self, d)
				}
			}},
		})
		if err != nil {
			t.Fatal(err)
		}
		nd.Attach(st)
		st.InstallView(&event.ViewInfo{Group: grp, ID: 1, Members: members})
		h.stacks[id] = st
	}
	return h
}

// every schedules fn(i) at start, start+gap, ... count times.
func (h *harness) every(start event.Time, gap time.Duration, count int, fn func(i int)) {
	for i := 0; i < count; i++ {
		h.net.At(start.Add(time.Duration(i)*gap), func() { fn(i) })
	}
}

func (h *harness) cast(from event.NodeID, body string) {
	if err := h.stacks[from].Cast(grp, []byte(body)); err != nil {
		h.t.Errorf("cast from %d: %v", from, err)
	}
}

func ms(x float64) event.Time { return event.Time(x * float64(time.Millisecond)) }

func TestReceiveCapacityOverflowsHalf(t *testing.T) {
	h := newHarness(t, sim.Config{Seed: 1, Latency: time.Millisecond}, 2, nil)
	h.net.SetCapacity(2, sim.Capacity{RecvPPS: 1000, RecvBuffer: 100})
	const sent = 4000 // 2000 packets/s for 2 s
	h.every(0, 500*time.Microsecond, sent, func(i int) {
		if err := h.stacks[1].Send(2, []byte("x")); err != nil {
			t.Fatal(err)
		}
	})
	h.net.Run(3 * time.Second)
	st, ns := h.net.Stats(), h.net.NodeStats(2)
	got := len(h.got[2])
	// 1000/s for the 2 s of arrivals, plus the 100 still buffered at the end
	if got < 2050 || got > 2150 {
		t.Errorf("node 2 delivered %d of %d, want about 2100 (1000/s for 2 s plus a full buffer)", got, sent)
	}
	if int(st.OverflowDrops) != sent-got || ns.OverflowDrops != st.OverflowDrops {
		t.Errorf("overflow drops %d (node %d), want %d", st.OverflowDrops, ns.OverflowDrops, sent-got)
	}
	if st.Dropped != 0 {
		t.Errorf("loss-model drops %d, want 0 (overflow is counted apart)", st.Dropped)
	}
	if ns.PeakRecvPackets != 100 {
		t.Errorf("peak receive buffer %d packets, want 100", ns.PeakRecvPackets)
	}
	tx := h.net.NodeStats(1)
	if tx.PacketsSent != sent || ns.PacketsReceived != int64(got) || ns.BytesReceived != int64(got)*(tx.BytesSent/sent) {
		t.Errorf("node stats %+v disagree with %d deliveries", ns, got)
	}
	// the receiver works at its rate: the last delivery is 0.1 s after the last arrival
	last := h.got[2][got-1].at
	if last < ms(2000) || last > ms(2110) {
		t.Errorf("last delivery at %v, want about 2.1s", last)
	}
}

func TestRecvBytesRate(t *testing.T) {
	h := newHarness(t, sim.Config{Seed: 1}, 2, nil)
	h.net.SetCapacity(2, sim.Capacity{RecvBps: 1e6}) // 1000-byte payloads: about 1 ms each
	body := strings.Repeat("b", 1000)
	h.every(0, 0, 100, func(int) { _ = h.stacks[1].Send(2, []byte(body)) })
	h.net.Run(time.Second)
	g := h.got[2]
	if len(g) != 100 {
		t.Fatalf("delivered %d, want 100", len(g))
	}
	size := h.net.NodeStats(2).BytesReceived / 100
	want := ms(100 * float64(size) / 1000)
	if d := g[99].at - want; d < -ms(0.01) || d > ms(0.01) {
		t.Errorf("last of 100 %d-byte packets at %v, want %v at 1 MB/s", size, g[99].at, want)
	}
	if p := h.net.NodeStats(2).PeakRecvBytes; p != 100*int(size) {
		t.Errorf("peak receive bytes %d, want %d", p, 100*size)
	}
}

func TestSendCapacityMulticastCostsOnePacket(t *testing.T) {
	h := newHarness(t, sim.Config{Seed: 2, Latency: time.Millisecond}, 9, nil)
	h.net.SetCapacity(1, sim.Capacity{SendPPS: 1000, SendQueue: 1000, HighWater: 1000})
	h.every(0, 0, 100, func(i int) { h.cast(1, fmt.Sprint(i)) })
	h.net.Run(time.Second)
	for id := event.NodeID(2); id <= 9; id++ {
		g := h.got[id]
		if len(g) != 100 {
			t.Fatalf("node %d delivered %d, want 100", id, len(g))
		}
		// 1 ms per multicast on the NIC, whatever the group size, plus 1 ms latency
		if g[99].at != ms(101) {
			t.Errorf("node %d got the 100th at %v, want 101ms", id, g[99].at)
		}
	}
	if ns := h.net.NodeStats(1); ns.PacketsSent != 100 || ns.PeakSendQueue != 100 {
		t.Errorf("sender stats %+v, want 100 packets sent and a peak queue of 100", ns)
	}
}

func TestPacerBackPressurePumpsStack(t *testing.T) {
	h := newHarness(t, sim.Config{Seed: 3, Latency: time.Millisecond}, 3, nil)
	h.net.SetCapacity(1, sim.Capacity{SendPPS: 1000, SendQueue: 20}) // high water 15
	const n = 2000
	h.net.At(0, func() {
		for i := 0; i < n; i++ {
			h.cast(1, fmt.Sprint(i))
		}
	})
	h.net.Run(500 * time.Millisecond)
	half := len(h.got[2])
	if half < 490 || half > 500 {
		t.Errorf("after 0.5 s node 2 delivered %d, want about 500 (the NIC's 1000/s)", half)
	}
	if b := h.stacks[1].Backlog(); b == 0 {
		t.Errorf("sender backlog is empty at 0.5 s: the stack did not wait for the NIC")
	}
	h.net.Run(2 * time.Second)
	for _, id := range []event.NodeID{2, 3} {
		g := h.got[id]
		if len(g) != n {
			t.Fatalf("node %d delivered %d of %d: the stack was not pumped after the NIC drained", id, len(g), n)
		}
		for i, r := range g {
			if r.body != fmt.Sprint(i) {
				t.Fatalf("node %d delivery %d is %q, want %d", id, i, r.body, i)
			}
		}
	}
	ns := h.net.NodeStats(1)
	if ns.SendQueueDrops != 0 || ns.PeakSendQueue > 15 {
		t.Errorf("sender: %d NIC drops, peak queue %d; want 0 drops and at most the high-water mark 15", ns.SendQueueDrops, ns.PeakSendQueue)
	}
}

func TestSendQueueOverflowWithoutPacer(t *testing.T) {
	net := sim.New(sim.Config{Seed: 1})
	nd := net.AddNode(1)
	net.AddNode(2)
	net.SetCapacity(1, sim.Capacity{SendPPS: 100, SendQueue: 10})
	for i := 0; i < 30; i++ {
		nd.Send(2, []byte("raw")) // straight to the transport: nothing holds it back
	}
	if s := net.Stats(); s.SendQueueDrops != 20 || net.NodeStats(1).SendQueueDrops != 20 {
		t.Errorf("NIC drops %d, want 20 (30 sends, queue of 10)", s.SendQueueDrops)
	}
	if nd.Writable() {
		t.Errorf("Writable with a full NIC queue")
	}
}

func TestFreezeHoldsThenCatchesUp(t *testing.T) {
	tickers := map[event.NodeID]*testkit.Ticker{}
	h := newHarness(t, sim.Config{Seed: 4, Latency: time.Millisecond}, 2, func(id event.NodeID) []stack.Entry {
		tk := &testkit.Ticker{Period: 10 * time.Millisecond}
		tickers[id] = tk
		return []stack.Entry{{Name: "ticker", Layer: tk}}
	})
	h.net.SetCapacity(2, sim.Capacity{RecvBuffer: 20})
	h.every(0, time.Millisecond, 300, func(i int) { h.cast(1, fmt.Sprint(i)) })
	f, err := sim.ParseFault("freeze:2@50500us+100ms")
	if err != nil {
		t.Fatal(err)
	}
	f.Schedule(h.net)
	h.net.Run(400 * time.Millisecond)
	g := h.got[2]
	var during, atThaw int
	for _, r := range g {
		switch {
		case r.at > ms(50.5) && r.at < ms(150.5):
			during++
		case r.at == ms(150.5):
			atThaw++
		}
	}
	if during != 0 {
		t.Errorf("node 2 delivered %d packets while frozen", during)
	}
	if atThaw != 20 {
		t.Errorf("node 2 delivered %d packets on thaw, want the 20 its buffer held", atThaw)
	}
	// packets 50..149 arrive while frozen (at 51..150 ms); 20 fit, 80 overflow
	if len(g) != 220 || h.net.NodeStats(2).OverflowDrops != 80 {
		t.Errorf("node 2 delivered %d with %d overflow drops, want 220 and 80", len(g), h.net.NodeStats(2).OverflowDrops)
	}
	if g[50].body != "50" || g[69].body != "69" || g[70].body != "150" {
		t.Errorf("after thaw got %q..%q then %q; want the buffered 50..69 then 150", g[50].body, g[69].body, g[70].body)
	}
	// timers wait: no tick in (50.5, 150.5), one as soon as it thaws
	for _, at := range tickers[2].Fired {
		if at > ms(50.5) && at < ms(150.5) {
			t.Errorf("node 2's timer fired at %v while frozen", at)
		}
	}
	if !hasTime(tickers[2].Fired, ms(150.5)) {
		t.Errorf("node 2's overdue timer did not fire on thaw: %v", tickers[2].Fired)
	}
	if len(tickers[1].Fired) != 40 {
		t.Errorf("node 1 ticked %d times in 400 ms, want 40", len(tickers[1].Fired))
	}
}

func hasTime(ts []event.Time, t event.Time) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

// faults schedules faults written as ParseFault reads them.
func (h *harness) faults(fs ...string) {
	h.t.Helper()
	for _, s := range fs {
		f, err := sim.ParseFault(s)
		if err != nil {
			h.t.Fatal(err)
		}
		f.Schedule(h.net)
	}
}

func TestPartitionAndHeal(t *testing.T) {
	h := newHarness(t, sim.Config{Seed: 5, Latency: time.Millisecond}, 5, nil)
	h.faults("partition:1,2|3,4@10500us", "heal@20500us")
	h.every(0, time.Millisecond, 30, func(i int) { h.cast(1, fmt.Sprint(i)) })
	h.net.Run(100 * time.Millisecond)
	if len(h.got[2]) != 30 {
		t.Errorf("node 2 (same side) delivered %d, want 30", len(h.got[2]))
	}
	for _, id := range []event.NodeID{3, 4, 5} { // 5 was in no set: its own side
		g := h.got[id]
		if len(g) != 20 {
			t.Errorf("node %d delivered %d, want 20 (10 cut off)", id, len(g))
			continue
		}
		if g[10].body != "10" || g[11].body != "21" {
			t.Errorf("node %d: deliveries 10 and 11 are %q, %q; want 10 and 21", id, g[10].body, g[11].body)
		}
	}
	if d := h.net.Stats().PartitionDrops; d != 30 {
		t.Errorf("partition drops %d, want 30", d)
	}
}

// A cut drops only what passes between its sets: node 5, in neither,
// still hears node 1 throughout, and node 1 hears node 3 (on the other
// side) again once healed. Connectivity is not transitive while it lasts.
func TestCutAndHeal(t *testing.T) {
	h := newHarness(t, sim.Config{Seed: 5, Latency: time.Millisecond}, 5, nil)
	h.faults("cut:1,2|3,4@10500us", "heal@20500us")
	h.every(0, time.Millisecond, 30, func(i int) { h.cast(1, fmt.Sprint(i)) })
	h.every(0, time.Millisecond, 30, func(i int) { h.cast(3, fmt.Sprint(i)) })
	h.net.Run(100 * time.Millisecond)
	from := func(id, src event.NodeID) int {
		n := 0
		for _, d := range h.got[id] {
			if d.from == src {
				n++
			}
		}
		return n
	}
	for _, c := range []struct {
		at, src event.NodeID
		want    int
	}{{2, 1, 30}, {5, 1, 30}, {5, 3, 30}, {4, 3, 30}, {3, 1, 20}, {4, 1, 20}, {1, 3, 20}, {2, 3, 20}} {
		if got := from(c.at, c.src); got != c.want {
			t.Errorf("node %d delivered %d of node %d's 30 casts, want %d", c.at, got, c.src, c.want)
		}
	}
	if d := h.net.Stats().PartitionDrops; d != 40 {
		t.Errorf("drops across the cut %d, want 40 (10 casts of each side to 2 nodes across)", d)
	}
}

func TestCrashDropsEverything(t *testing.T) {
	h := newHarness(t, sim.Config{Seed: 6, Latency: time.Millisecond}, 3, nil)
	h.every(0, time.Millisecond, 20, func(i int) { h.cast(1, fmt.Sprint(i)) })
	f, _ := sim.ParseFault("crash:n3@9500us")
	f.Schedule(h.net)
	h.net.Run(50 * time.Millisecond)
	if len(h.got[3]) != 9 || len(h.got[2]) != 20 {
		t.Errorf("delivered %d at crashed node 3 and %d at node 2; want 9 and 20", len(h.got[3]), len(h.got[2]))
	}
}

func TestWANLink(t *testing.T) {
	h := newHarness(t, sim.Config{Seed: 7, Latency: time.Millisecond}, 4, nil)
	h.net.SetSite(3, 1)
	h.net.SetSite(4, 1)
	h.net.WANLink(0, 1, sim.Link{Latency: 20 * time.Millisecond, Bandwidth: 1e6})
	body := strings.Repeat("w", 990)
	h.every(0, 0, 10, func(int) { h.cast(1, body) })
	h.net.Run(time.Second)
	size := float64(h.net.NodeStats(1).BytesSent) / 10
	for _, id := range []event.NodeID{3, 4} {
		g := h.got[id]
		if len(g) != 10 {
			t.Fatalf("node %d delivered %d, want 10", id, len(g))
		}
		for i, r := range g {
			// one shared queue: the i-th leaves after i+1 serialisations, then 20 ms
			want := ms(20 + float64(i+1)*size/1000)
			if d := r.at - want; d < -2 || d > 2 {
				t.Errorf("node %d packet %d at %v, want %v", id, i, r.at, want)
			}
		}
	}
	if g := h.got[2]; len(g) != 10 || g[9].at != ms(1) {
		t.Errorf("intra-site node 2 got %d, last at %v; want 10 at 1ms", len(g), g[len(g)-1].at)
	}
}

// scenario runs a scripted run with every feature on and returns its trace;
// netClock clocks every stack by the Network instead of its node.
func scenario(t *testing.T, seed uint64, netClock bool) string {
	var b strings.Builder
	loss, err := sim.ParseLoss("markov:5%,3")
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.Config{Seed: seed, Latency: time.Millisecond, Jitter: 2 * time.Millisecond, Loss: loss,
		Trace: func(e sim.TraceEvent) { b.WriteString(e.String()); b.WriteByte('\n') }}
	echoes := map[event.NodeID]*echo{}
	h := newHarnessClock(t, cfg, 6, func(id event.NodeID) []stack.Entry {
		echoes[id] = &echo{delay: 3 * time.Millisecond, to: id%6 + 1}
		return []stack.Entry{{Name: "ticker", Layer: &testkit.Ticker{Period: 7 * time.Millisecond}}, {Name: "echo", Layer: echoes[id]}}
	}, netClock)
	h.net.SetCapacity(2, sim.Capacity{RecvPPS: 2000, RecvBuffer: 5})
	h.net.SetCapacity(1, sim.Capacity{SendPPS: 5000, SendQueue: 8})
	h.net.SetSite(6, 1)
	wl, _ := sim.ParseLoss("bursty:10%,2")
	h.net.WANLink(0, 1, sim.Link{Latency: 10 * time.Millisecond, Jitter: time.Millisecond, Bandwidth: 2e5, Loss: wl})
	for _, s := range []string{"freeze:3@20ms+15ms", "partition:1,2,3|4,5@40ms", "heal@55ms", "crash:5@70ms"} {
		f, _ := sim.ParseFault(s)
		f.Schedule(h.net)
	}
	for _, from := range []event.NodeID{1, 4} {
		h.every(0, 500*time.Microsecond, 160, func(i int) { h.cast(from, fmt.Sprintf("%d-%d", from, i)) })
	}
	h.every(ms(3), 5*time.Millisecond, 10, func(i int) { _ = h.stacks[2].Send(4, []byte("p2p")) })
	// a burst straight into node 6's NIC, past its Pacer: most of it overflows
	h.net.SetCapacity(6, sim.Capacity{SendPPS: 100, SendQueue: 2})
	h.net.At(ms(30), func() {
		for i := 0; i < 5; i++ {
			h.net.Node(6).Send(1, []byte("raw"))
		}
	})
	h.net.Run(120 * time.Millisecond)
	for id := event.NodeID(1); id <= 6; id++ {
		fmt.Fprintf(&b, "node %d: %+v delivered %d echoes %v\n", id, h.net.NodeStats(id), len(h.got[id]), echoes[id].fired)
	}
	fmt.Fprintf(&b, "%+v\n", h.net.Stats())
	return b.String()
}

func TestSameSeedSameTrace(t *testing.T) {
	a, b := scenario(t, 42, false), scenario(t, 42, false)
	if a != b {
		t.Fatalf("two runs with seed 42 differ")
	}
	for _, want := range []string{" drop ", " loss\n", " overflow\n", " partition\n", " send-queue\n", "fault freeze 15ms 3", "fault thaw 3", "fault heal", "fault crash 5", " down\n"} {
		if !strings.Contains(a, want) {
			t.Errorf("trace has no %q: the scenario does not exercise it", strings.TrimSpace(want))
		}
	}
	if c := scenario(t, 43, false); c == a {
		t.Errorf("seeds 42 and 43 gave the same trace")
	}
	lines := strings.Count(a, "\n")
	t.Logf("trace: %d lines; tail:\n%s", lines, a[strings.LastIndex(a[:len(a)-1], "node 1"):])
}

func TestWANQueueBoundedAndLossy(t *testing.T) {
	h := newHarness(t, sim.Config{Seed: 8}, 3, nil)
	h.net.SetSite(3, 1)
	loss, _ := sim.ParseLoss("uniform:100%")
	h.net.WANLink(0, 1, sim.Link{Latency: 5 * time.Millisecond, Bandwidth: 1e6, Queue: 3000})
	body := strings.Repeat("q", 990) // 1000-byte packets: three fit the queue
	h.every(0, 0, 10, func(int) { _ = h.stacks[1].Send(3, []byte(body)) })
	h.net.Run(time.Second)
	if got, d := len(h.got[3]), h.net.Stats().WANQueueDrops; got != 3 || d != 7 {
		t.Errorf("delivered %d with %d WAN queue drops, want 3 and 7", got, d)
	}
	h.net.WANLink(0, 1, sim.Link{Latency: 5 * time.Millisecond, Loss: loss})
	h.net.At(h.net.Now(), func() { h.cast(1, "lost") })
	h.net.Run(time.Second)
	if len(h.got[3]) != 3 || len(h.got[2]) != 1 {
		t.Errorf("with a 100%% lossy WAN link node 3 got %d (want 3) and intra-site node 2 got %d (want 1)", len(h.got[3]), len(h.got[2]))
	}
}
