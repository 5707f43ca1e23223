package tests

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	_ "github.com/layercast/layercast/layers/all"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/transport/sim"
)

// capturing is a member's transport that keeps a copy of every multicast it
// sends: the forger's captures of real packets.
type capturing struct {
	*sim.Node
	caps *[][]byte
}

func (c capturing) Multicast(g event.GroupID, pkt []byte) {
	*c.caps = append(*c.caps, slices.Clone(pkt))
	c.Node.Multicast(g, pkt)
}

// floodRun is one simulated run: three members of one group cast 300
// messages each over 1.5 s; with forge set, node 99 (not a
// member) multicasts what forge makes on the group's channel, 100 per
// millisecond from 10 ms on. It returns each member's deliveries, the
// multicasts the members sent, the auth counters per member and how many
// forged packets each member's auth layer should have seen.
type floodResult struct {
	delivered map[event.NodeID][]string
	caps      [][]byte
	counters  map[event.NodeID]map[string]int64
	forgedAt  map[event.NodeID]int64
	frameBad  map[event.NodeID]int64
	malformed map[event.NodeID]int64 // the stack's count of bad frames
	net       sim.Stats
}

const floodGroup = event.GroupID(7)

func floodRun(t *testing.T, seed uint64, spec string, forge func(i int, caps [][]byte) []byte, nForged int) floodResult {
	t.Helper()
	sp, err := compose.Load(spec)
	if err != nil {
		t.Fatal(err)
	}
	// No loss and no jitter: the network's random source would otherwise be
	// drawn for the forged packets too, and the real packets' fate (and so
	// the interleaving of senders) would change with the flood.
	net := sim.New(sim.Config{Seed: seed, Latency: time.Millisecond})
	members := []event.NodeID{1, 2, 3}
	res := floodResult{delivered: map[event.NodeID][]string{}, counters: map[event.NodeID]map[string]int64{}, forgedAt: map[event.NodeID]int64{}, frameBad: map[event.NodeID]int64{}, malformed: map[event.NodeID]int64{}}
	stacks := map[event.NodeID]*stack.Stack{}
	for _, id := range members {
		layers, err := compose.Build(sp)
		if err != nil {
			t.Fatal(err)
		}
		nd := net.AddNode(id)
		app := stack.AppFuncs{OnDeliver: func(d stack.Delivery) {
			res.delivered[id] = append(res.delivered[id], fmt.Sprintf("%v:%s", d.From, d.Payload))
		}}
		st, err := stack.New(stack.Config{Self: id, Layers: layers, Transport: capturing{nd, &res.caps}, Clock: nd, App: app, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		nd.Attach(st)
		stacks[id] = st
	}
	for _, id := range members {
		stacks[id].InstallView(&event.ViewInfo{Group: floodGroup, ID: 1, Members: members})
	}
	for _, id := range members {
		for k := range 300 {
			st, msg := stacks[id], []byte(fmt.Sprintf("m%d", k))
			net.At(event.Time(k)*event.Time(5*time.Millisecond)+event.Time(id), func() { _ = st.Cast(floodGroup, msg) })
		}
	}
	if forge != nil {
		// The forger's own stack never joins; its node sends raw packets.
		fl, err := compose.Build(sp)
		if err != nil {
			t.Fatal(err)
		}
		fnd := net.AddNode(99)
		fst, err := stack.New(stack.Config{Self: 99, Layers: fl, Transport: fnd, Clock: fnd, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		fnd.Attach(fst)
		for i := range nForged {
			at := event.Time(10*time.Millisecond) + event.Time(i)*event.Time(10*time.Microsecond)
			net.At(at, func() {
				pkt := forge(i, res.caps)
				f, err := stack.ParseFrame(pkt)
				for _, m := range members {
					// the stack drops its own multicasts before any layer
					switch {
					case err != nil:
						res.frameBad[m]++ // refused by the stack's frame check
					case f.Src != m || f.Kind != event.Cast:
						res.forgedAt[m]++
					}
				}
				fnd.Multicast(floodGroup, pkt)
			})
		}
	}
	net.RunUntil(event.Time(4 * time.Second))
	for _, id := range members {
		c := map[string]int64{}
		for _, lc := range stacks[id].Counters() {
			if lc.Layer == "auth" {
				for i, n := range lc.Names {
					c[n] = lc.Values[i]
				}
			}
		}
		res.counters[id] = c
		res.malformed[id] = stacks[id].Net().Malformed
	}
	res.net = net.Stats()
	return res
}

// TestAuthFlood is issue 16's check: 100,000 forged packets (no tag, wrong
// key, tampered payload, replayed captures of real packets) from a
// non-member change nothing the members deliver, compared with the same
// seed's run without the flood, and every one is counted dropped.
func TestAuthFlood(t *testing.T) {
	good := authKeyFile(t, authKeyA)
	bad := authKeyFile(t, authKeyB)
	for _, mode := range []string{"", ", crypt=on"} {
		t.Run("crypt="+fmt.Sprint(mode != ""), func(t *testing.T) {
			spec := `fifo : reliable : auth(key_file="` + good + `"` + mode + `)`
			base := floodRun(t, 11, spec, nil, 0)
			if len(base.delivered[1]) != 600 || len(base.delivered[2]) != 600 || len(base.delivered[3]) != 600 {
				t.Fatalf("baseline delivered %d, %d, %d messages, want 600 each (300 from each other member)", len(base.delivered[1]), len(base.delivered[2]), len(base.delivered[3]))
			}
			// The same run under the wrong key gives well-formed packets with
			// tags that do not verify.
			wrong := floodRun(t, 11, `fifo : reliable : auth(key_file="`+bad+`"`+mode+`)`, nil, 0).caps
			rng := rand.New(rand.NewPCG(5, 5))
			const n = 100_000
			forge := func(i int, caps [][]byte) []byte {
				switch i % 4 {
				case 0: // no tag: a frame and bytes that look like the layers above
					pkt := make([]byte, stack.FrameSize+rng.IntN(60))
					stack.PutFrame(pkt, stack.Frame{Kind: event.Cast, Group: floodGroup, Src: event.NodeID(1 + rng.IntN(3))})
					for j := stack.FrameSize; j < len(pkt); j++ {
						pkt[j] = byte(rng.Uint32())
					}
					return pkt
				case 1: // wrong key
					return wrong[rng.IntN(len(wrong))]
				}
				if len(caps) == 0 {
					return wrong[0]
				}
				c := slices.Clone(caps[rng.IntN(len(caps))])
				if i%4 == 2 { // tampered: one bit of the tag or what it covers
					j := 2 + rng.IntN(len(c)-2) // the frame's group and source too
					c[j] ^= 1 << rng.IntN(8)
				}
				return c // or a replay of a real packet, already sent
			}
			flood := floodRun(t, 11, spec, forge, n)
			for _, id := range []event.NodeID{1, 2, 3} {
				if !slices.Equal(base.delivered[id], flood.delivered[id]) {
					t.Errorf("n%d delivered %d messages under the flood, %d without; the sequences differ", id, len(flood.delivered[id]), len(base.delivered[id]))
				}
				c := flood.counters[id]
				dropped := c["bad_tag"] + c["replayed"] + c["no_key"] + c["malformed"] + c["senders_full"]
				if dropped != flood.forgedAt[id] {
					t.Errorf("n%d: auth dropped %d packets, the forger sent it %d (%v)", id, dropped, flood.forgedAt[id], c)
				}
				if flood.malformed[id] != flood.frameBad[id] {
					t.Errorf("n%d: the stack refused %d frames, the forger sent it %d bad ones", id, flood.malformed[id], flood.frameBad[id])
				}
				if c["verified"] != base.counters[id]["verified"] {
					t.Errorf("n%d: auth verified %d packets under the flood, %d without", id, c["verified"], base.counters[id]["verified"])
				}
				t.Logf("n%d: %v", id, c)
			}
			if flood.net.OverflowDrops != 0 || flood.forgedAt[1] < n/2 {
				t.Errorf("overflow drops %d, forged packets at n1 %d", flood.net.OverflowDrops, flood.forgedAt[1])
			}
		})
	}
}
