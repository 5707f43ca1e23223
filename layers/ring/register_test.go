package ring

import (
	"testing"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/layertest"
	"github.com/layercast/layercast/transport/sim"
)

func init() {
	// A layer that needs what ring promises, to check how compose sees it.
	for _, p := range []compose.Property{compose.Agreed, compose.Safe} {
		compose.Register(compose.LayerInfo{Name: "needs_" + string(p) + "_ringtest", Needs: []compose.Property{p},
			New: func(compose.Params) (stack.Layer, error) { return &stack.Base{}, nil }})
	}
}

// ring gives agreed order always and safe delivery only with safe=on: a
// stack needing safe delivery over plain ring is refused, in words.
func TestProperties(t *testing.T) {
	for _, c := range []struct {
		spec, err string
	}{
		{"needs_agreed_ringtest : ring", ""},
		{"needs_safe_ringtest : ring(safe=on)", ""},
		{"needs_safe_ringtest : ring", "needs safe delivery below it"},
		{"needs_safe_ringtest : ring(safe=off)", "needs safe delivery below it"},
	} {
		layertest.CheckSpec(t, c.spec, c.err)
	}
}

// Every counter the layer creates is documented in its registration, and
// a bad configuration is one clear error.
func TestRegistration(t *testing.T) {
	if _, ok := compose.Lookup("ring"); !ok {
		t.Fatal("ring is not registered")
	}
	net := sim.New(sim.Config{Seed: 1})
	st, err := stack.New(stack.Config{Self: 1, Layers: compose.MustBuild("ring"), Transport: net.AddNode(1), Clock: net})
	if err != nil {
		t.Fatal(err)
	}
	st.InstallView(&event.ViewInfo{Group: 1, ID: 1, Members: []event.NodeID{1}})
	layertest.CountersDocumented(t, st)
	for _, bad := range []string{"ring(window=100, ring_limit=100)", "ring(token_timeout=10ms, token_retransmit=10ms)", "ring(token_timeout=10ms, token_idle=5ms)"} {
		if _, err := compose.BuildString(bad); err == nil {
			t.Errorf("BuildString(%q) accepted", bad)
		}
	}
}

// A one-member ring passes the token to itself and delivers its own casts.
func TestOneMember(t *testing.T) {
	c := newCluster(t, sim.Config{Seed: 2, Latency: time.Millisecond}, 1, testConfig())
	v := &event.ViewInfo{Group: 1, ID: 1, Members: ids(1)}
	c.install(v)
	c.castLoop(1, 1, 50, time.Millisecond, 10)
	c.net.Run(time.Second)
	c.checkAll([]*event.ViewInfo{v}, 1)
	if b := c.counter(1, "buffer_bytes"); b != 0 {
		t.Errorf("holds %d bytes", b)
	}
}

// Summarize turns the counters into the report's figures.
func TestSummarize(t *testing.T) {
	s := summarize(compose.Counters{
		Total: map[string]int64{"rotations": 40, "retransmissions": 3, "recoveries": 2, "recovery_ns": 30e6},
		Nodes: []compose.NodeCounters{
			{Node: 1, Values: map[string]int64{"tokens": 100, "active_ns": 2e9, "token_bytes_max": 80, "recovery_ns_max": 20e6}},
			{Node: 2, Values: map[string]int64{"tokens": 300, "active_ns": 2e9, "token_bytes_max": 120, "recovery_ns_max": 10e6}},
		},
	})
	x := s.Extra.(Summary)
	want := Summary{TokensPerSec: 100, Rotations: 40, Retransmissions: 3, TokenBytesMax: 120, Recoveries: 2, RecoveryMsMean: 15, RecoveryMsMax: 20}
	if x != want {
		t.Errorf("summarize = %+v, want %+v", x, want)
	}
	if s.Ratios["tokens_per_sec"] != 100 || s.Ratios["recovery_ms_mean"] != 15 || s.Ratios["token_bytes_max"] != 120 || s.Ratios["recovery_ns_max"] != 20e6 {
		t.Errorf("ratios = %v", s.Ratios)
	}
}
