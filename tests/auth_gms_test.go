package tests

import (
	"fmt"
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

// authWorld is a simulated group under a spec with gms and auth: members,
// the membership service the spec names (with the auth_service compose adds
// for it), and what each member's application saw.
type authWorld struct {
	t         *testing.T
	sp        *compose.Spec
	net       *sim.Network
	svc       event.NodeID
	stacks    map[event.NodeID]*stack.Stack
	views     map[event.NodeID][]string // "id:members" as the application saw them
	viewIDs   map[event.NodeID][]uint64
	delivered map[event.NodeID][]string
	caps      []simstack.Packet // every packet the members and the service sent
}

// newAuthWorld builds members running spec and, when spec holds gms, the
// service compose says they need (svc is event.NoNode without one); every
// packet they send is captured. Nothing joins yet.
func newAuthWorld(t *testing.T, seed uint64, spec string, members []event.NodeID) *authWorld {
	t.Helper()
	sp, err := compose.Load(spec)
	if err != nil {
		t.Fatal(err)
	}
	// No loss and no jitter: the network's random source would otherwise be
	// drawn for a forger's packets too, and the real packets' fate would
	// change with them.
	w := &authWorld{t: t, sp: sp, net: sim.New(sim.Config{Seed: seed, Latency: time.Millisecond}),
		stacks: map[event.NodeID]*stack.Stack{}, views: map[event.NodeID][]string{}, viewIDs: map[event.NodeID][]uint64{}, delivered: map[event.NodeID][]string{}}
	if slices.ContainsFunc(sp.Layers, func(c compose.Call) bool { return c.Name == "gms" }) {
		var sst *stack.Stack
		w.svc, sst = simstack.Service(t, w.net, sp, members, seed, simstack.Capturing(&w.caps))
		w.stacks[w.svc] = sst
	}
	for _, id := range members {
		w.add(id, spec, seed, simstack.Capturing(&w.caps))
	}
	return w
}

// add builds one node running spec on the network, with the transport mk
// makes; its application records views and deliveries.
func (w *authWorld) add(id event.NodeID, spec string, seed uint64, mk func(*sim.Node) stack.Transport) *stack.Stack {
	w.t.Helper()
	layers, err := compose.BuildString(spec)
	if err != nil {
		w.t.Fatal(err)
	}
	app := stack.AppFuncs{
		OnDeliver: func(d stack.Delivery) {
			w.delivered[id] = append(w.delivered[id], fmt.Sprintf("%v:%s", d.From, d.Payload))
		},
		OnView: func(v *event.ViewInfo) {
			w.views[id] = append(w.views[id], fmt.Sprintf("%d:%v", v.ID, v.Members))
			w.viewIDs[id] = append(w.viewIDs[id], v.ID)
		},
	}
	st := simstack.Add(w.t, w.net, stack.Config{Self: id, Layers: layers, App: app, Seed: seed}, mk)
	w.stacks[id] = st
	return st
}

// at runs fn at virtual time d.
func (w *authWorld) at(d time.Duration, fn func()) { w.net.At(event.Time(d), fn) }

// casts has each node in from cast n messages to g, one every 5 ms from start.
func (w *authWorld) casts(g event.GroupID, from []event.NodeID, start time.Duration, n int) {
	for _, id := range from {
		for k := range n {
			st, msg := w.stacks[id], []byte(fmt.Sprintf("m%d", k))
			w.at(start+time.Duration(k)*5*time.Millisecond+time.Duration(id), func() { _ = st.Cast(g, msg) })
		}
	}
}

// counters returns a node's counters of one layer by name.
func (w *authWorld) counters(id event.NodeID, layer string) map[string]int64 {
	return simstack.Counters(w.stacks[id], layer)
}

// refused is what auth dropped, all causes.
func refused(c map[string]int64) int64 {
	return c["bad_tag"] + c["replayed"] + c["no_key"] + c["malformed"] + c["senders_full"]
}

const authGroup = event.GroupID(7)

// TestAuthGMSRotates: under gms, auth's keys rotate at every view gms
// installs (one rotation per view with a new id, at every member), the
// membership service's packets are authenticated both ways, and every
// message is delivered across the view changes (a member leaves, another
// joins) without one packet refused: members that install a view later
// than others are heard under the previous key for the grace period.
func TestAuthGMSRotates(t *testing.T) {
	key := authKeyFile(t, authKeyA)
	for _, mode := range []string{"", ", crypt=on"} {
		t.Run("crypt="+fmt.Sprint(mode != ""), func(t *testing.T) {
			spec := `fifo : reliable : gms : auth(key_file="` + key + `"` + mode + `)`
			stay := []event.NodeID{1, 2, 3}
			w := newAuthWorld(t, 5, spec, []event.NodeID{1, 2, 3, 4})
			for _, id := range []event.NodeID{1, 2, 3, 4} {
				w.at(time.Duration(id)*time.Millisecond, func() { _ = w.stacks[id].Join(authGroup) })
			}
			var late *stack.Stack
			w.at(time.Second, func() { _ = w.stacks[4].Leave(authGroup) })
			w.at(1500*time.Millisecond, func() {
				late = w.add(5, spec, 5, func(nd *sim.Node) stack.Transport { return nd })
				_ = late.Join(authGroup)
			})
			w.casts(authGroup, stay, 500*time.Millisecond, 400) // until 2.5 s: across both changes
			w.net.RunUntil(event.Time(5 * time.Second))

			for _, id := range stay {
				a := w.counters(id, "auth")
				ids := w.viewIDs[id]
				if len(ids) < 3 {
					t.Fatalf("n%d installed views %v, want at least 3 (first, after n4 left, after n5 joined)", id, w.views[id])
				}
				// A view with a new id is a new key: rotations count them.
				if a["rotations"] != int64(len(slices.Compact(slices.Clone(ids)))) {
					t.Errorf("n%d: auth rotations = %d, views installed %v: want one rotation per view", id, a["rotations"], w.views[id])
				}
				if refused(a) != 0 || a["membership_verified"] == 0 {
					t.Errorf("n%d: auth refused %d packets (want 0) and verified %d of the service's (want > 0): %v", id, refused(a), a["membership_verified"], a)
				}
				var want []string
				for _, from := range stay {
					if from != id {
						for k := range 400 {
							want = append(want, fmt.Sprintf("%v:m%d", from, k))
						}
					}
				}
				got := slices.Clone(w.delivered[id])
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Errorf("n%d delivered %d messages, want the %d its peers cast across the view changes", id, len(got), len(want))
				}
			}
			if s := w.counters(w.svc, "auth_service"); s["verified"] == 0 || refused(s) != 0 {
				t.Errorf("service's auth: %v, want members' packets verified and none refused", s)
			}
			if v := w.views[5]; len(v) == 0 || w.counters(5, "auth")["rotations"] == 0 {
				t.Errorf("n5 (joined late) views %v, auth %v: want a view and a rotation", v, w.counters(5, "auth"))
			}
		})
	}
}

// spoofing sends from its node but writes src as the source of every frame:
// a forger posing as member src.
type spoofing struct {
	*sim.Node
	src event.NodeID
}

func (s spoofing) rewrite(pkt []byte) []byte {
	if f, err := stack.ParseFrame(pkt); err == nil {
		f.Src = s.src
		stack.PutFrame(pkt, f)
	}
	return pkt
}

func (s spoofing) Multicast(g event.GroupID, pkt []byte) { s.Node.Multicast(g, s.rewrite(pkt)) }
func (s spoofing) Send(to event.NodeID, pkt []byte)      { s.Node.Send(to, s.rewrite(pkt)) }

// TestAuthGMSForgedMembership: membership-service packets under a wrong key
// change no view and no delivery. Forger n98 (a stranger) asks to join the
// group; forger n97, posing as member n3 (every frame it sends names n3),
// joins, leaves and says goodbye, which would remove n3 if the service
// believed it; n96 replays every membership packet the members and the
// service sent, to the service and to the members. Each member's views and
// deliveries are those of the same seed's run without forgers, and the
// service's auth counts every forged packet dropped.
func TestAuthGMSForgedMembership(t *testing.T) {
	good := authKeyFile(t, authKeyA)
	bad := authKeyFile(t, authKeyB)
	spec := `fifo : reliable : gms : auth(key_file="` + good + `")`
	forged := `fifo : reliable : gms : auth(key_file="` + bad + `")`
	members := []event.NodeID{1, 2, 3, 4}
	run := func(forge bool) *authWorld {
		w := newAuthWorld(t, 9, spec, members)
		for _, id := range members {
			w.at(time.Duration(id)*time.Millisecond, func() { _ = w.stacks[id].Join(authGroup) })
		}
		w.at(1200*time.Millisecond, func() { _ = w.stacks[4].Leave(authGroup) }) // a real view change
		w.casts(authGroup, []event.NodeID{1, 2, 3}, 500*time.Millisecond, 300)
		if forge {
			stranger := w.add(98, forged, 9, func(nd *sim.Node) stack.Transport { return nd })
			poser := w.add(97, forged, 9, func(nd *sim.Node) stack.Transport { return spoofing{nd, 3} })
			w.at(600*time.Millisecond, func() { _ = stranger.Join(authGroup) })
			w.at(700*time.Millisecond, func() { _ = poser.Join(authGroup) })
			w.at(900*time.Millisecond, func() { _ = poser.Leave(authGroup) })
			w.at(1100*time.Millisecond, func() { poser.Close() }) // its goodbye
			rnd := w.net.AddNode(96)
			for i := range 2000 {
				w.at(800*time.Millisecond+time.Duration(i)*500*time.Microsecond, func() {
					var ms []simstack.Packet
					for _, c := range w.caps {
						if f, err := stack.ParseFrame(c.Pkt); err == nil && f.Kind == event.Membership {
							ms = append(ms, c)
						}
					}
					c := ms[(i*7919)%len(ms)]
					rnd.Send(c.To, slices.Clone(c.Pkt))
				})
			}
		}
		w.net.RunUntil(event.Time(4 * time.Second))
		return w
	}
	base, flood := run(false), run(true)
	for _, id := range members {
		if !slices.Equal(base.views[id], flood.views[id]) {
			t.Errorf("n%d views under forged membership packets %v, without %v", id, flood.views[id], base.views[id])
		}
		if !slices.Equal(base.delivered[id], flood.delivered[id]) {
			t.Errorf("n%d delivered %d messages under forged membership packets, %d without; the sequences differ", id, len(flood.delivered[id]), len(base.delivered[id]))
		}
	}
	if len(base.views[3]) == 0 || len(base.delivered[1]) == 0 {
		t.Fatalf("nothing happened: n3 views %v, n1 delivered %d", base.views[3], len(base.delivered[1]))
	}
	for _, id := range []event.NodeID{98, 97} {
		if v := flood.views[id]; len(v) != 0 {
			t.Errorf("forger n%d was given views %v", id, v)
		}
	}
	s := flood.counters(flood.svc, "auth_service")
	if s["bad_tag"] == 0 || s["replayed"] == 0 {
		t.Errorf("service's auth %v: want forged packets refused as bad tags and replays", s)
	}
	if s["verified"] != base.counters(base.svc, "auth_service")["verified"] {
		t.Errorf("service's auth verified %d packets under the forgers, %d without", s["verified"], base.counters(base.svc, "auth_service")["verified"])
	}
	t.Logf("service's auth: %v", s)
}
