package udp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	_ "github.com/layercast/layercast/layers/all"
	"github.com/layercast/layercast/stack"
)

// TestMegabyteOverUDPNetns runs TestMegabyteOverUDPInside in a fresh
// network namespace.
func TestMegabyteOverUDPNetns(t *testing.T) { inNetns(t, "TestMegabyteOverUDPInside") }

// TestMegabyteOverUDPInside: three nodes on UDP with frag : fifo :
// reliable (alone and over pack), on both networks: IP multicast and the
// unicast fan-out (Config.Fanout); 1 MB messages from node 1 reach nodes 2
// and 3 intact, in order, each once.
func TestMegabyteOverUDPInside(t *testing.T) {
	if os.Getenv("LC_UDP_NETNS") == "" {
		t.Skip("runs only inside the namespace TestMegabyteOverUDPNetns creates")
	}
	port := 47300
	for _, spec := range []string{"frag : fifo : reliable", "frag : fifo : reliable : pack"} {
		for _, fanout := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/fanout=%v", spec, fanout), func(t *testing.T) { megabyteOverUDP(t, spec, fanout, port) })
			port += 10
		}
	}
}

// megabyteOverUDP sends three 1 MB messages from node 1 to nodes 2 and 3
// through spec over UDP (multicast, or unicast fan-out) and checks every
// byte of each, the order, and that each arrived once.
func megabyteOverUDP(t *testing.T, spec string, fanout bool, port int) {
	sp, err := compose.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	const n, size = 3, 1000000
	msg := func(i int) []byte {
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(j*131 + i*7)
		}
		binary.BigEndian.PutUint32(b, uint32(i))
		return b
	}
	var mu sync.Mutex
	got := map[event.NodeID][]int{}
	bad := 0
	view := &event.ViewInfo{Group: 3, ID: 1, Members: []event.NodeID{1, 2, 3}}
	trs := map[event.NodeID]*Transport{}
	for id := event.NodeID(1); id <= 3; id++ {
		trs[id] = open(t, Config{Self: id, MulticastPort: port, Fanout: fanout}, nil)
	}
	for id, tr := range trs { // the address book: NAKs and repairs go by unicast
		for peer, o := range trs {
			if peer != id {
				if err := tr.SetAddr(peer, o.LocalAddr()); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	nodes := map[event.NodeID]*stack.Node{}
	for id, tr := range trs {
		entries, err := compose.Build(sp)
		if err != nil {
			t.Fatal(err)
		}
		nd, err := stack.NewNode(stack.NodeConfig{BlockOnBackpressure: true, Stack: stack.Config{Self: id, Transport: tr, Layers: entries,
			App: stack.AppFuncs{OnDeliver: func(d stack.Delivery) {
				i := int(binary.BigEndian.Uint32(d.Payload))
				mu.Lock()
				defer mu.Unlock()
				if !bytes.Equal(d.Payload, msg(i)) {
					bad++
				}
				got[id] = append(got[id], i)
			}}}})
		if err != nil {
			t.Fatal(err)
		}
		tr.SetSink(nd)
		defer nd.Close()
		if err := nd.Do(func(st *stack.Stack) { st.InstallView(view) }); err != nil {
			t.Fatal(err)
		}
		nodes[id] = nd
	}
	for i := 1; i <= n; i++ {
		if err := nodes[1].Cast(3, msg(i)); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		done := len(got[2]) >= n && len(got[3]) >= n
		mu.Unlock()
		if done || time.Now().After(deadline) {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range []event.NodeID{2, 3} {
		if g := got[id]; len(g) != n || g[0] != 1 || g[1] != 2 || g[2] != 3 {
			t.Errorf("node %v delivered %v, want [1 2 3]", id, g)
		}
	}
	if bad > 0 {
		t.Errorf("%d deliveries with bytes out of place", bad)
	}
}
