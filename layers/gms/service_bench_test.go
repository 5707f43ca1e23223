package gms

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
)

// bigService builds a service with nodes nodes, each in perNode of groups
// random groups, all installed. Every node heartbeats with a long timeout
// except the crash victim (node 1) whose timeout is timeout.
func bigService(tb testing.TB, nodes, groups, perNode int, sent *int) (*Service, event.Time) {
	svc, err := NewService(ServiceConfig{
		ViewInterval: 100 * time.Millisecond,
		FDTimeout:    time.Hour,
		Send:         func(event.NodeID, []byte) { *sent++ },
	})
	if err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	c := newCodec()
	now := event.Time(0)
	for n := 1; n <= nodes; n++ {
		hb := &wireMsg{T: msgHeartbeat, Inc: 1, Timeout: int64(time.Hour)}
		if err := svc.Receive(now, event.NodeID(n), c.encode(hb)); err != nil {
			tb.Fatal(err)
		}
		req := &wireMsg{T: msgRequest, Inc: 1, Seq: 1}
		for _, g := range rng.Perm(groups)[:perNode] {
			req.Join = append(req.Join, event.GroupID(g+1))
		}
		if err := svc.Receive(now, event.NodeID(n), c.encode(req)); err != nil {
			tb.Fatal(err)
		}
	}
	now = now.Add(time.Second)
	svc.Tick(now)
	return svc, now
}

// BenchmarkServiceChange measures one membership change in a system of
// 1,000 nodes in 10,000 groups (each node in 50): the service receives the
// request (or detects the crash), installs the new views and region views,
// and encodes and sends each affected node its update. nodes_updated is how
// many nodes got an update; packets/op how many packets were sent.
func BenchmarkServiceChange(b *testing.B) {
	const nodes, groups, perNode = 1000, 10000, 50
	b.Run("join", func(b *testing.B) {
		var sent int
		svc, now := bigService(b, nodes, groups, perNode, &sent)
		c := newCodec()
		seq := uint64(1)
		node := event.NodeID(500)
		// Groups the node is not in.
		var others []event.GroupID
		for g := event.GroupID(1); len(others) < 100; g++ {
			if v := svc.Index().View(g); v != nil && !v.Has(node) {
				others = append(others, g)
			}
		}
		affected := 0
		sent = 0
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			// Alternately join a group and leave it again.
			seq++
			req := &wireMsg{T: msgRequest, Inc: 1, Seq: seq}
			g := others[i/2%len(others)]
			if i%2 == 0 {
				req.Join = []event.GroupID{g}
			} else {
				req.Leave = []event.GroupID{g}
			}
			if err := svc.Receive(now, node, c.encode(req)); err != nil {
				b.Fatal(err)
			}
			now = now.Add(time.Second)
			svc.Tick(now)
			affected += svc.Stats().LastAffected
		}
		b.ReportMetric(float64(affected)/float64(b.N), "nodes_updated/op")
		b.ReportMetric(float64(sent)/float64(b.N), "packets/op")
	})
	b.Run("crash", func(b *testing.B) {
		var sent int
		svc, now := bigService(b, nodes, groups, perNode, &sent)
		c := newCodec()
		affected := 0
		incs := map[event.NodeID]uint64{} // each node's life (bigService used 1)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			// The victim gets short fd and suspect timeouts with its last heartbeat
			// (untimed); the next Tick detects the crash, removes it from
			// its 50 groups, installs the views and sends the updates
			// (timed). It then comes back in the same groups (untimed).
			b.StopTimer()
			victim := event.NodeID(1 + i%nodes)
			inc := max(incs[victim], 1)
			groupsOf := slices.Clone(svc.Index().Groups(victim))
			svc.Receive(now, victim, c.encode(&wireMsg{T: msgHeartbeat, Inc: inc, Timeout: int64(time.Millisecond), Suspect: int64(time.Millisecond)}))
			now = now.Add(time.Second)
			b.StartTimer()
			svc.Tick(now)
			affected += svc.Stats().LastAffected
			b.StopTimer()
			inc++
			incs[victim] = inc
			svc.Receive(now, victim, c.encode(&wireMsg{T: msgHeartbeat, Inc: inc, Timeout: int64(time.Hour)}))
			svc.Receive(now, victim, c.encode(&wireMsg{T: msgRequest, Inc: inc, Seq: 1, Join: groupsOf}))
			now = now.Add(time.Second)
			svc.Tick(now)
			b.StartTimer()
		}
		b.ReportMetric(float64(affected)/float64(b.N), "nodes_updated/op")
	})
}

// TestServiceChangeUpdatesOnlyAffected checks, on the benchmark's system,
// that a join updates exactly the members of the node's groups (the
// neighbours whose views or region views change) and nobody else.
func TestServiceChangeUpdatesOnlyAffected(t *testing.T) {
	var sent int
	svc, now := bigService(t, 1000, 10000, 50, &sent)
	idx := svc.Index()
	const node = event.NodeID(500)
	var g event.GroupID = 1
	for idx.View(g) == nil || idx.View(g).Has(node) {
		g++
	}
	// The nodes that must hear: members of the group joined and of every
	// group of the joining node (its region moves, which every such member
	// sees among the region views overlapping its groups).
	want := map[event.NodeID]bool{node: true}
	for _, n := range idx.View(g).Members {
		want[n] = true
	}
	for _, h := range idx.Groups(node) {
		for _, n := range idx.View(h).Members {
			want[n] = true
		}
	}
	got := map[event.NodeID]bool{}
	svc.cfg.Send = func(to event.NodeID, _ []byte) { got[to] = true }
	svc.Receive(now, node, newCodec().encode(&wireMsg{T: msgRequest, Inc: 1, Seq: 2, Join: []event.GroupID{g}}))
	delete(got, node) // the ack
	start := time.Now()
	svc.Tick(now.Add(time.Second))
	took := time.Since(start)
	if len(got) != len(want) {
		t.Errorf("a join updated %d nodes, want %d (of 1000)", len(got), len(want))
	}
	for n := range got {
		if !want[n] {
			t.Errorf("%v got an update it has no use for", n)
		}
	}
	if took > time.Second {
		t.Errorf("installing one join took %v", took)
	}
	t.Logf("one join in 1000 nodes x 10000 groups: %d nodes updated in %v", len(got), took)
}
