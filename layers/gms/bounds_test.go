package gms

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
)

// svcHarness drives a Service directly and keeps what it sends.
type svcHarness struct {
	t   *testing.T
	svc *Service
	c   *codecState
	out map[event.NodeID][]wireMsg
}

func newSvcHarness(t *testing.T, cfg ServiceConfig) *svcHarness {
	t.Helper()
	h := &svcHarness{t: t, c: newCodec(), out: map[event.NodeID][]wireMsg{}}
	dec := newCodec()
	cfg.Send = func(to event.NodeID, b []byte) {
		var m wireMsg
		if err := dec.decode(b, &m); err != nil {
			t.Fatalf("service sent an undecodable packet: %v", err)
		}
		h.out[to] = append(h.out[to], m)
	}
	if cfg.FDTimeout == 0 {
		cfg.FDTimeout = time.Second
	}
	svc, err := NewService(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.svc = svc
	return h
}

func (h *svcHarness) recv(now event.Time, from event.NodeID, m *wireMsg) error {
	return h.svc.Receive(now, from, h.c.encode(m))
}

// A heartbeat declaring a 2^62 ns timeout used to keep a silent node for
// ever; declared timeouts are now clamped into [MinTimeout, MaxTimeout].
func TestHeartbeatTimeoutClamped(t *testing.T) {
	h := newSvcHarness(t, ServiceConfig{MaxTimeout: 2 * time.Second})
	now := event.Time(0)
	h.recv(now, 1, &wireMsg{T: msgHeartbeat, Inc: 1, Timeout: 1 << 62, Suspect: 1 << 62})
	h.recv(now, 1, &wireMsg{T: msgRequest, Inc: 1, Seq: 1, Join: []event.GroupID{3}})
	h.svc.Tick(now)
	if h.svc.Stats().Clamped != 2 {
		t.Errorf("clamped %d timeouts, want 2", h.svc.Stats().Clamped)
	}
	// Silent from now: suspected after 2s, removed after 2s more.
	for now < event.Time(10*time.Second) && len(h.svc.Index().Groups(1)) > 0 {
		now = min(h.svc.Next(), event.Time(10*time.Second))
		h.svc.Tick(now)
	}
	if got := h.svc.Index().Groups(1); len(got) != 0 || now != event.Time(4*time.Second) {
		t.Fatalf("a node declaring a 2^62ns timeout, silent from 0: still in %v at %v, want removed at 4s (MaxTimeout 2s twice)", got, now)
	}
}

// Nodes, groups per node, groups in total and request size are bounded by
// configuration; what lies beyond is refused and counted, and a node that
// keeps heartbeating with ever new timeouts grows nothing.
func TestServiceBounds(t *testing.T) {
	h := newSvcHarness(t, ServiceConfig{MaxNodes: 10, MaxGroupsPerNode: 5, MaxGroups: 12, MaxRequest: 20})
	now := event.Time(0)
	for n := 1; n <= 50; n++ {
		err := h.recv(now, event.NodeID(n), &wireMsg{T: msgHeartbeat, Inc: 1, Timeout: int64(time.Second)})
		if n > 10 && !errors.Is(err, ErrRefused) {
			t.Fatalf("heartbeat of node %d beyond MaxNodes 10: err %v, want ErrRefused", n, err)
		}
	}
	if h.svc.Live() != 10 {
		t.Errorf("%d nodes recorded, want MaxNodes 10", h.svc.Live())
	}
	// Node 1 asks for 8 groups: 5 accepted, 3 refused in the ack.
	h.recv(now, 1, &wireMsg{T: msgRequest, Inc: 1, Seq: 1, Join: []event.GroupID{1, 2, 3, 4, 5, 6, 7, 8}})
	if got := h.svc.Index().Groups(1); len(got) != 5 {
		t.Errorf("node 1 in %v, want 5 groups", got)
	}
	ack := h.out[1][len(h.out[1])-1]
	if ack.T != msgAck || !slices.Equal(ack.Refused, []event.GroupID{6, 7, 8}) {
		t.Errorf("ack = %+v, want Refused [6 7 8]", ack)
	}
	// A retry of the same request gets the same answer.
	h.recv(now, 1, &wireMsg{T: msgRequest, Inc: 1, Seq: 1, Join: []event.GroupID{1, 2, 3, 4, 5, 6, 7, 8}})
	if ack := h.out[1][len(h.out[1])-1]; !slices.Equal(ack.Refused, []event.GroupID{6, 7, 8}) {
		t.Errorf("retried request's ack = %+v, want Refused [6 7 8]", ack)
	}
	// Node 2 takes groups 9..13: only 9..12 fit in MaxGroups 12... less
	// the 5 node 1 holds: 7 more groups exist at most.
	h.recv(now, 2, &wireMsg{T: msgRequest, Inc: 1, Seq: 1, Join: []event.GroupID{9, 10, 11, 12, 13}})
	h.recv(now, 3, &wireMsg{T: msgRequest, Inc: 1, Seq: 1, Join: []event.GroupID{14, 15, 16, 1}})
	if n := h.svc.Index().NumGroups(); n > 12 {
		t.Errorf("%d groups in the system, want at most MaxGroups 12", n)
	}
	if got := h.svc.Index().Groups(3); !slices.Contains(got, 1) {
		t.Errorf("node 3 could not join existing group 1 at MaxGroups: %v", got)
	}
	// A request over MaxRequest is refused whole.
	big := make([]event.GroupID, 21)
	for i := range big {
		big[i] = event.GroupID(100 + i)
	}
	h.recv(now, 4, &wireMsg{T: msgRequest, Inc: 1, Seq: 1, Join: big})
	if got := h.svc.Index().Groups(4); len(got) != 0 {
		t.Errorf("a request of 21 joins (MaxRequest 20) put node 4 in %v", got)
	}
	if h.svc.Stats().Refused == 0 {
		t.Error("nothing counted as refused")
	}
	// A node cycling through timeouts keeps one failure-detector list.
	for i := 0; i < 1000; i++ {
		h.recv(now, 5, &wireMsg{T: msgHeartbeat, Inc: 1, Timeout: int64(time.Second + time.Duration(i)*time.Millisecond)})
	}
	if len(h.svc.lists) > 2 {
		t.Errorf("%d failure-detector lists after one node declared 1000 timeouts, want at most 2", len(h.svc.lists))
	}
}

// A node whose joins are refused stops asking for them: it settles, and the
// service does not keep telling it to join again.
func TestRefusedJoinsSettle(t *testing.T) {
	c := newCluster(t, 14, 2, 50*time.Millisecond, time.Second)
	c.svc.Service().cfg.MaxGroupsPerNode = 2
	c.join(1, 1, 2, 3)
	c.join(2, 1)
	c.net.Run(2 * time.Second)
	if got := c.nodes[1].gms.Groups(); len(got) != 2 {
		t.Errorf("n1 still wants %v, want 2 groups after the refusal", got)
	}
	if st := c.svc.Service().Stats(); st.Resets != 0 || st.Refused != 1 {
		t.Errorf("service: %d resets, %d refused; want 0 and 1", st.Resets, st.Refused)
	}
	c.checkConsistent(ids(1, 2))
}

// bigRequest is a join request of about 23.7 KB: issue 8's request that
// cost 10 s of CPU when joins were applied one at a time.
func bigRequest() *wireMsg {
	m := &wireMsg{T: msgRequest, Inc: 1, Seq: 1}
	c := newCodec()
	g := event.GroupID(1 << 20)
	for len(c.encode(m)) < 23700 {
		for i := 0; i < 50; i++ { // 5 bytes each: encode every 50
			m.Join = append(m.Join, g)
			g += 7
		}
	}
	return m
}

// One request of 23.7 KB is applied in one batch: well under a second.
func TestBigRequestIsCheap(t *testing.T) {
	h := newSvcHarness(t, ServiceConfig{})
	m := bigRequest()
	start := time.Now()
	if err := h.recv(0, 1, m); err != nil {
		t.Fatal(err)
	}
	h.svc.Tick(0)
	took := time.Since(start)
	if got := len(h.svc.Index().Groups(1)); got != len(m.Join) {
		t.Fatalf("node in %d groups, want %d", got, len(m.Join))
	}
	t.Logf("a %d-byte request of %d joins applied and installed in %v", len(newCodec().encode(m)), len(m.Join), took)
	if took > time.Second {
		t.Errorf("a 23.7 KB request took %v, want well under 1s", took)
	}
}

// BenchmarkBigRequest times one 23.7 KB join request: applied, installed,
// and updates sent.
func BenchmarkBigRequest(b *testing.B) {
	m := bigRequest()
	c := newCodec()
	payload := slices.Clone(c.encode(m))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		svc, err := NewService(ServiceConfig{FDTimeout: time.Second, Send: func(event.NodeID, []byte) {}})
		if err != nil {
			b.Fatal(err)
		}
		if err := svc.Receive(0, 1, payload); err != nil {
			b.Fatal(err)
		}
		svc.Tick(0)
	}
}

// A heartbeat asking for a 1ms probe interval and a 1h suspicion period
// buys at most maxProbes probes before its node is removed.
func TestProbesPerSuspicionBounded(t *testing.T) {
	h := newSvcHarness(t, ServiceConfig{})
	h.recv(0, 7, &wireMsg{T: msgHeartbeat, Inc: 1, Timeout: int64(time.Millisecond), Suspect: int64(time.Hour), Interval: int64(time.Millisecond)})
	now := event.Time(0)
	for h.svc.Live() > 0 && now < event.Time(2*time.Hour) {
		now = h.svc.Next()
		h.svc.Tick(now)
	}
	if st := h.svc.Stats(); st.Failed != 1 || st.Probes > maxProbes+1 {
		t.Fatalf("silent node with a 1ms probe interval and 1h suspicion: %d probes, failed %d; want at most %d probes, then removal", st.Probes, st.Failed, maxProbes+1)
	}
}
