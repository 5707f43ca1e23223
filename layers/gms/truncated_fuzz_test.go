package gms

import (
	"errors"
	"testing"
	"time"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/testbed/layertest"
)

// FuzzTruncatedCounted cuts one of the seed packets (every kind of
// membership packet) short of its whole encoding and gives it to both
// ends of the protocol: the service refuses it with ErrMalformed and
// counts it, once; a node's gms layer, receiving it from the service,
// counts it as malformed, once.
func FuzzTruncatedCounted(f *testing.F) {
	views := []*event.ViewInfo{{Group: 1, ID: 2, Members: ids(1, 2, 3), Joined: ids(3)}, {Group: 2, ID: 1, Members: ids(1)}}
	pkts := [][]byte{
		mustEncode(&wireMsg{T: msgHeartbeat, Inc: 1, Timeout: int64(time.Second), Interval: int64(100 * time.Millisecond), Settled: true, Phi: 8000}),
		mustEncode(&wireMsg{T: msgRequest, Inc: 1, Seq: 1, Join: []event.GroupID{1, 2, 3}, Site: 2}),
		mustEncode(&wireMsg{T: msgAck, Seq: 1, Refused: []event.GroupID{3}}),
		mustEncode(&wireMsg{T: msgUpdate, Seq: 1, Views: views, FullRegions: true,
			Regions: []*event.RegionView{{Region: 1, ID: 1, Groups: []event.GroupID{1, 2}, Members: ids(1)}}}),
		mustEncode(&wireMsg{T: msgUpdate, Seq: 1, Views: views, HasSites: true, Sites: []event.SiteView{{Site: 1, ID: 1, Members: ids(1, 2)}}}),
		mustEncode(&wireMsg{T: msgRemoved, Seq: 1}),
		mustEncode(&wireMsg{T: msgProbe}),
		mustEncode(&wireMsg{T: msgPingReq, Peers: ids(2, 3)}),
		mustEncode(&wireMsg{T: msgAlive, Inc: 1, Peers: ids(2)}),
	}
	layertest.SeedCuts(f, len(pkts), 7, false)
	f.Fuzz(func(t *testing.T, which byte, cut uint16) {
		full := pkts[int(which)%len(pkts)]
		b := full[:int(cut)%len(full)]

		svc := fuzzService(t)
		if err := svc.Receive(0, 1, b); !errors.Is(err, ErrMalformed) || svc.Stats().Malformed != 1 {
			t.Fatalf("service: Receive(%x, %d bytes of %d) = %v, malformed counted %d times, want ErrMalformed and 1", b, len(b), len(full), err, svc.Stats().Malformed)
		}

		l, st, _ := fuzzLayer(t)
		before := l.c.Malformed.Value()
		msg := event.NewMessage()
		msg.SetPayload(b)
		st.Inject(0, true, event.Event{Kind: event.Membership, Peer: ServiceNode, Msg: msg})
		if got := l.c.Malformed.Value() - before; got != 1 {
			t.Fatalf("layer: packet %x (%d bytes of %d) counted malformed %d times, want 1", b, len(b), len(full), got)
		}
	})
}
