package gms

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/stack"
	"github.com/layercast/layercast/testbed/simstack"
	"github.com/layercast/layercast/transport/sim"
)

// fuzzOps splits a fuzz input into operations: each is a 1-byte sender
// selector, a 1-byte time step (ms), a 2-byte length and that many bytes
// of packet. The rest of the input is one last packet.
func fuzzOps(b []byte, op func(from byte, step time.Duration, pkt []byte)) {
	for len(b) >= 4 {
		n := int(binary.BigEndian.Uint16(b[2:4]))
		if n > len(b)-4 {
			n = len(b) - 4
		}
		op(b[0], time.Duration(b[1])*time.Millisecond, b[4:4+n])
		b = b[4+n:]
	}
	if len(b) > 0 {
		op(0, 0, b)
	}
}

// fuzzOp frames one packet as a fuzz operation.
func fuzzOp(from byte, stepMs byte, pkt []byte) []byte {
	out := []byte{from, stepMs, 0, 0}
	binary.BigEndian.PutUint16(out[2:], uint16(len(pkt)))
	return append(out, pkt...)
}

func fuzzSeeds(f *testing.F) {
	views := []*event.ViewInfo{{Group: 1, ID: 2, Members: ids(1, 2, 3), Joined: ids(3)}, {Group: 2, ID: 1, Members: ids(1)}}
	regions := []*event.RegionView{{Region: 1, ID: 1, Groups: []event.GroupID{1, 2}, Members: ids(1)}}
	pkts := [][]byte{
		mustEncode(&wireMsg{T: msgHeartbeat, Inc: 1, Timeout: int64(time.Second), Suspect: int64(time.Second), Interval: int64(100 * time.Millisecond), Settled: true}),
		mustEncode(&wireMsg{T: msgHeartbeat, Inc: 1, Timeout: 1 << 62, Settled: true, Seq: 3, Want: 77}),
		mustEncode(&wireMsg{T: msgRequest, Inc: 1, Seq: 1, Join: []event.GroupID{1, 2, 3}}),
		mustEncode(&wireMsg{T: msgRequest, Inc: 1, Seq: 2, Leave: []event.GroupID{2}}),
		mustEncode(&wireMsg{T: msgBye, Inc: 1}),
		mustEncode(&wireMsg{T: msgAck, Seq: 1, Refused: []event.GroupID{3}}),
		mustEncode(&wireMsg{T: msgUpdate, Seq: 1, Views: views, FullRegions: true, Regions: regions}),
		mustEncode(&wireMsg{T: msgUpdate, Seq: 2, Views: []*event.ViewInfo{{Group: 1, ID: 3, Members: ids(2, 3), Left: ids(1)}}, Removed: []event.RegionID{1}}),
		mustEncode(&wireMsg{T: msgUpdate, Seq: 5, Full: true, Views: views[:1]}),
		mustEncode(&wireMsg{T: msgUpdate, Seq: 4, More: true, Views: views[1:]}),
		mustEncode(&wireMsg{T: msgRemoved, Seq: 1}),
		mustEncode(&wireMsg{T: msgProbe}),
		mustEncode(&wireMsg{T: msgHeartbeat, Inc: 1, Timeout: int64(time.Second), Site: 3}),
		mustEncode(&wireMsg{T: msgRequest, Inc: 1, Seq: 1, Join: []event.GroupID{1}, Site: 2}),
		mustEncode(&wireMsg{T: msgSuspect, Inc: 1, Peers: ids(2, 3)}),
		mustEncode(&wireMsg{T: msgUpdate, Seq: 1, Views: views, HasSites: true, Sites: []event.SiteView{{Site: 1, ID: 1, Members: ids(1, 2)}, {Site: 4, ID: 2, Members: ids(3)}}}),
		// The failure detector's packets (issue 15): an adaptive
		// heartbeat, a probe's answer, indirect probes and their answers.
		mustEncode(&wireMsg{T: msgHeartbeat, Inc: 1, Timeout: int64(100 * time.Millisecond), Interval: int64(20 * time.Millisecond), Phi: 8000, FDMax: int64(time.Second)}),
		mustEncode(&wireMsg{T: msgHeartbeat, Inc: 1, Timeout: int64(100 * time.Millisecond), Phi: 1 << 40, FDMax: 1 << 62, Answer: true}),
		mustEncode(&wireMsg{T: msgPingReq, Peers: ids(2, 3)}),
		mustEncode(&wireMsg{T: msgPing}),
		mustEncode(&wireMsg{T: msgPingAck}),
		mustEncode(&wireMsg{T: msgAlive, Inc: 1, Peers: ids(2)}),
	}
	var all []byte
	for i, p := range pkts {
		f.Add(fuzzOp(byte(i%3), byte(i*17), p))
		all = append(all, fuzzOp(byte(i%3), 30, p)...)
	}
	f.Add(all)
}

// fuzzService is a membership service with small bounds, as the fuzz
// targets feed it packets (what it sends goes nowhere).
func fuzzService(t *testing.T) *Service {
	t.Helper()
	svc, err := NewService(ServiceConfig{FDTimeout: 500 * time.Millisecond, ViewInterval: 20 * time.Millisecond,
		MaxNodes: 4, MaxGroupsPerNode: 8, MaxGroups: 16, MaxRequest: 64, MaxEntries: 16,
		Send: func(event.NodeID, []byte) {}})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// fuzzLayer is node 1's gms layer alone in its stack on a simulated
// network, joined to group 1, as the fuzz targets feed it packets.
func fuzzLayer(t *testing.T) (*Layer, *stack.Stack, *sim.Network) {
	t.Helper()
	net := sim.New(sim.Config{Seed: 1, Latency: time.Millisecond})
	l := New(Config{Heartbeat: 100 * time.Millisecond, FDTimeout: 500 * time.Millisecond})
	st := simstack.Add(t, net, stack.Config{Self: 1, Clock: net, Seed: 1, Layers: []stack.Entry{{Name: "gms", Layer: l}}}, nil)
	st.Join(1)
	return l, st, net
}

// FuzzServiceReceive feeds the service sequences of raw packets from a few
// nodes, with time passing between them: it must never panic, and its
// tables stay within their bounds.
func FuzzServiceReceive(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		svc := fuzzService(t)
		now := event.Time(0)
		fuzzOps(b, func(from byte, step time.Duration, pkt []byte) {
			now = now.Add(step)
			svc.Tick(now)
			svc.Receive(now, event.NodeID(from%6), pkt) // node 0 included: must be refused
			svc.Tick(now)
			if next := svc.Next(); next < now {
				// Overdue deadlines must be handled by the Tick just done.
				svc.Tick(now)
				if svc.Next() < now {
					t.Fatalf("Next %v still before now %v after Tick", svc.Next(), now)
				}
			}
		})
		if svc.Live() > 4 || svc.Index().NumGroups() > 16 {
			t.Fatalf("service grew past its bounds: %d nodes, %d groups", svc.Live(), svc.Index().NumGroups())
		}
		for _, p := range svc.peers {
			if len(p.log) > svc.cfg.UpdateLog || (len(p.log) > 1 && p.logCost > 4*svc.cfg.MaxEntries) {
				t.Fatalf("%v: %d updates (%d entries) logged, bounds %d and %d", p.id, len(p.log), p.logCost, svc.cfg.UpdateLog, 4*svc.cfg.MaxEntries)
			}
		}
		if len(svc.late)+len(svc.suspects) > svc.Live() {
			t.Fatalf("%d late and %d suspects of %d live nodes", len(svc.late), len(svc.suspects), svc.Live())
		}
		for _, p := range svc.peers {
			if p.window < p.timeout || (p.window > p.timeout && p.window > p.fdMax) || len(p.helpers) > svc.cfg.Indirect {
				t.Fatalf("%v: window %v outside [%v, %v], or %d helpers", p.id, p.window, p.timeout, p.fdMax, len(p.helpers))
			}
		}
		if recs, _ := svc.Removals(); len(recs) > svc.cfg.MaxRemovals {
			t.Fatalf("%d removals kept, bound %d", len(recs), svc.cfg.MaxRemovals)
		}
		for n := event.NodeID(0); n < 6; n++ {
			if len(svc.Index().Groups(n)) > 8 {
				t.Fatalf("%v in %d groups, bound 8", n, len(svc.Index().Groups(n)))
			}
		}
	})
}

// FuzzLayerUp feeds a node's gms layer raw membership packets from the
// service and from other nodes, with time passing (heartbeats, retries):
// it must never panic, only the service's packets are taken (and other
// members' pings and their answers), and its tables stay bounded.
func FuzzLayerUp(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		l, st, net := fuzzLayer(t)
		st.Join(2)
		fuzzOps(b, func(from byte, step time.Duration, pkt []byte) {
			peer := ServiceNode
			if from%3 == 1 {
				peer = 2 // another node: must be dropped
			}
			msg := event.NewMessage()
			msg.SetPayload(pkt)
			st.Inject(0, true, event.Event{Kind: event.Membership, Peer: peer, Msg: msg})
			net.Run(step)
		})
		if len(l.pinging) > maxPinging {
			t.Fatalf("%d nodes being pinged, bound %d", len(l.pinging), maxPinging)
		}
		if len(l.early) > maxEarly {
			t.Fatalf("%d early updates kept, bound %d", len(l.early), maxEarly)
		}
		for g, v := range l.views {
			if !v.Has(1) {
				t.Fatalf("holds a view of %v without itself: %+v", g, v)
			}
		}
	})
}
