package main

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
)

// statNode is a running node (fifo : reliable over a transport that drops
// everything) serving its statistics on a free loopback port.
func statNode(t *testing.T) (*stack.Node, string) {
	t.Helper()
	entries, err := compose.BuildString("fifo : reliable")
	if err != nil {
		t.Fatal(err)
	}
	views := map[event.GroupID]*event.ViewInfo{}
	nd, err := stack.NewNode(stack.NodeConfig{Stack: stack.Config{Self: 1, Layers: entries, Transport: &testkit.Transport{},
		App: stack.AppFuncs{OnView: func(v *event.ViewInfo) { views[v.Group] = v }}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nd.Close)
	v := &event.ViewInfo{Group: 7, ID: 2, Members: []event.NodeID{1, 2}}
	_ = nd.Do(func(st *stack.Stack) { st.InstallView(v) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	stop, err := serveStat(addr, &statSource{self: 1, nd: nd, views: func() []StatView {
		var out []StatView
		for g, v := range views { // read on the node goroutine, where OnView writes
			out = append(out, StatView{Group: g.String(), ID: uint64(v.ID), Members: []string{"n1", "n2"}})
		}
		return out
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return nd, addr
}

// TestStatServes: a node started with --stat serves every layer's
// counters under the names its registration documents, its views and its
// drops by cause, as JSON and in the Prometheus text format, while it
// works (run with -race: the counters are copied on the node goroutine).
func TestStatServes(t *testing.T) {
	nd, addr := statNode(t)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 500 {
			_ = nd.Cast(7, []byte("payload"))
		}
	}()
	for range 5 { // while the casts go on
		resp, err := http.Get("http://" + addr + "/stats")
		if err != nil {
			t.Fatal(err)
		}
		var doc StatDoc
		err = json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(doc.Layers) != 2 || doc.Layers[0].Layer != "fifo" || doc.Layers[1].Layer != "reliable" {
			t.Fatalf("layers %+v, want fifo then reliable", doc.Layers)
		}
		for _, l := range doc.Layers {
			for _, c := range l.Counters {
				if c.Doc == "" {
					t.Errorf("%s counter %s served without its registration's doc", l.Layer, c.Name)
				}
			}
		}
		if len(doc.Views) != 1 || doc.Views[0].ID != 2 {
			t.Errorf("views %+v, want group g7's view 2", doc.Views)
		}
		if _, ok := doc.Drops["malformed"]; !ok {
			t.Errorf("drops %v: no malformed cause", doc.Drops)
		}
	}
	wg.Wait()
	out, err := runCLI(t, "stat", addr, "--prom")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`layercast_layer_counter{node="n1",layer="reliable",counter=`, `layercast_view_members{node="n1",group="g7",view="2"} 2`, `layercast_drops{node="n1",cause="malformed"} 0`} {
		if !strings.Contains(out, want) {
			t.Errorf("stat --prom lacks %q:\n%s", want, out)
		}
	}
	out, err = runCLI(t, "stat", addr)
	if err != nil || !strings.Contains(out, "layer reliable") || !strings.Contains(out, "view g7 #2: n1 n2") {
		t.Errorf("stat %s = %v:\n%s", addr, err, out)
	}
}

// TestStatDeadAndMalformed: a dead address is one clear error line and
// exit 1; a malformed one is bad input, exit 2; --stat refuses a
// non-loopback address.
func TestStatDeadAndMalformed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	_, err = runCLI(t, "stat", dead)
	if exitCode(err) != 1 || !strings.Contains(err.Error(), "no node serves statistics at "+dead) || strings.Contains(err.Error(), "\n") {
		t.Errorf("stat %s (dead) = exit %d, %v; want exit 1 and one line", dead, exitCode(err), err)
	}
	for _, bad := range []string{"nonsense", "127.0.0.1:99999", ":7700"} {
		if _, err := runCLI(t, "stat", bad); exitCode(err) != 2 {
			t.Errorf("stat %s = exit %d (%v), want 2", bad, exitCode(err), err)
		}
	}
	if _, err := serveStat("8.8.8.8:7700", &statSource{}); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("serveStat on a public address = %v, want a loopback-only error", err)
	}
}
