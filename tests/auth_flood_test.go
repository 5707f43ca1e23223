package tests

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/layercast/layercast/compose"
	"github.com/layercast/layercast/event"
	_ "github.com/layercast/layercast/layers/all"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/simstack"
	"github.com/layercast/layercast/transport/sim"
)

// floodRun is one simulated run (an authWorld): three members of one group
// cast 300 messages each over 1.5 s; with forge set, node 99 (not a member)
// sends what forge makes (to the group's channel, or to the node it names),
// 100 per millisecond from 10 ms on. Under a spec with gms, the members join
// through the membership service (its stack runs auth_service) and cast
// from 1 s on, once their views are in. It returns the world (each member's
// deliveries and views, the packets the members and the service sent), the
// auth counters per member (and the service's, at its node id) and how
// many forged packets each auth layer should have seen.
type floodResult struct {
	*authWorld
	auth      map[event.NodeID]map[string]int64
	forgedAt  map[event.NodeID]int64
	frameBad  map[event.NodeID]int64
	malformed map[event.NodeID]int64 // the stack's count of bad frames
	netStats  sim.Stats
}

const floodGroup = event.GroupID(7)

func floodRun(t *testing.T, seed uint64, spec string, forge func(i int, caps []simstack.Packet) simstack.Packet, nForged int) floodResult {
	t.Helper()
	// No loss and no jitter (an authWorld's network): the network's random
	// source would otherwise be drawn for the forged packets too, and the
	// real packets' fate (and so the interleaving of senders) would change
	// with the flood.
	members := []event.NodeID{1, 2, 3}
	w := newAuthWorld(t, seed, spec, members)
	res := floodResult{authWorld: w, auth: map[event.NodeID]map[string]int64{}, forgedAt: map[event.NodeID]int64{}, frameBad: map[event.NodeID]int64{}, malformed: map[event.NodeID]int64{}}
	start := time.Duration(0)
	if w.svc != event.NoNode {
		start = time.Second
	}
	for _, id := range members {
		if w.svc != event.NoNode {
			_ = w.stacks[id].Join(floodGroup)
		} else {
			w.stacks[id].InstallView(&event.ViewInfo{Group: floodGroup, ID: 1, Members: members})
		}
	}
	w.casts(floodGroup, members, start, 300)
	if forge != nil {
		// The forger's own stack never joins (nor has a key, nor talks to
		// a membership service); its node sends raw packets.
		fl, err := compose.BuildString("fifo : reliable")
		if err != nil {
			t.Fatal(err)
		}
		simstack.Add(t, w.net, stack.Config{Self: 99, Layers: fl, Seed: seed}, nil)
		fnd := w.net.Node(99)
		for i := range nForged {
			at := 10*time.Millisecond + time.Duration(i)*10*time.Microsecond
			w.at(at, func() {
				fp := forge(i, w.caps)
				f, err := stack.ParseFrame(fp.Pkt)
				for _, m := range append(slices.Clone(members), w.svc) {
					if fp.To != m && (fp.To != event.NoNode || m == w.svc) {
						continue // neither sent to m nor multicast to the group m is in
					}
					// the stack drops its own multicasts before any layer
					switch {
					case err != nil:
						res.frameBad[m]++ // refused by the stack's frame check
					case f.Src != m || f.Kind != event.Cast || fp.To != event.NoNode:
						res.forgedAt[m]++
					}
				}
				if fp.To == event.NoNode {
					fnd.Multicast(floodGroup, fp.Pkt)
				} else {
					fnd.Send(fp.To, fp.Pkt)
				}
			})
		}
	}
	w.net.RunUntil(event.Time(start + 4*time.Second))
	for id, st := range w.stacks {
		res.auth[id] = simstack.Counters(st, "auth", "auth_service")
		res.malformed[id] = st.Net().Malformed
	}
	res.netStats = w.net.Stats()
	return res
}

// TestAuthFlood is issue 16's check: 100,000 forged packets (no tag, wrong
// key, tampered payload, replayed captures of real packets) from a
// non-member change nothing the members deliver, compared with the same
// seed's run without the flood, and every one is counted dropped. Under gms
// the forgeries include the membership service's packets and the members'
// packets to it (requests, heartbeats, views: wrong key, tampered,
// replayed), and the views do not change either.
func TestAuthFlood(t *testing.T) {
	good := authKeyFile(t, authKeyA)
	bad := authKeyFile(t, authKeyB)
	for _, c := range []struct{ name, above, mode string }{
		{"crypt=false", "fifo : reliable", ""},
		{"crypt=true", "fifo : reliable", ", crypt=on"},
		{"gms", "fifo : reliable : gms", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := c.above + ` : auth(key_file="` + good + `"` + c.mode + `)`
			base := floodRun(t, 11, spec, nil, 0)
			if len(base.delivered[1]) != 600 || len(base.delivered[2]) != 600 || len(base.delivered[3]) != 600 {
				t.Fatalf("baseline delivered %d, %d, %d messages, want 600 each (300 from each other member)", len(base.delivered[1]), len(base.delivered[2]), len(base.delivered[3]))
			}
			// The same run under the wrong key gives well-formed packets with
			// tags that do not verify.
			wrong := floodRun(t, 11, c.above+` : auth(key_file="`+bad+`"`+c.mode+`)`, nil, 0).caps
			rng := rand.New(rand.NewPCG(5, 5))
			const n = 100_000
			forge := func(i int, caps []simstack.Packet) simstack.Packet {
				switch i % 4 {
				case 0: // no tag: a frame and bytes that look like the layers above
					pkt := make([]byte, stack.FrameSize+rng.IntN(60))
					stack.PutFrame(pkt, stack.Frame{Kind: event.Cast, Group: floodGroup, Src: event.NodeID(1 + rng.IntN(3))})
					for j := stack.FrameSize; j < len(pkt); j++ {
						pkt[j] = byte(rng.Uint32())
					}
					return simstack.Packet{To: event.NoNode, Pkt: pkt}
				case 1: // wrong key
					return wrong[rng.IntN(len(wrong))]
				}
				if len(caps) == 0 {
					return wrong[0]
				}
				fp := caps[rng.IntN(len(caps))]
				fp.Pkt = slices.Clone(fp.Pkt)
				if i%4 == 2 { // tampered: one bit of the tag or what it covers
					j := 2 + rng.IntN(len(fp.Pkt)-2) // the frame's group and source too
					fp.Pkt[j] ^= 1 << rng.IntN(8)
				}
				return fp // or a replay of a real packet, already sent
			}
			flood := floodRun(t, 11, spec, forge, n)
			for id := range flood.auth {
				if !slices.Equal(base.delivered[id], flood.delivered[id]) {
					t.Errorf("n%d delivered %d messages under the flood, %d without; the sequences differ", id, len(flood.delivered[id]), len(base.delivered[id]))
				}
				if !slices.Equal(base.views[id], flood.views[id]) {
					t.Errorf("n%d installed views %v under the flood, %v without", id, flood.views[id], base.views[id])
				}
				c := flood.auth[id]
				if dropped := refused(c); dropped != flood.forgedAt[id] {
					t.Errorf("n%d: auth dropped %d packets, the forger sent it %d (%v)", id, dropped, flood.forgedAt[id], c)
				}
				if flood.malformed[id] != flood.frameBad[id] {
					t.Errorf("n%d: the stack refused %d frames, the forger sent it %d bad ones", id, flood.malformed[id], flood.frameBad[id])
				}
				if c["verified"] != base.auth[id]["verified"] {
					t.Errorf("n%d: auth verified %d packets under the flood, %d without", id, c["verified"], base.auth[id]["verified"])
				}
				t.Logf("n%d: %v", id, c)
			}
			// Every forged packet reached at least one auth layer (or frame
			// check), n1 a good share of them.
			var reached int64
			for id := range flood.auth {
				reached += flood.forgedAt[id] + flood.frameBad[id]
			}
			if flood.netStats.OverflowDrops != 0 || reached < n || flood.forgedAt[1] < n/4 {
				t.Errorf("overflow drops %d, forged packets at some auth layer %d (want %d), at n1 %d", flood.netStats.OverflowDrops, reached, n, flood.forgedAt[1])
			}
		})
	}
}
