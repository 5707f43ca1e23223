package lec

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/membership"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/testkit"
)

// assign puts n nodes in d groups each of size s (n divisible by s), at
// random: every round shuffles the nodes and cuts them into groups.
func assign(n, d, s int, seed uint64) map[event.GroupID]*event.ViewInfo {
	rng := rand.New(rand.NewPCG(seed, 1))
	views := map[event.GroupID]*event.ViewInfo{}
	g := event.GroupID(1)
	for range d {
		p := rng.Perm(n)
		for i := 0; i < n; i += s {
			ms := make([]event.NodeID, 0, s)
			for _, x := range p[i : i+s] {
				ms = append(ms, event.NodeID(x+1))
			}
			slices.Sort(ms)
			views[g] = &event.ViewInfo{Group: g, ID: 1, Members: ms}
			g++
		}
	}
	return views
}

// benchNode is node 1 of a 64-node system in d groups of 8 with lec(r=8,
// c=5) alone, fed from the network side, its clock advancing 1 ms per data
// packet (the paper's 1000 received packets per second).
type benchNode struct {
	st      *stack.Stack
	now     event.Time
	streams []streamKey // (group, sender) pairs node 1 receives
	seq     map[streamKey]uint32
	pkt     []byte
}

func newBenchNode(b *testing.B, d int) *benchNode {
	views := assign(64, d, 8, 7)
	nb := membership.Static(views)[1]
	bn := &benchNode{seq: map[streamKey]uint32{}, pkt: make([]byte, dataHeader+1000)}
	l := New(Config{R: 8, C: 5, Stagger: 1, Window: 2e9, MaxHeld: 16384, MaxUnusable: 2048})
	st, err := stack.New(stack.Config{Self: 1, Transport: &testkit.Transport{}, Clock: stack.ClockFunc(func() event.Time { return bn.now }),
		Layers: []stack.Entry{{Name: "lec", Layer: l}}, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	bn.st = st
	st.InstallNeighbourhood(nb)
	for _, g := range nb.Groups {
		for _, m := range views[g].Members {
			if m != 1 {
				bn.streams = append(bn.streams, streamKey{g, m})
			}
		}
	}
	rand.New(rand.NewPCG(3, 3)).Shuffle(len(bn.streams), func(i, j int) {
		bn.streams[i], bn.streams[j] = bn.streams[j], bn.streams[i]
	})
	return bn
}

// data feeds the next data packet of stream k up into lec.
func (bn *benchNode) data(k streamKey) {
	bn.now += 1e6
	seq := bn.seq[k] + 1
	bn.seq[k] = seq
	bn.pkt[0] = typeData
	binary.BigEndian.PutUint32(bn.pkt[1:], seq)
	m := event.DefaultPool.FromBytes(bn.pkt)
	bn.st.Inject(0, true, event.Event{Kind: event.Cast, Group: k.group, Peer: k.sender, Msg: m})
}

// BenchmarkAddData is the per-data-packet cost of Figure 11: receive a 1 KB
// data packet, keep it, add it to every repair bin of its group (the XORs
// of section 4.2.5) and build and send the repairs that fill, across
// d = 2..1024 groups per node. Repairs go to a discarding transport.
func BenchmarkAddData(b *testing.B) {
	for _, d := range []int{2, 8, 32, 128, 512, 1024} {
		b.Run(fmt.Sprintf("d=%d", d), func(b *testing.B) {
			bn := newBenchNode(b, d)
			for i := range 20000 { // warm up to steady state (buffers full)
				bn.data(bn.streams[i%len(bn.streams)])
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				bn.data(bn.streams[i%len(bn.streams)])
			}
		})
	}
}

// BenchmarkRecover is the cost of applying a repair: per op, seven data
// packets of a stream arrive, the eighth is lost, and a repair of all eight
// rebuilds it (XORing the seven held payloads) and passes it up.
func BenchmarkRecover(b *testing.B) {
	bn := newBenchNode(b, 8)
	k := bn.streams[0]
	rep := make([]byte, repairHeader+8*idSize+1000)
	for i := 0; i < 1000; i++ { // warm up
		bn.recoverBlock(k, rep)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bn.recoverBlock(k, rep)
	}
}

func (bn *benchNode) recoverBlock(k streamKey, rep []byte) {
	base := bn.seq[k]
	// Every payload is 1000 zero bytes, so the XOR and the XOR of the
	// lengths are zero; only the ids change.
	rep[0] = typeRepair
	rep[1] = 8
	for j := range 8 {
		p := rep[repairHeader+j*idSize:]
		binary.BigEndian.PutUint32(p, uint32(k.group))
		binary.BigEndian.PutUint32(p[4:], uint32(k.sender))
		binary.BigEndian.PutUint32(p[8:], base+1+uint32(j))
	}
	for range 7 {
		bn.data(k)
	}
	bn.seq[k]++ // the eighth is lost
	m := event.DefaultPool.FromBytes(rep)
	bn.st.Inject(0, true, event.Event{Kind: event.Send, Peer: k.sender, Msg: m})
}
