package gms

import (
	"errors"
	"fmt"
	"slices"

	"github.com/layercast/layercast/event"
	"github.com/layercast/layercast/internal/wirecodec"
)

// msgType says what a membership packet is. The values are on the wire:
// append only.
type msgType uint8

const (
	// msgHeartbeat, node to service: I am alive. Carries Inc, Applied (the
	// last update sequence number applied), Timeout (the node's failure
	// detection timeout), Suspect (its suspicion period), Interval (its
	// heartbeat interval), Member (the node believes it is in groups), and
	// what it wants: Settled (every request acknowledged, none pending),
	// then Seq (its last request), Wants and Want (the number and digest of
	// the groups it asked for). Also the answer to a probe.
	msgHeartbeat msgType = 1
	// msgRequest, node to service: join and leave groups. Seq numbers the
	// request; the service acknowledges it with msgAck.
	msgRequest msgType = 2
	// msgAck, service to node: request Seq was accepted, except the joins
	// listed in Refused (beyond the service's bounds).
	msgAck msgType = 3
	// msgUpdate, service to node: new views of the node's groups and the
	// QSM region views that concern it. Seq numbers updates per node,
	// consecutively; Full replaces everything the node holds; More says
	// another part of the same update follows.
	msgUpdate msgType = 4
	// msgRemoved, service to node: you were declared failed and removed
	// from every group (or the service does not know you): join again.
	// Seq is the node's last request the service held (a node that has
	// asked to join again since ignores an older notice).
	msgRemoved msgType = 5
	// msgBye, node to service: I am leaving the system now; remove me.
	msgBye msgType = 6
	// msgProbe, service to node: you are suspected; answer at once (with a
	// heartbeat).
	msgProbe msgType = 7
	// msgSuspect, node to service: a layer above gms stopped hearing the
	// nodes in Peers (hop's link declared a far site dead); the service
	// probes them now instead of waiting for their fd timeout.
	msgSuspect msgType = 8
	// msgPingReq, service to node: the service suspects the nodes in Peers
	// and asks this member to probe them for it (SWIM's ping-req,
	// memberlist's indirect probes).
	msgPingReq msgType = 9
	// msgPing, node to node: are you there? (for a msgPingReq). The
	// receiver answers msgPingAck.
	msgPing msgType = 10
	// msgPingAck, node to node: the answer to msgPing.
	msgPingAck msgType = 11
	// msgAlive, node to service: this member reached the nodes in Peers
	// (they answered its msgPing) since the service's msgPingReq.
	msgAlive msgType = 12
	// msgCut, node to service: a layer above gms finds the sites in Cut
	// cut off from it by the wide-area links for good (hop, after
	// dead_after), while it still reaches the sites in Reach (its own
	// included). The service removes the members of Cut, answering or
	// not, if they are the smaller side (Service.cut).
	msgCut msgType = 13
	// msgLimit is one past the last type.
	msgLimit = msgCut + 1
)

var msgNames = [...]string{msgHeartbeat: "heartbeat", msgRequest: "request", msgAck: "ack", msgUpdate: "update", msgRemoved: "removed", msgBye: "bye", msgProbe: "probe", msgSuspect: "suspect",
	msgPingReq: "ping-req", msgPing: "ping", msgPingAck: "ping-ack", msgAlive: "alive", msgCut: "cut"}

func (t msgType) String() string {
	if t > 0 && t < msgLimit {
		return msgNames[t]
	}
	return fmt.Sprintf("type%d", uint8(t))
}

// wireMsg is every membership packet. Fields a type does not use are left
// empty (msgpack omits nothing, but empty fields cost a byte each).
type wireMsg struct {
	T       msgType
	Inc     uint64
	Seq     uint64
	Applied uint64
	Timeout int64
	Member  bool
	Join    []event.GroupID
	Leave   []event.GroupID
	// Suspect and Interval: the node's suspicion period and heartbeat
	// interval (nanoseconds), with its heartbeats.
	Suspect  int64
	Interval int64
	// Settled, Wants and Want: see msgHeartbeat.
	Settled bool
	Wants   uint64
	Want    uint64
	// Refused: joins an ack refuses.
	Refused []event.GroupID
	Full    bool
	More    bool
	Views   []*event.ViewInfo
	// FullRegions: Regions replace every region view the node holds.
	FullRegions bool
	Regions     []*event.RegionView
	Removed     []event.RegionID
	// Site, with heartbeats and requests: the Spread site the node was
	// placed in (stack.Config.Site).
	Site event.SiteID
	// HasSites, with an update: Sites replaces every site view the node
	// holds (every site with a live member of some group).
	HasSites bool
	Sites    []event.SiteView
	// Peers, with msgSuspect, msgPingReq and msgAlive: the nodes
	// suspected or reached (sorted).
	Peers []event.NodeID
	// Phi and FDMax, with heartbeats: the node's accrual threshold (in
	// thousandths; 0: the static fd timeout alone) and the longest silence
	// before suspicion however jittery its heartbeats (nanoseconds; 0: the
	// service's default). See phi.go.
	Phi   int64
	FDMax int64
	// Answer, with a heartbeat: it answers a probe (not a timed beat: the
	// accrual detector does not sample it).
	Answer bool
	// Cut and Reach, with msgCut: the sites cut off from the reporter
	// and those it still reaches (each sorted, no site in both).
	Cut   []event.SiteID
	Reach []event.SiteID
}

// ErrMalformed is wrapped by every error about a membership packet that
// cannot be decoded or makes no sense.
var ErrMalformed = errors.New("gms: malformed membership packet")

// maxList bounds every list in a decoded packet, so a hostile length
// cannot make the decoder allocate much.
const maxList = 1 << 16

// codecState is the membership protocol's msgpack codec (one per layer or
// service: layers run on one goroutine).
type codecState struct{ c *wirecodec.Codec }

func newCodec() *codecState {
	return &codecState{wirecodec.New(wirecodec.Options{Name: "gms", Malformed: ErrMalformed, MaxInitLen: 1024, WriteExt: true})}
}

// encode returns m's encoding in a buffer reused by the next call.
func (c *codecState) encode(m *wireMsg) []byte { return c.c.Encode(m) }

// decode parses and checks a packet. m is overwritten.
func (c *codecState) decode(b []byte, m *wireMsg) error {
	*m = wireMsg{}
	if err := c.c.Decode(b, m); err != nil {
		return err
	}
	return m.check()
}

// check verifies what the code relies on: a known type, sorted member
// lists without the zero node, no zero group, bounded lists.
func (m *wireMsg) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %v: %s", ErrMalformed, m.T, fmt.Sprintf(format, args...))
	}
	if m.T == 0 || m.T >= msgLimit {
		return fmt.Errorf("%w: unknown type %d", ErrMalformed, uint8(m.T))
	}
	if len(m.Join)+len(m.Leave)+len(m.Refused)+len(m.Views)+len(m.Regions)+len(m.Removed)+len(m.Sites)+len(m.Peers)+len(m.Cut)+len(m.Reach) > maxList {
		return bad("too many entries")
	}
	for _, g := range m.Join {
		if g == event.NoGroup {
			return bad("join of group 0")
		}
	}
	for _, g := range m.Leave {
		if g == event.NoGroup {
			return bad("leave of group 0")
		}
	}
	for i, v := range m.Views {
		if v == nil || v.Group == event.NoGroup {
			return bad("view %d has no group", i)
		}
		if !sortedNodes(v.Members) || !sortedNodes(v.Joined) || !sortedNodes(v.Left) {
			return bad("view of %v: member lists not sorted or hold node 0", v.Group)
		}
	}
	for i, r := range m.Regions {
		if r == nil || len(r.Groups) == 0 || !slices.IsSorted(r.Groups) || !sortedNodes(r.Members) {
			return bad("region view %d: groups or members empty or unsorted", i)
		}
	}
	if !sortedNodes(m.Peers) {
		return bad("suspected nodes unsorted or node 0")
	}
	if !sortedSites(m.Cut) || !sortedSites(m.Reach) {
		return bad("cut or reached sites unsorted")
	}
	for _, c := range m.Cut {
		if _, in := slices.BinarySearch(m.Reach, c); in {
			return bad("site %d both cut off and reached", c)
		}
	}
	for i := range m.Sites {
		if len(m.Sites[i].Members) == 0 || !sortedNodes(m.Sites[i].Members) || i > 0 && m.Sites[i-1].Site >= m.Sites[i].Site {
			return bad("site view %d: members empty or unsorted, or sites unsorted", i)
		}
	}
	if m.Timeout < 0 || m.Suspect < 0 || m.Interval < 0 || m.FDMax < 0 || m.Phi < 0 {
		return bad("negative timeout")
	}
	return nil
}

func sortedNodes(ns []event.NodeID) bool {
	for i, n := range ns {
		if n == event.NoNode || (i > 0 && ns[i-1] >= n) {
			return false
		}
	}
	return true
}

func sortedSites(ss []event.SiteID) bool {
	for i := 1; i < len(ss); i++ {
		if ss[i-1] >= ss[i] {
			return false
		}
	}
	return true
}

// groupDigest is a 64-bit FNV-1a hash of a sorted group list: what a
// heartbeat says a node wants and what the service holds of it are compared
// by it.
func groupDigest(gs []event.GroupID) uint64 {
	h := uint64(14695981039346656037)
	for _, g := range gs {
		for i := 0; i < 4; i++ {
			h ^= uint64(byte(g >> (8 * i)))
			h *= 1099511628211
		}
	}
	return h
}
