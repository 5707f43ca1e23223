package fuzz

import (
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/layers/gms"
	"github.com/layercast/layercast/membership"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/simstack"
	"github.com/layercast/layercast/transport/sim"

	_ "github.com/layercast/layercast/layers/all"
)

// The world: members 1-3 of group 1 at the start, node 4 a spare that view
// changes may add, node 9 an outsider (never a member) whose network
// interface sends the forged packets.
const (
	group    event.GroupID = 1
	outsider event.NodeID  = 9
)

var nodes = []event.NodeID{1, 2, 3, 4}

// specs lists every stack under test: each specs/*.stack and the three the
// issue names.
func specs(tb testing.TB) []string {
	tb.Helper()
	files, err := filepath.Glob("../../specs/*.stack")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no specs/*.stack: %v", err)
	}
	sort.Strings(files)
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		var lines []string
		for _, ln := range strings.Split(string(b), "\n") {
			if i := strings.IndexByte(ln, '#'); i >= 0 {
				ln = ln[:i]
			}
			lines = append(lines, ln)
		}
		out = append(out, strings.Join(strings.Fields(strings.Join(lines, " ")), " "))
	}
	return append(out, "fifo:reliable:gms", "mflow(window=50000,ack_thresh=25000):fifo:reliable:gms", "fifo:reliable:lec:gms")
}

// tap is a node's transport: the simulator's, recording what the stack
// sends while capture is on.
type tap struct {
	*sim.Node
	w *world
}

func (t tap) Send(to event.NodeID, pkt []byte) {
	t.w.record(pkt)
	t.Node.Send(to, pkt)
}

func (t tap) Multicast(g event.GroupID, pkt []byte) {
	t.w.record(pkt)
	t.Node.Multicast(g, pkt)
}

// tapped is the world's wrap for simstack.Add: a node's transport is a tap.
func (w *world) tapped(nd *sim.Node) stack.Transport { return tap{nd, w} }

// world is one simulated run of one spec.
type world struct {
	tb      testing.TB
	spec    string
	net     *sim.Network
	stacks  map[event.NodeID]*stack.Stack
	gms     map[event.NodeID]*gms.Layer
	svc     *gms.ServiceLayer
	service event.NodeID          // the service's node id (gms stacks)
	members map[event.NodeID]bool // intended membership of group
	viewID  uint64
	out     *sim.Node // the outsider's interface
	capture bool
	caught  [][]byte
	seen    map[string]bool
}

func (w *world) record(pkt []byte) {
	if !w.capture || len(w.caught) >= 128 || len(pkt) < stack.FrameSize {
		return
	}
	// Keep one packet per kind of header: frame kind and flags, the first
	// bytes of the layers' headers, and the size class (membership
	// packets of every type start alike).
	sig := fmt.Sprintf("%x/%x/%d", pkt[:2], pkt[stack.FrameSize:min(len(pkt), stack.FrameSize+3)], bits.Len(uint(len(pkt))))
	if w.seen[sig] {
		return
	}
	w.seen[sig] = true
	w.caught = append(w.caught, slices.Clone(pkt))
}

// newWorld builds every node's stack from spec and installs the first
// view: through the membership service for gms stacks, statically
// otherwise.
func newWorld(tb testing.TB, spec string, seed uint64, loss sim.LossModel, capture bool) *world {
	tb.Helper()
	w := &world{
		tb: tb, spec: spec,
		net:     sim.New(sim.Config{Seed: seed, Latency: time.Millisecond, Loss: loss}),
		stacks:  map[event.NodeID]*stack.Stack{},
		gms:     map[event.NodeID]*gms.Layer{},
		members: map[event.NodeID]bool{1: true, 2: true, 3: true},
		seen:    map[string]bool{},
		capture: capture,
	}
	for _, id := range append(slices.Clone(nodes), outsider) {
		entries, err := compose.BuildString(spec)
		if err != nil {
			tb.Fatalf("%s: %v", spec, err)
		}
		st := simstack.Add(tb, w.net, stack.Config{Self: id, Clock: w.net, Seed: seed, Layers: entries}, w.tapped)
		w.stacks[id] = st
		for i := 0; i < st.NumLayers(); i++ {
			if l, ok := st.Layer(i).(*gms.Layer); ok {
				w.gms[id] = l
			}
		}
	}
	w.out = w.net.Node(outsider)
	if len(w.gms) > 0 {
		cfg := w.gms[1].Config()
		w.service = cfg.Service
		w.svc = gms.NewServiceLayer(gms.ServiceConfig{ViewInterval: cfg.ViewInterval, FDTimeout: cfg.FDTimeout})
		simstack.Add(tb, w.net, stack.Config{Self: cfg.Service, Clock: w.net, Seed: seed, Layers: []stack.Entry{{Name: "gms_service", Layer: w.svc}}}, w.tapped)
		for id := range w.members {
			_ = w.stacks[id].Join(group)
		}
		for start := w.net.Now(); !w.settled(); {
			if w.net.Now().Sub(start) > 30*time.Second {
				tb.Fatalf("%s: first views not installed in 30 s", spec)
			}
			w.net.Run(10 * time.Millisecond)
		}
	} else {
		w.install()
	}
	return w
}

// settled: every intended member holds a view of exactly the intended
// members.
func (w *world) settled() bool {
	want := w.memberList()
	for _, id := range want {
		v := w.gms[id].Views()[group]
		if v == nil || !slices.Equal(v.Members, want) {
			return false
		}
	}
	return true
}

func (w *world) memberList() []event.NodeID {
	var ms []event.NodeID
	for _, id := range nodes {
		if w.members[id] {
			ms = append(ms, id)
		}
	}
	return ms
}

// install gives every node (members and not) the static view of the
// intended members, and every member its neighbourhood.
func (w *world) install() {
	w.viewID++
	ms := w.memberList()
	v := &event.ViewInfo{Group: group, ID: w.viewID, Members: ms, Joined: ms}
	nbs := membership.Static(map[event.GroupID]*event.ViewInfo{group: v})
	for _, id := range nodes {
		w.stacks[id].InstallView(v)
		if nb := nbs[id]; nb != nil {
			w.stacks[id].InstallNeighbourhood(nb)
		}
	}
}

// setMembers changes the intended membership: statically at once, or
// through the service by joins and leaves (the views follow as the
// service batches them).
func (w *world) setMembers(mask byte) {
	next := map[event.NodeID]bool{}
	for i, id := range nodes {
		if mask&(1<<i) != 0 {
			next[id] = true
		}
	}
	if len(next) == 0 {
		next[1] = true
	}
	if len(w.gms) == 0 {
		w.members = next
		w.install()
		return
	}
	for _, id := range nodes {
		switch {
		case next[id] && !w.members[id]:
			_ = w.stacks[id].Join(group)
		case !next[id] && w.members[id]:
			_ = w.stacks[id].Leave(group)
		}
	}
	w.members = next
}

// cast has node id multicast size bytes (errors such as back-pressure are
// part of the game).
func (w *world) cast(id event.NodeID, size int, tag byte) {
	p := make([]byte, size)
	for i := range p {
		p[i] = tag + byte(i)
	}
	_ = w.stacks[id].Cast(group, p)
}

// forge has the outsider's interface send pkt as it is (frame included,
// whatever source it names) to node to, or on the group's channel when to
// is NoNode.
func (w *world) forge(to event.NodeID, pkt []byte) {
	if to == event.NoNode {
		w.out.Multicast(group, pkt)
		return
	}
	w.out.Send(to, pkt)
}

// run advances virtual time, firing timers and delivering packets.
func (w *world) run(d time.Duration) { w.net.Run(d) }

// close shuts every stack.
func (w *world) close() {
	for _, st := range w.stacks {
		st.Close()
	}
}
